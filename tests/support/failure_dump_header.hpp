// The JSON header of a failure dump (failure_dump.hpp) but for its `arrays` and `dropped`: the
// case's parameters, the error stats and anatomy, and the environment switches that chose the
// kernel (ATTNJIT_KERNEL_FAMILY, ATTNJIT_TUNE; null when unset).
#pragma once

#include <nlohmann/json.hpp>

#include "failure_dump.hpp"

namespace attnjit::kernel_test {

// Float values that JSON cannot hold (NaN, inf: planted inputs, float params) are written as
// text, as fmt prints them; NaN error stats become null.
nlohmann::json failure_dump_header(const FailureRecord& record);

}  // namespace attnjit::kernel_test
