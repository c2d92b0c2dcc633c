// The kernel family choice (src/codegen/kernel_family.cpp): sm90 only on sm_90a, only for what
// the sm90 kernel implements, and by default only once it is verified on hardware.
#include <cstdlib>

#include <catch2/catch.hpp>

#include "codegen/kernel_family.hpp"
#include "common/error.hpp"
#include "expr/test_support.hpp"
#include "support/scoped_env.hpp"

using attnjit::DType;
using attnjit::codegen::choose_kernel_family;
using attnjit::codegen::FamilyRequest;
using attnjit::codegen::KernelFamily;
using attnjit::codegen::Target;
using attnjit::test::parse_mask;
using attnjit::test::parse_score;

namespace {

// ATTNJIT_KERNEL_FAMILY for one scope (nullptr: unset).
struct FamilyEnvironment : attnjit::test::ScopedEnv {
  explicit FamilyEnvironment(const char* value) : ScopedEnv("ATTNJIT_KERNEL_FAMILY", value) {}
};

KernelFamily noop_family(Target target, FamilyRequest request, DType dtype = DType::bf16,
                         int head_dim = 128) {
  return choose_kernel_family(target, dtype, head_dim, parse_mask(""), parse_score(""), request);
}

}  // namespace

TEST_CASE("the sm90 family needs the sm_90a target") {
  const Target sm90a(90, true);
  CHECK(noop_family(sm90a, FamilyRequest::sm90) == KernelFamily::sm90);
  CHECK(noop_family(Target(90), FamilyRequest::sm90) == KernelFamily::sm80);
  CHECK(noop_family(Target(80), FamilyRequest::sm90) == KernelFamily::sm80);
  CHECK(noop_family(Target(89), FamilyRequest::sm90) == KernelFamily::sm80);
}

TEST_CASE("the sm90 family only for head dims 64, 128, 256 and 16-bit inputs") {
  const Target sm90a(90, true);
  for (const int head_dim : {64, 128, 256}) {
    CHECK(noop_family(sm90a, FamilyRequest::sm90, DType::bf16, head_dim) == KernelFamily::sm90);
    CHECK(noop_family(sm90a, FamilyRequest::sm90, DType::fp16, head_dim) == KernelFamily::sm90);
  }
  for (const int head_dim : {32, 96}) {
    CHECK(noop_family(sm90a, FamilyRequest::sm90, DType::bf16, head_dim) == KernelFamily::sm80);
  }
  CHECK(noop_family(sm90a, FamilyRequest::sm90, DType::fp32, 128) == KernelFamily::sm80);
}

TEST_CASE("auto gives the sm90 kernel on sm_90a, verified on hardware") {
  const Target sm90a(90, true);
  CHECK(attnjit::codegen::kSm90VerifiedOnHardware);
  CHECK(noop_family(sm90a, FamilyRequest::automatic) == KernelFamily::sm90);
  // Not on plain sm_90 (no wgmma), nor where the sm90 kernel lacks the variant.
  CHECK(noop_family(Target(90, false), FamilyRequest::automatic) == KernelFamily::sm80);
  CHECK(noop_family(sm90a, FamilyRequest::automatic, DType::bf16, 96) == KernelFamily::sm80);
  CHECK(noop_family(sm90a, FamilyRequest::sm80) == KernelFamily::sm80);
}

TEST_CASE("ATTNJIT_KERNEL_FAMILY is the environment's request") {
  const Target sm90a(90, true);
  {
    const FamilyEnvironment env("sm90");
    CHECK(noop_family(sm90a, FamilyRequest::environment) == KernelFamily::sm90);
    // An explicit request wins over the environment.
    CHECK(noop_family(sm90a, FamilyRequest::sm80) == KernelFamily::sm80);
  }
  {
    const FamilyEnvironment env("sm80");
    CHECK(noop_family(sm90a, FamilyRequest::environment) == KernelFamily::sm80);
  }
  for (const char* automatic : {static_cast<const char*>(nullptr), "", "auto"}) {
    const FamilyEnvironment env(automatic);
    CHECK(attnjit::codegen::family_request_from_environment() == FamilyRequest::automatic);
  }
  const FamilyEnvironment env("sm100");
  try {
    noop_family(sm90a, FamilyRequest::environment);
    FAIL("expected an error");
  } catch (const attnjit::Error& e) {
    CHECK(e.status() == attnjit::Status::invalid_argument);
    CHECK(std::string(e.what()).find("auto, sm80, sm90") != std::string::npos);
  }
}

TEST_CASE("masks and scores run on the sm90 kernel too") {
  const Target sm90a(90, true);
  CHECK(choose_kernel_family(sm90a, DType::bf16, 128, parse_mask("kv_idx <= q_idx"),
                             parse_score(""), FamilyRequest::sm90) == KernelFamily::sm90);
  CHECK(choose_kernel_family(sm90a, DType::fp16, 64, parse_mask(""),
                             parse_score("30.0 * tanh(score / 30.0)"),
                             FamilyRequest::sm90) == KernelFamily::sm90);
}
