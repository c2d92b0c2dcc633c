// The short-rows schedule: a second sm90 kernel of a masked head-dim-64 variant, two blocks per
// SM, for calls whose query tiles keep few key tiles (a sliding window, small chunks). A block
// spends a fixed time outside its tiles (the first loads and classification, the first S before
// anything overlaps, the epilogue), which a row of 9 tiles does not amortise; a second resident
// block runs its tiles meanwhile. On an H100 (docs/PERFORMANCE.md, "Fifteenth session"), sliding
// window 1024 at 16K, head dim 64: 1.039 ms against the standard kernel's 1.169 (1.13x); but
// causal 0.95x and noop 0.82x, whose long rows pay for the 64-key stages and the lost overlap.
// So it is chosen per call (runtime/short_rows.hpp), not per variant.
#pragma once

#include "codegen/kernel_tuning.hpp"
#include "codegen/variant_source.hpp"
#include "expr/expression.hpp"

namespace attnjit::codegen {

// Which kernel of a variant a request is for: the one its configuration gives (ATTNJIT_TUNE's
// overrides applied), the short-rows one, the one of its paged calls (a paged key/value cache:
// the kernel reading keys and values through the page table, generate_paged_kernel_source), or
// the sm90 kernel of its split calls, dense or paged (generate_split_kernel_source).
enum class Schedule { standard, short_rows, paged_kv, split_kv, paged_split_kv };

// The short-rows kernel's tiles: two blocks of two consumer warpgroups per SM (consumers of 104
// registers, 64-key stages, no overlap) with the tile handoff, the measured configuration; on
// top of `base`, which may set only the watchdog (ATTNJIT_TUNE's, so that a hunt for a hang
// watches both kernels).
KernelTuning short_rows_tuning(const KernelTuning& base = {});

// Whether a variant whose standard kernel has `standard` has a short-rows kernel: the sm90
// kernel's default tiles at head dim 64 (128 x 128, one block per SM) and a mask that is neither
// constant nor reads a tensor: an index-only mask is what the host can classify for a call
// without the call's data (runtime/short_rows.hpp), and the short-rows kernels of the standard
// index-only masks compile without spills (kernel_resources_test); the document mask's spills.
bool has_short_rows_schedule(const KernelConfig& standard, int head_dim,
                             const expr::Expression& mask);

}  // namespace attnjit::codegen
