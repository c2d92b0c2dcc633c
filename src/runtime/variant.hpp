// A variant: parsed expressions plus what they are compiled for; runs forward passes on the
// runtime's backend.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnjit/variant_args.cuh"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"
#include "jit/variant_compiler.hpp"
#include "runtime/forward_plan.hpp"
#include "runtime/runtime.hpp"
#include "runtime/short_rows.hpp"

namespace attnjit {

// A per-call tensor as the caller passes it; rank and element type come from the signature.
struct TensorValue {
  const void* data = nullptr;
  std::int64_t dims[2] = {0, 1};
};

struct ForwardCall {
  AttentionShape shape;  // head_dim is the variant's
  AttentionBuffers buffers;
  std::vector<std::int32_t> scalars;  // one per declared parameter (floats as bit patterns)
  std::vector<TensorValue> tensors;   // one per declared tensor
  void* stream = nullptr;             // CUstream, CUDA backend only
};

// Which of a variant's kernels runs a call (Variant::launch_plan, Variant::forward).
enum class KernelRole {
  standard,      // the variant's kernel for the device's arch (ATTNJIT_TUNE applied)
  tma_fallback,  // an sm90 variant's call that TMA cannot load: the sm80 kernel
  decoding,      // an sm90 variant's decoding call: the sm80 kernel, which splits and packs
  split_kv,      // an sm90 variant's call of too few query tiles: the sm90 split kernel
  short_rows,    // the short-rows kernel (codegen/short_rows.hpp)
  paged_kv,      // a call with a paged key/value cache: a kernel with the page table
  varlen,        // variable-length sequences: a kernel of paged calls, with the sequence tables
};
const char* kernel_role_name(KernelRole role);  // "standard", "tma_fallback", ...

struct KernelChoice {
  std::shared_ptr<const KernelBinary> binary;
  KernelRole role = KernelRole::standard;
  std::string why;  // for a person; filled only when asked for (launch_plan)
};

// What Variant::forward launches for a call, without launching it.
struct CallPlan {
  Backend backend = Backend::cpu;
  KernelChoice kernel;   // CUDA only
  ForwardLaunch launch;  // CUDA only: grid, decoding (packing, splits, entry), summaries
};

class Variant {
 public:
  // Parses and type-checks; throws Error(parse) or Error(invalid_argument).
  Variant(Runtime& runtime, VariantSpec spec);

  const VariantSpec& spec() const { return spec_; }
  const expr::Expression& mask() const { return parsed_.mask; }
  const expr::Expression& score() const { return parsed_.score; }
  // The decoding switches its calls use: the environment's when the variant was created.
  const LaunchChoices& launch_choices() const { return launch_choices_; }

  // Every kernel a call may run on the runtime's device, compiled (or found in the cache) and
  // loaded into the current context, so that no call after it compiles or loads (a CUDA graph
  // capture may start at once): the variant's kernel and, where that is the sm90 kernel, the
  // sm80 kernel that decoding steps and strides TMA cannot load run on, the sm90 split kernel
  // (unless a schedule tuning bars it), and the short-rows kernel where the variant has one.
  // No-op on the CPU backend.
  void prepare();
  // The same for the kernels of calls with a paged key/value cache (AttentionBuffers::kv_pages)
  // or variable-length sequences (AttentionBuffers::sequences; on sm_90a also their split kernel),
  // which prepare() leaves alone:
  // only serving programs need them. No-op on the CPU backend.
  void prepare_paged();
  void forward(const ForwardCall& call);
  // What forward(call) would launch and why, after the same checks of the shape, dtype and
  // per-call values (not of the buffers' memory, which only a launch can check); compiles or
  // loads the kernels the choice needs, as forward would. The short-rows rule remembers the
  // decision, so a plan and the forward call after it agree.
  CallPlan launch_plan(const ForwardCall& call);

  // Checks the per-call values against the signature and packs them as the kernels read them.
  VariantArgs pack_args(const ForwardCall& call) const;

 private:
  std::shared_ptr<const KernelBinary> kernel();
  // The sm80-family kernel for the same arch: what calls the sm90 kernel's TMA cannot load run.
  std::shared_ptr<const KernelBinary> sm80_kernel();
  // The kernel of calls with a paged key/value cache (codegen::Schedule::paged_kv) in `family`
  // (sm80: on every arch; sm90: where the variant's kernel is the sm90 kernel).
  std::shared_ptr<const KernelBinary> paged_kernel(codegen::FamilyRequest family);
  // Whether the variant's kernel on the runtime's device is the sm90 kernel (without compiling it;
  // decided once).
  bool served_by_sm90();
  // Why the sm90 family's kernel of paged calls does not take a paged or variable-length call of
  // an sm90-family variant (empty: it takes it): keys TMA cannot load, a decoding step (packed
  // queries never are one), or sequence tables on persistent blocks, which do not read them.
  std::string sm90_paged_barred(const AttentionShape& shape, const AttentionBuffers& buffers);
  // choose_kernel for a call with a paged cache or sequence tables (both run on the kernel of
  // paged calls): the sm90 family's where sm90_paged_barred finds nothing, else the sm80
  // family's.
  KernelChoice choose_paged_kernel(const AttentionShape& shape, const AttentionBuffers& buffers,
                                   bool explain);
  // That kernel's configuration, without compiling it (what decides a call's split-KV).
  codegen::KernelConfig sm80_config();
  // How a call of an sm90-family variant whose query tiles may not fill the GPU runs: on the
  // sm90 split kernel (`paged`: of paged and variable-length calls) where that packs its GQA
  // group (sm90_pack_group) and can be had (split_kernel_or_null); else on the sm80 kernel where
  // that kernel's decoding entry takes it or packs its GQA group (a decoding step;
  // runtime/forward_plan.hpp); else on the sm90 split kernel where that splits its keys; else on
  // the sm80 kernel where only that one splits them (the split kernel barred); else as any call.
  enum class SmallGrid { none, sm80_decoding, sm90_split };
  SmallGrid small_grid_route(const AttentionShape& shape, bool paged);
  // The sm90 kernel of split calls (codegen::Schedule::split_kv; paged: paged_split_kv).
  std::shared_ptr<const KernelBinary> split_kernel(bool paged);
  // split_kernel(paged), or null (with a warning, once) when it cannot be had; later calls then
  // do not ask again (sm90_split_barred).
  std::shared_ptr<const KernelBinary> split_kernel_or_null(bool paged);
  // Why calls may not run on the sm90 split kernel (ATTNJIT_TUNE sets the schedule: the tuned
  // kernel serves every call; a split kernel could not be built), or null when they may.
  const char* sm90_split_barred();
  // The sm90 split kernel's configuration, without compiling it (what decides a call's split).
  codegen::KernelConfig sm90_split_config();
  // The GQA group the sm90 split kernel packs a call's query heads by (gqa_pack_group; several
  // queries), or 1 where it would not (or may not: ATTNJIT_PACK_GQA=off, sm90_split_barred).
  int sm90_pack_group(const AttentionShape& shape);
  // Whether a call with packed queries (sequence tables' q_starts) runs split on the sm90 split
  // kernel of paged calls: choose_packed_query_splits gives it slices and the kernel can be had.
  bool splits_packed_queries(const AttentionShape& shape, const AttentionBuffers& buffers);
  // The short-rows kernel (codegen/short_rows.hpp). A call runs on it only where the standard
  // kernel has one, neither ATTNJIT_SHORT_ROWS=off nor ATTNJIT_TUNE (a tuning of the schedule
  // names the kernel that serves every call; the watchdog alone goes into both) says otherwise,
  // and the rule picks it (choose_kernel).
  std::shared_ptr<const KernelBinary> short_rows_kernel();
  // short_rows_kernel(), or `standard` (with a warning, once) when it cannot be had.
  std::shared_ptr<const KernelBinary> short_rows_kernel_or(
      std::shared_ptr<const KernelBinary> standard);
  // Why the short-rows rule may not run a call on the short-rows kernel of a variant that has
  // one (ATTNJIT_SHORT_ROWS=off, a schedule tuning, a failed build), or null when it may.
  const char* short_rows_barred() const;
  // The kernel of a CUDA call that passed forward's host checks; `explain` fills the reason.
  KernelChoice choose_kernel(const AttentionShape& shape, const AttentionBuffers& buffers,
                             const VariantArgs& args, bool explain);
  // The checks both forward and launch_plan make; the call's shape (head dim set) and values.
  std::pair<AttentionShape, VariantArgs> checked_call(const ForwardCall& call) const;

  Runtime& runtime_;
  VariantSpec spec_;
  ParsedVariant parsed_;  // once, here: kernel requests and forward calls reuse it
  bool hooks_use_heads_;  // expressions_use_heads(parsed_)
  // Note: read once, not per call: three getenv cost 0.09 us of a call's 0.4-0.5 us of host work
  // (fake device, 2-core VM); ATTNJIT_TUNE is likewise read when the kernel is first needed.
  LaunchChoices launch_choices_;
  // Note: a lock per kernel, so that prepare can compile two of them at once.
  std::mutex kernel_mutex_;
  std::shared_ptr<const KernelBinary> kernel_;
  std::mutex sm80_mutex_;
  std::shared_ptr<const KernelBinary> sm80_kernel_;
  std::mutex paged_mutex_;
  std::shared_ptr<const KernelBinary> paged_kernel_;       // the sm80 family's
  std::shared_ptr<const KernelBinary> sm90_paged_kernel_;  // the sm90 family's
  std::mutex split_mutex_;
  std::shared_ptr<const KernelBinary> split_kernel_;        // dense calls
  std::shared_ptr<const KernelBinary> paged_split_kernel_;  // paged and variable-length calls
  std::once_flag served_by_sm90_once_;
  bool served_by_sm90_ = false;
  std::mutex config_mutex_;
  std::optional<codegen::KernelConfig> sm80_config_;
  std::optional<codegen::KernelConfig> sm90_split_config_;
  std::once_flag split_tuned_once_;
  bool split_tuned_ = false;  // ATTNJIT_TUNE changed the schedule (read once)
  std::atomic<bool> split_failed_{false};  // split_kernel threw: calls run as before it
  std::mutex short_rows_mutex_;
  std::shared_ptr<const KernelBinary> short_rows_kernel_;
  // ATTNJIT_TUNE changed the schedule when the standard kernel was first asked for.
  std::atomic<bool> tuned_{false};
  ShortRowsRule short_rows_rule_;
  std::atomic<bool> short_rows_failed_{false};  // short_rows_kernel threw: the rule is off
};

}  // namespace attnjit
