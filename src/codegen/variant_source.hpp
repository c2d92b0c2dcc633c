// The generated CUDA source of one kernel: a variant struct holding the lowered mask, score and
// block-analysis functions, then extern "C" entry points instantiating the forward template of
// kernels_templates/ for one dtype, head dim and tile configuration.
#pragma once

#include <optional>
#include <string>

#include "codegen/kernel_family.hpp"
#include "codegen/kernel_tuning.hpp"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"

namespace attnjit::codegen {

// Tile configuration of the forward kernel, chosen on the host per arch, dtype and head dim and
// written into the generated source as template arguments.
struct KernelConfig {
  int block_m = 0;     // queries per thread block
  int block_n = 0;     // keys per pipeline stage
  int num_warps = 0;
  int num_stages = 0;  // pipeline depth (cp.async groups for sm80, TMA stages for sm90)
  int smem_bytes = 0;  // dynamic shared memory the launch needs
  // The __launch_bounds__ promise (registers per thread): the sm80 kernel, and the sm90 kernel
  // with ATTNJIT_TUNE=sm90_blocks_per_sm=2 (kSm90FeatureTwoBlocksPerSm).
  int blocks_per_sm = 1;
  KernelFamily family = KernelFamily::sm80;  // which template (and launch parameter) it is
  // sm90 kernel only (sm90_fwd_config.cuh, kSm90Feature*): intra-warpgroup pipelining, and a
  // persistent grid (one block per SM walking the query tiles; the launch size depends on it).
  bool overlap = false;
  bool persistent = false;
  bool p_in_smem = false;  // P V reads P from shared memory (FA3's MmaPV_is_RS = false)
  bool tile_handoff = false;  // the producer alone classifies tiles and tells the consumers
  // sm90 kernel only: of each 8 n8 chunks of S, how many the softmax exponentiates on the FMA
  // pipe instead of MUFU (poly_exp2.cuh; kSm90FeaturePolyExp2Shift).
  int poly_exp2 = 0;
  // sm90 kernel only: three-consumer blocks fold the softmax scale into the exponent too.
  bool fold_m192 = false;
  // sm90 kernel only: an mbarrier wait longer than this prints its label and traps (0: off).
  int watchdog_ms = 0;
  // sm90 kernel only, plain blocks: phase stamps into per-block timeline records
  // (sm90_timeline.cuh).
  bool timeline = false;
  // Both kernels: the score's row shift where it has one (codegen/factor_score.hpp).
  bool score_row_shift = false;
  // sm80 kernel only: ATTNJIT_TUNE's sm80_safe_sources (copy.cuh, load_tile_async).
  bool sm80_safe_sources = false;
  // Both kernels: keys and values read through a paged cache's page table (FwdParams::kv_pages;
  // the kernel of a variant's paged calls, Schedule::paged_kv). Such a kernel also reads the
  // sequence tables of variable-length calls (FwdParams::sequences; reads_sequence_tables).
  bool paged_kv = false;
  // sm90 kernel only, plain blocks: the kernel of calls whose keys are split (FwdParams::
  // num_splits, kSm90FeatureSplitKv; generate_split_kernel_source): its module also has the
  // split-KV merge (kSplitCombineEntry).
  bool split_kv = false;
  // sm80 kernel with the decoding features only: the tiles of the module's decoding entry
  // (kDecodeEntry: kDecodeBlockM rows, kDecodeWarps warps; decode_config). 0: no such entry.
  int decode_block_n = 0;
  int decode_stages = 0;
  int decode_blocks_per_sm = 0;  // resident per SM (shared memory), promised to ptxas too
  int decode_smem_bytes = 0;
};

// Whether `config`'s kernel reads the sequence tables of variable-length calls: the kernel of
// paged calls; in the sm90 family only with plain blocks (attention_fwd_sm90.cuh: a block's
// sequence words are stored while the whole block waits, which a persistent block's warpgroups,
// assigning their items apart, cannot do).
inline bool reads_sequence_tables(const KernelConfig& config) {
  return config.paged_kv && (config.family == KernelFamily::sm80 || !config.persistent);
}

// The configuration the decoding entry of a module of `config` launches with (block_m, warps,
// tiles, shared memory, blocks per SM); config.decode_block_n must be set.
KernelConfig decode_config(const KernelConfig& config);

// Throws Error(unsupported) for head dims or arches (sm < 80) that are not supported.
// `sm` is 80, 86, 89, 90...; the configuration fits the arch's shared-memory opt-in limit.
// `tuning`: ATTNJIT_TUNE's sm80 overrides (Error(invalid_argument) when they do not fit).
KernelConfig choose_kernel_config(int sm, DType dtype, int head_dim,
                                  const KernelTuning& tuning = {});
bool is_supported_head_dim(int head_dim);  // 32, 64, 96, 128, 256
// The sm90 kernel's configuration for a head dim sm90_supports, for a variant with a mask or
// without one (its default tiles differ: wider without, and only masks hand tiles over) and
// whose score calls special functions or not (Expression::calls_special_function: such scores
// keep the softmax scale out of the exponent in 192-row blocks), with the overrides of `tuning`
// applied; Error(invalid_argument) when they do not fit.
KernelConfig sm90_kernel_config(int head_dim, const KernelTuning& tuning = {}, bool masked = true,
                                bool special_score = false);
// The tuning that gives an sm90 kernel of `config` (made with `tuning`) the base tiles, a masked
// variant's (128 x 128; 128 x 64 at head dim 256), in place of the wider tiles a variant without
// a mask gets by default (192 x 128, 128 x 176, 128 x 80), `tuning`'s other settings kept;
// nullopt where `config` is not an sm90 kernel's, has those tiles already, or `tuning` chose the
// schedule (changes_schedule). The JIT serves it where the wide tiles spill (variant_compiler).
std::optional<KernelTuning> sm90_base_tiles_tuning(const KernelConfig& config, int head_dim,
                                                   const KernelTuning& tuning);
// Whether the sm90 kernel overlaps a warpgroup's softmax with its own GEMMs when ATTNJIT_TUNE
// does not say (sm90_overlap): at the head dims where that was measured faster (all of them).
bool sm90_overlap_by_default(int head_dim);
// The configuration of the kernel generate_kernel_source makes for these arguments: the family
// from choose_kernel_family, then that family's tiles (for sm90, with ATTNJIT_TUNE's overrides).
KernelConfig kernel_config_for(const expr::Expression& mask, const expr::Expression& score,
                               DType dtype, int head_dim, Target target,
                               FamilyRequest family = FamilyRequest::environment);
// The same with `tuning` in place of ATTNJIT_TUNE's overrides.
KernelConfig kernel_config_for(const expr::Expression& mask, const expr::Expression& score,
                               DType dtype, int head_dim, Target target, FamilyRequest family,
                               const KernelTuning& tuning);

constexpr const char* kForwardEntry = "attnjit_fwd";
// The forward kernel in 32-row blocks for launches of at most 32 query rows (fwd_config.cuh,
// kDecodeBlockM); sm80-family modules with the decoding features.
constexpr const char* kDecodeEntry = "attnjit_fwd_decode";
constexpr const char* kSummaryEntry = "attnjit_tensor_summary";
// The split-KV merge (split_combine.cuh): in sm80-family modules and in the sm90 family's split
// kernels (KernelConfig::split_kv).
constexpr const char* kSplitCombineEntry = "attnjit_split_combine";
// Whether a module of `config` has kSplitCombineEntry.
inline bool has_split_combine(const KernelConfig& config) {
  return config.family == KernelFamily::sm80 || config.split_kv;
}

struct GeneratedKernel {
  std::string source;  // deterministic: same inputs, same text
  KernelConfig config;
};

// dtype must be bf16 or fp16 (Error(unsupported) otherwise). The family comes from
// choose_kernel_family(target, ..., family); it is written into the source, hence the cache key.
GeneratedKernel generate_kernel_source(const expr::Expression& mask, const expr::Expression& score,
                                       DType dtype, int head_dim, Target target,
                                       FamilyRequest family = FamilyRequest::environment);
// The same with `tuning` in place of ATTNJIT_TUNE's overrides (tests, and sources regenerated
// from a cached kernel's recorded configuration).
GeneratedKernel generate_kernel_source(const expr::Expression& mask, const expr::Expression& score,
                                       DType dtype, int head_dim, Target target,
                                       FamilyRequest family, const KernelTuning& tuning);
// The kernel of a variant's paged calls (a paged key/value cache, AttentionBuffers::kv_pages) in
// `family` (sm80: what decoding steps, pages not a multiple of kSm90MinPagedBoxRows rows and
// strides TMA cannot load run on, on every arch, and every call with variable-length sequences;
// sm90: the prefill kernel of sm_90a), with `tuning`'s overrides, reading keys and values through
// the page table (KernelConfig::paged_kv).
GeneratedKernel generate_paged_kernel_source(const expr::Expression& mask,
                                             const expr::Expression& score, DType dtype,
                                             int head_dim, Target target, FamilyRequest family,
                                             const KernelTuning& tuning);
// The sm90 kernel of a variant's split calls (KernelConfig::split_kv): a prefill whose query
// tiles are too few to fill the GPU, its keys cut into slices merged by the module's
// kSplitCombineEntry. Its standard kernel's configuration with `tuning`'s overrides (paged_kv: its
// paged kernel's), in 128-row blocks where that one has 192 (three consumers' 160 registers hold
// no split features), plain blocks. Error(internal) where the sm90 kernel does not serve the
// variant on `target`, or `tuning` makes its blocks persistent.
GeneratedKernel generate_split_kernel_source(const expr::Expression& mask,
                                             const expr::Expression& score, DType dtype,
                                             int head_dim, Target target, bool paged_kv,
                                             const KernelTuning& tuning);
// The configuration of generate_split_kernel_source's dense kernel, without its source.
KernelConfig split_kernel_config(const expr::Expression& mask, const expr::Expression& score,
                                 DType dtype, int head_dim, Target target,
                                 const KernelTuning& tuning);

}  // namespace attnjit::codegen
