// When a kernel's spills are worth other tiles: the JIT compiles an sm90 kernel of a variant
// without a mask at its wide default tiles, and serves the masked variant's tiles instead where
// the wide kernel spills heavily and theirs spills less (variant_compiler.cpp, choose_source).
#pragma once

#include "compile/resource_usage.hpp"

namespace attnjit {

// Spilled bytes (stored and loaded) from which a kernel keeps part of its per-element working
// set in local memory. Below it ptxas spills a few values held across the tile loop, reloaded
// once a tile (the sm90 kernel of `score * sigmoid(score)` at head dim 128: 12 / 40 bytes, 11
// LDL, none in the per-element code); above it the score's temporaries go out and back per
// element (`score / (1 + exp(-score))`: 328 / 316 bytes), through an L1 that the kernel's shared
// memory leaves small. Note: a judgement from SASS, not yet timed (docs/PERFORMANCE.md,
// "Twenty-seventh session").
inline constexpr int kHeavySpillBytes = 64;

constexpr int spilled_bytes(const ResourceUsage& usage) {
  return usage.spill_store_bytes + usage.spill_load_bytes;
}

// Whether the wide tiles' kernel spills enough to look at other tiles.
constexpr bool spills_heavily(int spilled) { return spilled >= kHeavySpillBytes; }

// Whether the masked tiles serve in place of the wide ones: the wide kernel spills heavily and
// theirs less (every heavy score measured spills none there); otherwise the wide tiles' fewer,
// larger steps stay.
constexpr bool prefer_base_tiles(int wide_spilled, int base_spilled) {
  return spills_heavily(wide_spilled) && base_spilled < wide_spilled;
}

}  // namespace attnjit
