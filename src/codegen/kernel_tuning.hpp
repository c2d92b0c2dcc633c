// Tuning overrides for the forward kernels' configuration, for measuring alternatives on a GPU
// without rebuilding: ATTNJIT_TUNE="key=value,key=value". Each override changes the generated
// source (template arguments), hence the cache key, so tuned and default kernels never mix.
// The keys' ranges and kinds are one table, codegen/kernel_tuning_keys.def; docs/TUNING.md is
// the users' list (a test checks that it names every key).
// Keys:
//   sm80_block_m   16 .. 256               queries per block of the SM80 kernel (whole 16-row
//                                          m-tiles per warp)
//   sm80_block_n   16 .. 256               keys per pipeline stage, a multiple of 16
//   sm80_warps     1 .. 16
//   sm80_stages    2 .. 4                  cp.async pipeline depth
//   sm80_blocks_per_sm 1 .. 4              blocks per SM promised to ptxas (__launch_bounds__);
//                                          65536 / (32 * warps * blocks) registers per thread;
//                                          without sm80_stages, the most stages whose shared
//                                          memory fits that many blocks on the arch
//   decode_block_n 16 .. 128               keys per stage of the SM80 decoding entry (launches
//                                          of at most 32 query rows), a multiple of 16
//   decode_stages  2 .. 4                  its cp.async pipeline depth
//   sm90_block_n   64 .. 256               keys per stage, a multiple of 16
//   sm90_stages    2 .. 8                  depth of the K/V ring
//   sm90_overlap   0 | 1                   intra-warpgroup pipelining (S of the next tile issued
//                                          before the softmax of this one)
//   sm90_persistent 0 | 1                  one block per SM walking the query tiles
//   sm90_block_m   64 | 128 | 192          queries per block: one, two or three consumer
//                                          warpgroups (64: head dim 64 or 128, P in registers,
//                                          plain blocks; 192: head dim 64, or 128 with
//                                          sm90_p_smem=1)
//   sm90_p_smem    0 | 1                   P V reads P from shared memory, not registers
//                                          (block_n a multiple of 64)
//   sm90_handoff   0 | 1                   the producer alone classifies the key tiles and hands
//                                          each kept one's index to the consumers (plain blocks,
//                                          at most 4 stages; the default for masked kernels
//                                          of the default tiles)
//   sm90_poly_exp2 0 .. 8                  of each 8 n8 chunks of a score tile, how many the
//                                          softmax exponentiates on the FMA pipe instead of MUFU
//                                          (poly_exp2.cuh; 0, the default: none)
//   sm90_fold_m192 0 | 1                   three-consumer blocks (block_m 192) fold the softmax
//                                          scale into the exponent's FFMA too (one FMUL less per
//                                          element; the default without a mask unless the
//                                          score calls special functions per element)
//   sm90_blocks_per_sm 1 | 2               resident blocks per SM, plain blocks with shared memory
//                                          for two: with block_m 128 at head dim 64 (consumers of
//                                          104 registers; 64-key stages, no overlap), or with
//                                          block_m 64 at head dim 64 or 128 (one consumer of 232
//                                          registers; 128-key stages at 64, 64-key at 128)
//   sm80_safe_sources 0 | 1                sm80 kernel: a zero-filled row's cp.async gets row 0's
//                                          address and each row its own multiply, as before the
//                                          nineteenth session (0, the default, except at head
//                                          dim 32; for timing the cheaper form against it)
//   score_row_shift 0 | 1                  both kernels: a score's per-row terms and multiples
//                                          of kv_idx (ALiBi) leave the element's code, added
//                                          once per row and key tile (codegen/factor_score.hpp;
//                                          1, the default; ALiBi 1.02-1.12x on an H200)
//   sm90_timeline  0 | 1                   plain sm90 blocks stamp their phases (SM cycles) into
//                                          records the host writes to $ATTNJIT_TIMELINE after
//                                          each call (sm90_timeline.cuh; a measuring aid that
//                                          leaves the schedule as it is, like the watchdog)
//   sm90_watchdog_ms 0 .. 600000           an mbarrier wait longer than this many ms records
//                                          which wait and faults the kernel (0: off, the
//                                          default; a hang becomes an error naming the wait;
//                                          docs/KERNELS.md)
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace attnjit::codegen {

struct KernelTuning {
#define ATTNJIT_TUNING_KEY(NAME, TYPE, KIND, LOW, HIGH, SCHEDULE) std::optional<TYPE> NAME;
#include "codegen/kernel_tuning_keys.def"
};

// Parses the ATTNJIT_TUNE syntax; throws Error(invalid_argument) naming the offending item for an
// unknown key, a missing '=', or a value out of its range. Empty text: no overrides.
KernelTuning parse_kernel_tuning(std::string_view text);

// ATTNJIT_TUNE read now (not cached: a benchmark may change it between calls).
KernelTuning kernel_tuning_from_environment();
// Whether `tuning` sets anything but the watchdog or the timeline (sm90_watchdog_ms,
// sm90_timeline: aids that leave the schedule as it is), and whether ATTNJIT_TUNE does: then the
// kernel it describes serves every call of a variant (no short-rows kernel beside it,
// codegen/short_rows.hpp).
bool changes_schedule(const KernelTuning& tuning);
bool schedule_tuning_requested();

// Every key ATTNJIT_TUNE knows, in the table's order (codegen/kernel_tuning_keys.def).
std::span<const std::string_view> tuning_key_names();

}  // namespace attnjit::codegen
