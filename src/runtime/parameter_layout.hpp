// The check of a kernel's parameter list: the offsets and sizes the driver reports
// (cuFuncGetParamInfo) against the ones the host's kernelParams point to. Pure, so that the rule
// is tested without a driver (tests/runtime/parameter_layout_test.cpp).
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace attnjit {

struct ParamSlot {
  std::size_t offset;
  std::size_t size;
};

// The first disagreement between `reported` and `host`, parameter by parameter, as a sentence;
// nullopt when they agree. Offsets count from parameter 0: the driver places an over-aligned
// first parameter after padding in its constant bank (on an H200 with driver 580, the sm90
// kernel's Sm90FwdParams, 64-byte aligned for its tensor maps, at offset 48), and kernelParams,
// one pointer per parameter, leaves that padding to the driver. What must agree is each size and
// the distance between parameters.
inline std::optional<std::string> parameter_layout_mismatch(std::span<const ParamSlot> host,
                                                            std::span<const ParamSlot> reported) {
  if (reported.size() != host.size()) {
    return fmt::format("the kernel reports {} parameter(s) where the host passes {}",
                       reported.size(), host.size());
  }
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (reported[i].offset < reported[0].offset) {
      return fmt::format("parameter {} is at offset {}, before parameter 0 (at {})", i,
                         reported[i].offset, reported[0].offset);
    }
    const std::size_t relative = reported[i].offset - reported[0].offset;
    if (relative != host[i].offset - host[0].offset || reported[i].size != host[i].size) {
      return fmt::format(
          "parameter {} is {} bytes at offset {} (relative to parameter 0) but the host passes "
          "{} bytes at offset {}",
          i, reported[i].size, relative, host[i].size, host[i].offset - host[0].offset);
    }
  }
  return std::nullopt;
}

}  // namespace attnjit
