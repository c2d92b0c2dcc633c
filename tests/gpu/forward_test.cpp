// The CUDA forward pass against the CPU reference, one table per concern. Every case names itself
// from its parameters (KernelCase::name) and carries its own error limit.
#include <algorithm>
#include <cstdlib>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "codegen/kernel_tuning.hpp"
#include "codegen/short_rows.hpp"
#include "common/error.hpp"
#include "gpu_harness.hpp"
#include "support/case_tables.hpp"
#include "support/scoped_env.hpp"
#include "runtime/cuda_memory.hpp"

using namespace attnjit;
using namespace attnjit::gpu_test;
using namespace attnjit::kernel_test;

namespace {

void check_cases(const std::vector<KernelCase>& cases) {
  for (const KernelCase& c : cases) {
    INFO(c.name());
    try {
      const CaseResult result = run_case(c);
      INFO(result.describe());
      CHECK(result.passed());
    } catch (const Error& error) {
      FAIL_CHECK(fmt::format("{}: {} ({})", c.name(), error.what(), status_name(error.status())));
    }
  }
}

// A decoding step causal over its cache: query i sits at position kv_len - q_len + i.
KernelCase cache_step(AttentionShape s) {
  KernelCase step;
  step.mask = "kv_idx <= q_idx + P";
  step.params = {"P:int"};
  step.scalars = {s.kv_len - s.q_len};
  step.shape = s;
  return step;
}

}  // namespace

TEST_CASE("masks and scores of the standard variants match the reference", "[gpu][heavy]") {
  for (const DType dtype : {DType::bf16, DType::fp16}) {
    for (const Layout layout : {Layout::bhld, Layout::blhd}) {
      std::vector<KernelCase> cases;
      for (KernelCase c : mask_families(shape(2, 4, 2, 129, 129))) {
        cases.push_back(with(c, dtype, layout, 64));
      }
      check_cases(cases);
    }
  }
}

TEST_CASE("odd and unequal lengths match the reference", "[gpu][heavy]") {
  const std::pair<int, int> lengths[] = {{1, 1},   {17, 17},   {129, 129}, {1000, 1000},
                                         {1, 129}, {17, 1000}, {1000, 17}, {129, 1}};
  for (const auto& [lq, lkv] : lengths) {
    std::vector<KernelCase> cases = mask_families(shape(1, 2, 2, lq, lkv));
    for (KernelCase& c : cases) c.seed = static_cast<std::uint64_t>(lq * 7919 + lkv);
    check_cases(cases);
  }
}

TEST_CASE("every head dim matches the reference", "[gpu][heavy]") {
  for (const int head_dim : {32, 64, 96, 128, 256}) {
    for (const DType dtype : {DType::bf16, DType::fp16}) {
      KernelCase causal;
      causal.mask = "q_idx >= kv_idx";
      causal.shape = shape(1, 2, 1, 200, 333);
      KernelCase noop;
      noop.shape = shape(2, 2, 2, 65, 65);
      noop.layout = Layout::blhd;
      check_cases(
          {with(causal, dtype, Layout::bhld, head_dim), with(noop, dtype, Layout::blhd, head_dim)});
    }
  }
}

TEST_CASE("GQA and MQA head grouping matches the reference", "[gpu]") {
  for (const int hkv : {8, 4, 2, 1}) {
    KernelCase c;
    c.mask = "q_idx >= kv_idx";
    c.score = "score + float(h % 3)";  // makes a wrong q-head to kv-head mapping visible
    c.shape = shape(2, 8, hkv, 100, 160);
    check_cases({c, with(c, DType::fp16, Layout::blhd, 128)});
  }
}

TEST_CASE("padded rows, explicit scale and lse on/off match the reference", "[gpu]") {
  for (const bool lse : {true, false}) {
    KernelCase c;
    c.mask = "q_idx >= kv_idx";
    c.shape = shape(2, 3, 3, 77, 91);
    c.row_padding = 8;  // poisoned with NaN: reading it would show
    c.with_lse = lse;
    c.scale = 0.3f;
    check_cases({c, with(c, DType::fp16, Layout::blhd, 96)});
  }
}

// A positive scale is folded into the softmax's exponent; a negative one is applied first
// (fully kept tiles and the causal diagonal's partial ones).
TEST_CASE("a negative scale matches the reference", "[gpu]") {
  std::vector<KernelCase> cases = negative_scale_cases(shape(1, 2, 2, 256, 384));
  cases.push_back(with(cases[1], DType::fp16, Layout::blhd, 128));
  check_cases(cases);
}

// The score's row shift (codegen/factor_score.hpp; the default): per-row terms and multiples of
// kv_idx added once per row and key tile, at both head dims, and an ALiBi decoding step split
// into slices.
TEST_CASE("scores with a row shift match the reference", "[gpu]") {
  std::vector<KernelCase> cases = row_shift_cases(64);
  const std::vector<KernelCase> wide = row_shift_cases(128);
  cases.insert(cases.end(), {wide[0], wide[3], wide[7]});
  cases.push_back(row_shift_decoding_case());
  check_cases(cases);
}

TEST_CASE("fully masked rows give zeros and an lse of -inf", "[gpu]") {
  KernelCase c;
  c.mask = "kv_idx + 20 <= q_idx";  // rows 0..19 keep nothing
  c.shape = shape(1, 2, 2, 150, 150);
  KernelCase none;
  none.mask = "q_idx < 0";  // nothing anywhere
  none.shape = shape(1, 1, 1, 33, 70);
  KernelCase odd_rows;
  odd_rows.mask = "q_idx % 2 == 0 && kv_idx <= q_idx";
  odd_rows.shape = shape(1, 1, 1, 129, 129);
  check_cases({c, none, odd_rows, with(c, DType::fp16, Layout::blhd, 128)});
}

TEST_CASE("kept tiles past long stretches of empty ones are found", "[gpu]") {
  std::vector<KernelCase> cases = empty_stretch_cases();
  cases.push_back(with(cases[1], DType::fp16, Layout::blhd, 128));
  check_cases(cases);
}

// The sm80 family splits these (its heuristic for this GPU's SMs, or the case's forced count);
// the sm90 kernel runs them whole, as the backend does not split it.
TEST_CASE("split-KV decoding matches the reference", "[gpu]") {
  check_cases(split_kv_cases());
}

// The query heads of a GQA group packed as the rows of one block (the sm80 family; the sm90
// kernel runs them unpacked).
TEST_CASE("packed GQA decoding matches the reference", "[gpu]") {
  check_cases(gqa_decoding_cases());
}

// Launches of at most 32 rows: the sm80 family's decoding entry (32-row blocks of 2 warps).
TEST_CASE("the decoding entry matches the reference", "[gpu]") {
  check_cases(decode_entry_cases());
}

// ATTNJIT_DECODE_ENTRY=off: the same decoding steps on the forward entry's 128-row blocks,
// packed and split.
TEST_CASE("decoding on the forward entry matches the reference", "[gpu]") {
  const test::ScopedEnv off("ATTNJIT_DECODE_ENTRY", "off");
  std::vector<KernelCase> cases = gqa_decoding_cases();
  cases.push_back(split_kv_cases().front());
  check_cases(cases);
}

// Keys and values in a paged cache (shuffled pages, NaN pages unused, -1 slots behind the
// lengths): the variant's paged kernel of the run's family (the sm80 kernel's for pages of 1),
// decoding and prefill.
TEST_CASE("paged key/value caches match the reference", "[gpu]") { check_cases(paged_kv_cases()); }
// Prefills in pages the sm90 kernel loads box by box (pages of 8 to 256, head dims 64 to 256,
// 128- and 192-row blocks, a page's unused rows NaN): on the sm90 family, its paged kernel.
TEST_CASE("paged prefills in boxes of pages match the reference", "[gpu]") {
  check_cases(sm90_paged_kv_cases());
}

// Variable-length sequences (packed queries and keys, per-sequence key counts over padded and
// paged caches; varlen_cases): on the sm80 family's kernel with the sequence tables, either family.
TEST_CASE("variable-length sequences match the reference", "[gpu]") { check_cases(varlen_cases()); }

// Split decoding steps over ragged sequences (balanced_split_cases): their slices sized to each
// sequence's key count by the blocks themselves, merged through the slot table.
TEST_CASE("balanced split decoding steps match the reference", "[gpu]") {
  check_cases(balanced_split_cases());
}

// Hardware only ([large]: the fake device's emulator would take hours over its 256 x 512 tiles).
TEST_CASE("a serving-sized decoding step matches the reference", "[gpu][large]") {
  // 8 sequences, 32 query heads over 8, one query, 32K keys of a cache; and one sequence. Both
  // pack the 4 query heads of a group into one block (64 and 8 blocks), which the heuristic
  // then splits over the keys (to 2 and 16 slices on an H100's 132 SMs).
  KernelCase step = cache_step(shape(8, 32, 8, 1, 32768));
  step.head_dim = 128;
  KernelCase lone = step;
  lone.shape.batch = 1;
  check_cases({step, lone});
}

TEST_CASE("NaN and +inf inputs make exactly the rows they reach NaN", "[gpu]") {
  std::vector<KernelCase> cases = non_finite_inputs(64);
  for (const KernelCase& c : non_finite_inputs(128)) {
    cases.push_back(with(c, DType::fp16, Layout::blhd, 128));
  }
  check_cases(cases);
}

TEST_CASE("changing parameters and tensors needs no recompilation", "[gpu]") {
  KernelCase c;
  c.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  c.params = {"W:int"};
  c.shape = shape(1, 2, 2, 300, 300);
  c.scalars = {1};
  const CaseResult first = run_case(c);
  INFO(first.describe());
  CHECK(first.passed());
  for (const int window : {17, 64, 1000}) {
    c.scalars = {window};
    c.seed = static_cast<std::uint64_t>(window);
    const CaseResult next = run_case(c);
    INFO(c.name() << ": " << next.describe());
    CHECK(next.passed());
    CHECK(next.origin == KernelOrigin::memory);
  }
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.shape = shape(1, 2, 2, 257, 257);
  for (const int documents : {1, 5, 40}) {
    doc.tensors = {document_ids(257, documents, documents != 5, 3)};
    const CaseResult result = run_case(doc);
    INFO(doc.name() << ": " << result.describe());
    CHECK(result.passed());
  }
}

TEST_CASE("managed memory, streams and threads give the same results", "[gpu]") {
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(300, 4, false, 9)};
  doc.shape = shape(1, 2, 2, 300, 300);

  SECTION("managed memory") {
    KernelCase c = doc;
    c.managed = true;
    check_cases({c});
  }
  SECTION("CU_STREAM_PER_THREAD, CU_STREAM_LEGACY and a created stream") {
    cuda::Stream created;
    std::vector<KernelCase> cases;
    for (void* stream : {static_cast<void*>(CU_STREAM_PER_THREAD),
                         static_cast<void*>(CU_STREAM_LEGACY), static_cast<void*>(created.get())}) {
      KernelCase c = doc;
      c.stream = stream;
      cases.push_back(c);
    }
    check_cases(cases);
  }
  SECTION("two threads on their per-thread streams, summaries in separate workspaces") {
    // Note: different document counts per thread, so a workspace shared between the two
    // per-thread streams would hand one thread the other's summaries.
    std::vector<std::string> failures[2];
    auto worker = [&](int index) {
      for (int round = 0; round < 3; ++round) {
        KernelCase c = doc;
        c.tensors = {document_ids(300, index == 0 ? 2 : 30, index == 0, 17 + round)};
        c.seed = static_cast<std::uint64_t>(100 * index + round);
        c.stream = CU_STREAM_PER_THREAD;
        try {
          const CaseResult result = run_case(c);
          if (!result.passed()) failures[index].push_back(c.name() + ": " + result.describe());
        } catch (const std::exception& error) {
          failures[index].push_back(c.name() + ": " + error.what());
        }
      }
    };
    std::thread first(worker, 0), second(worker, 1);
    first.join();
    second.join();
    for (const auto& list : failures) {
      for (const std::string& failure : list) FAIL_CHECK(failure);
    }
  }
}

// A call captured into a CUDA graph (as an inference server captures its decoding step) and
// replayed twice: the scratch is the graph's own memory, no launch overlaps the one before
// during capture, and each replay recomputes the outputs (poisoned before it). A tensor mask
// (its summaries, then the forward kernel) and a split decoding step (the forward kernel, then
// the merge).
TEST_CASE("calls captured into a CUDA graph replay correctly", "[gpu]") {
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(300, 4, false, 9)};
  doc.shape = shape(1, 2, 2, 300, 300);
  doc.graph = KernelCase::Graph::after_plain_call;
  KernelCase step = cache_step(shape(1, 8, 2, 1, 600));
  step.split_kv = 3;
  step.graph = KernelCase::Graph::after_plain_call;
  KernelCase plain;
  plain.shape = shape(1, 2, 1, 70, 130);
  plain.graph = KernelCase::Graph::after_plain_call;
  check_cases({doc, with(step, DType::bf16, Layout::bhld, 128), plain});
}

// A call captured before its variant's kernel was ever loaded. A driver that forbids loading a
// module during a capture (the fake does; CUDA's lazy loading did) fails the call with what to
// do, and the same call works once made plainly first; one that allows it records the call.
TEST_CASE("a call captured before its kernel is loaded says what to do", "[gpu]") {
  KernelCase c;
  c.mask = "q_idx + 3 >= kv_idx";  // a variant no other case loads
  c.shape = shape(1, 2, 1, 40, 70);
  c.graph = KernelCase::Graph::cold;
  INFO(c.name());
  std::string refusal;
  CaseResult recorded;
  try {
    recorded = run_case(c);
  } catch (const Error& error) {
    CHECK(error.status() == Status::cuda);
    refusal = error.what();
  }
  if (refusal.empty()) {  // the driver loaded the kernel within the capture
    INFO(recorded.describe());
    CHECK(recorded.passed());
    return;
  }
  CHECK_THAT(refusal,
             Catch::Contains("capturing into a CUDA graph") && Catch::Contains("before capturing"));
  c.graph = KernelCase::Graph::after_plain_call;
  check_cases({c});
}

// A serving program prepares its variant, then captures its calls without a plain call first:
// prepare compiled and loaded every kernel a call may run, so the capture loads nothing. Through
// a runtime's Variant, which picks the kernel per call: on sm_90a a decoding step runs on the
// sm80 kernel (packed, split, then merged), a prefill on the variant's own (the Hopper kernel),
// a step over a paged cache on the paged kernel (prepared by prepare_paged).
TEST_CASE("a prepared variant's calls are captured into a CUDA graph at once", "[gpu]") {
  KernelCase step;
  step.mask = "kv_idx <= q_idx + kv_len - q_len && kv_idx % 9 != 4";  // no other case's variant
  step.shape = shape(1, 8, 2, 1, 700);
  step.split_kv = 3;
  step.graph = KernelCase::Graph::after_prepare;
  KernelCase prefill = step;
  prefill.shape = shape(1, 2, 1, 150, 150);
  prefill.split_kv.reset();
  KernelCase paged = step;
  paged.page_size = 16;
  check_cases({step, with(prefill, DType::fp16, Layout::blhd, 128), paged});
}

// Prefills of too few query tiles to fill the GPU, through a runtime's Variant (which picks the
// kernel per call): on sm_90a the sm90 split kernel, its slices from each query tile's first kept
// key tile, then the merge (elsewhere, or with ATTNJIT_KERNEL_FAMILY=sm80, the sm80 kernel's
// split). A chunk causal over a long cache (the heuristic's count), a window at the end of one
// (forced slices, some of them empty), soft-capping in fp16 at head dim 64 over GQA heads, head
// dim 256, and a chunk over a paged cache in pages of 24.
namespace {
std::vector<KernelCase> split_prefill_cases() {
  KernelCase chunk = cache_step(shape(1, 4, 1, 300, 9000));
  chunk.mask = "kv_idx <= q_idx + P && kv_idx % 13 != 5";
  chunk.graph = KernelCase::Graph::after_prepare;
  chunk.head_dim = 128;
  KernelCase window = cache_step(shape(1, 2, 2, 100, 5000));
  window.mask = "kv_idx <= q_idx + P && kv_idx + 700 > q_idx + P";
  window.split_kv = 9;
  window.graph = KernelCase::Graph::after_prepare;
  KernelCase softcap;
  softcap.score = "30.0 * tanh(score / 30.0)";
  softcap.dtype = DType::fp16;
  softcap.shape = shape(1, 8, 2, 64, 3000);
  softcap.graph = KernelCase::Graph::after_prepare;
  KernelCase wide = chunk;
  wide.head_dim = 256;
  wide.shape = shape(1, 2, 2, 200, 4000);
  wide.scalars = {4000 - 200};
  KernelCase paged = chunk;
  paged.page_size = 24;
  return {chunk, window, softcap, wide, paged};
}

// A few queries of a GQA group (a speculative tree's 24 tokens of 32 query heads over 4, a 40-token
// chunk of 4 heads a group in fp16 with soft-capping, 16 tokens of 16 heads a group over a paged
// cache, 24 tokens of groups of 7 in 126-row blocks): on sm_90a the sm90 split kernel with the
// group's heads packed into its rows (elsewhere the sm80 kernel, unpacked or on its decoding
// entry). Each through a Variant (after_prepare), which alone picks the split kernel: a plain
// case runs the variant's standard kernel, which never packs several queries.
std::vector<KernelCase> packed_split_cases() {
  KernelCase tree = cache_step(shape(1, 32, 4, 24, 9000));
  tree.mask = "kv_idx <= q_idx + P && kv_idx % 13 != 5";
  tree.head_dim = 128;
  tree.graph = KernelCase::Graph::after_prepare;
  KernelCase softcap = cache_step(shape(2, 8, 2, 40, 3000));
  softcap.score = "30.0 * tanh(score / 30.0)";
  softcap.dtype = DType::fp16;
  softcap.layout = Layout::blhd;
  softcap.graph = KernelCase::Graph::after_prepare;
  KernelCase paged = cache_step(shape(1, 16, 1, 16, 5000));
  paged.page_size = 24;
  paged.head_dim = 128;
  paged.graph = KernelCase::Graph::after_prepare;
  // Groups of 7 (Qwen2.5's 28 query heads over 4): blocks of 18 whole queries, 126 rows.
  KernelCase seven = cache_step(shape(2, 28, 4, 24, 6000));
  seven.head_dim = 128;
  seven.graph = KernelCase::Graph::after_prepare;
  // 73 queries of a group of 7: 511 rows in 5 blocks of 126 (4 of 128 would hold them), split.
  KernelCase seven_split = cache_step(shape(1, 28, 4, 73, 6000));
  seven_split.graph = KernelCase::Graph::after_prepare;
  return {tree, softcap, paged, seven, seven_split};
}

// Chunks and speculative steps over caches of their own lengths (kv_seq_lens), too few query
// tiles to fill the GPU: on sm_90a the sm90 split kernel's balanced slices (each sequence's keys
// cut by its own count), elsewhere the sm80 kernel's; and packed queries, split on sm_90a.
// Through a Variant, which routes them.
std::vector<KernelCase> ragged_split_cases() {
  KernelCase chunks;
  chunks.mask = "kv_idx <= q_idx + kv_len - q_len";
  chunks.shape = shape(4, 8, 8, 64, 20000);
  chunks.sequences = SequenceOptions{{64, 64, 64, 64}, {20000, 1500, 0, 9000}, false};
  chunks.graph = KernelCase::Graph::after_prepare;
  KernelCase draft;  // 24 draft tokens of 32:4 heads over paged caches
  draft.mask = "kv_idx <= q_idx + kv_len - q_len";
  draft.shape = shape(3, 32, 4, 24, 12000);
  draft.head_dim = 128;
  draft.page_size = 64;
  draft.sequences = SequenceOptions{{24, 24, 24}, {12000, 700, 5000}, false};
  draft.graph = KernelCase::Graph::after_prepare;
  KernelCase scored;  // no mask, a score of kv_len, fp16 [B, L, H, D]
  scored.score = "score - 0.001 * float(kv_len - 1 - kv_idx)";
  scored.shape = shape(2, 4, 4, 100, 8000);
  scored.dtype = DType::fp16;
  scored.layout = Layout::blhd;
  scored.sequences = SequenceOptions{{100, 100}, {8000, 300}, false};
  scored.graph = KernelCase::Graph::after_prepare;
  // A chunked prefill's packed queries (chunks of 512, 300 and 37) over caches of their own: on
  // sm_90a split in uniform slices, the partials and the merge in packed rows.
  KernelCase packed;
  packed.mask = "kv_idx <= q_idx + kv_len - q_len";
  packed.shape = shape(3, 8, 8, 512, 24000);
  packed.sequences = SequenceOptions{{512, 300, 37}, {24000, 9000, 3000}, true, false, 5};
  packed.graph = KernelCase::Graph::after_prepare;
  return {chunks, draft, scored, packed};
}
}  // namespace

// [large]: hardware sizes (the fake device's split chunks are the dispatch tests').
TEST_CASE("prefills of too few query tiles split their keys and match the reference",
          "[gpu][large]") {
  check_cases(split_prefill_cases());
}

TEST_CASE("a few queries of a GQA group run packed and match the reference", "[gpu][large]") {
  check_cases(packed_split_cases());
}

TEST_CASE("chunks over ragged caches split in balanced slices and match the reference",
          "[gpu][large]") {
  check_cases(ragged_split_cases());
}

// The short-rows kernel (codegen/short_rows.hpp: two blocks per SM with the tile handoff, for
// masked head-dim-64 calls whose rows keep few key tiles). run_case runs the kernel a variant's
// configuration gives, so this asks for that one by its tuning (the same source, hence the same
// kernel), added to the run's own (the sanitizers' watchdog). On the sm80 family the sm90 keys
// change nothing. In the sanitizer set too: two blocks share an SM, each with its ring.
TEST_CASE("the short-rows kernel matches the reference", "[gpu][sanitize]") {
  const std::string short_rows = "sm90_blocks_per_sm=2,sm90_handoff=1";
  const codegen::KernelTuning parsed = codegen::parse_kernel_tuning(short_rows);
  CHECK(parsed.sm90_blocks_per_sm == codegen::short_rows_tuning().sm90_blocks_per_sm);
  CHECK(parsed.sm90_handoff == codegen::short_rows_tuning().sm90_handoff);
  const char* run_tuning = std::getenv("ATTNJIT_TUNE");
  const std::string tuning = run_tuning != nullptr && *run_tuning != '\0'
                                 ? std::string(run_tuning) + "," + short_rows
                                 : short_rows;
  const test::ScopedEnv tune("ATTNJIT_TUNE", tuning.c_str());
  KernelCase window;
  window.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  window.params = {"W:int"};
  window.scalars = {100};
  window.shape = shape(1, 4, 2, 300, 300);
  KernelCase causal;
  causal.mask = "q_idx >= kv_idx";
  causal.shape = shape(2, 2, 1, 200, 260);
  KernelCase prefix;
  prefix.mask = "kv_idx < prefix || q_idx >= kv_idx";
  prefix.params = {"prefix:int"};
  prefix.scalars = {70};
  prefix.shape = shape(1, 3, 3, 257, 190);
  check_cases({window, with(window, DType::fp16, Layout::blhd, 64), causal,
               with(prefix, DType::fp16, Layout::bhld, 64)});
}

// A reduced set for compute-sanitizer (memcheck, racecheck): small, but every code path.
TEST_CASE("sanitizer set: one case per path", "[gpu][sanitize]") {
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(70, 3, false, 5)};
  doc.shape = shape(1, 2, 1, 70, 70);
  KernelCase window;
  window.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  window.params = {"W:int"};
  window.scalars = {9};
  window.shape = shape(1, 2, 2, 40, 130);  // over 32 rows: the forward entry
  window.row_padding = 8;
  KernelCase cap;
  cap.score = "cap * tanh(score / cap)";
  cap.params = {"cap:float"};
  cap.scalars = {float_bits(5.0f)};
  cap.shape = shape(2, 1, 1, 1, 33);
  // Two query tiles and more key tiles than the sm90 kernel's stages: its mbarrier ring wraps
  // and both consumer warpgroups take turns (ATTNJIT_KERNEL_FAMILY=sm90 under the sanitizers).
  KernelCase ring;
  ring.shape = shape(1, 2, 1, 200, 300);
  // The same with a mask that keeps four of five key tiles of the first query tile and all of
  // the second: the masked sm90 kernels' tile handoff, its words' ring wrapping too.
  KernelCase masked_ring;
  masked_ring.mask = "kv_idx <= q_idx + 300";
  masked_ring.shape = shape(1, 2, 1, 200, 600);
  // A decoding step, packed (4 query heads per block) and split into 3 slices: the decoding
  // entry, the partials' stores and the merge kernel (the sm80 family; the sm90 kernel runs it
  // whole). `cap` (one row) runs on the decoding entry unsplit.
  KernelCase step = cache_step(shape(1, 8, 2, 1, 600));
  step.split_kv = 3;
  // Paged caches (the paged kernel): per-row lookups in pages of 16 with -1 entries past each
  // sequence's length (zero-filled, never read), and a tile a lookup in pages of 64.
  // On the sm90 family, a prefill in pages of 16 (8 boxes a key tile, the tail maps).
  const std::vector<KernelCase> paged = paged_kv_cases();
  check_cases({paged[1], paged[2], sm90_paged_kv_cases()[0]});
  // Variable-length sequences: packed queries and keys with an empty sequence and one without
  // keys (the tables' loads, the block's early end, the counts in shared memory).
  check_cases({varlen_cases()[0]});
  // A chunk of too few query tiles through a Variant: on sm_90a the sm90 split kernel (its
  // partials' stores) and the merge from that kernel's module (2 blocks of 9 key tiles: split
  // in 2 on the fake device's 4 SMs too).
  KernelCase chunk = cache_step(shape(1, 1, 1, 130, 1200));
  chunk.graph = KernelCase::Graph::after_prepare;
  chunk.head_dim = 128;
  // 20 queries of 8 heads a group through a Variant: the split kernel's packed rows (Q's 5-d
  // box), 2 blocks.
  KernelCase packed = cache_step(shape(1, 8, 1, 20, 1200));
  packed.graph = KernelCase::Graph::after_prepare;
  // Two sequences' chunks over caches of 1200 and 300 keys through a Variant: on sm_90a the
  // split kernel's balanced slices (the slot search, its words past the layout, idle blocks).
  KernelCase ragged;
  ragged.mask = "kv_idx <= q_idx + kv_len - q_len";
  ragged.shape = shape(2, 1, 1, 40, 1200);
  ragged.sequences = SequenceOptions{{40, 40}, {1200, 300}, false};
  ragged.graph = KernelCase::Graph::after_prepare;
  check_cases({chunk, packed, ragged});
  check_cases({doc, window, with(cap, DType::fp16, Layout::blhd, 128),
               with(window, DType::bf16, Layout::blhd, 256), window_crossing_case(),
               with(ring, DType::bf16, Layout::bhld, 128),
               with(masked_ring, DType::bf16, Layout::bhld, 128),
               // Unmasked at head dim 64: the sm90 kernel's default 192-row blocks (three
               // consumer warpgroups, the scale folded), two query tiles of them.
               with(ring, DType::bf16, Layout::bhld, 64), step});
}
