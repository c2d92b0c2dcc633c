// The Hopper forward kernel's single launch argument: the SM80 kernel's parameters plus the TMA
// tensor maps of Q, K and V, encoded by the host per call. Shared by host and device so the layout
// agrees.
#pragma once

#include "attnjit/fwd_params.cuh"
#include "attnjit/sm90_timeline.cuh"
#include "attnjit/sm90_tma.cuh"

namespace attnjit {

// Note: the kernel declares it `const __grid_constant__`, so the maps stay in the parameter space
// where TMA may read them (a by-value copy in local memory is not a valid tensor map address).
// Every map is 4-D {head_dim, len, heads, batch} with box {64, rows, 1, 1}, 128-byte swizzle and
// zero fill (sm90_tma.cuh); rows are the block_m for Q and the configuration's block_n for K, V.
// A paged call's K and V maps are the pools' {head_dim, page_size, heads, num_pages}, with boxes of
// sm90_paged_box_rows rows: the page coordinate takes the batch's place, so a table entry outside
// [0, num_pages) reads as zeros as an out-of-range box does.
struct Sm90FwdParams {
  FwdParams base;
  TensorMap q_map;
  TensorMap k_map;
  TensorMap v_map;
  // A paged call's maps of the box that holds key kv_len - 1: the pools with pages cut to
  // ((kv_len - 1) % page_size) + 1 rows, so the rows after kv_len in that box read as zeros, as
  // the dense maps' rows past kv_len do (their V rows, times a P of 0, would otherwise reach the
  // output when they hold NaN: a page's unused rows are anything the serving program left).
  // Unused (zeros) for a dense call.
  TensorMap k_tail_map;
  TensorMap v_tail_map;
  // One record per block for a kernel compiled with the timeline (sm90_timeline.cuh), when the
  // host asked for one ($ATTNJIT_TIMELINE); otherwise null, and never read.
  Sm90TimelineRecord* timeline;
};

// A paged call's K and V boxes: rows of one page, tiling a key tile of block_n rows. The largest
// power of two dividing both block_n and the page size: each box then starts on a multiple of its
// rows (tiles start on multiples of block_n), pages on multiples of the box, so a box never
// crosses a page's end (pages of 16: boxes of 16; of 256: the 128-key tile's 128; of 528 =
// 16 x 33: 16; of 12: 4, too few: see below).
ATTNJIT_HD constexpr int sm90_paged_box_rows(int page_size, int block_n) {
  return (page_size & -page_size) < (block_n & -block_n) ? (page_size & -page_size)
                                                         : (block_n & -block_n);
}
// The fewest rows a paged box may have: a whole 128-byte swizzle atom (8 rows of 128 bytes), so
// that every box lands on a 1024-byte boundary of the tile (sm90_tma.cuh). Pages whose size is not
// a multiple of 8 rows (every key tile's is: the kernel asserts it) run on the sm80 kernel.
constexpr int kSm90MinPagedBoxRows = 8;

}  // namespace attnjit
