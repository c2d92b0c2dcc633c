// A tile of the attention matrix as the block analysis sees it. Shared by host and device.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// Half-open ranges [begin, end) of query and key indices for one (batch, head).
struct TileBounds {
  int b;
  int h;  // query head
  int q_begin, q_end;
  int kv_begin, kv_end;
  int q_len, kv_len, num_heads;
};

// Three-valued answer of the block analysis for a tile: every element masked out (skip the tile),
// every element kept (skip the mask, keep the score), or mixed / unknown.
enum TileClass : int { kTileEmpty = 0, kTileFull = 1, kTilePartial = 2 };

}  // namespace attnjit
