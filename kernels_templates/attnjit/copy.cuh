// Global -> shared copies (cp.async, 16 bytes, zero-fill for out-of-range rows) and the
// XOR-swizzled shared-memory layout of a [ROWS][HEAD_DIM] tile of 16-bit elements.
#pragma once

#include "attnjit/numeric.cuh"
#include "attnjit/packed_rows.cuh"
#include "attnjit/row_divisor.cuh"

namespace attnjit {

// Shared-memory layout of a [ROWS][HEAD_DIM] tile, in 16-byte units ("chunks" of 8 elements).
// The head dim is cut into swizzle blocks of CPB chunks (128 bytes when HEAD_DIM % 64 == 0, else
// 64 bytes); block `blk` is a dense [ROWS][CPB] array and chunk c of row r sits at position
// c ^ swizzle(r) inside its row.
// Note: every ldmatrix phase reads the same logical chunk of 8 consecutive rows r0..r0+7 with
// r0 % 8 == 0. With CPB = 8 the units are r*8 + (c ^ (r & 7)): distinct modulo 8. With CPB = 4
// they are r*4 + (c ^ ((r >> 1) & 3)): (r & 1) picks the half of the 128-byte line and
// (r >> 1) & 3 the unit inside it, again 8 distinct bank groups. So ldmatrix is conflict-free.
template <int ROWS, int HEAD_DIM>
struct SwizzledTile {
  static_assert(HEAD_DIM % 32 == 0, "head dim must be a multiple of 32");
  static_assert(ROWS % 8 == 0, "tile rows must be a multiple of 8");
  static constexpr int kChunks = HEAD_DIM / 8;                   // 16-byte chunks per row
  static constexpr int kChunksPerBlock = HEAD_DIM % 64 == 0 ? 8 : 4;
  static constexpr int kUnits = ROWS * kChunks;
  static constexpr int kBytes = kUnits * 16;

  ATTNJIT_HD static int swizzle(int row) {
    return kChunksPerBlock == 8 ? (row & 7) : ((row >> 1) & 3);
  }
  // Byte offset of (row, chunk) from the tile's start.
  ATTNJIT_HD static int offset(int row, int chunk) {
    const int blk = chunk / kChunksPerBlock;
    const int c = chunk % kChunksPerBlock;
    return (blk * ROWS * kChunksPerBlock + row * kChunksPerBlock + (c ^ swizzle(row))) * 16;
  }
  // Address split for warp-wide ldmatrix patterns: with R % 8 == 0, lane_row in [0, 16) and
  // either (C even, lane_chunk in {0, 1}) or lane_chunk == 0,
  //   offset(R + lane_row, C + lane_chunk) == fixed_offset(R, C) + (lane_offset(lane_row,
  //   lane_chunk) ^ xor_offset(C)).
  // Note: swizzle(R + lane_row) == swizzle(lane_row) because R % 8 == 0, (C + lane_chunk) stays in
  // C's swizzle block, and the row term lane_row * kChunksPerBlock * 16 has no bit inside the
  // 16-byte-unit field the XOR touches, so the XOR commutes with the addition. The compiler then
  // keeps one register per distinct xor_offset and folds fixed_offset into the instruction.
  ATTNJIT_HD static constexpr int fixed_offset(int row_base, int chunk_base) {
    return ((chunk_base / kChunksPerBlock) * ROWS * kChunksPerBlock + row_base * kChunksPerBlock) *
           16;
  }
  ATTNJIT_HD static constexpr int xor_offset(int chunk_base) {
    return (chunk_base % kChunksPerBlock) * 16;
  }
  ATTNJIT_HD static int lane_offset(int lane_row, int lane_chunk) {
    return (lane_row * kChunksPerBlock + (lane_chunk ^ swizzle(lane_row))) * 16;
  }
};

// Which 16-byte chunks of a [ROWS][HEAD_DIM] tile each of NUM_THREADS threads copies
// (load_tile_async), as pure integer functions so that host tests can check the mapping.
// Walk: in storage order, so 8 consecutive threads fill 8 consecutive 16-byte units (no bank
// conflict). A thread keeps its chunk-in-block c = thread % CPB and its "stacked row"
// (block * ROWS + row) advances by NUM_THREADS / CPB per iteration.
// Note: NUM_THREADS / CPB is a multiple of 8, so the swizzle of a thread's rows never changes and
// every per-iteration offset is a compile-time constant added to one base address.
template <int ROWS, int HEAD_DIM, int NUM_THREADS>
struct TileLoadPlan {
  using Tile = SwizzledTile<ROWS, HEAD_DIM>;
  static constexpr int kCpb = Tile::kChunksPerBlock;
  static constexpr int kRowsPerIter = NUM_THREADS / kCpb;  // stacked rows covered per iteration
  static constexpr int kStackedRows = ROWS * (Tile::kChunks / kCpb);
  static constexpr int kIters = (kStackedRows + kRowsPerIter - 1) / kRowsPerIter;
  static constexpr bool kWholeBlocks = kRowsPerIter >= ROWS;  // an iteration covers whole blocks
  static_assert(NUM_THREADS % kCpb == 0 && kRowsPerIter % 8 == 0, "see the note above");
  static_assert(kWholeBlocks ? kRowsPerIter % ROWS == 0 : ROWS % kRowsPerIter == 0,
                "an iteration covers whole blocks or stays inside one");

  // The thread's position at iteration 0.
  ATTNJIT_HD static int chunk_in_block(int thread) { return thread % kCpb; }
  ATTNJIT_HD static int first_block(int thread) {
    return kWholeBlocks ? (thread / kCpb) / ROWS : 0;
  }
  ATTNJIT_HD static int first_row(int thread) {
    return kWholeBlocks ? (thread / kCpb) % ROWS : thread / kCpb;
  }
  // Compile-time advance of iteration i (with i a constant after unrolling).
  ATTNJIT_HD static constexpr int block_advance(int i) { return i * kRowsPerIter / ROWS; }
  ATTNJIT_HD static constexpr int row_advance(int i) {
    return kWholeBlocks ? 0 : i * kRowsPerIter % ROWS;
  }
  // Whether the thread has a chunk at iteration i (the last iteration may be partial).
  ATTNJIT_HD static bool active(int thread, int i) {
    return kStackedRows % kRowsPerIter == 0 || thread / kCpb + i * kRowsPerIter < kStackedRows;
  }
  // Tile row and chunk (in elements / 8) copied by the thread at iteration i.
  ATTNJIT_HD static int row(int thread, int i) { return first_row(thread) + row_advance(i); }
  ATTNJIT_HD static int chunk(int thread, int i) {
    return (first_block(thread) + block_advance(i)) * kCpb + chunk_in_block(thread);
  }
  // Destination byte offset: a per-thread base plus a per-iteration constant.
  ATTNJIT_HD static int dst_base(int thread) {
    return Tile::offset(first_row(thread), first_block(thread) * kCpb + chunk_in_block(thread));
  }
  ATTNJIT_HD static constexpr int dst_advance(int i) {
    return (block_advance(i) * ROWS + row_advance(i)) * kCpb * 16;
  }
  // The distinct rows a thread copies: iteration i copies row(thread, slot_row...) of slot
  // row_slot(i), so that a per-row lookup (a paged cache's page) is done once per row, not once
  // per 16-byte chunk.
  static constexpr int kRowSlots = kWholeBlocks ? 1 : ROWS / kRowsPerIter;
  ATTNJIT_HD static constexpr int row_slot(int i) { return kWholeBlocks ? 0 : i % kRowSlots; }
  ATTNJIT_HD static int slot_row(int thread, int slot) {
    return first_row(thread) + (kWholeBlocks ? 0 : slot * kRowsPerIter);
  }
};

// Note: the SIMT emulator (tests/simt) defines the primitives below for host runs, with the same
// signatures, and checks every shared-memory access and cp.async group on the way.
#if ATTNJIT_DEVICE_COMPILE

// The dynamic shared memory of every attnjit kernel, declared once: each entry carves its tiles
// out of it (a second declaration with another alignment would not compile). 128 bytes is what
// the sm80 tiles need; the sm90 kernel and the probes pad to 1024 themselves.
extern __shared__ __align__(128) unsigned char attnjit_dynamic_smem[];

ATTNJIT_DEVICE unsigned smem_address(const void* ptr) {
  unsigned long long address;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(address) : "l"(ptr));
  return static_cast<unsigned>(address);
}

// 16-byte asynchronous copy; `valid` false reads nothing and writes 16 zero bytes.
ATTNJIT_DEVICE void cp_async_16(unsigned smem_addr, const void* global_ptr, bool valid) {
  const int src_size = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr),
               "l"(global_ptr), "r"(src_size)
               : "memory");
}

// Plain stores and loads, named so that every shared- and global-memory access of the kernels
// outside cp.async / ldmatrix goes through one place the emulator can check.
ATTNJIT_DEVICE void store_shared_32(unsigned char* smem, unsigned value) {
  *reinterpret_cast<unsigned*>(smem) = value;
}
ATTNJIT_DEVICE unsigned load_shared_u32(const unsigned char* smem) {
  return *reinterpret_cast<const unsigned*>(smem);
}
ATTNJIT_DEVICE Bytes16 load_shared_16(const unsigned char* smem) {
  return *reinterpret_cast<const Bytes16*>(smem);
}
ATTNJIT_DEVICE void store_global_16(unsigned short* global, Bytes16 value) {
  *reinterpret_cast<Bytes16*>(global) = value;
}
ATTNJIT_DEVICE void store_global_f32(float* global, float value) { *global = value; }
// A 16-byte global load issued where it is written, whatever uses its value: asm volatile, so
// that the compiler does not move it under a branch or predicate that depends on another load
// (split_combine.cuh: the partials must be in flight together with their slices' LSEs).
ATTNJIT_DEVICE Bytes16 load_global_16(const void* global) {
  Bytes16 value;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
               : "l"(global));
  return value;
}

ATTNJIT_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
ATTNJIT_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#endif  // ATTNJIT_DEVICE_COMPILE

#if ATTNJIT_KERNEL_CODE

// Issues the cp.async copies of rows [row0, row0 + ROWS) of one (batch, head) slice into a
// swizzled tile (chunk assignment: TileLoadPlan); rows at or past `num_rows` are zero-filled
// (their source is not read). `base` points at row 0 of the slice, `row_stride` is in elements.
// Every source address is the thread's first row plus a multiple of kRowsPerIter rows plus a
// constant. A zero-filled row passes its own address, unread (src-size 0, as CUTLASS's zfill
// copies do), so the constant folds into the copy instruction and no row costs a 64-bit multiply
// or a select: about 80 fewer integer instructions per K/V stage of the sm80 kernel at head dim
// 128 than selecting row 0's address for a zero-filled row (SASS; docs/PERFORMANCE.md,
// "Nineteenth session"). SAFE_SOURCE keeps that select, for kernels where the other form moves
// ptxas's allocation into spills (two blocks per SM at head dim 32: the document kernel, 20
// bytes on sm_80).
template <int ROWS, int HEAD_DIM, int NUM_THREADS, bool SAFE_SOURCE = false>
ATTNJIT_DEVICE void load_tile_async(unsigned smem_tile, const unsigned short* base,
                                    long long row_stride, int row0, int num_rows, int thread) {
  using Plan = TileLoadPlan<ROWS, HEAD_DIM, NUM_THREADS>;
  const int rows_left = num_rows - row0;
  const int first_row = Plan::first_row(thread);
  const unsigned short* src0 =
      base + static_cast<long long>(row0 + first_row) * row_stride +
      (Plan::first_block(thread) * Plan::kCpb + Plan::chunk_in_block(thread)) * 8;
  const unsigned dst0 = smem_tile + Plan::dst_base(thread);
#pragma unroll
  for (int i = 0; i < Plan::kIters; ++i) {
    if (Plan::active(thread, i)) {
      const bool valid = first_row + Plan::row_advance(i) < rows_left;
      const int column = Plan::block_advance(i) * Plan::kCpb * 8;
      const unsigned short* src;
      if constexpr (SAFE_SOURCE) {
        src = valid ? src0 + Plan::row_advance(i) * row_stride + column : base;
      } else {
        // Note: row_advance(i) is a multiple of kRowsPerIter: a small multiple of one stride.
        const long long iter_stride = Plan::kRowsPerIter * row_stride;
        src = src0 + (Plan::row_advance(i) / Plan::kRowsPerIter) * iter_stride + column;
      }
      cp_async_16(dst0 + Plan::dst_advance(i), src, valid);
    }
  }
}

// load_tile_async for the rows of a packed GQA step of several queries (FwdParams::pack_gqa,
// pack_q_len): tile row r is query head r % group of the block's group at query r / group, so
// its source is `base` + (r % group) * head_stride + (r / group) * row_stride, which no single
// row stride gives (`inverse`: packed_row_inverse(group), rows below kPackedRowLimit). Rows at or
// past `num_rows` are zero-filled from `base`, unread.
template <int ROWS, int HEAD_DIM, int NUM_THREADS>
ATTNJIT_DEVICE void load_packed_rows_async(unsigned smem_tile, const unsigned short* base,
                                           long long head_stride, long long row_stride, int group,
                                           unsigned inverse, int row0, int num_rows, int thread) {
  using Plan = TileLoadPlan<ROWS, HEAD_DIM, NUM_THREADS>;
  const unsigned dst0 = smem_tile + Plan::dst_base(thread);
#pragma unroll
  for (int i = 0; i < Plan::kIters; ++i) {
    if (Plan::active(thread, i)) {
      const int r = row0 + Plan::row(thread, i);
      const int query = packed_row_query(r, inverse);
      const bool valid = r < num_rows;
      const unsigned short* src =
          valid ? base + (r - query * group) * head_stride + query * row_stride +
                      Plan::chunk(thread, i) * 8
                : base;
      cp_async_16(dst0 + Plan::dst_advance(i), src, valid);
    }
  }
}

// A paged cache's key and value tiles (FwdParams::kv_pages): rows [row0, row0 + ROWS) of a
// sequence whose row j is row page.remainder(j) of page pages[page.quotient(j)] of the pools at
// k_base and v_base (the key/value head's row 0 of page 0); rows at or past `num_rows`, and rows
// of a page outside [0, num_pages), are zero-filled (unread). A tile inside one page (pages of a
// multiple of ROWS rows, or the tiles of larger pages that do not cross a page's end) takes one
// lookup, then load_tile_async's copies. Others (smaller pages; a large page's end) take a lookup
// per distinct row a thread copies (TileLoadPlan::kRowSlots), all issued before the first copy
// so that their latencies overlap, and shared by the key and the value copies.
// DENSE_PAGE: a null `pages` means dense keys and values, read as one page `dense_page` of
// kDensePageRows rows (the kernel with sequence tables, whose dense calls pass a page as large as
// any sequence): one code path for both kinds of call, where two cost that kernel 16 bytes of
// spills at head dim 32.
template <int ROWS, int HEAD_DIM, int NUM_THREADS, bool SAFE_SOURCE, bool DENSE_PAGE = false>
ATTNJIT_DEVICE void load_paged_kv_async(unsigned k_tile, unsigned v_tile,
                                        const unsigned short* k_base, const long long* k_stride,
                                        const unsigned short* v_base, const long long* v_stride,
                                        const int* pages, const RowDivisor& page_rows,
                                        int num_pages, int row0, int num_rows, int thread,
                                        int dense_page = 0) {
  using Plan = TileLoadPlan<ROWS, HEAD_DIM, NUM_THREADS>;
  const int tile_page = page_rows.quotient(row0);
  const int first = row0 - tile_page * page_rows.size;
  if (first + ROWS <= page_rows.size) {  // the tile lies inside one page
    const int page = DENSE_PAGE && pages == nullptr ? dense_page : pages[tile_page];
    const bool valid = static_cast<unsigned>(page) < static_cast<unsigned>(num_pages);
    const int rows = valid ? first + (num_rows - row0) : first;
    const long long k_page = valid ? page * k_stride[0] : 0;
    const long long v_page = valid ? page * v_stride[0] : 0;
    load_tile_async<ROWS, HEAD_DIM, NUM_THREADS, SAFE_SOURCE>(k_tile, k_base + k_page,
                                                              k_stride[2], first, rows, thread);
    load_tile_async<ROWS, HEAD_DIM, NUM_THREADS, SAFE_SOURCE>(v_tile, v_base + v_page,
                                                              v_stride[2], first, rows, thread);
    return;
  }
  int page[Plan::kRowSlots];
  int in_page[Plan::kRowSlots];  // each row's row in its page, from the lookup's quotient
#pragma unroll
  for (int slot = 0; slot < Plan::kRowSlots; ++slot) {
    const int r = row0 + Plan::slot_row(thread, slot);
    const int q = page_rows.quotient(r);
    page[slot] = r < num_rows ? pages[q] : -1;
    in_page[slot] = r - q * page_rows.size;
  }
  const unsigned dst0 = Plan::dst_base(thread);
  // Note: a row's sources are formed once and serve all of its chunks (the iterations of its
  // slot, kRowSlots apart), so that only one row's two addresses are live at a time.
#pragma unroll
  for (int slot = 0; slot < Plan::kRowSlots; ++slot) {
    const int r = row0 + Plan::slot_row(thread, slot);
    const bool valid = static_cast<unsigned>(page[slot]) < static_cast<unsigned>(num_pages);
    const long long row = in_page[slot];
    const unsigned short* k_row = valid ? k_base + page[slot] * k_stride[0] + row * k_stride[2]
                                        : k_base;
    const unsigned short* v_row = valid ? v_base + page[slot] * v_stride[0] + row * v_stride[2]
                                        : v_base;
#pragma unroll
    for (int i = slot; i < Plan::kIters; i += Plan::kRowSlots) {
      if (Plan::active(thread, i)) {
        const int column = Plan::chunk(thread, i) * 8;
        cp_async_16(k_tile + dst0 + Plan::dst_advance(i), k_row + column, valid);
        cp_async_16(v_tile + dst0 + Plan::dst_advance(i), v_row + column, valid);
      }
    }
  }
}

#endif  // ATTNJIT_KERNEL_CODE

}  // namespace attnjit
