// The CUDA backend end to end without a GPU: the fake libcuda (tests/fake_driver) stands in for the
// driver, and each launch it receives runs under the SIMT emulator from the kernel source the
// backend compiled. So these tests check what the GPU tests check, through the same harness
// (tests/gpu/gpu_harness.cpp): the checks before launch, the pointers, strides, grid, shared-memory
// opt-in, summary launches and the FwdParams the backend passes, and results against the CPU
// reference. What they cannot check is the real driver and hardware.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "attnjit/attnjit.h"
#include "codegen/variant_source.hpp"
#include "dispatch_support.hpp"
#include "runtime/cuda_backend.hpp"
#include "support/case_tables.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;
using namespace attnjit::dispatch_test;
using namespace attnjit::kernel_test;

TEST_CASE("fake device: the backend's launches compute the reference", "[dispatch]") {
  std::vector<KernelCase> cases;
  for (const KernelCase& c : mask_families(shape(1, 2, 1, 70, 150))) {
    cases.push_back(c);
    cases.push_back(with(c, DType::fp16, Layout::blhd, 128));
  }
  check_through_backend(cases);
}

TEST_CASE("fake device: GQA, padding, lse off, managed memory and streams", "[dispatch]") {
  KernelCase gqa;
  gqa.mask = "q_idx >= kv_idx";
  gqa.score = "score + float(h % 3)";
  gqa.shape = shape(2, 4, 2, 40, 90);
  KernelCase padded = gqa;
  padded.row_padding = 8;
  padded.with_lse = false;
  padded.scale = 0.3f;
  padded.layout = Layout::blhd;
  KernelCase managed = gqa;
  managed.managed = true;
  managed.head_dim = 256;
  cuda::Stream stream;
  KernelCase streamed = gqa;
  streamed.stream = stream.get();
  streamed.head_dim = 32;
  check_through_backend({gqa, padded, managed, streamed});
}

TEST_CASE("fake device: a mask reading a tensor launches its summary first", "[dispatch]") {
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(300, 4, false, 9)};
  doc.shape = shape(1, 1, 1, 300, 300);
  KernelCase plain;
  plain.mask = "q_idx >= kv_idx";
  plain.shape = doc.shape;
  const int before = device().launch_count();
  check_through_backend({doc});
  // Two summaries (doc read at q_idx and at kv_idx), then the forward kernel; on sm_90 each
  // after the first overlaps the one before (programmatic dependent launch), and the emulator
  // checked that neither read the kernel before's results ahead of its griddepcontrol.wait.
  CHECK(device().launch_count() - before == 3);
  CHECK(last_launches(3) == std::vector<std::string>{codegen::kSummaryEntry,
                                                     overlapped(codegen::kSummaryEntry),
                                                     overlapped(codegen::kForwardEntry)});
  const int middle = device().launch_count();
  check_through_backend({plain});
  CHECK(device().launch_count() - middle == 1);
  CHECK(last_launches(1) == std::vector<std::string>{codegen::kForwardEntry});

  // Captured into a graph (run_case: one plain call, the capture, two replays): the replays'
  // launches are plain, since programmatic ones are never made during a capture.
  KernelCase captured = doc;
  captured.graph = KernelCase::Graph::after_plain_call;
  check_through_backend({captured});
  CHECK(last_launches(3) == std::vector<std::string>{codegen::kSummaryEntry, codegen::kSummaryEntry,
                                                     codegen::kForwardEntry});

  // ATTNJIT_PDL=off: every launch waits for the one before, as on sm_80.
  const test::ScopedEnv off("ATTNJIT_PDL", "off");
  check_through_backend({doc});
  CHECK(last_launches(3) == std::vector<std::string>{codegen::kSummaryEntry, codegen::kSummaryEntry,
                                                     codegen::kForwardEntry});
}

TEST_CASE("fake device: the parameter check never asks past a kernel's last parameter",
          "[dispatch]") {
  // A document mask loads both kernels: the forward (1 parameter) and the summary (6).
  KernelCase doc;
  doc.mask = "doc[q_idx] == doc[kv_idx]";
  doc.tensors = {document_ids(90, 3, true, 1)};
  doc.shape = shape(1, 1, 1, 90, 90);
  const int launches_before = device().launch_count();
  check_through_backend({doc});
  CHECK(device().launch_count() >= launches_before + 2);
  CHECK(device().param_info_past_end() == 0);
}
