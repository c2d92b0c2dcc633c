#include "codegen/kernel_family.hpp"

#include <cstdlib>
#include <string_view>

#include "common/error.hpp"

namespace attnjit::codegen {

const char* kernel_family_name(KernelFamily family) {
  return family == KernelFamily::sm90 ? "sm90" : "sm80";
}

FamilyRequest family_request_from_environment() {
  const char* value = std::getenv("ATTNJIT_KERNEL_FAMILY");
  const std::string_view text = value == nullptr ? std::string_view() : std::string_view(value);
  if (text.empty() || text == "auto") return FamilyRequest::automatic;
  if (text == "sm80") return FamilyRequest::sm80;
  if (text == "sm90") return FamilyRequest::sm90;
  throw_error(Status::invalid_argument, "ATTNJIT_KERNEL_FAMILY is '{}'; choices: auto, sm80, sm90",
              text);
}

bool sm90_supports(DType dtype, int head_dim, const expr::Expression& /*mask*/,
                   const expr::Expression& /*score*/) {
  // Note: every mask and score: the sm90 kernel applies them with the SM80 kernel's own row math
  // and classifies key tiles the same way. Head dims must be whole 64-column TMA boxes and a
  // wgmma N (96 is neither a box multiple nor worth a third tile shape yet).
  const bool dtype_ok = dtype == DType::bf16 || dtype == DType::fp16;
  const bool head_dim_ok = head_dim == 64 || head_dim == 128 || head_dim == 256;
  return dtype_ok && head_dim_ok;
}

KernelFamily choose_kernel_family(const Target& target, DType dtype, int head_dim,
                                  const expr::Expression& mask, const expr::Expression& score,
                                  FamilyRequest request) {
  if (request == FamilyRequest::environment) request = family_request_from_environment();
  if (request == FamilyRequest::sm80) return KernelFamily::sm80;
  const bool hopper = target.sm == 90 && target.arch_specific;
  const bool supported = hopper && sm90_supports(dtype, head_dim, mask, score);
  if (request == FamilyRequest::sm90) return supported ? KernelFamily::sm90 : KernelFamily::sm80;
  return supported && kSm90VerifiedOnHardware ? KernelFamily::sm90 : KernelFamily::sm80;
}

}  // namespace attnjit::codegen
