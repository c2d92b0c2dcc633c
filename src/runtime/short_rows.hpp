// Per call: whether a call of a variant with a short-rows kernel (codegen/short_rows.hpp) runs on
// it. The rows of a call are short when its query tiles keep few key tiles on average, which
// for an index-only mask the host block analysis answers from the shape and the parameters
// alone, with a few interval evaluations per sampled query tile.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>

#include "attnjit/variant_args.cuh"
#include "codegen/variant_source.hpp"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"

namespace attnjit {

// At most this many kept key tiles per query tile on average, in the standard kernel's 128 x 128
// tiles, make a call's rows short. Measured on an H100 at head dim 64, 16K (docs/PERFORMANCE.md,
// "Fifteenth session"), the short-rows kernel against the standard one: 9-10 tiles (sliding
// window 1024) 1.13x, 16 (8 documents, both with the handoff) 1.02x, 64 (causal) 0.95x.
inline constexpr int kShortRowMaxTiles = 12;
// And the standard grid must have at least this many blocks per SM: with fewer, every block of
// the standard kernel is resident at once already, and a second one per SM has nothing to hide.
inline constexpr int kShortRowMinBlocksPerSm = 2;
// Query tiles sampled per decision.
inline constexpr int kShortRowSamples = 8;

// The kept key tiles (empty ones skipped, partial ones kept, as the kernels walk them) of up to
// `samples` query tiles of `tile_q` rows spread over the call's (batch, head, query tile) grid,
// in tiles of `tile_kv` keys, counted with the host block analysis over halving key ranges (a
// range one evaluation finds empty or full is not split). Counting stops once `kept` exceeds
// `limit`. The mask must read no tensor (the host has none of the call's data).
struct KeptTileSample {
  std::int64_t kept = 0;
  int query_tiles = 0;   // sampled
  bool stopped = false;  // kept > limit: the rest was not counted
};
KeptTileSample sample_kept_tiles(const expr::Expression& mask, const VariantArgs& args,
                                 const AttentionShape& shape, int tile_q, int tile_kv,
                                 int samples, std::int64_t limit);

// What the rule found for a call: the standard grid's blocks and, when there were enough of
// them to ask, the sampled kept tiles.
struct ShortRowsVerdict {
  bool short_rows = false;
  std::int64_t blocks = 0;  // of the standard kernel's grid
  bool sampled = false;     // false: under kShortRowMinBlocksPerSm per SM, nothing counted
  KeptTileSample sample;
};

// The rule, for a variant with a short-rows kernel whose standard kernel has `standard`:
// enough blocks (kShortRowMinBlocksPerSm) and at most kShortRowMaxTiles kept key tiles per
// sampled query tile. Remembers the last few shapes and parameter values, so that a repeated
// call costs a comparison; thread-safe.
class ShortRowsRule {
 public:
  ShortRowsVerdict decide(const expr::Expression& mask, const VariantArgs& args,
                          const AttentionShape& shape, const codegen::KernelConfig& standard,
                          int multiprocessors);

 private:
  struct Decision {
    AttentionShape shape;
    std::array<int, kMaxParams> scalars{};
    ShortRowsVerdict verdict;
    bool used = false;
  };
  std::mutex mutex_;
  std::array<Decision, 8> recent_{};
  std::size_t next_ = 0;  // the slot the next new decision takes (round robin)
};

// The verdict in words, for a launch plan and the debug log: "short rows (19 kept key tiles in
// 8 sampled query tiles; short: at most 12 a tile)", "long rows (over 96 ...)", "too few
// blocks ...".
std::string describe(const ShortRowsVerdict& verdict, int multiprocessors);

}  // namespace attnjit
