// One forward-kernel test case, described by its parameters, with fresh random inputs, outputs
// poisoned with NaN, and the check against the CPU reference (naive_attention). Executors run
// the kernel in between: the GPU (tests/gpu) or the SIMT emulator on the host (tests/simt).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnjit/variant_args.cuh"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"
#include "jit/variant_compiler.hpp"
#include "packed_sequences.hpp"
#include "paged_cache.hpp"
#include "testkit/error_anatomy.hpp"
#include "testkit/internal/compare.hpp"
#include "testkit/internal/random_inputs.hpp"

namespace attnjit::kernel_test {

struct TensorInput {
  std::string decl;                // "doc:int32[1]"
  std::vector<std::int32_t> ints;  // int32 tensors
  std::vector<float> floats;       // float32 tensors
  int dims[2] = {0, 1};
};

// An input element overwritten after the random fill: element (b, h, row, d) of q, k or v.
struct PlantedValue {
  char tensor;  // 'q', 'k' or 'v'
  int b, h, row, d;
  float value;  // NaN or inf, typically
};

struct KernelCase {
  std::string mask;                   // empty: "true"
  std::string score;                  // empty: "score"
  std::vector<std::string> params;    // "W:int"
  std::vector<std::int32_t> scalars;  // one per param, floats as bit patterns
  std::vector<TensorInput> tensors;
  DType dtype = DType::bf16;
  Layout layout = Layout::bhld;
  int head_dim = 64;
  AttentionShape shape;  // head_dim is overwritten with `head_dim`
  int row_padding = 0;
  bool with_lse = true;
  std::uint64_t seed = 1;
  float scale = 0.0f;
  std::vector<PlantedValue> planted;  // applied to the inputs after the random fill
  double tolerance_factor = 1.0;      // multiplies output_tolerance(dtype)
  bool managed = false;               // GPU only: buffers in managed memory
  void* stream = nullptr;             // GPU only: CUstream of the launch; null: legacy default
  // GPU only: the call captured into a CUDA graph on a stream of its own and the graph replayed
  // twice, each replay checked: after one plain call that loads the kernel (after_plain_call),
  // or with the capture the variant's first call (cold: the driver may refuse the load), or
  // through a runtime's Variant after its prepare and no call (after_prepare: the kernel the
  // variant chooses for the call, which on sm_90a may be another than its own).
  enum class Graph { none, after_plain_call, cold, after_prepare };
  Graph graph = Graph::none;
  // Split-KV slices (as ATTNJIT_SPLIT_KV: 1 never splits); unset: the heuristic's choice.
  std::optional<int> split_kv;
  // > 0: the kernel reads the keys and values from a paged cache of pages of this many rows
  // (paged_cache.hpp; the variant's paged kernel), the reference from the dense tensors; the
  // last unmapped_tail_pages pages of each sequence are -1 in the table (the mask must drop them).
  int page_size = 0;
  int unmapped_tail_pages = 0;
  // Variable-length sequences (packed_sequences.hpp; the sm80 family's kernel with the sequence
  // tables): shape.batch sequences of these counts, at most shape.q_len and kv_len. With
  // page_size the keys are the paged cache's, with kv_seq_lens.
  std::optional<SequenceOptions> sequences;

  std::string name() const;  // every parameter spelled out, for test output
};

struct CaseResult {
  reference::ErrorStats out;
  reference::ErrorStats lse;
  reference::Tolerance out_limit{};
  reference::Tolerance lse_limit{};
  std::int64_t padding_writes = 0;  // output elements outside the view that changed (must be 0)
  KernelOrigin origin = KernelOrigin::compiled;
  // Only for a failed case: where its wrong elements are (testkit/error_anatomy.hpp).
  std::string anatomy;
  // Only for a failed case with ATTNJIT_TEST_DUMP_DIR set: the dump written (failure_dump.hpp).
  std::string dump_path;
  bool passed() const;
  std::string describe() const;
};

std::int32_t float_bits(float value);
VariantSpec make_spec(const KernelCase& test_case);

// A case made concrete: expressions, host inputs (out and lse poisoned) and host args (tensor
// data in host memory). Holds pointers into itself: not copyable or movable.
struct PreparedCase {
  explicit PreparedCase(const KernelCase& test_case);
  PreparedCase(const PreparedCase&) = delete;
  PreparedCase& operator=(const PreparedCase&) = delete;

  const KernelCase& test_case;
  VariantSpec spec;
  expr::Expression mask, score;
  AttentionShape shape;
  reference::HostProblem problem;
  std::vector<std::byte> poisoned_out;  // problem.out's bytes before the call
  VariantArgs host_args{};
  std::unique_ptr<PagedCache> paged;  // the case's paged cache, when it has a page size
  std::unique_ptr<PackedSequences> packed;  // the case's sequence tables, when it has them

  // The buffers a kernel is launched with (host memory): the problem's, with the paged cache's
  // pools and table in place of the keys and values when the case has one, and the packed
  // sequences' tensors and tables when it has them. The check reads the problem's own (dense)
  // buffers.
  AttentionBuffers call_buffers();

  // Compares what the executor left in problem.out and `lse` (when the case asks for it): the
  // call's lse buffer as read back (for packed queries, packed->lse's order).
  CaseResult check(const std::vector<float>& lse);
};

}  // namespace attnjit::kernel_test
