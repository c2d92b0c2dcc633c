// Every standard variant x dtype x head dim x {sm_80, sm_90} compiles with NVRTC, and ptxas
// reports no spill and no stack frame for the forward, summary and split-KV merge kernels (and the
// decoding entry, where there is one); the same for the
// sm90 kernel on sm_90a, whose PTX must use wgmma and TMA, in its default and its persistent
// schedule; with three consumer warpgroups (block_m 192) the measured spills are listed. One
// TEST_CASE per head dim so that CTest runs them in parallel.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnjit/fwd_config.cuh"
#include "codegen/residency.hpp"
#include "codegen/short_rows.hpp"
#include "codegen/variant_source.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "expr/expression.hpp"
#include "standard_variants.hpp"

namespace codegen = attnjit::codegen;

namespace {

// What ptxas -v reported for one entry: no spills, no stack frame, at most `max_registers`.
void check_resources(const attnjit::ResourceUsage& usage, int max_registers) {
  CHECK(usage.spill_store_bytes == 0);
  CHECK(usage.spill_load_bytes == 0);
  CHECK(usage.stack_frame_bytes == 0);
  CHECK(usage.registers > 0);
  CHECK(usage.registers <= max_registers);
}

// The blocks per SM an entry was built for (its launch bound) fit an SM of `sm`: by registers as
// ptxas counted them, by shared memory and by threads; otherwise the registers ptxas was held to
// buy an occupancy the arch cannot give (and the runtime warns on such a device).
void check_residency(int sm, int threads, const attnjit::ResourceUsage& usage, int smem_bytes,
                     int blocks_per_sm) {
  const codegen::Residency residency =
      codegen::resident_blocks(sm, threads, usage.registers, smem_bytes);
  INFO("sm_" << sm << ": " << threads << " threads, " << usage.registers << " registers, "
             << smem_bytes << " B of shared memory; registers allow " << residency.by_registers
             << ", shared memory " << residency.by_shared_memory << ", threads "
             << residency.by_threads);
  CHECK(residency.blocks >= blocks_per_sm);
}

// `tuning`: ATTNJIT_TUNE's sm80 tile overrides (none by default); `variants` and `dtypes`: the
// standard manifest's variants in both dtypes unless given.
// `paged`: the sm80 kernels of paged calls (generate_paged_kernel_source), for sm_80 and sm_90a
// (where an H100's paged decoding steps run them).
void check_head_dim(int head_dim, const codegen::KernelTuning& tuning = {},
                    const std::vector<attnjit::test::StandardVariant>& variants =
                        attnjit::test::standard_variants(),
                    std::initializer_list<attnjit::DType> dtypes = {attnjit::DType::bf16,
                                                                    attnjit::DType::fp16},
                    bool paged = false) {
  for (const char* arch : {"sm_80", paged ? "sm_90a" : "sm_90"}) {
    const int sm = attnjit::nvrtc::arch_sm(arch);
    const codegen::Target target(sm, std::string_view(arch).ends_with('a'));
    for (attnjit::DType dtype : dtypes) {
      for (const auto& variant : variants) {
        const auto kernel =
            paged ? codegen::generate_paged_kernel_source(variant.mask, variant.score, dtype,
                                                          head_dim, target,
                                                          codegen::FamilyRequest::sm80, tuning)
                  : codegen::generate_kernel_source(variant.mask, variant.score, dtype, head_dim,
                                                    target, codegen::FamilyRequest::sm80, tuning);
        CHECK(kernel.config.paged_kv == paged);
        const auto compiled = attnjit::nvrtc::compile_program(kernel.source, arch, false);
        std::vector<const char*> entries = {codegen::kForwardEntry, codegen::kSummaryEntry,
                                            codegen::kSplitCombineEntry};
        // The decoding entry exactly where the decoding features are.
        CHECK((kernel.config.decode_block_n > 0) == attnjit::has_decoding_features(head_dim));
        if (kernel.config.decode_block_n > 0) entries.push_back(codegen::kDecodeEntry);
        for (const char* entry : entries) {
          INFO(variant.name << " " << attnjit::dtype_name(dtype) << " head_dim " << head_dim
                            << " " << arch << " " << entry << "\n"
                            << compiled.log);
          const auto found = compiled.resources.find(entry);
          REQUIRE(found != compiled.resources.end());
          check_resources(found->second, 255);
        }
        const auto& fwd = compiled.resources.find(codegen::kForwardEntry)->second;
        check_residency(sm, 32 * kernel.config.num_warps, fwd, kernel.config.smem_bytes,
                        kernel.config.blocks_per_sm);
        if (kernel.config.decode_block_n > 0) {
          const codegen::KernelConfig decode = codegen::decode_config(kernel.config);
          check_residency(sm, 32 * decode.num_warps,
                          compiled.resources.find(codegen::kDecodeEntry)->second,
                          decode.smem_bytes, decode.blocks_per_sm);
        }
        std::printf("%-15s %-9s hd %3d %s: %3d registers, %6d B dynamic smem (%d x %d, %d warps, "
                    "%d stages, %d per SM), spills %d/%d, stack %d\n",
                    variant.name.c_str(), std::string(attnjit::dtype_name(dtype)).c_str(),
                    head_dim, arch, fwd.registers, kernel.config.smem_bytes, kernel.config.block_m,
                    kernel.config.block_n, kernel.config.num_warps, kernel.config.num_stages,
                    kernel.config.blocks_per_sm, fwd.spill_store_bytes, fwd.spill_load_bytes,
                    fwd.stack_frame_bytes);
        if (kernel.config.decode_block_n > 0) {
          const auto& decode = compiled.resources.find(codegen::kDecodeEntry)->second;
          std::printf("%-15s %-9s hd %3d %s decode: %3d registers, %6d B dynamic smem (%d x %d, "
                      "%d stages, %d per SM)\n",
                      variant.name.c_str(), std::string(attnjit::dtype_name(dtype)).c_str(),
                      head_dim, arch, decode.registers, kernel.config.decode_smem_bytes,
                      attnjit::kDecodeBlockM, kernel.config.decode_block_n,
                      kernel.config.decode_stages, kernel.config.decode_blocks_per_sm);
        }
      }
    }
  }
}

// The sm90 kernel of `variant` for sm_90a, compiled: its PTX uses wgmma, TMA bulk tensor copies
// and setmaxnreg with the configuration's split (block_m 128: 240 registers for the consumers, 24
// for the producer; 192: 160 and 32), ptxas never serialises its wgmma, and its resources are
// printed. Null when the sm90 kernel does not implement the variant. `paged`: the kernel of
// paged calls, whose producer reads the page table (a shuffle hands each box its page). `split`:
// the kernel of split calls (generate_split_kernel_source), whose module has the merge too.
std::optional<attnjit::ResourceUsage> compile_sm90_kernel(
    const attnjit::test::StandardVariant& variant, attnjit::DType dtype, int head_dim,
    const codegen::KernelTuning& tuning, bool paged = false, bool split = false) {
  const codegen::Target target(90, true);
  if (split &&
      codegen::choose_kernel_family(target, dtype, head_dim, variant.mask, variant.score,
                                    codegen::FamilyRequest::sm90) != codegen::KernelFamily::sm90) {
    return std::nullopt;
  }
  const auto kernel =
      split   ? codegen::generate_split_kernel_source(variant.mask, variant.score, dtype, head_dim,
                                                      target, paged, tuning)
      : paged ? codegen::generate_paged_kernel_source(variant.mask, variant.score, dtype, head_dim,
                                                      target, codegen::FamilyRequest::sm90, tuning)
              : codegen::generate_kernel_source(variant.mask, variant.score, dtype, head_dim,
                                                target, codegen::FamilyRequest::sm90, tuning);
  if (kernel.config.family != codegen::KernelFamily::sm90) return std::nullopt;
  CHECK(kernel.config.paged_kv == paged);
  CHECK(kernel.config.split_kv == split);
  const auto compiled = attnjit::nvrtc::compile_program(kernel.source, "sm_90a", false);
  INFO(variant.name << " " << attnjit::dtype_name(dtype) << " head_dim " << head_dim
                    << (kernel.config.persistent ? " persistent" : "") << " block_m "
                    << kernel.config.block_m << "\n"
                    << compiled.log);
  const auto found = compiled.resources.find(codegen::kForwardEntry);
  REQUIRE(found != compiled.resources.end());
  const auto& usage = found->second;
  const auto merge = compiled.resources.find(codegen::kSplitCombineEntry);
  CHECK((merge != compiled.resources.end()) == split);
  if (merge != compiled.resources.end()) check_resources(merge->second, 255);
  // Note: ptxas allocates for the launch bound (65536 / threads / blocks per SM); setmaxnreg then
  // moves them within the block's pool, which must hold what the roles ask for, or the
  // consumers' setmaxnreg.inc would wait for registers that never come.
  const int threads = 32 * kernel.config.num_warps;
  const bool wide = kernel.config.block_m == 192;
  const bool narrow = kernel.config.block_m == 64;
  const bool two_per_sm = kernel.config.blocks_per_sm == 2;
  const int producer_registers = wide ? 32 : 24;
  const int consumer_registers = wide         ? 160
                                 : narrow     ? (two_per_sm ? 232 : 240)
                                 : two_per_sm ? 104
                                              : 240;
  CHECK(usage.registers > 0);
  CHECK(usage.registers <= 65536 / (threads * kernel.config.blocks_per_sm));
  check_residency(90, threads, usage, kernel.config.smem_bytes, kernel.config.blocks_per_sm);
  CHECK(usage.registers * threads >=
        128 * producer_registers + (threads - 128) * consumer_registers);
  // Note: ptxas serialises wgmma (a large slowdown, correct results) when it cannot prove the
  // accumulators untouched between issue and wait; it says so in the log.
  CHECK(compiled.log.find("Potential Performance Loss") == std::string::npos);
  const auto ptx_program = attnjit::nvrtc::compile_program(kernel.source, "sm_90a", true);
  const std::string ptx(ptx_program.image.begin(), ptx_program.image.end());
  CHECK(ptx.find("wgmma.mma_async.sync.aligned.m64n") != std::string::npos);
  CHECK(ptx.find("cp.async.bulk.tensor.4d") != std::string::npos);
  // Launched after the call's tensor summaries it may start early (grid_dependency.cuh).
  CHECK(ptx.find("griddepcontrol.wait") != std::string::npos);
  CHECK((ptx.find("shfl.sync.idx") != std::string::npos) == paged);
  CHECK(ptx.find(fmt::format("setmaxnreg.inc.sync.aligned.u32 {}", consumer_registers)) !=
        std::string::npos);
  CHECK(ptx.find(fmt::format("setmaxnreg.dec.sync.aligned.u32 {}", producer_registers)) !=
        std::string::npos);
  std::printf(
      "%-15s %-9s hd %3d sm_90a sm90%s%s%s%s: %3d registers, %6d B dynamic smem (%d x %d, "
      "%d warps, %d stages), spills %d/%d, stack %d\n",
      variant.name.c_str(), std::string(attnjit::dtype_name(dtype)).c_str(), head_dim,
      kernel.config.overlap ? " overlap" : "", kernel.config.persistent ? " persistent" : "",
      paged ? " paged" : "", split ? " split" : "", usage.registers, kernel.config.smem_bytes,
      kernel.config.block_m, kernel.config.block_n, kernel.config.num_warps,
      kernel.config.num_stages, usage.spill_store_bytes, usage.spill_load_bytes,
      usage.stack_frame_bytes);
  return usage;
}

// As compile_sm90_kernel, and ptxas reports no spills and no stack frame. False when the sm90
// kernel does not implement the variant.
bool check_sm90_kernel(const attnjit::test::StandardVariant& variant, attnjit::DType dtype,
                       int head_dim, const codegen::KernelTuning& tuning, bool paged = false,
                       bool split = false) {
  const auto usage = compile_sm90_kernel(variant, dtype, head_dim, tuning, paged, split);
  if (usage) {
    INFO(variant.name << " " << attnjit::dtype_name(dtype) << " head_dim " << head_dim);
    check_resources(*usage, 255);
  }
  return usage.has_value();
}

void check_sm90_head_dim(int head_dim) {
  for (attnjit::DType dtype : {attnjit::DType::bf16, attnjit::DType::fp16}) {
    for (const auto& variant : attnjit::test::standard_variants()) {
      // Note: ATTNJIT_TUNE's overrides, as the runtime would compile them.
      check_sm90_kernel(variant, dtype, head_dim, codegen::kernel_tuning_from_environment());
    }
  }
}

// The persistent schedule (ATTNJIT_TUNE=sm90_persistent=1) of the variants that differ in their
// work per item: none skipped, a triangle, tensor-driven empty items. Without the overlap (the
// default at head dims 64 and 128): with it, the causal kernel at 128 spills 16 bytes.
void check_sm90_persistent_head_dim(int head_dim) {
  codegen::KernelTuning tuning;
  tuning.sm90_persistent = true;
  tuning.sm90_overlap = false;
  int checked = 0;
  for (const auto& variant : attnjit::test::standard_variants()) {
    if (variant.name != "noop" && variant.name != "causal" && variant.name != "document") continue;
    checked += check_sm90_kernel(variant, attnjit::DType::bf16, head_dim, tuning) ? 1 : 0;
  }
  CHECK(checked == 3);
}

// The intra-warpgroup schedule (ATTNJIT_TUNE=sm90_overlap=1) of every standard variant: the next
// S, the current P and O live at once must still fit the consumers' 240 registers.
void check_sm90_overlap_head_dim(int head_dim) {
  codegen::KernelTuning tuning;
  tuning.sm90_overlap = true;
  for (attnjit::DType dtype : {attnjit::DType::bf16, attnjit::DType::fp16}) {
    for (const auto& variant : attnjit::test::standard_variants()) {
      CHECK(check_sm90_kernel(variant, dtype, head_dim, tuning));
    }
  }
}

// A schedule option's candidates (the variants the schedule sweep may pick it for) compile
// without spills; docs/KERNELS.md lists the others with their spills.
void check_sm90_spill_free(int head_dim, const codegen::KernelTuning& tuning,
                           std::initializer_list<std::string_view> names) {
  std::size_t checked = 0;
  for (const auto& variant : attnjit::test::standard_variants()) {
    if (std::find(names.begin(), names.end(), variant.name) == names.end()) continue;
    CHECK(check_sm90_kernel(variant, attnjit::DType::bf16, head_dim, tuning));
    ++checked;
  }
  CHECK(checked == names.size());
}

// Key tiles that are not a multiple of 64 (ATTNJIT_TUNE=sm90_block_n): the variants left out
// keep a tensor value or a hoisted score term per key column, so a wider tile costs them
// registers the S, P and O tiles need.
void check_sm90_block_n(int head_dim, int block_n, bool overlap,
                        std::initializer_list<std::string_view> names) {
  codegen::KernelTuning tuning;
  tuning.sm90_block_n = block_n;
  tuning.sm90_overlap = overlap;
  check_sm90_spill_free(head_dim, tuning, names);
}

// Three consumer warpgroups at 160 registers each (ATTNJIT_TUNE=sm90_block_m=192, head dim 64
// only) of every standard variant, without and with the intra-warpgroup overlap: the kernels
// listed here spill (ptxas -v, measured; docs/KERNELS.md lists them with their bytes), every other
// one must not. A listed kernel that no longer spills fails too, so that the list and the docs
// stay true.
const std::set<std::pair<std::string, bool>> kSpillingAtBlockM192 = {
    {"causal", false},
    {"document", false},
    {"prefix_lm", true},
    {"document", true},
};

void check_sm90_block_m_192(bool overlap) {
  codegen::KernelTuning tuning;
  tuning.sm90_block_m = 192;
  tuning.sm90_overlap = overlap;
  for (const auto& variant : attnjit::test::standard_variants()) {
    const auto usage = compile_sm90_kernel(variant, attnjit::DType::bf16, 64, tuning);
    REQUIRE(usage.has_value());
    INFO(variant.name << (overlap ? " overlap" : "") << ": spills " << usage->spill_store_bytes
                      << "/" << usage->spill_load_bytes << ", stack " << usage->stack_frame_bytes);
    const bool spills =
        usage->spill_store_bytes > 0 || usage->spill_load_bytes > 0 || usage->stack_frame_bytes > 0;
    CHECK(spills == (kSpillingAtBlockM192.count({variant.name, overlap}) == 1));
    CHECK(usage->registers == 128);  // 65536 / 512 at launch; setmaxnreg gives consumers 160
  }
}

}  // namespace

// The tile handoff (ATTNJIT_TUNE=sm90_handoff=1), for the masked variants it is for, with and
// without the overlap at the default tiles.
TEST_CASE("sm90 kernels with the tile handoff compile without spills", "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_handoff = true;
  for (const bool overlap : {false, true}) {
    tuning.sm90_overlap = overlap;
    for (const int head_dim : {64, 128}) {
      check_sm90_spill_free(head_dim, tuning,
                            {"causal", "sliding_window", "prefix_lm", "document"});
    }
  }
}

// Exponentials on the FMA pipe (ATTNJIT_TUNE=sm90_poly_exp2): the settings a sweep times, at the
// default tiles. Their temporaries compete with S, P and O for registers: soft-capping at head dim
// 128 with 176-key tiles spills from 3 of 8 on (28 bytes; 60 at 4), with 128-key tiles not up to 4.
TEST_CASE("sm90 kernels with exponentials on the FMA pipe compile without spills",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  for (const int eighths : {2, 4}) {
    tuning.sm90_poly_exp2 = eighths;
    check_sm90_spill_free(64, tuning, {"noop", "causal", "alibi", "softcap"});
  }
  tuning.sm90_poly_exp2 = 2;
  check_sm90_spill_free(128, tuning, {"noop", "causal", "document", "alibi", "softcap"});
  tuning.sm90_poly_exp2 = 4;
  tuning.sm90_block_n = 128;
  check_sm90_spill_free(128, tuning, {"softcap"});
}

// The scale folded in three-consumer blocks (ATTNJIT_TUNE=sm90_fold_m192=1) is for the unmasked
// variants, whose head-dim-64 default has 192 rows (the masked ones spilled with it: see
// AttentionForward::apply_scores), alone and with exponentials on the FMA pipe.
TEST_CASE("sm90 192-row kernels with the scale folded compile without spills",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_fold_m192 = true;
  for (const int eighths : {0, 2}) {
    tuning.sm90_poly_exp2 = eighths;
    check_sm90_spill_free(64, tuning, {"noop", "alibi", "softcap"});
  }
}

// FlashAttention-3's masked head-dim-64 shape, three consumers, with 96-key tiles
// (ATTNJIT_TUNE=sm90_block_m=192,sm90_block_n=96,sm90_handoff=1,sm90_fold_m192=1): a 96-key S
// and P leave the 160-register consumers room for the mask, the handoff and the folded scale,
// where 128 keys spill 4-220 bytes (docs/PERFORMANCE.md, "Seventeenth session"). The masked
// D=64 candidate the schedule sweep times, in both dtypes.
TEST_CASE("sm90 192 x 96 kernels with the handoff and the fold compile without spills",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_block_m = 192;
  tuning.sm90_block_n = 96;
  tuning.sm90_handoff = true;
  tuning.sm90_fold_m192 = true;
  for (const auto& variant : attnjit::test::standard_variants()) {
    for (attnjit::DType dtype : {attnjit::DType::bf16, attnjit::DType::fp16}) {
      CHECK(check_sm90_kernel(variant, dtype, 64, tuning));
    }
  }
}

// FlashAttention-3's causal tile at head dim 64, 192 x 128, with the handoff (with and without the
// fold), and 192 x 112 for every mask: spill-free since masked three-consumer kernels with the
// handoff take the GEMM turns' barrier ids anew at each turn (causal spilled the id, 4 bytes).
// The sweep's candidates for the masked head-dim-64 default beside 192 x 96.
TEST_CASE("sm90 192-row masked kernels with the handoff compile without spills",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_block_m = 192;
  tuning.sm90_handoff = true;
  for (const bool fold : {false, true}) {
    tuning.sm90_fold_m192 = fold;
    check_sm90_spill_free(64, tuning, {"causal"});
  }
  tuning.sm90_block_n = 112;
  for (attnjit::DType dtype : {attnjit::DType::bf16, attnjit::DType::fp16}) {
    for (const auto& variant : attnjit::test::standard_variants()) {
      if (variant.mask.is_constant_true()) continue;
      CHECK(check_sm90_kernel(variant, dtype, 64, tuning));
    }
  }
}

// Two blocks per SM (ATTNJIT_TUNE=sm90_blocks_per_sm=2, head dim 64, 64-key stages, no overlap):
// consumers of 104 registers. ALiBi (its per-column term) and the document mask (the document
// ids of a row and a column) spill there (76 and 104 bytes): left out, for the sweep to show.
TEST_CASE("sm90 kernels of two blocks per SM compile without spills", "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_blocks_per_sm = 2;
  for (const int stages : {2, 4}) {
    tuning.sm90_stages = stages;
    check_sm90_spill_free(64, tuning, {"noop", "causal", "sliding_window", "prefix_lm", "softcap"});
  }
}

// The short-rows kernels (codegen/short_rows.hpp) of every standard variant that has one (the
// index-only masks), in both dtypes: calls pick them at run time, so they meet the defaults'
// bar. The variants without one have no such kernel.
TEST_CASE("sm90 short-rows kernels compile without spills", "[kernels][nvrtc][sm90]") {
  int with_schedule = 0;
  for (const auto& variant : attnjit::test::standard_variants()) {
    const codegen::KernelConfig standard = codegen::kernel_config_for(
        variant.mask, variant.score, attnjit::DType::bf16, 64, codegen::Target(90, true),
        codegen::FamilyRequest::sm90, codegen::KernelTuning{});
    INFO(variant.name);
    const bool index_only_mask = !variant.mask.is_constant_true() && !variant.mask.reads_tensors();
    CHECK(codegen::has_short_rows_schedule(standard, 64, variant.mask) == index_only_mask);
    CHECK_FALSE(codegen::has_short_rows_schedule(standard, 128, variant.mask));
    if (!index_only_mask) continue;
    ++with_schedule;
    for (attnjit::DType dtype : {attnjit::DType::bf16, attnjit::DType::fp16}) {
      CHECK(check_sm90_kernel(variant, dtype, 64, codegen::short_rows_tuning()));
    }
  }
  CHECK(with_schedule == 3);  // causal, sliding window, prefix-LM
}

// One consumer warpgroup in 64-row blocks, two per SM (ATTNJIT_TUNE=sm90_block_m=64,
// sm90_blocks_per_sm=2; the overlap kept): consumers of 232 registers, 128-key stages at head dim
// 64, 64-key at 128. With and without the tile handoff.
TEST_CASE("sm90 kernels of 64-row blocks, two per SM, compile without spills",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_block_m = 64;
  tuning.sm90_blocks_per_sm = 2;
  for (const bool handoff : {false, true}) {
    tuning.sm90_handoff = handoff;
    for (const int head_dim : {64, 128}) {
      check_sm90_spill_free(head_dim, tuning,
                            {"noop", "causal", "sliding_window", "prefix_lm", "document", "alibi",
                             "softcap"});
    }
  }
}

// P through shared memory (ATTNJIT_TUNE=sm90_p_smem=1): the registers P held under P V are free,
// which is what makes three consumers at 160 registers fit with the overlap (without it the
// sliding window and softcap spill there, see above).
TEST_CASE("sm90 kernels with P in shared memory compile without spills where they are candidates",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_p_smem = true;
  tuning.sm90_overlap = true;
  // Note: ALiBi with the factored score (codegen/factor_score.hpp) spills 12 bytes here; this
  // schedule is not a default, and the factored form is what the defaults measured faster with.
  check_sm90_spill_free(128, tuning,
                        {"noop", "causal", "sliding_window", "prefix_lm", "document", "softcap"});
  tuning.sm90_block_m = 192;
  check_sm90_spill_free(64, tuning, {"noop", "sliding_window", "prefix_lm", "alibi", "softcap"});
  tuning.sm90_overlap = false;
  check_sm90_spill_free(64, tuning, {"noop", "sliding_window", "prefix_lm", "alibi", "softcap"});
  {
    // Causal keeps one 4-byte value (the consumer warp's index) in local memory, stored in the
    // work item's prologue and loaded before and after the tile loop, never inside it (SASS,
    // docs/KERNELS.md): a few cycles per item. More than that is a regression.
    const auto& variants = attnjit::test::standard_variants();
    const auto causal = std::find_if(variants.begin(), variants.end(),
                                     [](const auto& variant) { return variant.name == "causal"; });
    REQUIRE(causal != variants.end());
    const auto usage = compile_sm90_kernel(*causal, attnjit::DType::bf16, 64, tuning);
    REQUIRE(usage.has_value());
    CHECK(usage->spill_store_bytes <= 4);
    CHECK(usage->spill_load_bytes <= 12);
  }
  // FlashAttention-3's "192 x 128 without RS" at head dim 128, sequential.
  check_sm90_spill_free(128, tuning, {"noop", "prefix_lm", "softcap"});  // ALiBi: see above
}

TEST_CASE("sm90 kernels with FlashAttention-3's key tiles compile without spills",
          "[kernels][nvrtc][sm90]") {
  // Head dim 128: 176 keys (FA3's tile for masks without a causal diagonal).
  check_sm90_block_n(128, 176, false, {"noop", "sliding_window", "prefix_lm", "alibi", "softcap"});
  check_sm90_block_n(128, 176, true, {"noop", "sliding_window", "alibi"});
  // Head dim 256: 80 keys, the most that fits shared memory beside a 128-row Q tile.
  check_sm90_block_n(
      256, 80, false,
      {"noop", "causal", "sliding_window", "prefix_lm", "document", "alibi", "softcap"});
  check_sm90_block_n(256, 80, true, {"noop", "causal", "sliding_window", "prefix_lm", "softcap"});
  // Head dim 64: 160 keys with the overlap.
  check_sm90_block_n(64, 160, true,
                     {"noop", "causal", "sliding_window", "prefix_lm", "alibi", "softcap"});
}

TEST_CASE(
    "sm90 kernels with three consumer warpgroups (block_m 192, head dim 64) spill only "
    "where listed",
    "[kernels][nvrtc][sm90]") {
  check_sm90_block_m_192(false);
}
TEST_CASE(
    "sm90 kernels with three consumer warpgroups (block_m 192, head dim 64) and overlap "
    "spill only where listed",
    "[kernels][nvrtc][sm90]") {
  check_sm90_block_m_192(true);
}

// With 64-key stages S and P take half the registers: every standard variant fits the 160.
TEST_CASE("sm90 kernels with three consumer warpgroups and 64-key stages compile without spills",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_block_m = 192;
  tuning.sm90_block_n = 64;
  for (const bool overlap : {false, true}) {
    tuning.sm90_overlap = overlap;
    for (const auto& variant : attnjit::test::standard_variants()) {
      CHECK(check_sm90_kernel(variant, attnjit::DType::bf16, 64, tuning));
    }
  }
}

// The split kernels (calls of too few query tiles to fill the GPU): every standard variant at
// each head dim, bf16 (fp16 is the same code with another conversion), and the paged split
// kernels of the variants whose key walks differ (none skipped, a triangle, a tensor's
// summaries) at head dim 128.
void check_sm90_split_head_dim(int head_dim) {
  const codegen::KernelTuning tuning = codegen::kernel_tuning_from_environment();
  int checked = 0;
  for (const auto& variant : attnjit::test::standard_variants()) {
    checked += check_sm90_kernel(variant, attnjit::DType::bf16, head_dim, tuning,
                                 /*paged=*/false, /*split=*/true)
                   ? 1
                   : 0;
    if (head_dim == 128 &&
        (variant.name == "noop" || variant.name == "causal" || variant.name == "document")) {
      CHECK(check_sm90_kernel(variant, attnjit::DType::bf16, head_dim, tuning, /*paged=*/true,
                              /*split=*/true));
    }
  }
  CHECK(checked == static_cast<int>(attnjit::test::standard_variants().size()));
}

TEST_CASE("sm90 split kernels compile without spills, head dim 64", "[kernels][nvrtc][sm90]") {
  check_sm90_split_head_dim(64);
}
TEST_CASE("sm90 split kernels compile without spills, head dim 128", "[kernels][nvrtc][sm90]") {
  check_sm90_split_head_dim(128);
}
TEST_CASE("sm90 split kernels compile without spills, head dim 256", "[kernels][nvrtc][sm90]") {
  check_sm90_split_head_dim(256);
}

TEST_CASE("sm90 kernels compile without spills and use wgmma and TMA, head dim 64",
          "[kernels][nvrtc][sm90]") {
  check_sm90_head_dim(64);
}
TEST_CASE("sm90 kernels compile without spills and use wgmma and TMA, head dim 128",
          "[kernels][nvrtc][sm90]") {
  check_sm90_head_dim(128);
}
TEST_CASE("sm90 kernels compile without spills and use wgmma and TMA, head dim 256",
          "[kernels][nvrtc][sm90]") {
  check_sm90_head_dim(256);
}

// Soft-capping as users often write it, with the cap a literal: with its factor known at compile
// time, the default 128 x 176 kernel at head dim 128 spilled 196 bytes where the parameter form
// (the standard variant) spills none; lower_hooks passes such a factor through ops::runtime_f.
TEST_CASE("a soft-cap written with literals compiles without spills, head dim 128",
          "[kernels][nvrtc][sm90]") {
  const attnjit::expr::Signature none;
  const attnjit::test::StandardVariant literal{
      "softcap 30 as literals",
      attnjit::expr::parse_expression(attnjit::expr::ExprKind::mask, "true", none),
      attnjit::expr::parse_expression(attnjit::expr::ExprKind::score, "30 * tanh(score / 30)",
                                      none)};
  CHECK(check_sm90_kernel(literal, attnjit::DType::bf16, 128, {}));
}

// The timeline's stamps (ATTNJIT_TUNE=sm90_timeline=1, sm90_timeline.cuh) in the kernels they are
// for, the default plain blocks and the short-rows kernel: a measuring kernel that spills would
// measure its spills.
TEST_CASE("sm90 kernels with the timeline compile without spills", "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_timeline = true;
  check_sm90_spill_free(64, tuning, {"noop", "causal", "sliding_window", "document"});
  check_sm90_spill_free(128, tuning, {"noop", "sliding_window", "document", "softcap"});
  check_sm90_spill_free(64, codegen::short_rows_tuning(tuning), {"sliding_window"});
}

TEST_CASE("persistent sm90 kernels compile without spills, head dim 64", "[kernels][nvrtc][sm90]") {
  check_sm90_persistent_head_dim(64);
}
TEST_CASE("persistent sm90 kernels compile without spills, head dim 128",
          "[kernels][nvrtc][sm90]") {
  check_sm90_persistent_head_dim(128);
}
TEST_CASE("persistent sm90 kernels compile without spills, head dim 256",
          "[kernels][nvrtc][sm90]") {
  check_sm90_persistent_head_dim(256);
}

TEST_CASE("sm90 kernels with intra-warpgroup overlap compile without spills, head dims 64, 128 "
          "and 256",
          "[kernels][nvrtc][sm90]") {
  for (const int head_dim : {64, 128, 256}) check_sm90_overlap_head_dim(head_dim);
}

// The SM80 shape measured against the default for short blocks (sliding window, many documents):
// 64-row blocks of 4 warps, two per SM, so that one block's prologue and epilogue overlap the
// other's main loop; each thread keeps up to 255 registers (65536 / (128 x 2) = 256).
TEST_CASE("sm80 kernels in 64-row blocks of 4 warps, two per SM, compile without spills",
          "[kernels][nvrtc]") {
  const codegen::KernelTuning tuning =
      codegen::parse_kernel_tuning("sm80_block_m=64,sm80_warps=4,sm80_blocks_per_sm=2");
  for (const int head_dim : {64, 128}) check_head_dim(head_dim, tuning);
}

// Programmatic dependent launch (grid_dependency.cuh): the sm80 family's module built for sm_90a
// waits for the kernel before it in every entry the host may launch programmatically (the
// forward and decoding entries after the summaries, the merge after them, a summary after
// another) and lets the merge launch early; built for sm_80, where the host never launches
// programmatically and the instructions do not exist, it has neither.
TEST_CASE("sm80-family kernels wait for the kernel before them on sm_90a only",
          "[kernels][nvrtc]") {
  for (const auto& variant : attnjit::test::standard_variants()) {
    if (variant.name != "document") continue;
    for (const char* arch : {"sm_90a", "sm_80"}) {
      INFO(arch);
      const bool sm90 = std::string_view(arch) == "sm_90a";
      const auto kernel = codegen::generate_kernel_source(
          variant.mask, variant.score, attnjit::DType::bf16, 128,
          sm90 ? codegen::Target(90, true) : codegen::Target(80, false),
          codegen::FamilyRequest::sm80);
      const auto program = attnjit::nvrtc::compile_program(kernel.source, arch, true);
      const std::string ptx(program.image.begin(), program.image.end());
      // One wait in each of the four entries (forward, decoding, summary, merge).
      std::size_t waits = 0;
      for (std::size_t at = ptx.find("griddepcontrol.wait"); at != std::string::npos;
           at = ptx.find("griddepcontrol.wait", at + 1)) {
        ++waits;
      }
      CHECK(waits == (sm90 ? 4u : 0u));
      CHECK((ptx.find("griddepcontrol.launch_dependents") != std::string::npos) == sm90);
    }
  }
}

// The decoding manifest (cache/decoding.json), which an inference fleet prewarms: its variants
// (the standard masks aligned to the cache's end, a ragged batch's per-sequence lengths) on the
// sm80 family, whose decoding entry serves decoding steps on every arch; bf16 (fp16 differs from
// it only in the MMA's type, which the standard variants check).
TEST_CASE("the decoding manifest's variants compile without spills", "[kernels][nvrtc]") {
  for (const int head_dim : {64, 128}) {
    check_head_dim(head_dim, {}, attnjit::test::decoding_variants(), {attnjit::DType::bf16});
  }
}

// The sm80 kernels of paged calls (a paged key/value cache: decoding steps and small pages,
// on every arch) for the decoding manifest's variants, which a serving fleet runs over paged
// caches, and the standard variants at the head dims the manifest lacks (bf16: fp16 differs
// only in the MMA's type).
TEST_CASE("paged kernels of the decoding manifest compile without spills", "[kernels][nvrtc]") {
  for (const int head_dim : {64, 128}) {
    check_head_dim(head_dim, {}, attnjit::test::decoding_variants(), {attnjit::DType::bf16},
                   /*paged=*/true);
  }
}
TEST_CASE("paged kernels of the standard variants compile without spills, head dims 32, 96, 256",
          "[kernels][nvrtc]") {
  for (const int head_dim : {32, 96, 256}) {
    check_head_dim(head_dim, {}, attnjit::test::standard_variants(), {attnjit::DType::bf16},
                   /*paged=*/true);
  }
}

// The sm90 kernels of paged prefills (sm_90a), every standard variant in bf16 (fp16 differs only
// in the MMA's type): the producer's page lookups fit its 24 registers (32 at 192 rows) and the
// consumers' code is the dense kernel's.
void check_sm90_paged_head_dim(int head_dim) {
  for (const auto& variant : attnjit::test::standard_variants()) {
    CHECK(check_sm90_kernel(variant, attnjit::DType::bf16, head_dim,
                            codegen::kernel_tuning_from_environment(), /*paged=*/true));
  }
}
TEST_CASE("sm90 paged kernels compile without spills, head dim 64", "[kernels][nvrtc][sm90]") {
  check_sm90_paged_head_dim(64);
}
TEST_CASE("sm90 paged kernels compile without spills, head dim 128", "[kernels][nvrtc][sm90]") {
  check_sm90_paged_head_dim(128);
}
TEST_CASE("sm90 paged kernels compile without spills, head dim 256", "[kernels][nvrtc][sm90]") {
  check_sm90_paged_head_dim(256);
}
// The persistent schedule's producer walks its items in a loop (its box loop not unrolled): the
// paged lookups on top of that, where registers were tightest (head dim 256).
TEST_CASE("persistent sm90 paged kernels compile without spills, head dim 256",
          "[kernels][nvrtc][sm90]") {
  codegen::KernelTuning tuning;
  tuning.sm90_persistent = true;
  tuning.sm90_overlap = false;
  for (const auto& variant : attnjit::test::standard_variants()) {
    if (variant.name != "noop" && variant.name != "document") continue;
    CHECK(check_sm90_kernel(variant, attnjit::DType::bf16, 256, tuning, /*paged=*/true));
  }
}

TEST_CASE("standard variants compile without spills, head dim 32", "[kernels][nvrtc]") {
  check_head_dim(32);
}
TEST_CASE("standard variants compile without spills, head dim 64", "[kernels][nvrtc]") {
  check_head_dim(64);
}
TEST_CASE("standard variants compile without spills, head dim 96", "[kernels][nvrtc]") {
  check_head_dim(96);
}
TEST_CASE("standard variants compile without spills, head dim 128", "[kernels][nvrtc]") {
  check_head_dim(128);
}
TEST_CASE("standard variants compile without spills, head dim 256", "[kernels][nvrtc]") {
  check_head_dim(256);
}
