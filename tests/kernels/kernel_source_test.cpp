// Generated kernel source and tile configuration: deterministic text, refusals, limits.
#include <catch2/catch.hpp>

#include "attnjit/fwd_config.cuh"
#include "attnjit/sm90_fwd_config.cuh"
#include "codegen/variant_source.hpp"
#include "common/error.hpp"
#include "standard_variants.hpp"

using attnjit::DType;
using attnjit::Error;
using attnjit::Status;
namespace codegen = attnjit::codegen;

namespace {

const attnjit::test::StandardVariant& variant(const std::string& name) {
  for (const auto& v : attnjit::test::standard_variants()) {
    if (v.name == name) return v;
  }
  FAIL("no standard variant " << name);
  throw 0;
}

Status status_of(const std::function<void()>& call, std::string& message) {
  try {
    call();
  } catch (const Error& error) {
    message = error.what();
    return error.status();
  }
  return Status::ok;
}

}  // namespace

TEST_CASE("generated source is deterministic and names its slots", "[kernels]") {
  for (const auto& v : attnjit::test::standard_variants()) {
    INFO(v.name);
    const auto first = codegen::generate_kernel_source(v.mask, v.score, DType::bf16, 128, 80);
    const auto second = codegen::generate_kernel_source(v.mask, v.score, DType::bf16, 128, 80);
    CHECK(first.source == second.source);
    CHECK(first.source.find("struct AttnjitVariant") != std::string::npos);
    CHECK(first.source.find("#include \"attnjit/attention_fwd.cuh\"") != std::string::npos);
    CHECK(first.source.find(std::string("void __launch_bounds__(")) != std::string::npos);
    CHECK(first.source.find(codegen::kForwardEntry) != std::string::npos);
    CHECK(first.source.find(codegen::kSummaryEntry) != std::string::npos);
    const bool has_mask = first.source.find("kHasMask = true") != std::string::npos;
    CHECK(has_mask == !v.mask.is_constant_true());
    const bool has_score = first.source.find("kHasScore = true") != std::string::npos;
    CHECK(has_score == !v.score.is_identity());
    // Another dtype, head dim or arch is another text.
    CHECK(codegen::generate_kernel_source(v.mask, v.score, DType::fp16, 128, 80).source !=
          first.source);
    CHECK(codegen::generate_kernel_source(v.mask, v.score, DType::bf16, 64, 80).source !=
          first.source);
    CHECK(codegen::generate_kernel_source(v.mask, v.score, DType::bf16, 128, 90).source !=
          first.source);
  }
  const auto& noop = variant("noop");
  const auto kernel = codegen::generate_kernel_source(noop.mask, noop.score, DType::fp16, 64, 90);
  CHECK(kernel.source.find("kHasMask = false") != std::string::npos);
  CHECK(kernel.source.find("kHasScore = false") != std::string::npos);
  CHECK(kernel.source.find("attnjit::fp16_t") != std::string::npos);
}

TEST_CASE("generation refuses float32 and pre-Ampere arches", "[kernels]") {
  const auto& causal = variant("causal");
  std::string message;
  CHECK(status_of([&] {
          codegen::generate_kernel_source(causal.mask, causal.score, DType::fp32, 128, 80);
        }, message) == Status::unsupported);
  CHECK(message == "query, key and value must be bfloat16 or float16; got float32");
  CHECK(status_of([&] {
          codegen::generate_kernel_source(causal.mask, causal.score, DType::bf16, 128, 75);
        }, message) == Status::unsupported);
  CHECK(message.starts_with("attention kernels need compute capability 8.0 or newer; "));
  CHECK(status_of([&] { codegen::choose_kernel_config(90, DType::bf16, 80); }, message) ==
        Status::unsupported);
  CHECK(status_of([&] { codegen::choose_kernel_config(75, DType::fp16, 64); }, message) ==
        Status::unsupported);
}

TEST_CASE("tile configurations fit every arch's shared-memory limit", "[kernels]") {
  struct Arch {
    int sm;
    int limit;
  };
  const Arch arch = GENERATE(Arch{80, 163 * 1024}, Arch{86, 99 * 1024}, Arch{89, 99 * 1024},
                             Arch{90, 227 * 1024});
  for (int head_dim : {32, 64, 96, 128, 256}) {
    INFO("sm_" << arch.sm << " head_dim " << head_dim);
    CHECK(codegen::is_supported_head_dim(head_dim));
    for (DType dtype : {DType::bf16, DType::fp16}) {
      const auto config = codegen::choose_kernel_config(arch.sm, dtype, head_dim);
      CHECK(config.smem_bytes <= arch.limit);
      CHECK(config.smem_bytes == attnjit::forward_smem_bytes(head_dim, config.block_m,
                                                             config.block_n, config.num_stages));
      CHECK(config.num_stages >= 2);
      CHECK(config.block_m % (16 * config.num_warps) == 0);
      CHECK(config.block_n % 16 == 0);
    }
  }
  CHECK_FALSE(codegen::is_supported_head_dim(80));
  CHECK_FALSE(codegen::is_supported_head_dim(512));
}

TEST_CASE("sm90 configurations fit sm_90a's shared memory in whole 1024-byte tiles", "[kernels]") {
  for (const int head_dim : {64, 128, 256}) {
    INFO("head_dim " << head_dim);
    const auto config = codegen::sm90_kernel_config(head_dim);
    CHECK(config.family == codegen::KernelFamily::sm90);
    CHECK(config.block_m == 128);
    CHECK(config.num_warps == 12);
    CHECK(config.num_stages >= 2);
    CHECK(config.smem_bytes <= 227 * 1024);
    CHECK(config.smem_bytes == attnjit::sm90_forward_smem_bytes(head_dim, 128, config.block_n,
                                                                config.num_stages, false));
    // Every tile starts on a swizzle atom: [BLOCK_N or BLOCK_M] rows x 128-byte box rows.
    CHECK(config.block_n * 128 % 1024 == 0);
    CHECK(config.block_m * 128 % 1024 == 0);
    // N of S = Q K^T is block_n: a wgmma shape (multiple of 8, at most 256).
    CHECK((config.block_n % 8 == 0 && config.block_n <= 256));
  }
}

TEST_CASE("persistent sm90 configurations stage the output apart from Q where it fits",
          "[kernels]") {
  codegen::KernelTuning tuning;
  tuning.sm90_persistent = true;
  // Head dim -> bytes a persistent kernel adds: the Q empty barrier, plus an output staging area
  // of Q's size (128 rows x head dim x 2 bytes) at 64 and 128; at 256 it would not fit in 227 KB.
  const std::pair<int, int> added[] = {{64, 8 + 16384}, {128, 8 + 32768}, {256, 8}};
  for (const auto& [head_dim, bytes] : added) {
    INFO("head_dim " << head_dim);
    const auto plain = codegen::sm90_kernel_config(head_dim);
    const auto persistent = codegen::sm90_kernel_config(head_dim, tuning);
    CHECK(persistent.persistent);
    CHECK(persistent.smem_bytes - plain.smem_bytes == bytes);
    CHECK(persistent.smem_bytes <= 227 * 1024);
    CHECK(persistent.smem_bytes == attnjit::sm90_forward_smem_bytes(head_dim, 128,
                                                                    persistent.block_n,
                                                                    persistent.num_stages, true));
    CHECK(attnjit::sm90_output_staged_apart(head_dim, 128, persistent.block_n,
                                            persistent.num_stages, true) == (head_dim < 256));
  }
  // A third stage at head dim 128 leaves no room for the staging area: Q's space again.
  tuning.sm90_stages = 3;
  const auto deep = codegen::sm90_kernel_config(128, tuning);
  CHECK_FALSE(attnjit::sm90_output_staged_apart(128, 128, deep.block_n, 3, true));
  CHECK(deep.smem_bytes == attnjit::sm90_forward_smem_bytes(128, 128, deep.block_n, 3, false) + 8);
}

TEST_CASE("an sm90 variant's source instantiates the sm90 template with a grid-constant "
          "parameter", "[kernels]") {
  const auto& noop = variant("noop");
  const auto kernel = codegen::generate_kernel_source(noop.mask, noop.score, DType::bf16, 128,
                                                      codegen::Target(90, true),
                                                      codegen::FamilyRequest::sm90);
  CHECK(kernel.config.family == codegen::KernelFamily::sm90);
  CHECK(kernel.source.find("#include \"attnjit/attention_fwd_sm90.cuh\"") != std::string::npos);
  CHECK(kernel.source.find("#include \"attnjit/attention_fwd.cuh\"") == std::string::npos);
  CHECK(kernel.source.find("__launch_bounds__(384, 1)") != std::string::npos);
  CHECK(kernel.source.find("const __grid_constant__ attnjit::Sm90FwdParams params") !=
        std::string::npos);
  // The intra-warpgroup overlap is the default at every head dim (measured faster); a variant
  // without a mask gets FlashAttention-3's 176-key tiles at head dim 128 and 80-key tiles at 256,
  // one with a mask 128 and 64.
  CHECK(kernel.source.find("attnjit::attention_forward_sm90<AttnjitVariant, attnjit::bf16_t, 128, "
                           "128, 176, 2, attnjit::kSm90FeatureOverlap | 0u>(params);") !=
        std::string::npos);
  CHECK(kernel.source.find("sm90 schedule: intra-warpgroup overlap on, persistent off") !=
        std::string::npos);
  const auto wide_head = codegen::generate_kernel_source(noop.mask, noop.score, DType::bf16, 256,
                                                         codegen::Target(90, true),
                                                         codegen::FamilyRequest::sm90);
  CHECK(wide_head.source.find("attnjit::attention_forward_sm90<AttnjitVariant, attnjit::bf16_t, "
                              "256, 128, 80, 2, attnjit::kSm90FeatureOverlap | 0u>(params);") !=
        std::string::npos);
  const auto& causal = variant("causal");
  for (const auto& [head_dim, block_n] : {std::pair{128, 128}, std::pair{256, 64}}) {
    const auto masked = codegen::generate_kernel_source(causal.mask, causal.score, DType::bf16,
                                                        head_dim, codegen::Target(90, true),
                                                        codegen::FamilyRequest::sm90);
    CHECK(masked.config.block_n == block_n);
    CHECK(masked.config.overlap);
  }
  // Head dim 64: three consumer warpgroups without a mask, two with one.
  CHECK(codegen::generate_kernel_source(noop.mask, noop.score, DType::bf16, 64,
                                        codegen::Target(90, true), codegen::FamilyRequest::sm90)
            .config.block_m == 192);
  CHECK(codegen::generate_kernel_source(causal.mask, causal.score, DType::bf16, 64,
                                        codegen::Target(90, true), codegen::FamilyRequest::sm90)
            .config.block_m == 128);
  CHECK(kernel.source.find("sm_90a, kernel family: sm90") != std::string::npos);
  // The same variant on the sm80 family is another text, hence another cache key.
  const auto sm80 = codegen::generate_kernel_source(noop.mask, noop.score, DType::bf16, 128,
                                                    codegen::Target(90, true),
                                                    codegen::FamilyRequest::sm80);
  CHECK(sm80.config.family == codegen::KernelFamily::sm80);
  CHECK(sm80.source.find("sm_90a, kernel family: sm80") != std::string::npos);
}
