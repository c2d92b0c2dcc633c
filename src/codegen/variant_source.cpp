// The generated CUDA source of one kernel: a fixed skeleton whose only variable parts are named
// slots (hook bodies from lower_expr, flags, template arguments). Free text is never spliced.
#include "codegen/variant_source.hpp"

#include <fmt/format.h>

#include <string>

#include "attnjit/fwd_config.cuh"
#include "attnjit/sm90_fwd_config.cuh"
#include "codegen/lower_expr.hpp"
#include "codegen/lower_hooks.hpp"
#include "common/error.hpp"

namespace attnjit::codegen {
namespace {

// The expression as a one-line comment: control characters and backslashes (a trailing one
// would continue the comment onto the next line) become spaces.
std::string comment_text(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

const char* elem_type(DType dtype) {
  return dtype == DType::bf16 ? "attnjit::bf16_t" : "attnjit::fp16_t";
}

// `tuning` null: ATTNJIT_TUNE's overrides.
KernelConfig config_for(const expr::Expression& mask, const expr::Expression& score, DType dtype,
                        int head_dim, Target target, FamilyRequest family,
                        const KernelTuning* tuning) {
  const KernelFamily chosen = choose_kernel_family(target, dtype, head_dim, mask, score, family);
  const KernelTuning tuned = tuning != nullptr ? *tuning : kernel_tuning_from_environment();
  KernelConfig config = chosen == KernelFamily::sm90
                            ? sm90_kernel_config(head_dim, tuned, !mask.is_constant_true(),
                                                 score.calls_special_function())
                            : choose_kernel_config(target.sm, dtype, head_dim, tuned);
  config.score_row_shift = tuned.score_row_shift.value_or(true);
  config.sm80_safe_sources =
      chosen == KernelFamily::sm80 && tuned.sm80_safe_sources.value_or(false);
  return config;
}

// The sm80 family's kernel of paged and variable-length calls reads the sequence tables, whose
// per-block counts cost registers where they were tightest (ptxas, sm_80 and sm_90a, the standard
// variants): under head dim 32's two blocks per SM (128 registers) the masked kernels spilled 8-52
// bytes, so it promises one block; at head dim 256 the document kernel spilled 12-24 bytes in
// 64-key tiles, so its forward entry takes 32-key tiles (its decoding entry keeps its own). A
// tuning that sets these keeps its values.
void sequence_tables_tiles(int head_dim, const KernelTuning& tuning, KernelConfig& config) {
  if (head_dim <= 32 && !tuning.sm80_blocks_per_sm) config.blocks_per_sm = 1;
  if (head_dim == 256 && !tuning.sm80_block_n && config.block_n > 32) {
    config.block_n = 32;
    config.smem_bytes =
        forward_smem_bytes(head_dim, config.block_m, config.block_n, config.num_stages);
  }
}

}  // namespace

KernelConfig split_kernel_config(const expr::Expression& mask, const expr::Expression& score,
                                 DType dtype, int head_dim, Target target,
                                 const KernelTuning& tuning) {
  KernelConfig config =
      config_for(mask, score, dtype, head_dim, target, FamilyRequest::sm90, &tuning);
  if (config.family != KernelFamily::sm90 || config.persistent) {
    throw_error(Status::internal,
                "the sm90 split kernel needs the sm90 kernel in plain blocks; this variant on "
                "sm_{}{} gets the {} kernel{}",
                target.sm, target.arch_specific ? "a" : "", kernel_family_name(config.family),
                config.persistent ? " in persistent blocks" : "");
  }
  if (config.block_m == kSm90WideBlockM) {
    KernelTuning narrower = tuning;
    narrower.sm90_block_m = kSm90BlockM;
    config = config_for(mask, score, dtype, head_dim, target, FamilyRequest::sm90, &narrower);
  }
  config.split_kv = true;
  // Note: a split kernel keeps its block's words (sequence, balanced slice) past its layout. They
  // always fit where the layout did: a plain layout is whole 1024-byte tiles and 264 bytes of
  // barriers, so the 16 more bytes never cross sm_90a's limit (227 x 1024).
  config.smem_bytes =
      sm90_forward_smem_bytes(head_dim, config.block_m, config.block_n, config.num_stages,
                              config.persistent, config.p_in_smem, /*split_kv=*/true);
  return config;
}

namespace {

GeneratedKernel generate(const expr::Expression& mask, const expr::Expression& score, DType dtype,
                         int head_dim, Target target, FamilyRequest family,
                         const KernelTuning* tuning, bool paged_kv = false, bool split_kv = false) {
  if (dtype != DType::bf16 && dtype != DType::fp16) {
    throw_error(Status::unsupported, "query, key and value must be bfloat16 or float16; got {}",
                dtype_name(dtype));
  }
  if (target.sm < 80) {
    throw_error(Status::unsupported,
                "attention kernels need compute capability 8.0 or newer; got sm_{}", target.sm);
  }
  GeneratedKernel kernel;
  kernel.config =
      split_kv ? split_kernel_config(mask, score, dtype, head_dim, target,
                                     tuning != nullptr ? *tuning : kernel_tuning_from_environment())
               : config_for(mask, score, dtype, head_dim, target, family, tuning);
  kernel.config.paged_kv = paged_kv;
  if (paged_kv && kernel.config.family == KernelFamily::sm80) {
    sequence_tables_tiles(head_dim, tuning != nullptr ? *tuning : kernel_tuning_from_environment(),
                          kernel.config);
  }
  const KernelConfig& config = kernel.config;
  const bool sm90 = config.family == KernelFamily::sm90;
  const bool has_mask = !mask.is_constant_true();
  const bool has_score = !score.is_identity();

  std::string& s = kernel.source;
  s += "// Generated by attnjit: one attention variant, one dtype, head dim and tile configuration.\n";
  s += fmt::format("// mask:  {}\n", comment_text(mask.canonical()));
  s += fmt::format("// score: {}\n", comment_text(score.canonical()));
  s += fmt::format("// dtype: {}, head_dim: {}, sm_{}{}, kernel family: {}\n", dtype_name(dtype),
                   head_dim, target.sm, target.arch_specific ? "a" : "",
                   kernel_family_name(config.family));
  s += fmt::format(
      "// tiles: block_m {}, block_n {}, warps {}, stages {}, dynamic shared memory {} bytes\n",
      config.block_m, config.block_n, config.num_warps, config.num_stages, config.smem_bytes);
  if (config.decode_block_n > 0) {
    s += fmt::format(
        "// decoding entry tiles: block_m {}, block_n {}, warps {}, stages {}, dynamic shared "
        "memory {} bytes, {} blocks per SM\n",
        kDecodeBlockM, config.decode_block_n, kDecodeWarps, config.decode_stages,
        config.decode_smem_bytes, config.decode_blocks_per_sm);
  }
  if (sm90) {
    s += fmt::format(
        "// sm90 schedule: intra-warpgroup overlap {}, persistent {}{}{}{}{}{}{}{}{}\n",
        config.overlap ? "on" : "off", config.persistent ? "on" : "off",
        config.split_kv ? ", split keys" : "", config.p_in_smem ? ", P in shared memory" : "",
        config.tile_handoff ? ", tile handoff" : "",
        config.poly_exp2 > 0
            ? fmt::format(", {} of 8 exponentials on the FMA pipe", config.poly_exp2)
            : "",
        config.fold_m192 ? ", scale folded into the exponent" : "",
        config.blocks_per_sm == 2 ? ", two blocks per SM" : "",
        config.watchdog_ms > 0 ? fmt::format(", mbarrier watchdog {} ms", config.watchdog_ms) : "",
        config.timeline ? ", timeline stamps" : "");
    // Note: defined only when on, before sm90_barrier.cuh is included, so that the default
    // kernels' source (hence their cache keys) stays what it was before the watchdog existed.
    if (config.watchdog_ms > 0) {
      s += fmt::format("#define ATTNJIT_SM90_WATCHDOG_NS {}ull\n",
                       static_cast<long long>(config.watchdog_ms) * 1000000);
    }
  }
  // Note: defined only when asked for, so that the default kernels' source (hence their cache
  // keys) stays as it is.
  if (config.sm80_safe_sources) s += "#define ATTNJIT_SM80_SAFE_SOURCES 1\n";
  s += sm90 ? "#include \"attnjit/attention_fwd_sm90.cuh\"\n" : "#include \"attnjit/attention_fwd.cuh\"\n";
  s += "#include \"attnjit/expr_ops.cuh\"\n";
  s += "#include \"attnjit/tensor_summary.cuh\"\n";
  if (has_split_combine(config)) s += "#include \"attnjit/split_combine.cuh\"\n";
  s += "\n";

  s += "struct AttnjitVariant {\n";
  s += fmt::format("  static constexpr bool kHasMask = {};\n", has_mask ? "true" : "false");
  s += fmt::format("  static constexpr bool kHasScore = {};\n", has_score ? "true" : "false");
  // Note: declared only when on, so that the dense kernels' source (hence their cache keys) stays
  // as it was (attention_fwd.cuh, PagedKvOf).
  if (config.paged_kv) s += "  static constexpr bool kPagedKv = true;\n";
  // Note: the paged kernel also serves variable-length sequences (packed queries or keys,
  // per-sequence key counts: FwdParams::sequences), with a page table or without one.
  if (reads_sequence_tables(config)) s += "  static constexpr bool kSequenceTables = true;\n";
  s += "\n";
  s += lower_element_hooks(mask, score, config.score_row_shift);
  s += "\n";
  s += "  ATTNJIT_DEVICE static attnjit::TileClass classify(const attnjit::VariantArgs& args,\n"
       "                                                  const attnjit::TileBounds& tile) {\n";
  s += indent_member_body(lower_classify_body(mask));
  s += "  }\n";
  s += "};\n\n";

  if (sm90) {
    // Note: the tensor maps are read by TMA from the parameter space, so the argument must stay
    // there (__grid_constant__), not be copied to local memory.
    s += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({}, {})\n"
        "{}(const __grid_constant__ attnjit::Sm90FwdParams params) {{\n",
        config.num_warps * 32, config.blocks_per_sm, kForwardEntry);
    // Note: the P-in-shared-memory bit is written only when set, so that the default kernels'
    // source (hence their cache keys and the pinned sources) did not change when it came.
    std::string features =
        fmt::format("{} | {}", config.overlap ? "attnjit::kSm90FeatureOverlap" : "0u",
                    config.persistent ? "attnjit::kSm90FeaturePersistent" : "0u");
    if (config.p_in_smem) features += " | attnjit::kSm90FeaturePInSmem";
    if (config.tile_handoff) features += " | attnjit::kSm90FeatureTileHandoff";
    if (config.poly_exp2 > 0) {
      features += fmt::format(" | attnjit::sm90_poly_exp2_feature({})", config.poly_exp2);
    }
    if (config.fold_m192) features += " | attnjit::kSm90FeatureFoldM192";
    if (config.blocks_per_sm == 2) features += " | attnjit::kSm90FeatureTwoBlocksPerSm";
    if (config.timeline) features += " | attnjit::kSm90FeatureTimeline";
    if (config.split_kv) features += " | attnjit::kSm90FeatureSplitKv";
    s += fmt::format(
        "  attnjit::attention_forward_sm90<AttnjitVariant, {}, {}, {}, {}, {}, {}>(params);\n",
        elem_type(dtype), head_dim, config.block_m, config.block_n, config.num_stages, features);
  } else {
    s += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({}, {}) {}(const attnjit::FwdParams params) {{\n",
        config.num_warps * 32, config.blocks_per_sm, kForwardEntry);
    s += fmt::format("  attnjit::attention_forward<AttnjitVariant, {}, {}, {}, {}, {}, {}>(params);\n",
                     elem_type(dtype), head_dim, config.block_m, config.block_n, config.num_warps,
                     config.num_stages);
  }
  s += "}\n\n";
  s += fmt::format(
      "extern \"C\" __global__ void {}(const int* data, int len, int index_len, int granularity,\n"
      "                                        int* out_min, int* out_max) {{\n",
      kSummaryEntry);
  s += "  attnjit::tensor_summary(data, len, index_len, granularity, out_min, out_max);\n";
  s += "}\n";
  if (config.decode_block_n > 0) {
    s += fmt::format(
        "\nextern \"C\" __global__ void __launch_bounds__({}, {})\n"
        "{}(const attnjit::FwdParams params) {{\n",
        kDecodeWarps * 32, config.decode_blocks_per_sm, kDecodeEntry);
    s += fmt::format("  attnjit::attention_forward_decode<AttnjitVariant, {}, {}, {}, {}>(params);\n",
                     elem_type(dtype), head_dim, config.decode_block_n, config.decode_stages);
    s += "}\n";
  }
  if (has_split_combine(config)) {
    s += fmt::format(
        "\nextern \"C\" __global__ void __launch_bounds__(attnjit::kCombineThreads)\n"
        "{}(const attnjit::SplitCombineParams params) {{\n",
        kSplitCombineEntry);
    s += fmt::format("  attnjit::split_combine<{}, {}>(params);\n", elem_type(dtype), head_dim);
    s += "}\n";
  }
  return kernel;
}

}  // namespace

KernelConfig kernel_config_for(const expr::Expression& mask, const expr::Expression& score,
                               DType dtype, int head_dim, Target target, FamilyRequest family) {
  return config_for(mask, score, dtype, head_dim, target, family, nullptr);
}

KernelConfig kernel_config_for(const expr::Expression& mask, const expr::Expression& score,
                               DType dtype, int head_dim, Target target, FamilyRequest family,
                               const KernelTuning& tuning) {
  return config_for(mask, score, dtype, head_dim, target, family, &tuning);
}

GeneratedKernel generate_kernel_source(const expr::Expression& mask, const expr::Expression& score,
                                       DType dtype, int head_dim, Target target,
                                       FamilyRequest family) {
  return generate(mask, score, dtype, head_dim, target, family, nullptr);
}

GeneratedKernel generate_kernel_source(const expr::Expression& mask, const expr::Expression& score,
                                       DType dtype, int head_dim, Target target,
                                       FamilyRequest family, const KernelTuning& tuning) {
  return generate(mask, score, dtype, head_dim, target, family, &tuning);
}

GeneratedKernel generate_paged_kernel_source(const expr::Expression& mask,
                                             const expr::Expression& score, DType dtype,
                                             int head_dim, Target target, FamilyRequest family,
                                             const KernelTuning& tuning) {
  return generate(mask, score, dtype, head_dim, target, family, &tuning, /*paged_kv=*/true);
}

GeneratedKernel generate_split_kernel_source(const expr::Expression& mask,
                                             const expr::Expression& score, DType dtype,
                                             int head_dim, Target target, bool paged_kv,
                                             const KernelTuning& tuning) {
  return generate(mask, score, dtype, head_dim, target, FamilyRequest::sm90, &tuning, paged_kv,
                  /*split_kv=*/true);
}

}  // namespace attnjit::codegen
