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
struct VariantInfoDeleter {
  void operator()(attnjit_variant_info* info) const { attnjit_variant_info_destroy(info); }
};
struct CacheListDeleter {
  void operator()(attnjit_cache_list* list) const { attnjit_cache_list_destroy(list); }
};
struct PrewarmReportDeleter {
  void operator()(attnjit_prewarm_report* report) const { attnjit_prewarm_report_destroy(report); }
};

using RuntimePtr = std::unique_ptr<attnjit_runtime, RuntimeDeleter>;
using VariantPtr = std::unique_ptr<attnjit_variant, VariantDeleter>;
using VariantInfoPtr = std::unique_ptr<attnjit_variant_info, VariantInfoDeleter>;
using CacheListPtr = std::unique_ptr<attnjit_cache_list, CacheListDeleter>;
using PrewarmReportPtr = std::unique_ptr<attnjit_prewarm_report, PrewarmReportDeleter>;

}  // namespace attnjit::c
