// C++ companion to attnjit.h: owning handles that call the matching destroy function.
#pragma once

#include <memory>

#include "attnjit/attnjit.h"

namespace attnjit::c {

struct RuntimeDeleter {
  void operator()(attnjit_runtime* runtime) const { attnjit_runtime_destroy(runtime); }
};
struct VariantDeleter {
  void operator()(attnjit_variant* variant) const { attnjit_variant_destroy(variant); }
};

using RuntimePtr = std::unique_ptr<attnjit_runtime, RuntimeDeleter>;
using VariantPtr = std::unique_ptr<attnjit_variant, VariantDeleter>;

}  // namespace attnjit::c
