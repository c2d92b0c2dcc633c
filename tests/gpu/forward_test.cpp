// The CUDA forward pass against the CPU reference, one table per concern. Every case names itself
// from its parameters (GpuCase::name) and carries its own error limit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "gpu_harness.hpp"
#include "runtime/cuda_memory.hpp"

using namespace attnjit;
using namespace attnjit::gpu_test;

namespace {

AttentionShape shape(int batch, int hq, int hkv, int lq, int lkv) {
  AttentionShape s;
  s.batch = batch;
  s.num_heads_q = hq;
  s.num_heads_kv = hkv;
  s.q_len = lq;
  s.kv_len = lkv;
  return s;
}

void check_cases(const std::vector<GpuCase>& cases) {
  for (const GpuCase& c : cases) {
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

GpuCase with(GpuCase c, DType dtype, Layout layout, int head_dim) {
  c.dtype = dtype;
  c.layout = layout;
  c.head_dim = head_dim;
  return c;
}

// Document ids over `len` positions in `documents` runs, sorted or shuffled.
TensorInput document_ids(int len, int documents, bool sorted, std::uint64_t seed) {
  TensorInput t;
  t.decl = "doc:int32[1]";
  t.dims[0] = len;
  t.ints.resize(len);
  for (int i = 0; i < len; ++i)
    t.ints[i] = static_cast<int>(static_cast<long>(i) * documents / len);
  if (!sorted) {
    std::mt19937_64 rng(seed);
    std::shuffle(t.ints.begin(), t.ints.end(), rng);
  }
  return t;
}

// The standard variants at one shape.
std::vector<GpuCase> mask_families(const AttentionShape& s) {
  std::vector<GpuCase> cases;
  GpuCase base;
  base.shape = s;
  auto add = [&](GpuCase c) { cases.push_back(std::move(c)); };
  add(base);  // no mask
  {
    GpuCase c = base;
    c.mask = "q_idx >= kv_idx";
    add(c);
  }
  {
    GpuCase c = base;
    c.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
    c.params = {"W:int"};
    c.scalars = {37};
    add(c);
  }
  {
    GpuCase c = base;
    c.mask = "kv_idx < prefix || q_idx >= kv_idx";
    c.params = {"prefix:int"};
    c.scalars = {19};
    add(c);
  }
  {
    const int len = std::max(s.q_len, s.kv_len);
    for (const bool sorted : {true, false}) {
      GpuCase c = base;
      c.mask = "doc[q_idx] == doc[kv_idx]";
      c.tensors = {document_ids(len, 3, sorted, 7)};
      add(c);
    }
  }
  {
    GpuCase c = base;
    c.score = "score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)";
    c.tolerance_factor = 2.0;
    add(c);
  }
  {
    GpuCase c = base;
    c.score = "cap * tanh(score / cap)";
    c.params = {"cap:float"};
    c.scalars = {float_bits(3.0f)};
    add(c);
  }
  {
    // A relative-position bias read from a 2-D tensor [num_heads, 64].
    GpuCase c = base;
    c.score = "score + bias[h, min(abs(q_idx - kv_idx), 63)]";
    TensorInput bias;
    bias.decl = "bias:float32[2]";
    bias.dims[0] = s.num_heads_q;
    bias.dims[1] = 64;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    bias.floats.resize(static_cast<std::size_t>(bias.dims[0]) * 64);
    for (float& value : bias.floats) value = uniform(rng);
    c.tensors = {bias};
    add(c);
  }
  return cases;
}

}  // namespace

TEST_CASE("masks and scores of the standard variants match the reference", "[gpu]") {
  for (const DType dtype : {DType::bf16, DType::fp16}) {
    for (const Layout layout : {Layout::bhld, Layout::blhd}) {
      std::vector<GpuCase> cases;
      for (GpuCase c : mask_families(shape(2, 4, 2, 129, 129))) {
        cases.push_back(with(c, dtype, layout, 64));
      }
      check_cases(cases);
    }
  }
}

TEST_CASE("odd and unequal lengths match the reference", "[gpu]") {
  const std::pair<int, int> lengths[] = {{1, 1},   {17, 17},   {129, 129}, {1000, 1000},
                                         {1, 129}, {17, 1000}, {1000, 17}, {129, 1}};
  for (const auto& [lq, lkv] : lengths) {
    std::vector<GpuCase> cases = mask_families(shape(1, 2, 2, lq, lkv));
    for (GpuCase& c : cases) c.seed = static_cast<std::uint64_t>(lq * 7919 + lkv);
    check_cases(cases);
  }
}

TEST_CASE("every head dim matches the reference", "[gpu]") {
  for (const int head_dim : {32, 64, 96, 128, 256}) {
    for (const DType dtype : {DType::bf16, DType::fp16}) {
      GpuCase causal;
      causal.mask = "q_idx >= kv_idx";
      causal.shape = shape(1, 2, 1, 200, 333);
      GpuCase noop;
      noop.shape = shape(2, 2, 2, 65, 65);
      noop.layout = Layout::blhd;
      check_cases(
          {with(causal, dtype, Layout::bhld, head_dim), with(noop, dtype, Layout::blhd, head_dim)});
    }
  }
}

TEST_CASE("GQA and MQA head grouping matches the reference", "[gpu]") {
  for (const int hkv : {8, 4, 2, 1}) {
    GpuCase c;
    c.mask = "q_idx >= kv_idx";
    c.score = "score + float(h % 3)";  // makes a wrong q-head to kv-head mapping visible
    c.shape = shape(2, 8, hkv, 100, 160);
    check_cases({c, with(c, DType::fp16, Layout::blhd, 128)});
  }
}

TEST_CASE("padded rows, explicit scale and lse on/off match the reference", "[gpu]") {
  for (const bool lse : {true, false}) {
    GpuCase c;
    c.mask = "q_idx >= kv_idx";
    c.shape = shape(2, 3, 3, 77, 91);
    c.row_padding = 8;  // poisoned with NaN: reading it would show
    c.with_lse = lse;
    c.scale = 0.3f;
    check_cases({c, with(c, DType::fp16, Layout::blhd, 96)});
  }
}

TEST_CASE("fully masked rows give zeros and an lse of -inf", "[gpu]") {
  GpuCase c;
  c.mask = "kv_idx + 20 <= q_idx";  // rows 0..19 keep nothing
  c.shape = shape(1, 2, 2, 150, 150);
  GpuCase none;
  none.mask = "q_idx < 0";  // nothing anywhere
  none.shape = shape(1, 1, 1, 33, 70);
  GpuCase odd_rows;
  odd_rows.mask = "q_idx % 2 == 0 && kv_idx <= q_idx";
  odd_rows.shape = shape(1, 1, 1, 129, 129);
  check_cases({c, none, odd_rows, with(c, DType::fp16, Layout::blhd, 128)});
}

TEST_CASE("changing parameters and tensors needs no recompilation", "[gpu]") {
  GpuCase c;
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
  GpuCase doc;
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
  GpuCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(300, 4, false, 9)};
  doc.shape = shape(1, 2, 2, 300, 300);

  SECTION("managed memory") {
    GpuCase c = doc;
    c.managed = true;
    check_cases({c});
  }
  SECTION("CU_STREAM_PER_THREAD, CU_STREAM_LEGACY and a created stream") {
    cuda::Stream created;
    std::vector<GpuCase> cases;
    for (void* stream : {static_cast<void*>(CU_STREAM_PER_THREAD),
                         static_cast<void*>(CU_STREAM_LEGACY), static_cast<void*>(created.get())}) {
      GpuCase c = doc;
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
        GpuCase c = doc;
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

// A reduced set for compute-sanitizer (memcheck, racecheck): small, but every code path.
TEST_CASE("sanitizer set: one case per path", "[gpu][sanitize]") {
  GpuCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(70, 3, false, 5)};
  doc.shape = shape(1, 2, 1, 70, 70);
  GpuCase window;
  window.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  window.params = {"W:int"};
  window.scalars = {9};
  window.shape = shape(1, 2, 2, 17, 130);
  window.row_padding = 8;
  GpuCase cap;
  cap.score = "cap * tanh(score / cap)";
  cap.params = {"cap:float"};
  cap.scalars = {float_bits(5.0f)};
  cap.shape = shape(2, 1, 1, 1, 33);
  check_cases({doc, window, with(cap, DType::fp16, Layout::blhd, 128),
               with(window, DType::bf16, Layout::blhd, 256)});
}
