// The driver tests point the process driver at a file that does not exist, so they behave the
// same on machines with and without an NVIDIA driver. Note: the process driver is loaded once;
// every test that touches it calls use_missing_driver() first, whatever order they run in.
#pragma once

#include <stdlib.h>

namespace attnjit::test_env {

constexpr const char* kMissingDriver = "/nonexistent/attnjit-test/libcuda.so.1";

inline void use_missing_driver() { setenv("ATTNJIT_CUDA_DRIVER", kMissingDriver, 1); }

}  // namespace attnjit::test_env
