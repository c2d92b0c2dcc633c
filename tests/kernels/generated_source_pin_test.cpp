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
  std::uint64_t hash;  // over every dtype, head dim, arch and family below, in that order
};

// Changed deliberately on 2026-11-26: the tile handoff became the default for masked sm90
// kernels, and the scale fold for unmasked 192-row blocks (noop, ALiBi at head dim 64); later
// that day ALiBi's row shift (codegen/factor_score.hpp).
constexpr Pin kPins[] = {
    {"noop", 0x541f17f92086fe31ull},           {"causal", 0xe6201e51316469d5ull},
    {"sliding_window", 0x0c2d38b2978499e9ull}, {"prefix_lm", 0x94cbc273f49c79fdull},
    {"document", 0x8efcd50cb2565a95ull},       {"alibi", 0x7a2e0d30447f8295ull},
    {"softcap", 0xf1188da07e4c83edull},
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
        using attnjit::codegen::FamilyRequest;
        using attnjit::codegen::Target;
        // Every arch with the family explicit (the environment must not change the pins), and
        // sm_90a with each family.
        const std::pair<Target, FamilyRequest> targets[] = {
            {Target(80), FamilyRequest::sm80},       {Target(86), FamilyRequest::sm80},
            {Target(89), FamilyRequest::sm80},       {Target(90), FamilyRequest::sm80},
            {Target(90, true), FamilyRequest::sm80}, {Target(90, true), FamilyRequest::sm90}};
        for (const auto& [target, family] : targets) {
          hash = fnv1a(attnjit::codegen::generate_kernel_source(v.mask, v.score, dtype, head_dim,
                                                                target, family)
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
