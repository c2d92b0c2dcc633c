// A call's launch plan (attnjit_variant_launch_plan) as the CLI prints it: which kernel ran and
// why (`attnjit run`), and a short name for a table column (`attnjit bench`).
#pragma once

#include <string>

#include "attnjit/attnjit.h"

namespace attnjit::cli {

// "sm90 short_rows", "sm80 decoding, 8 slices", "cpu reference".
std::string launch_plan_name(const attnjit_launch_plan& plan);

// Two lines, the first without indentation: the kernel, its tiles and grid; then `reason`, the
// whole one (attnjit_variant_launch_reason: the plan's own is cut at 256 characters).
std::string describe_launch_plan(const attnjit_launch_plan& plan, const std::string& reason,
                                 const std::string& indent);

}  // namespace attnjit::cli
