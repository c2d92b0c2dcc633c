// The sm90 kernel (kernels_templates/attnjit/attention_fwd_sm90.cuh) under the SIMT emulator:
// its producer and consumer warpgroups, mbarrier ring, TMA loads from the fake driver's tensor
// maps and wgmma run on the host and are checked against the CPU reference. Shapes are small (a
// block is 384 fibers, 512 with three consumer warpgroups) but cross every tile edge: lengths
// that are not multiples of the tiles, more key tiles than stages (the ring wraps), GQA / MQA and
// q_len != kv_len; then the masks and scores: the standard variants, skipped tiles, fully masked
// rows, non-finite inputs, per-call parameters and tensors, random expressions.
#include <catch2/catch.hpp>
#include <optional>

#include "codegen/short_rows.hpp"
#include "simt_harness.hpp"
#include "support/case_tables.hpp"
#include "support/expression_generator.hpp"

using namespace attnjit;
using namespace attnjit::kernel_test;

namespace {

// `options.tuning`: the schedule options (none by default: the shipped schedule, with the overlap
// where sm90_overlap_by_default says); the kernel that ran must have them.
void check_sm90(const std::vector<KernelCase>& cases, const simt::SimtLaunchOptions& options = {}) {
  const auto outcomes =
      simt::run_simt_cases(cases, codegen::Target(90, true), codegen::FamilyRequest::sm90, options);
  const codegen::KernelTuning tuning = options.tuning ? *options.tuning : codegen::KernelTuning{};
  const bool p_in_smem = options.tuning && options.tuning->sm90_p_smem.value_or(false);
  REQUIRE(outcomes.size() == cases.size());
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const simt::SimtOutcome& outcome = outcomes[i];
    INFO(outcome.name);
    INFO(outcome.describe());
    // Note: the case must have run on the sm90 kernel, not fallen back to the sm80 one.
    CHECK(outcome.name.ends_with(" sm90"));
    // The tiles and schedule: the tuning's, else the variant class's defaults (wider tiles
    // without a mask; the overlap where sm90_overlap_by_default says).
    const bool unmasked = cases[i].mask.empty() || cases[i].mask == "true";
    const VariantSpec spec = make_spec(cases[i]);
    const bool special_score =
        expr::parse_expression(expr::ExprKind::score, spec.score, spec.signature)
            .calls_special_function();
    const auto expected =
        codegen::sm90_kernel_config(cases[i].head_dim, tuning, !unmasked, special_score);
    CHECK(outcome.config.overlap == expected.overlap);
    const int block_m = expected.block_m;
    CHECK(outcome.config.block_n == expected.block_n);
    CHECK(outcome.config.block_m == block_m);
    CHECK(outcome.config.p_in_smem == p_in_smem);
    CHECK(outcome.config.tile_handoff == expected.tile_handoff);
    CHECK(outcome.config.poly_exp2 == tuning.sm90_poly_exp2.value_or(0));
    CHECK(outcome.config.fold_m192 == expected.fold_m192);
    CHECK(outcome.config.blocks_per_sm == expected.blocks_per_sm);
    CHECK(outcome.config.score_row_shift == tuning.score_row_shift.value_or(true));
    CHECK(outcome.grid.threads == static_cast<unsigned>(128 * (1 + block_m / 64)));
    CHECK(outcome.passed());
  }
}

// A case of `mask` at `s`.
KernelCase masked(const char* mask, const AttentionShape& s) {
  KernelCase c;
  c.mask = mask;
  c.shape = s;
  return c;
}

}  // namespace

TEST_CASE(
    "emulated sm90: ragged lengths and a wrapping stage ring match the reference, bf16 and "
    "fp16, head dims 64 and 128",
    "[simt][sm90]") {
  KernelCase ragged;
  ragged.shape = shape(1, 1, 1, 150, 333);  // 2 query tiles, 3 key tiles of 128: the ring wraps
  KernelCase short_keys;
  short_keys.shape = shape(2, 1, 1, 70, 20);  // one partial key tile, q_len != kv_len
  check_sm90({ragged, with(ragged, DType::fp16, Layout::blhd, 128), short_keys,
              with(short_keys, DType::fp16, Layout::bhld, 128)});
}

TEST_CASE("emulated sm90: GQA and MQA map query heads to their key/value heads", "[simt][sm90]") {
  std::vector<KernelCase> cases;
  for (const int hkv : {2, 1}) {
    KernelCase c;
    c.shape = shape(1, 4, hkv, 30, 140);
    cases.push_back(c);
  }
  cases.push_back(with(cases[0], DType::fp16, Layout::blhd, 128));
  check_sm90(cases);
}

TEST_CASE("emulated sm90: head dim 256, an explicit scale and the lse off", "[simt][sm90]") {
  KernelCase c;
  c.shape = shape(1, 1, 1, 130, 150);  // 3 key tiles of 64 at head dim 256
  c.scale = 0.3f;
  c.with_lse = false;
  check_sm90({with(c, DType::bf16, Layout::bhld, 256)});
}

// As for the SM80 kernel: a negative scale is applied before the softmax instead of folded
// into its exponent (fully kept tiles: noop; partial ones: the causal diagonal).
TEST_CASE("emulated sm90: a negative scale matches the reference", "[simt][sm90]") {
  check_sm90(negative_scale_cases(shape(1, 1, 1, 128, 256)));
}

TEST_CASE("emulated sm90: the standard variants' masks and scores match the reference",
          "[simt][sm90]") {
  std::vector<KernelCase> cases;
  for (const KernelCase& c : mask_families(shape(1, 2, 1, 150, 300))) {
    cases.push_back(c);
  }
  cases.push_back(with(mask_families(shape(1, 1, 1, 130, 200))[1], DType::fp16, Layout::blhd, 128));
  check_sm90(cases);
}

TEST_CASE("emulated sm90: skipped tiles, fully masked rows and rows with nothing kept",
          "[simt][sm90]") {
  KernelCase late;
  late.mask = "kv_idx + 20 <= q_idx";  // rows 0..19 keep nothing
  late.shape = shape(1, 1, 1, 150, 150);
  KernelCase none;
  none.mask = "q_idx < 0";  // no tile at all: the producer loads only Q
  none.shape = shape(1, 1, 1, 33, 70);
  KernelCase band;
  band.mask = "kv_idx >= 300 && kv_idx < 330";  // one kept key tile after two empty ones
  band.shape = shape(1, 1, 1, 40, 400);
  check_sm90({late, none, band, with(late, DType::fp16, Layout::blhd, 256)});
}

TEST_CASE("emulated sm90: kept tiles past long stretches of empty ones are found",
          "[simt][sm90]") {
  std::vector<KernelCase> cases = empty_stretch_cases();
  cases.push_back(with(cases[1], DType::fp16, Layout::blhd, 128));
  check_sm90(cases);
}

TEST_CASE("emulated sm90: NaN and +inf inputs make the rows they reach NaN", "[simt][sm90]") {
  check_sm90(non_finite_inputs(64));
}

TEST_CASE("emulated sm90: per-call parameters and tensors with one kernel", "[simt][sm90]") {
  std::vector<KernelCase> cases;
  KernelCase window;
  window.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  window.params = {"W:int"};
  window.shape = shape(1, 1, 1, 200, 260);
  for (const int w : {1, 130}) {
    window.scalars = {w};
    cases.push_back(window);
  }
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.shape = shape(1, 1, 1, 257, 257);
  doc.tensors = {document_ids(257, 5, true, 3)};
  cases.push_back(doc);
  // A prefix per sequence (`prefix[b]`, one element per block): causal in the first, the first
  // 200 keys for every query in the second; the tiles past both classify empty.
  KernelCase prefix;
  prefix.mask = "kv_idx < prefix[b] || q_idx >= kv_idx";
  prefix.shape = shape(2, 1, 1, 200, 260);
  prefix.tensors = {TensorInput{"prefix:int32[1]", {0, 200}, {}, {2, 1}}};
  cases.push_back(prefix);
  check_sm90(cases);
}

TEST_CASE("emulated sm90: random expressions match the reference", "[simt][sm90]") {
  std::vector<KernelCase> cases;
  for (int i = 0; i < 6; ++i) {
    cases.push_back(random_expression_case(static_cast<std::uint64_t>(3000 + i), 160, 1, 1));
  }
  check_sm90(cases);
}

// Intra-warpgroup pipelining (sm90_overlap; the default at head dims 64 and 128): S of the next
// tile issued with P V of the current one, the softmax between them, a stage released only after
// its P V. The cases cross what the schedule changes: one kept tile (the prologue and the tail
// alone), none, many (the ring wraps while a P V is pending), partial and full tiles, fully
// masked rows, D=256 and fp16. Both settings explicitly, so that the schedule that is not the
// default at a head dim stays covered. (Checked once by mutation: releasing the current stage
// instead of the previous one, or rescaling O before P V completes, fails these cases.)
namespace {

// Cases that walk the stage ring every way a schedule can get wrong: ragged ends, a diagonal,
// rows that keep nothing, kept tiles after empty ones, a block that keeps nothing, a tensor mask
// with a score, a long row, fp16 / blhd and head dims 256 and 64.
std::vector<KernelCase> schedule_cases() {
  KernelCase ragged;
  ragged.shape = shape(1, 2, 1, 150, 333);  // 3 key tiles of 128 through 2 stages, GQA
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 1, 1, 260, 260);
  KernelCase late;
  late.mask = "kv_idx + 20 <= q_idx";  // rows 0..19 keep nothing
  late.shape = shape(1, 1, 1, 150, 150);
  KernelCase band;
  band.mask = "kv_idx >= 300 && kv_idx < 330";  // one kept key tile after two empty ones
  band.shape = shape(1, 1, 1, 40, 400);
  KernelCase none;
  none.mask = "q_idx < 0";
  none.shape = shape(1, 1, 1, 33, 70);
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.score = "score + 0.25 * float(kv_idx - q_idx)";
  doc.shape = shape(1, 1, 1, 257, 257);
  doc.tensors = {document_ids(257, 5, true, 3)};
  // Five key tiles through two stages: the producer refills a stage's K for tile i + 2 while
  // tile i + 1's V may still be on its way, so K must be released only after its S completed.
  KernelCase long_row;
  long_row.shape = shape(1, 1, 1, 40, 600);
  return {ragged, causal, late, band, none, doc, long_row,
          with(ragged, DType::fp16, Layout::blhd, 256), with(causal, DType::fp16, Layout::bhld, 64)};
}

}  // namespace

TEST_CASE("emulated sm90 with and without intra-warpgroup overlap matches the reference",
          "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_overlap = GENERATE(false, true);
  INFO("overlap " << *options.tuning->sm90_overlap);
  check_sm90(schedule_cases(), options);
}

// The tile handoff (sm90_handoff=1): only the producer classifies, the consumers read each kept
// tile from its K stage's word, and a word of -1 ends the row (a block that keeps nothing gets
// it first).
TEST_CASE("emulated sm90 with the tile handoff matches the reference", "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_handoff = true;
  options.tuning->sm90_overlap = GENERATE(false, true);
  INFO("overlap " << *options.tuning->sm90_overlap);
  std::vector<KernelCase> cases = schedule_cases();
  for (const KernelCase& stretch : empty_stretch_cases()) cases.push_back(stretch);
  check_sm90(cases, options);
}

// Exponentials on the FMA pipe (sm90_poly_exp2, poly_exp2.cuh): the schedule cases and a
// soft-capped score with 3 of each 8 chunks in software (both kinds in one tile), then with all
// of them: the non-finite cases (a NaN must stay NaN, a masked -inf must give exactly 0) and
// fully masked rows.
TEST_CASE("emulated sm90 with exponentials on the FMA pipe matches the reference",
          "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  SECTION("3 of 8") {
    options.tuning->sm90_poly_exp2 = 3;
    std::vector<KernelCase> cases = schedule_cases();
    KernelCase softcap;
    softcap.score = "30.0 * tanh(score / 30.0)";
    softcap.shape = shape(1, 1, 1, 130, 200);
    cases.push_back(softcap);
    check_sm90(cases, options);
  }
  SECTION("8 of 8") {
    options.tuning->sm90_poly_exp2 = 8;
    std::vector<KernelCase> cases = non_finite_inputs(64);
    KernelCase late;
    late.mask = "kv_idx + 20 <= q_idx";  // rows 0..19 keep nothing
    late.shape = shape(1, 1, 1, 150, 150);
    cases.push_back(with(late, DType::fp16, Layout::blhd, 128));
    check_sm90(cases, options);
  }
}

// Two blocks per SM (sm90_blocks_per_sm=2): the same data flow with 64-key stages and no overlap
// by default (the registers it changes are not the emulator's), here through the schedule cases
// at head dim 64, the only one it takes; alone and with the tile handoff, as the short-rows
// kernel (codegen/short_rows.hpp) that calls with short rows run.
TEST_CASE("emulated sm90 with two blocks per SM matches the reference", "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  codegen::KernelTuning two_per_sm;
  two_per_sm.sm90_blocks_per_sm = 2;
  for (const codegen::KernelTuning& tuning : {two_per_sm, codegen::short_rows_tuning()}) {
    options.tuning = tuning;
    const auto expected = codegen::sm90_kernel_config(64, tuning, /*masked=*/true);
    REQUIRE(expected.blocks_per_sm == 2);
    REQUIRE(expected.block_n == 64);
    REQUIRE_FALSE(expected.overlap);
    CHECK(expected.tile_handoff == tuning.sm90_handoff.value_or(false));
    std::vector<KernelCase> cases = schedule_cases();
    for (KernelCase& c : cases) c.head_dim = 64;
    check_sm90(cases, options);
  }
}

// One consumer warpgroup in 64-row blocks (sm90_block_m=64), two per SM: no GEMM turns, the
// overlap, 128-key stages at head dim 64 and 64-key ones at 128; and with the tile handoff.
TEST_CASE("emulated sm90 with 64-row blocks of one consumer matches the reference",
          "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_block_m = 64;
  options.tuning->sm90_blocks_per_sm = 2;
  std::vector<KernelCase> cases = schedule_cases();
  for (std::size_t i = 0; i < cases.size(); ++i) cases[i].head_dim = i % 2 == 0 ? 64 : 128;
  check_sm90(cases, options);
  options.tuning->sm90_handoff = true;
  options.tuning->sm90_overlap = false;
  check_sm90(cases, options);
}

// The softmax scale folded into the exponent in three-consumer blocks (sm90_fold_m192, the
// unmasked head-dim-64 default's 192 rows), alone and with 2 of 8 exponentials in software: a
// ragged noop, ALiBi and soft-capping (factors folded), and a negative scale (not foldable: the
// kernel multiplies instead).
TEST_CASE("emulated sm90 with the scale folded in 192-row blocks matches the reference",
          "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_fold_m192 = true;
  options.tuning->sm90_poly_exp2 = GENERATE(0, 2);
  INFO("poly_exp2 " << *options.tuning->sm90_poly_exp2);
  KernelCase ragged;
  ragged.shape = shape(1, 2, 1, 200, 333);
  KernelCase alibi = ragged;
  alibi.score = "score - 0.125 * float(q_idx - kv_idx)";
  KernelCase softcap = ragged;
  softcap.score = "20.0 * tanh(score / 20.0)";
  std::vector<KernelCase> cases{ragged, alibi, softcap,
                                negative_scale_cases(shape(1, 1, 1, 128, 256))[0]};
  for (KernelCase& c : cases) c.head_dim = 64;
  const auto expected = codegen::sm90_kernel_config(64, *options.tuning, /*masked=*/false);
  REQUIRE(expected.block_m == 192);
  REQUIRE(expected.fold_m192);
  check_sm90(cases, options);
}

// The score's row shift (codegen/factor_score.hpp; the default): its cases at head dim 64
// (192-row blocks; the unmasked ones fold the scale, the others multiply the shift) and 128, with
// the overlap; then two of them without it, and without the shift (ATTNJIT_TUNE=score_row_shift=0).
TEST_CASE("emulated sm90 with and without the score's row shift matches the reference",
          "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  SECTION("shifted, head dims 64 and 128") {
    std::vector<KernelCase> cases = row_shift_cases(64);
    const std::vector<KernelCase> wide = row_shift_cases(128);
    cases.insert(cases.end(), {wide[0], wide[1], wide[3], wide[6]});
    check_sm90(cases, options);
  }
  SECTION("shifted without the overlap, and unshifted") {
    const std::vector<KernelCase> cases = row_shift_cases(128);
    options.tuning->sm90_overlap = false;
    check_sm90({cases[0], cases[7]}, options);
    options.tuning = codegen::KernelTuning{};
    options.tuning->score_row_shift = false;
    check_sm90({cases[0], cases[3]}, options);
  }
}

namespace {

// The persistent sm90 kernel on `multiprocessors` SMs, so that each block walks several work
// items; the launch must be min(items, SMs) blocks of `block_m` queries.
void check_sm90_persistent(const std::vector<KernelCase>& cases, int multiprocessors,
                           bool overlap = false, int block_m = 128,
                           std::optional<int> block_n = std::nullopt) {
  simt::SimtLaunchOptions options;
  options.multiprocessors = multiprocessors;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_persistent = true;
  options.tuning->sm90_overlap = overlap;
  options.tuning->sm90_block_n = block_n;
  options.tuning->sm90_block_m = block_m;
  const auto outcomes =
      simt::run_simt_cases(cases, codegen::Target(90, true), codegen::FamilyRequest::sm90, options);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const simt::SimtOutcome& outcome = outcomes[i];
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK(outcome.name.ends_with(" sm90"));
    CHECK(outcome.config.persistent);
    CHECK(outcome.config.overlap == overlap);
    if (block_n) CHECK(outcome.config.block_n == *block_n);
    CHECK(outcome.config.block_m == block_m);
    const AttentionShape& s = cases[i].shape;
    const int items = (s.q_len + block_m - 1) / block_m * s.batch * s.num_heads_q;
    CHECK(outcome.grid.grid_x == static_cast<unsigned>(std::min(items, multiprocessors)));
    CHECK(outcome.grid.grid_y == 1u);
    CHECK(outcome.passed());
  }
}

}  // namespace

TEST_CASE(
    "emulated sm90 persistent: blocks walking several query tiles match the reference "
    "with the output staged apart from Q (head dims 64 and 128)",
    "[simt][sm90]") {
  // 3 query tiles (the last ragged) x 4 heads = 12 items on 3 SMs: 4 per block, heavy first.
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 4, 2, 300, 300);
  // Keys are document 0 only: query tiles 1 and 2 (documents 1 and 2) keep no key tile, and
  // rows 100..127 of tile 0 keep no key. On 2 SMs, block 0 walks (head 0, tile 2: empty), (0, 0),
  // (1, 1: empty) and block 1 (0, 1: empty), (1, 2: empty), (1, 0).
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.shape = shape(1, 2, 1, 300, 100);
  doc.tensors = {document_ids(300, 3, true, 0)};
  check_sm90_persistent({causal, with(causal, DType::fp16, Layout::blhd, 128)}, 3);
  check_sm90_persistent({doc}, 2);
}

TEST_CASE(
    "emulated sm90 persistent: head dim 256 stages the output in Q's space and releases "
    "Q after the epilogue",
    "[simt][sm90]") {
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 2, 1, 200, 200);  // 4 items on 3 SMs
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.shape = shape(1, 1, 1, 300, 100);  // 3 items on 2 SMs; tiles 1, 2 keep nothing
  doc.tensors = {document_ids(300, 3, true, 0)};
  check_sm90_persistent({with(causal, DType::bf16, Layout::bhld, 256)}, 3);
  check_sm90_persistent({with(doc, DType::bf16, Layout::bhld, 256)}, 2);
}

// Both schedule options at once: the overlapped tile loop leaves the stage ring where the next
// item's producer expects it (one advance per kept tile, the last one after the final P V).
TEST_CASE("emulated sm90 persistent with intra-warpgroup overlap matches the reference",
          "[simt][sm90]") {
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 2, 1, 300, 300);  // 6 items of 1..3 kept tiles on 4 SMs
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.shape = shape(1, 1, 1, 300, 100);  // 3 items on 2 SMs; tiles 1, 2 keep nothing
  doc.tensors = {document_ids(300, 3, true, 0)};
  check_sm90_persistent({causal, with(causal, DType::fp16, Layout::blhd, 256)}, 4, true);
  check_sm90_persistent({doc}, 2, true);
}

// Key tiles that are not a multiple of 64 (ATTNJIT_TUNE=sm90_block_n): FlashAttention-3 uses 176
// at head dim 128 and 80 at 256. wgmma's N, the TMA box rows, the k16 steps of P V and the tile
// bounds of the masks all follow block_n; the lengths are not multiples of it, so the last key
// tile is ragged and causal diagonals cut key tiles at offsets that are not multiples of 64.
TEST_CASE(
    "emulated sm90: key tiles of 176 (head dim 128) and 80 (head dim 256) match the reference",
    "[simt][sm90]") {
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(1, 2, 1, 200, 400);  // 3 key tiles of 176, GQA, q_len != kv_len
  KernelCase window;
  window.mask = "q_idx >= kv_idx && q_idx - kv_idx < 100";
  window.score = "score + 0.125 * float(kv_idx - q_idx)";
  window.shape = shape(1, 1, 1, 150, 300);
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_block_n = 176;
  options.tuning->sm90_overlap = true;
  check_sm90(
      {with(causal, DType::bf16, Layout::bhld, 128), with(window, DType::fp16, Layout::blhd, 128)},
      options);
  options.tuning->sm90_block_n = 80;
  options.tuning->sm90_overlap = false;
  check_sm90({with(window, DType::bf16, Layout::bhld, 256)}, options);
  // Persistent at 176: no room to stage the output apart at head dim 128, so it goes to Q's space.
  check_sm90_persistent({with(causal, DType::bf16, Layout::bhld, 128)}, 2, false, 128, 176);
}

namespace {

// A document mask at q_len 400 over kv_len 100 keys: query tiles of 192 rows 0 and 2 are
// document 0, as every key is; the middle tile (rows 192..383) is document 1 and keeps no key.
KernelCase documents_skipping_the_middle_tile() {
  KernelCase c = masked("doc[q_idx] == doc[kv_idx]", shape(1, 1, 1, 400, 100));
  c.tensors = {document_ids(400, 1, true, 0)};
  for (int i = 192; i < 384; ++i) c.tensors[0].ints[i] = 1;
  return c;
}

}  // namespace

// The round robin of three consumers' GEMM turns, with and without the intra-warpgroup overlap:
// q_len 170 puts the third consumer's rows 170..191 past the end (its warps still take every
// turn), 200 leaves the second tile's second and third consumers with no row at all; an empty
// middle query tile takes no turn; GQA; fp16.
TEST_CASE("emulated sm90 with three consumer warpgroups (block_m 192) matches the reference",
          "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_block_m = 192;
  options.tuning->sm90_overlap = GENERATE(false, true);
  INFO("overlap " << *options.tuning->sm90_overlap);
  const KernelCase causal = masked("q_idx >= kv_idx", shape(1, 4, 2, 170, 300));
  check_sm90({causal, masked("q_idx >= kv_idx", shape(1, 1, 1, 200, 300)),
              documents_skipping_the_middle_tile(), with(causal, DType::fp16, Layout::blhd, 64)},
             options);
}

// The masked head-dim-64 candidate of 192 x 96 tiles with the handoff and the folded scale (the
// only three-consumer shape whose masked kernels all fit 160 registers: docs/PERFORMANCE.md,
// "Seventeenth session"): a diagonal cut by 96-key tiles, a last key tile of 300 - 288 keys, a
// window in fp16, documents with an empty middle query tile, a prefix with fully masked rows.
TEST_CASE("emulated sm90 with 192 x 96 tiles, the handoff and the fold matches the reference",
          "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_block_m = 192;
  options.tuning->sm90_block_n = 96;
  options.tuning->sm90_handoff = true;
  options.tuning->sm90_fold_m192 = true;
  const KernelCase window =
      masked("q_idx >= kv_idx && q_idx - kv_idx < 130", shape(1, 2, 1, 400, 400));
  check_sm90({masked("q_idx >= kv_idx", shape(1, 4, 2, 200, 300)),
              with(window, DType::fp16, Layout::blhd, 64), documents_skipping_the_middle_tile(),
              masked("kv_idx < 50 && q_idx >= 120", shape(1, 1, 1, 250, 250))},
             options);
}

// Persistent blocks of three consumers: each item's turns balanced on their own, the last
// consumer's first arrival of an item after consumer 0's last wait of the previous one.
TEST_CASE("emulated sm90 persistent with three consumer warpgroups matches the reference",
          "[simt][sm90]") {
  // 2 query tiles x 3 heads = 6 items on 4 SMs; 3 items on 2 SMs, the middle one empty.
  check_sm90_persistent({masked("q_idx >= kv_idx", shape(1, 3, 1, 300, 300))}, 4, true, 192);
  check_sm90_persistent({documents_skipping_the_middle_tile()}, 2, false, 192);
}

// P through shared memory (ATTNJIT_TUNE=sm90_p_smem=1; FlashAttention-3's MmaPV_is_RS = false):
// each consumer writes its P tile, fences the async proxy and meets its warpgroup before P V
// reads the tile as wgmma's A operand; the next tile's P waits for that P V. Sequential and
// overlapped, the default tiles and FA3's head-dim-64 tile (192 x 192, three consumers), a tensor
// mask with a score, fully masked rows, persistent blocks walking several items.
TEST_CASE("emulated sm90 with P in shared memory matches the reference", "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_p_smem = true;
  options.tuning->sm90_overlap = GENERATE(false, true);
  INFO("overlap " << *options.tuning->sm90_overlap);
  KernelCase doc = masked("doc[q_idx] == doc[kv_idx]", shape(1, 2, 1, 257, 300));
  doc.score = "score + 0.25 * float(kv_idx - q_idx)";
  doc.tensors = {document_ids(300, 5, true, 3)};
  const KernelCase late = masked("kv_idx + 20 <= q_idx", shape(1, 1, 1, 150, 333));
  check_sm90({doc, with(late, DType::fp16, Layout::blhd, 128)}, options);
  options.tuning->sm90_block_m = 192;
  options.tuning->sm90_block_n = 192;
  KernelCase softcap = masked("true", shape(1, 2, 1, 200, 500));  // 3 key tiles of 192
  softcap.score = "30.0 * tanh(score / 30.0)";
  check_sm90({with(softcap, DType::bf16, Layout::bhld, 64)}, options);
  // Head dim 128 takes three consumers only with P in shared memory (192 x 128).
  options.tuning->sm90_block_n = 128;
  check_sm90({with(late, DType::bf16, Layout::bhld, 128)}, options);
}

TEST_CASE("emulated sm90 persistent with P in shared memory matches the reference",
          "[simt][sm90]") {
  simt::SimtLaunchOptions options;
  options.multiprocessors = 2;
  options.tuning = codegen::KernelTuning{};
  options.tuning->sm90_p_smem = true;
  options.tuning->sm90_persistent = true;
  options.tuning->sm90_overlap = true;
  const auto outcomes = simt::run_simt_cases(
      {masked("q_idx >= kv_idx", shape(1, 3, 1, 200, 200))}, codegen::Target(90, true),
      codegen::FamilyRequest::sm90, options);
  for (const simt::SimtOutcome& outcome : outcomes) {
    INFO(outcome.describe());
    CHECK(outcome.config.p_in_smem);
    CHECK(outcome.grid.grid_x == 2u);  // 6 items on 2 SMs
    CHECK(outcome.passed());
  }
}

// Prefills over paged caches on the sm90 kernel: its producer reads each key tile's pages (a lane
// a box) and loads the boxes from the pools' tensor maps; the dense keys and values are not
// readable by the emulated kernel, and unused pool rows are NaN.
TEST_CASE("emulated sm90: paged key/value caches match the reference", "[simt][sm90]") {
  const std::vector<KernelCase> cases = sm90_paged_kv_cases();
  const auto outcomes =
      simt::run_simt_cases(cases, codegen::Target(90, true), codegen::FamilyRequest::sm90);
  REQUIRE(outcomes.size() == cases.size());
  for (const simt::SimtOutcome& outcome : outcomes) {
    INFO(outcome.name);
    INFO(outcome.describe());
    CHECK(outcome.name.ends_with(" sm90"));
    CHECK(outcome.config.paged_kv);
    CHECK(outcome.passed());
  }
}

// The persistent schedule over paged caches: a block's items are of several sequences, each read
// through its own row of the table.
TEST_CASE("emulated sm90 persistent: paged key/value caches match the reference", "[simt][sm90]") {
  const std::vector<KernelCase> cases = sm90_paged_kv_cases();
  check_sm90_persistent({cases[0], cases[2]}, 3);
}

// Variable-length sequences on the sm90 kernel of paged calls (dense keys: a call with a page
// table and tables runs on the sm80 family's): Q's box at each sequence's first packed row, K and
// V boxes at its first key row, and the rows of V past a sequence's count in its last tile cleared
// before P V (another sequence's keys, or NaN past a padded cache's count). The padded tensors are
// not readable where a case packs them, and the rows around the packed ones keep their poison.
// Each schedule finds the tile whose V it clears its own way (last_kept_tile): the last tile
// without a mask, the handoff word with one, the loop's count without the handoff; and without
// the overlap, before the tile's P V turn.
TEST_CASE("emulated sm90: variable-length sequences match the reference", "[simt][sm90]") {
  std::vector<KernelCase> cases;
  for (const KernelCase& c : varlen_cases()) {
    if (c.head_dim >= 64) cases.push_back(c);
  }
  REQUIRE(cases.size() == 6);  // two over paged caches
  // `overlap`: the schedule the kernels must have, where the section says.
  const auto check = [](const std::vector<KernelCase>& run, const simt::SimtLaunchOptions& options,
                        std::optional<bool> overlap) {
    const auto outcomes =
        simt::run_simt_cases(run, codegen::Target(90, true), codegen::FamilyRequest::sm90, options);
    REQUIRE(outcomes.size() == run.size());
    for (const simt::SimtOutcome& outcome : outcomes) {
      INFO(outcome.name);
      INFO(outcome.describe());
      CHECK(outcome.name.ends_with(" sm90"));
      CHECK(outcome.config.paged_kv);
      if (overlap) CHECK(outcome.config.overlap == *overlap);
      CHECK(outcome.passed());
    }
    return outcomes;
  };
  SECTION("the shipped schedules, and 192-row blocks (the unmasked head-dim-64 default)") {
    KernelCase wide = cases[1];  // packed queries over a padded cache, NaN past each count
    wide.head_dim = 64;
    check(cases, {}, std::nullopt);
    CHECK(check({wide}, {}, true)[0].config.block_m == 192);
  }
  SECTION("without the tile handoff, and without the overlap") {
    // A masked call over a padded cache, NaN past each count: sequence 0's second key tile is
    // the one the loop's count must name.
    KernelCase padded_causal = cases[1];
    padded_causal.mask = "kv_idx <= q_idx + kv_len - q_len";
    codegen::KernelTuning no_handoff;
    no_handoff.sm90_handoff = false;
    check({cases[0], padded_causal}, {.tuning = no_handoff}, true);
    codegen::KernelTuning no_overlap;
    no_overlap.sm90_overlap = false;
    check({cases[0], cases[1]}, {.tuning = no_overlap}, false);
  }
}
