// attnjit_variant_launch_plan: which kernel a forward call runs on, with what grid, and why,
// answered by the same choice attnjit_forward makes (runtime/variant.hpp, Variant::launch_plan).
#include <cstring>
#include <string_view>

#include "capi/boundary.hpp"
#include "codegen/kernel_family.hpp"

namespace {

using attnjit::capi::guarded;
using attnjit::capi::require;
using attnjit::capi::require_forward_args_version;
using attnjit::capi::require_version;

// Copies `text` into `out`, NUL-terminated; a text too long for it is cut and ends in "...", so
// that a reader knows there is more (attnjit_variant_launch_reason). The reasons are ASCII.
template <std::size_t N>
void copy_reason(std::string_view text, char (&out)[N]) {
  constexpr std::string_view kEllipsis = "...";
  static_assert(N > kEllipsis.size());
  if (text.size() < N) {
    std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
    return;
  }
  const std::size_t kept = N - 1 - kEllipsis.size();
  std::memcpy(out, text.data(), kept);
  std::memcpy(out + kept, kEllipsis.data(), kEllipsis.size());
  out[N - 1] = '\0';
}

constexpr std::string_view kCpuReason =
    "the CPU backend: the multi-threaded CPU reference runs the call";

void fill(const attnjit::CallPlan& plan, attnjit_launch_plan& out) {
  if (plan.backend == attnjit::Backend::cpu) {
    out.backend = ATTNJIT_BACKEND_CPU;
    out.kernel = "reference";
    copy_reason(kCpuReason, out.reason);
    return;
  }
  const attnjit::ForwardLaunch& launch = plan.launch;
  const attnjit::codegen::KernelConfig& config = launch.decoding.config;  // the launched entry's
  out.backend = ATTNJIT_BACKEND_CUDA;
  out.kernel_family = attnjit::codegen::kernel_family_name(plan.kernel.binary->config.family);
  out.kernel = attnjit::kernel_role_name(plan.kernel.role);
  out.entry = launch.entry;
  copy_reason(plan.kernel.why, out.reason);
  out.block_m = config.block_m;
  out.block_n = config.block_n;
  out.num_warps = config.num_warps;
  out.blocks_per_sm = config.blocks_per_sm;
  out.grid_x = launch.grid.grid_x;
  out.grid_y = launch.grid.grid_y;
  out.threads = launch.grid.threads;
  out.dynamic_smem_bytes = launch.grid.smem_bytes;
  out.gqa_group = launch.decoding.group;
  out.num_splits = launch.split.num_splits;
  out.split_tiles = launch.split.num_splits > 1 ? launch.split.split_tiles : 0;
  out.summary_launches = static_cast<int>(launch.summaries.launches.size());
  out.scratch_bytes = launch.scratch_bytes;
}

}  // namespace

extern "C" {

void attnjit_launch_plan_init(attnjit_launch_plan* plan) {
  if (plan == nullptr) return;
  std::memset(plan, 0, sizeof(*plan));
  plan->version = ATTNJIT_LAUNCH_PLAN_VERSION;
  plan->kernel_family = plan->kernel = plan->entry = "";
}

attnjit_status attnjit_variant_launch_plan(attnjit_launch_plan* out, attnjit_variant* variant,
                                           const attnjit_forward_args* args) {
  return guarded([&] {
    require(out, "out");
    require(variant, "variant");
    require(args, "args");
    require_version(out->version, ATTNJIT_LAUNCH_PLAN_VERSION, "attnjit_launch_plan");
    require_forward_args_version(args->version);
    const attnjit::CallPlan plan =
        variant->impl.launch_plan(attnjit::capi::to_call(*args, variant->impl.spec().head_dim));
    attnjit_launch_plan filled;
    attnjit_launch_plan_init(&filled);
    fill(plan, filled);
    *out = filled;  // Note: untouched on failure
  });
}

attnjit_status attnjit_variant_launch_reason(char* buffer, size_t capacity, size_t* length,
                                             attnjit_variant* variant,
                                             const attnjit_forward_args* args) {
  return guarded([&] {
    require(length, "length");
    require(variant, "variant");
    require(args, "args");
    require_forward_args_version(args->version);
    const attnjit::CallPlan plan =
        variant->impl.launch_plan(attnjit::capi::to_call(*args, variant->impl.spec().head_dim));
    const std::string_view reason =
        plan.backend == attnjit::Backend::cpu ? kCpuReason : std::string_view(plan.kernel.why);
    *length = reason.size();
    if (capacity <= reason.size()) {
      attnjit::throw_error(attnjit::Status::invalid_argument,
                           "the launch reason needs {} bytes with its NUL; the buffer has {}",
                           reason.size() + 1, capacity);
    }
    require(buffer, "buffer");
    std::memcpy(buffer, reason.data(), reason.size());
    buffer[reason.size()] = '\0';
  });
}

}  // extern "C"
