// The generated source of the standard variants, pinned by hash: the kernel cache key hashes this
// text, so a refactoring of the front end or the lowering that changes a byte would silently
// recompile every user's kernels. A deliberate change of the generated code updates the pins
// (the failure message prints the new values).
#include <cstdint>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "codegen/variant_source.hpp"
#include "standard_variants.hpp"

namespace {

std::uint64_t fnv1a(std::string_view text, std::uint64_t hash = 0xcbf29ce484222325ull) {
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

struct Pin {
  const char* variant;
  std::uint64_t hash;  // over every dtype, head dim and arch below, in that order
};

constexpr Pin kPins[] = {
    {"noop", 0x903cedca0be876e3ull},
    {"causal", 0x7f083f172f07cf5bull},
    {"sliding_window", 0x343f73cbd1ac37ebull},
    {"prefix_lm", 0xd5aceaedf2b8c91full},
    {"document", 0xf96b3ee37925290bull},
    {"alibi", 0xe9da32f5333c8913ull},
    {"softcap", 0x9bdb8a33549a589full},
};

}  // namespace

TEST_CASE("the generated source of every standard variant is pinned", "[kernels]") {
  const auto& variants = attnjit::test::standard_variants();
  REQUIRE(variants.size() == std::size(kPins));
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const auto& v = variants[i];
    std::uint64_t hash = fnv1a("");
    for (const attnjit::DType dtype : {attnjit::DType::bf16, attnjit::DType::fp16}) {
      for (const int head_dim : {64, 128}) {
        for (const int sm : {80, 86, 89, 90}) {
          hash = fnv1a(attnjit::codegen::generate_kernel_source(v.mask, v.score, dtype, head_dim, sm)
                           .source,
                       hash);
        }
      }
    }
    INFO(fmt::format("{{\"{}\", 0x{:016x}ull}},", v.name, hash));
    CHECK(v.name == kPins[i].variant);
    CHECK(hash == kPins[i].hash);
  }
}
