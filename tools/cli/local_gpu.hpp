// The arch of the local GPU, for commands whose --arch defaults to it.
#pragma once

#include <optional>
#include <string>

#include "common/error.hpp"
#include "common/log.hpp"
#include "runtime/cuda_backend.hpp"

namespace attnjit::cli {

// "sm_90" for the current device, or nullopt (with the reason at info level) when there is no
// driver, no device, or only devices below sm_80.
inline std::optional<std::string> local_gpu_arch() {
  try {
    return "sm_" + std::to_string(cuda::current_device().sm);
  } catch (const Error& e) {
    log().info("no local GPU: {}", e.what());
    return std::nullopt;
  }
}

}  // namespace attnjit::cli
