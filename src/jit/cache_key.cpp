#include "jit/cache_key.hpp"

#include <xxhash.h>

#include <cstdint>

#include <fmt/format.h>

#include "compile/nvrtc_compiler.hpp"

namespace attnjit {
namespace {

class Hasher {
 public:
  Hasher() : state_(XXH3_createState()) {
    if (state_ == nullptr) throw std::bad_alloc();
    XXH3_128bits_reset(state_);
  }
  ~Hasher() { XXH3_freeState(state_); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void add(std::string_view field) {
    const std::uint64_t size = field.size();
    XXH3_128bits_update(state_, &size, sizeof size);
    XXH3_128bits_update(state_, field.data(), field.size());
  }
  std::string hex() const {
    const XXH128_hash_t hash = XXH3_128bits_digest(state_);
    return fmt::format("{:016x}{:016x}", hash.high64, hash.low64);
  }

 private:
  XXH3_state_t* state_;
};

}  // namespace

KeyInputs current_key_inputs(std::string_view source, std::string_view arch, bool ptx) {
  const bool include_toolkit =
      nvrtc::templates_include_system_header() || nvrtc::includes_system_header(source);
  return KeyInputs{source,
                   embedded_templates(),
                   nvrtc::compile_options(arch, ptx, include_toolkit, /*for_key=*/true),
                   nvrtc::nvrtc_version(),
                   arch,
                   ptx};
}

std::string compute_key(const KeyInputs& inputs) {
  Hasher hasher;
  hasher.add("attnjit-key-v1");
  hasher.add(inputs.source);
  hasher.add(std::to_string(inputs.templates.size()));
  for (const EmbeddedFile& file : inputs.templates) {
    hasher.add(file.name);
    hasher.add(file.contents);
  }
  hasher.add(std::to_string(inputs.options.size()));
  for (const std::string& option : inputs.options) hasher.add(option);
  hasher.add(inputs.nvrtc_version);
  hasher.add(inputs.arch);
  hasher.add(inputs.ptx ? "ptx" : "cubin");
  return hasher.hex();
}

}  // namespace attnjit
