// The kernel templates (kernels_templates/), embedded at build time.
#pragma once

#include <span>
#include <string_view>

namespace attnjit {

struct EmbeddedFile {
  std::string_view name;  // relative to kernels_templates/, e.g. "attnjit/fwd_params.cuh"
  std::string_view contents;
};

// Sorted by name.
std::span<const EmbeddedFile> embedded_templates();

}  // namespace attnjit
