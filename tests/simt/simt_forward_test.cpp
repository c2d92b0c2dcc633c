// The forward kernels of every tile configuration, run under the SIMT emulator on the host and
// checked against the CPU reference: the case tables of the GPU tests (tests/gpu), at sizes a
// CPU emulates in seconds. Each TEST_CASE builds one shared object for all its kernels.
#include <catch2/catch.hpp>

#include "simt_harness.hpp"
#include "support/case_tables.hpp"
#include "support/expression_generator.hpp"

using namespace attnjit;
using namespace attnjit::kernel_test;

namespace {

// sm_80 (163 KB of shared memory: 3 stages), sm_86 (99 KB: 2 stages, and key tiles of 32 at head
// dim 256) and sm_90 (227 KB): every distinct tile configuration of codegen/kernel_config.cpp.
constexpr int kArches[] = {80, 86, 90};

void check_simt(const std::vector<KernelCase>& cases, int sm) {
  for (const simt::SimtOutcome& outcome : simt::run_simt_cases(cases, sm)) {
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK(outcome.passed());
  }
}

// Decoding steps on sm_80 for a test that compares their blocks' barrier counts: each must
// match the reference on the decoding entry, with `num_splits` slices where that is not 0.
std::vector<simt::SimtOutcome> run_decoding_steps(const std::vector<KernelCase>& cases,
                                                  int num_splits) {
  std::vector<simt::SimtOutcome> outcomes = simt::run_simt_cases(cases, 80);
  REQUIRE(outcomes.size() == cases.size());
  for (const simt::SimtOutcome& outcome : outcomes) {
    INFO(outcome.name);
    INFO(outcome.describe());
    REQUIRE(outcome.passed());
    CHECK(outcome.decode_entry);
    if (num_splits != 0) CHECK(outcome.num_splits == num_splits);
  }
  return outcomes;
}

}  // namespace

TEST_CASE("emulated: the standard variants match the reference", "[simt]") {
  std::vector<KernelCase> cases;
  for (const KernelCase& c : mask_families(shape(1, 2, 1, 70, 150))) {
    cases.push_back(c);
    cases.push_back(with(c, DType::fp16, Layout::blhd, 64));
  }
  check_simt(cases, 80);
}

TEST_CASE("emulated: odd and unequal lengths match the reference", "[simt]") {
  const std::pair<int, int> lengths[] = {{1, 1},   {17, 17},  {129, 129}, {1, 129},
                                         {17, 300}, {300, 17}, {129, 1}};
  std::vector<KernelCase> cases;
  for (const auto& [lq, lkv] : lengths) {
    for (KernelCase c : mask_families(shape(1, 1, 1, lq, lkv))) {
      c.seed = static_cast<std::uint64_t>(lq * 7919 + lkv);
      cases.push_back(c);
    }
  }
  check_simt(cases, 90);
}

TEST_CASE("emulated: every head dim and tile configuration matches the reference", "[simt]") {
  for (const int sm : kArches) {
    std::vector<KernelCase> cases;
    for (const int head_dim : {32, 64, 96, 128, 256}) {
      for (const DType dtype : {DType::bf16, DType::fp16}) {
        KernelCase causal;
        causal.mask = "q_idx >= kv_idx";
        causal.shape = shape(1, 1, 1, 150, 233);
        KernelCase noop;
        noop.shape = shape(2, 1, 1, 40, 65);
        KernelCase doc;
        doc.mask = "doc[q_idx] == doc[kv_idx]";
        doc.tensors = {document_ids(140, 3, false, 5)};
        doc.shape = shape(1, 1, 1, 140, 140);
        cases.push_back(with(causal, dtype, Layout::bhld, head_dim));
        cases.push_back(with(noop, dtype, Layout::blhd, head_dim));
        cases.push_back(with(doc, dtype, Layout::bhld, head_dim));
      }
    }
    check_simt(cases, sm);
  }
}

TEST_CASE("emulated: GQA and MQA head grouping matches the reference", "[simt]") {
  std::vector<KernelCase> cases;
  for (const int hkv : {8, 4, 2, 1}) {
    KernelCase c;
    c.mask = "q_idx >= kv_idx";
    c.score = "score + float(h % 3)";  // makes a wrong q-head to kv-head mapping visible
    c.shape = shape(1, 8, hkv, 20, 40);
    cases.push_back(c);
    cases.push_back(with(c, DType::fp16, Layout::blhd, 128));
  }
  check_simt(cases, 80);
}

TEST_CASE("emulated: padded rows, explicit scale and lse on/off match the reference", "[simt]") {
  std::vector<KernelCase> cases;
  for (const bool lse : {true, false}) {
    KernelCase c;
    c.mask = "q_idx >= kv_idx";
    c.shape = shape(2, 2, 2, 77, 91);
    c.row_padding = 8;  // poisoned with NaN: reading it would show
    c.with_lse = lse;
    c.scale = 0.3f;
    cases.push_back(c);
    cases.push_back(with(c, DType::fp16, Layout::blhd, 96));
  }
  check_simt(cases, 86);
}

// A positive scale is folded into the softmax's exponent (the raw row max times the scale); a
// negative one takes the path that scales first, in fully kept tiles (noop) and partial ones
// (the causal diagonal), since the raw max times a negative scale is not the scaled max.
TEST_CASE("emulated: a negative scale matches the reference", "[simt]") {
  check_simt(negative_scale_cases(shape(1, 1, 1, 128, 192)), 80);
}

TEST_CASE("emulated: fully masked rows give zeros and an lse of -inf", "[simt]") {
  KernelCase c;
  c.mask = "kv_idx + 20 <= q_idx";  // rows 0..19 keep nothing
  c.shape = shape(1, 1, 1, 150, 150);
  KernelCase none;
  none.mask = "q_idx < 0";  // no tile at all: the epilogue runs straight after the prologue
  none.shape = shape(1, 1, 1, 33, 70);
  KernelCase odd_rows;
  odd_rows.mask = "q_idx % 2 == 0 && kv_idx <= q_idx";
  odd_rows.shape = shape(1, 1, 1, 129, 129);
  for (const int sm : {80, 90}) {
    check_simt({c, none, odd_rows, with(c, DType::fp16, Layout::blhd, 128),
                with(none, DType::bf16, Layout::blhd, 256), with(c, DType::fp16, Layout::bhld, 256)},
               sm);
  }
}

TEST_CASE("emulated: NaN and +inf inputs make the rows they reach NaN", "[simt]") {
  std::vector<KernelCase> cases = non_finite_inputs(64);
  for (const KernelCase& c : non_finite_inputs(128)) {
    cases.push_back(with(c, DType::fp16, Layout::blhd, 128));
  }
  check_simt(cases, 80);
}

TEST_CASE("emulated: per-call parameters and tensors with one kernel", "[simt]") {
  std::vector<KernelCase> cases;
  KernelCase window;
  window.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  window.params = {"W:int"};
  window.shape = shape(1, 1, 1, 200, 200);
  for (const int w : {1, 17, 64, 1000}) {
    window.scalars = {w};
    window.seed = static_cast<std::uint64_t>(w);
    cases.push_back(window);
  }
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.shape = shape(1, 1, 1, 257, 257);
  for (const int documents : {1, 5, 40}) {
    doc.tensors = {document_ids(257, documents, documents != 5, 3)};
    cases.push_back(doc);
  }
  check_simt(cases, 90);
}

TEST_CASE("emulated: random expressions match the reference", "[simt]") {
  std::vector<KernelCase> cases;
  for (int i = 0; i < 24; ++i) {
    const auto seed = static_cast<std::uint64_t>(2000 + i);
    cases.push_back(random_expression_case(seed, 160, 1, 1));
  }
  check_simt(cases, 80);
}

TEST_CASE("emulated: kept tiles past the first classification window are found", "[simt]") {
  check_simt({window_crossing_case()}, 90);
}

TEST_CASE("emulated: kept tiles past long stretches of empty ones are found", "[simt]") {
  std::vector<KernelCase> cases = empty_stretch_cases();
  cases.push_back(with(cases[1], DType::fp16, Layout::blhd, 128));
  check_simt(cases, 90);
}

// ATTNJIT_TUNE's sm80 shapes other than the defaults: 64-row blocks of 4 warps (two blocks per
// SM) and 128-row blocks of 4 warps (two m-tiles per warp), 2 stages and 128-key tiles.
TEST_CASE("emulated: tuned sm80 tile shapes match the reference", "[simt]") {
  for (const char* tune : {"sm80_block_m=64,sm80_warps=4,sm80_blocks_per_sm=2",
                           "sm80_warps=4,sm80_block_n=128,sm80_stages=2"}) {
    INFO(tune);
    simt::SimtLaunchOptions options;
    options.tuning = codegen::parse_kernel_tuning(tune);
    KernelCase causal;
    causal.mask = "q_idx >= kv_idx";
    causal.shape = shape(1, 2, 1, 150, 233);
    KernelCase doc;
    doc.mask = "doc[q_idx] == doc[kv_idx]";
    doc.tensors = {document_ids(140, 3, false, 5)};
    doc.shape = shape(1, 1, 1, 140, 140);
    for (const simt::SimtOutcome& outcome :
         simt::run_simt_cases({causal, with(doc, DType::fp16, Layout::blhd, 64)}, 90,
                              codegen::FamilyRequest::sm80, options)) {
      INFO(outcome.name);
      INFO(outcome.describe());
      // The tuned shape, not the default, is what ran.
      CHECK(outcome.config.num_warps == 4);
      CHECK(outcome.config.block_m == options.tuning->sm80_block_m.value_or(128));
      CHECK(outcome.grid.threads == 128u);
      CHECK(outcome.passed());
    }
  }
}

// The score's row shift (codegen/factor_score.hpp; the default) on the sm80 kernel: its cases
// at head dims 64 and 128 (sm_80's tiles), an ALiBi decoding step split into slices (each
// slice's LSE carries its rows' shifts) and the same without the shift.
TEST_CASE("emulated: the score's row shift matches the reference", "[simt]") {
  std::vector<KernelCase> cases = row_shift_cases(64);
  const std::vector<KernelCase> wide = row_shift_cases(128);
  cases.insert(cases.end(), {wide[0], wide[3], wide[6], wide[7]});
  const KernelCase step = row_shift_decoding_case();
  cases.push_back(step);
  for (const simt::SimtOutcome& outcome : simt::run_simt_cases(cases, 80)) {
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK(outcome.config.score_row_shift);
    CHECK(outcome.passed());
  }
  simt::SimtLaunchOptions unshifted;
  unshifted.tuning = codegen::KernelTuning{};
  unshifted.tuning->score_row_shift = false;
  for (const simt::SimtOutcome& outcome :
       simt::run_simt_cases({cases[0], step}, 80, codegen::FamilyRequest::sm80, unshifted)) {
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK_FALSE(outcome.config.score_row_shift);
    CHECK(outcome.passed());
  }
}

// The K/V copies' two address forms (copy.cuh, load_tile_async): the default at head dims 64 and
// up passes a zero-filled row's own address, sm80_safe_sources=1 row 0's. Ragged lengths, so that
// the last query and key tiles have zero-filled rows.
TEST_CASE("emulated: the sm80 kernel's zero-filled rows in both address forms", "[simt]") {
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 2, 1, 70, 150);
  causal.head_dim = 128;
  const std::vector<KernelCase> cases = {causal, with(causal, DType::fp16, Layout::blhd, 64)};
  simt::SimtLaunchOptions safe;
  safe.tuning = codegen::KernelTuning{};
  safe.tuning->sm80_safe_sources = true;
  for (const bool safe_sources : {false, true}) {
    for (const simt::SimtOutcome& outcome :
         simt::run_simt_cases(cases, 80, codegen::FamilyRequest::sm80,
                              safe_sources ? safe : simt::SimtLaunchOptions{})) {
      INFO(outcome.name << (safe_sources ? ", sm80_safe_sources=1" : ""));
      INFO(outcome.describe());
      CHECK(outcome.config.sm80_safe_sources == safe_sources);
      CHECK(outcome.passed());
    }
  }
}

// Decoding shapes: the keys split into slices, one block each, merged by attnjit_split_combine
// (the heuristic's count for an H100's 132 SMs, or the case's forced one). Every case splits.
TEST_CASE("emulated: split-KV decoding matches the reference", "[simt]") {
  const std::vector<KernelCase> cases = split_kv_cases();
  const auto outcomes = simt::run_simt_cases(cases, 80);
  bool merged_in_two_batches = false;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const simt::SimtOutcome& outcome = outcomes[i];
    INFO(outcome.name);
    INFO(outcome.describe());
    INFO("slices: " << outcome.num_splits);
    CHECK(outcome.num_splits > 1);
    // Launches of at most 32 rows run on the decoding entry, longer ones on the forward entry.
    CHECK(outcome.decode_entry == (cases[i].shape.q_len <= kDecodeBlockM));
    CHECK(outcome.grid.grid_y % static_cast<unsigned>(outcome.num_splits) == 0u);
    CHECK(outcome.passed());
    const int first_batch =
        kCombineBatch * (kCombineThreads / combine_chunk_lanes(cases[i].head_dim));
    merged_in_two_batches = merged_in_two_batches || outcome.num_splits > first_batch;
  }
  // The merge's later batches of slices (split_combine.cuh) are checked only if a row has more
  // slices than a thread's first batch covers.
  CHECK(merged_in_two_batches);
}

// A split decoding block with a mask walks to its query tile's first kept key tile (one window
// classification here: two barriers) and starts its own walk from that window, so it completes
// exactly two barriers more than a block without a mask over as many key tiles (one barrier a
// tile). A block that classified its slice's window anew (as before the twenty-first session)
// would complete four more.
TEST_CASE("emulated: a masked split decoding block classifies its key tiles once", "[simt]") {
  // Each a packed group of 4 whose 16 kept key tiles of 64 go to 4 slices: no mask over 1024
  // keys, causal over a cache of 1024, the last 1024 keys of a cache of 2048.
  std::vector<KernelCase> cases(3);
  cases[1].mask = "kv_idx <= q_idx + P";
  cases[2].mask = "kv_idx <= q_idx + P && kv_idx + 1024 > q_idx + P";
  for (int i = 0; i < 3; ++i) {
    KernelCase& c = cases[static_cast<std::size_t>(i)];
    const int kv_len = i == 2 ? 2048 : 1024;
    c.shape = shape(1, 4, 1, 1, kv_len);
    c.split_kv = 4;
    if (!c.mask.empty()) {
      c.params = {"P:int"};
      c.scalars = {kv_len - 1};
    }
  }
  const auto outcomes = run_decoding_steps(cases, 4);
  CHECK(outcomes[0].block_barriers > 0u);
  CHECK(outcomes[1].block_barriers == outcomes[0].block_barriers + 2);
  CHECK(outcomes[2].block_barriers == outcomes[0].block_barriers + 2);
}

// A batch of caches of different fill, padded to the longest: the mask reads each sequence's
// length once per block (`len[b]`: one element, ops::iv_read_i32), so the tiles past it classify
// empty and are never loaded. A block over a 2048-key cache filled to 128 keys completes as many
// barriers as a block over 128 kept keys of a masked cache (one a tile, two for its window's
// classification); read as "any value" it would walk all 32 tiles as partial ones.
TEST_CASE("emulated: per-sequence cache lengths skip the tiles past each length", "[simt]") {
  std::vector<KernelCase> cases(2);
  cases[0].mask = "kv_idx < len[b]";
  cases[0].tensors = {TensorInput{"len:int32[1]", {128, 100}, {}, {2, 1}}};
  cases[0].shape = shape(2, 4, 1, 1, 2048);
  cases[1].mask = "kv_idx < P";
  cases[1].params = {"P:int"};
  cases[1].scalars = {128};
  cases[1].shape = shape(1, 4, 1, 1, 2048);
  for (KernelCase& c : cases) c.split_kv = 1;
  const auto outcomes = run_decoding_steps(cases, 1);
  CHECK(outcomes[1].block_barriers > 0u);
  CHECK(outcomes[0].block_barriers == outcomes[1].block_barriers);
}

// Launches of at most 32 rows on the decoding entry: 32-row blocks of 2 warps, the warps without
// a real row skipping the math.
TEST_CASE("emulated: the decoding entry matches the reference", "[simt]") {
  for (const simt::SimtOutcome& outcome : simt::run_simt_cases(decode_entry_cases(), 80)) {
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK(outcome.decode_entry);
    CHECK(outcome.grid.threads == static_cast<unsigned>(32 * kDecodeWarps));
    CHECK(outcome.passed());
  }
}

// ATTNJIT_DECODE_ENTRY=off: packing and split-KV on the forward entry's 128-row blocks.
TEST_CASE("emulated: packed and split decoding on the forward entry match the reference",
          "[simt]") {
  simt::SimtLaunchOptions options;
  options.decode_entry = false;
  std::vector<KernelCase> cases = gqa_decoding_cases();
  const std::vector<KernelCase> split = split_kv_cases();
  cases.insert(cases.end(), split.begin(), split.begin() + 3);
  for (const simt::SimtOutcome& outcome :
       simt::run_simt_cases(cases, 80, codegen::FamilyRequest::sm80, options)) {
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK_FALSE(outcome.decode_entry);
    CHECK(outcome.grid.threads == static_cast<unsigned>(32 * outcome.config.num_warps));
    CHECK(outcome.passed());
  }
}

// A GQA group's query heads as the rows of one block (q_idx seen as 0 by the hooks), split or not.
TEST_CASE("emulated: packed GQA decoding matches the reference", "[simt]") {
  const std::vector<KernelCase> cases = gqa_decoding_cases();
  const auto outcomes = simt::run_simt_cases(cases, 80);
  REQUIRE(outcomes.size() == std::size(kGqaDecodingGroups));
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const simt::SimtOutcome& outcome = outcomes[i];
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK(outcome.packed_group == kGqaDecodingGroups[i]);
    // One block row per (batch, key/value head) when packed: the grid's y is B * Hkv * slices.
    const AttentionShape& s = cases[i].shape;
    const int heads = outcome.packed_group > 1 ? s.num_heads_kv : s.num_heads_q;
    CHECK(outcome.grid.grid_y == static_cast<unsigned>(s.batch * heads * outcome.num_splits));
    CHECK(outcome.passed());
  }
}

// A paged key/value cache: the kernel reads the pools through the table (per row for pages
// smaller than a key tile, per tile for larger ones), the reference the dense tensors; the dense
// tensors are not among the emulator's readable buffers, so a read that ignores the table fails.
TEST_CASE("emulated: paged key/value caches match the reference", "[simt]") {
  const std::vector<KernelCase> cases = paged_kv_cases();
  const auto outcomes = simt::run_simt_cases(cases, 80);
  REQUIRE(outcomes.size() == cases.size());
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const simt::SimtOutcome& outcome = outcomes[i];
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK(outcome.config.paged_kv);
    CHECK(outcome.decode_entry ==
          (cases[i].shape.q_len * cases[i].shape.num_heads_q / cases[i].shape.num_heads_kv <=
           kDecodeBlockM));
    CHECK(outcome.passed());
  }
  CHECK(outcomes[0].packed_group == 4);
  CHECK(outcomes[4].num_splits == 3);
}

// Split decoding steps over sequences of their own key counts: each sequence's slices sized to
// its keys on the device (balanced_slice), merged through the slot table. Against the same step
// in uniform slices (ATTNJIT_BALANCE_SPLIT=off), the longest block completes fewer barriers (one
// or two a key tile): the long sequences' keys are cut finer, the short ones' coarser.
TEST_CASE("emulated: split decoding steps over ragged sequences are balanced", "[simt]") {
  const std::vector<KernelCase> cases = balanced_split_cases();
  const auto outcomes = run_decoding_steps(cases, 0);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    INFO(outcomes[i].name);
    CHECK(outcomes[i].balanced_split);
    CHECK(outcomes[i].num_splits == *cases[i].split_kv);
  }
  CHECK(outcomes[0].packed_group == 4);
  simt::SimtLaunchOptions uniform;
  uniform.balance_split = false;
  const auto baseline = simt::run_simt_cases({cases[0]}, 80, codegen::FamilyRequest::sm80, uniform);
  INFO(baseline[0].describe());
  CHECK(baseline[0].passed());
  CHECK_FALSE(baseline[0].balanced_split);
  CHECK(outcomes[0].block_barriers < baseline[0].block_barriers);
}

// Variable-length sequences: the sm80 family's kernel with the sequence tables reads packed
// queries and keys (and a paged cache) at each sequence's rows and counts; the padded tensors are
// not among the emulator's readable buffers where a case packs them, and their rows past each
// count are NaN, so a read at the wrong rows or past a count fails.
TEST_CASE("emulated: variable-length sequences match the reference", "[simt]") {
  const std::vector<KernelCase> cases = varlen_cases();
  const auto outcomes = simt::run_simt_cases(cases, 80);
  REQUIRE(outcomes.size() == cases.size());
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const simt::SimtOutcome& outcome = outcomes[i];
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK(outcome.config.paged_kv);
    // Packed queries run on the forward entry, unsplit and unpacked.
    if (cases[i].sequences->pack_queries) {
      CHECK_FALSE(outcome.decode_entry);
      CHECK(outcome.num_splits == 1);
      CHECK(outcome.packed_group == 1);
    }
    CHECK(outcome.passed());
  }
  CHECK(outcomes[3].num_splits == 3);  // per-sequence key counts on split decoding steps
  CHECK(outcomes[3].decode_entry);
  CHECK(outcomes[4].packed_group == 4);
}
