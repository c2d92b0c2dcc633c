// The cache key of a kernel: a 128-bit hash (XXH3-128, 32 hex digits) of everything that
// decides the bytes NVRTC produces. Taking every input explicitly lets tests vary each one.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compile/embedded_templates.hpp"

namespace attnjit {

struct KeyInputs {
  std::string_view source;                  // the generated kernel source
  std::span<const EmbeddedFile> templates;  // every header the source may include
  std::vector<std::string> options;         // NVRTC options as hashed (nvrtc::compile_options for_key)
  std::string_view nvrtc_version;           // "13.0"
  std::string_view arch;                    // "sm_90"
  bool ptx = false;
};

// Inputs for `source` compiled now: the embedded templates, the real options and NVRTC version.
KeyInputs current_key_inputs(std::string_view source, std::string_view arch, bool ptx);

// Every field is length-prefixed, so no two different inputs hash the same byte stream.
std::string compute_key(const KeyInputs& inputs);

}  // namespace attnjit
