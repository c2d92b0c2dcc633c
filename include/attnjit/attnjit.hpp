// C++ companion to attnjit.h: owning handles that call the matching destroy function, and a
// status turned into an exception for callers that use them.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

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

struct SignatureDeleter {
  void operator()(attnjit_signature* signature) const { attnjit_signature_destroy(signature); }
};
struct LoweredExpressionsDeleter {
  void operator()(attnjit_lowered_expressions* lowered) const {
    attnjit_lowered_expressions_destroy(lowered);
  }
};
struct ManifestDeleter {
  void operator()(attnjit_manifest* manifest) const { attnjit_manifest_destroy(manifest); }
};

using RuntimePtr = std::unique_ptr<attnjit_runtime, RuntimeDeleter>;
using VariantPtr = std::unique_ptr<attnjit_variant, VariantDeleter>;
using VariantInfoPtr = std::unique_ptr<attnjit_variant_info, VariantInfoDeleter>;
using CacheListPtr = std::unique_ptr<attnjit_cache_list, CacheListDeleter>;
using PrewarmReportPtr = std::unique_ptr<attnjit_prewarm_report, PrewarmReportDeleter>;
using SignaturePtr = std::unique_ptr<attnjit_signature, SignatureDeleter>;
using LoweredExpressionsPtr =
    std::unique_ptr<attnjit_lowered_expressions, LoweredExpressionsDeleter>;
using ManifestPtr = std::unique_ptr<attnjit_manifest, ManifestDeleter>;

// A failed call: its status and the message attnjit_last_error() gave.
class Error : public std::runtime_error {
 public:
  Error(attnjit_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  attnjit_status status() const { return status_; }

 private:
  attnjit_status status_;
};

// Throws Error(status, attnjit_last_error()) unless status is ATTNJIT_OK.
inline void check(attnjit_status status) {
  if (status != ATTNJIT_OK) throw Error(status, attnjit_last_error());
}

// The text of a call that fills a caller's buffer as attnjit_cache_path does (the length asked
// first, then the text and its NUL): `fill(buffer, capacity, &length)` makes that call, say
// attnjit_variant_launch_reason with its variant and arguments bound.
template <class Fill>
std::string sized_text(Fill&& fill) {
  std::size_t length = 0;
  // Note: asking for the length alone "fails" (the buffer is too small) but sets it; a real
  // failure fails the second call too.
  fill(nullptr, 0, &length);
  std::string text(length, '\0');
  check(fill(text.data(), length + 1, &length));
  return text;
}

}  // namespace attnjit::c
