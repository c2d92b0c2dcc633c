#include "launch_plan_text.hpp"

#include <fmt/format.h>

#include "printable.hpp"

namespace attnjit::cli {

std::string launch_plan_name(const attnjit_launch_plan& plan) {
  if (plan.backend == ATTNJIT_BACKEND_CPU) return "cpu reference";
  std::string name = fmt::format("{} {}", plan.kernel_family, plan.kernel);
  // Note: a split with no fixed slice size sizes each sequence's slices to its keys.
  if (plan.num_splits > 1) {
    name +=
        fmt::format(", {} slices{}", plan.num_splits, plan.split_tiles == 0 ? ", balanced" : "");
  }
  return name;
}

std::string describe_launch_plan(const attnjit_launch_plan& plan, const std::string& reason,
                                 const std::string& indent) {
  if (plan.backend == ATTNJIT_BACKEND_CPU) {
    return fmt::format("{}\n{}{}", launch_plan_name(plan), indent, printable(reason));
  }
  std::string text = fmt::format(
      "{} ({}): {}x{} tiles, {} warps, {} per SM; grid {}x{} of {} threads, {} B of shared "
      "memory",
      launch_plan_name(plan), plan.entry, plan.block_m, plan.block_n, plan.num_warps,
      plan.blocks_per_sm, plan.grid_x, plan.grid_y, plan.threads, plan.dynamic_smem_bytes);
  if (plan.summary_launches > 0) {
    text += fmt::format(", after {} summary launch{}", plan.summary_launches,
                        plan.summary_launches > 1 ? "es" : "");
  }
  return text + fmt::format("\n{}{}", indent, printable(reason));
}

}  // namespace attnjit::cli
