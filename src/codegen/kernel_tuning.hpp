// Tuning overrides for the forward kernels' configuration, for measuring alternatives on a GPU
// without rebuilding: ATTNJIT_TUNE="key=value,key=value". Each override changes the generated
// source (template arguments), hence the cache key, so tuned and default kernels never mix.
// The keys' ranges and kinds are one table, codegen/kernel_tuning_keys.def; what each key does
// is written once, in docs/TUNING.md (a test checks that it names every key).
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace attnjit::codegen {

struct KernelTuning {
#define ATTNJIT_TUNING_KEY(NAME, TYPE, KIND, LOW, HIGH, SCHEDULE) std::optional<TYPE> NAME;
#include "codegen/kernel_tuning_keys.def"
};

// Parses the ATTNJIT_TUNE syntax; throws Error(invalid_argument) naming the offending item for an
// unknown key, a missing '=', or a value out of its range. Empty text: no overrides.
KernelTuning parse_kernel_tuning(std::string_view text);

// ATTNJIT_TUNE read now (not cached: a benchmark may change it between calls).
KernelTuning kernel_tuning_from_environment();
// Whether `tuning` sets anything but the watchdog or the timeline (sm90_watchdog_ms,
// sm90_timeline: aids that leave the schedule as it is), and whether ATTNJIT_TUNE does: then the
// kernel it describes serves every call of a variant (no short-rows kernel beside it,
// codegen/short_rows.hpp).
bool changes_schedule(const KernelTuning& tuning);
bool schedule_tuning_requested();

// Every key ATTNJIT_TUNE knows, in the table's order (codegen/kernel_tuning_keys.def).
std::span<const std::string_view> tuning_key_names();

}  // namespace attnjit::codegen
