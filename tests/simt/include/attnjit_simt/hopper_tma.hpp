// Emulated sm90_tma.cuh: a tiled 4-d or 5-d TMA load reads the fake tensor map
// (fake_tensor_map.hpp), copies the box from the input buffers with zeros for out-of-range
// elements, lays it out with the 128B swizzle and completes its bytes on the mbarrier, all at
// issue. The words it writes stay tied to the mbarrier phase (shared_memory.hpp), so a thread
// reading them without having waited for that phase is reported, and a load into bytes an un-waited
// wgmma group still reads is reported as the race it is on the hardware.
// Not modelled (reported when used): interleaved maps, element strides other than 1, the 32B and
// 64B swizzles, element sizes other than 2 bytes, and boxes whose inner dimension is not exactly
// the 128-byte swizzle span.
#pragma once

#include <vector>

#include "attnjit/sm90_tma.cuh"
#include "attnjit_simt/fake_tensor_map.hpp"
#include "attnjit_simt/hopper_barrier.hpp"

// Tensor maps reach kernels as `const __grid_constant__ TensorMap` parameters; on the host every
// parameter is plain memory.
#define __grid_constant__

namespace attnjit::simt {

inline FakeTensorMap checked_tensor_map(const TensorMap* map, const char* what) {
  FakeTensorMap decoded;
  if (map == nullptr || !decode_fake_tensor_map(map, decoded)) {
    fail("%s: %p holds no tensor map made by cuTensorMapEncodeTiled", what,
         static_cast<const void*>(map));
  }
  return decoded;
}

// The 128B swizzle acts on shared-memory address bits: bits [4:6] ^= bits [7:9] (PTX ISA,
// "Tensor-copy swizzling modes"). Offsets from the window base qualify: the base is 1024-aligned.
inline std::size_t swizzle_128b(std::size_t offset) { return offset ^ (((offset >> 7) & 7) << 4); }

// Reads the box row at coordinates x[1..rank-1] of `map` into `row` (box_dim[0] elements from
// x[0]), zeros out of range.
inline void read_box_row(const FakeTensorMap& map, const long long* x, unsigned char* row) {
  std::uintptr_t offset = 0;
  for (unsigned d = 1; d < map.rank; ++d) {
    if (x[d] < 0 || x[d] >= static_cast<long long>(map.global_dim[d])) return;
    offset += static_cast<std::uintptr_t>(x[d] * static_cast<long long>(map.global_strides[d - 1]));
  }
  const long long x0 = x[0];
  const long long first = x0 < 0 ? -x0 : 0;
  const long long last =
      std::min<long long>(map.box_dim[0], static_cast<long long>(map.global_dim[0]) - x0);
  if (first >= last) return;
  const std::uintptr_t address =
      map.global_address + static_cast<std::uintptr_t>((x0 + first) * 2) + offset;
  const auto* source = reinterpret_cast<const void*>(address);
  const std::size_t bytes = static_cast<std::size_t>(last - first) * 2;
  if (find_region(source, bytes) == nullptr) {
    fail("TMA load reads %zu bytes at %p, outside every input buffer", bytes, source);
  }
  std::memcpy(row + first * 2, source, bytes);
}

// A tiled load of a rank-`rank` map at element coordinates `c` (sm90_tma.cuh's tma_load_4d and
// tma_load_5d): the box's rows in order (dimension 1 fastest), each 128B-swizzled by its shared
// address.
inline void tma_load(const TensorMap* map, unsigned bar, unsigned smem_dst, unsigned rank,
                     const int* c) {
  const FakeTensorMap m = checked_tensor_map(map, "TMA load");
  if (m.rank != rank) fail("tma_load_%ud with a rank-%u tensor map", rank, m.rank);
  bool unit_strides = true;
  for (unsigned d = 0; d < rank; ++d) unit_strides = unit_strides && m.element_strides[d] == 1;
  if (fake_tensor_map_element_bytes(m.data_type) != 2 || m.interleave != kFakeInterleaveNone ||
      !unit_strides) {
    fail("TMA load: only 16-bit elements, no interleave and unit element strides are modelled");
  }
  const bool swizzled = m.swizzle == kFakeSwizzle128B;
  if (!swizzled && m.swizzle != kFakeSwizzleNone) {
    fail("TMA load: swizzle mode %u is not modelled (only none and 128B)", m.swizzle);
  }
  const std::size_t row_bytes = std::size_t{m.box_dim[0]} * 2;
  if (swizzled && row_bytes != 128) {
    fail("TMA load: a 128B-swizzled box of %zu-byte rows is not modelled (128 only)", row_bytes);
  }
  std::size_t rows = 1;
  for (unsigned d = 1; d < rank; ++d) rows *= m.box_dim[d];
  const std::size_t bytes = rows * row_bytes;
  SharedMemory& smem = *emulator().smem;
  const std::size_t dst = smem.offset_of_address(smem_dst, 16, "TMA destination");
  const std::size_t alignment = swizzled ? 1024 : 128;
  if (dst % alignment != 0) {
    fail("TMA destination at shared byte %zu is not %zu-byte aligned%s", dst, alignment,
         swizzled ? " (the 128B swizzle pattern repeats every 1024 bytes)" : "");
  }
  if (dst + bytes > smem.size()) {
    fail("TMA load of %zu bytes at shared byte %zu is past the %zu bytes of the block", bytes, dst,
         smem.size());
  }
  check_no_wgmma_reads(dst, dst + bytes, "TMA load");
  unsigned bar_offset;
  Mbarrier& barrier = mbarrier_at(bar, "TMA load completion", bar_offset);
  std::vector<unsigned char> box(bytes, 0);
  for (std::size_t row = 0; row < rows; ++row) {
    long long x[5] = {c[0], 0, 0, 0, 0};
    std::size_t rest = row;
    for (unsigned d = 1; d < rank; ++d) {
      x[d] = static_cast<long long>(c[d]) + static_cast<long long>(rest % m.box_dim[d]);
      rest /= m.box_dim[d];
    }
    read_box_row(m, x, box.data() + row * row_bytes);
  }
  for (std::size_t chunk = 0; chunk < bytes; chunk += 16) {
    const std::size_t at = swizzled ? swizzle_128b(dst + chunk) : dst + chunk;
    smem.land_tma(at, box.data() + chunk, 16, bar_offset, barrier.phase);
  }
  // Note: out-of-range elements count as transferred bytes.
  mbarrier_complete_tx(bar_offset, barrier, static_cast<unsigned>(bytes));
}

}  // namespace attnjit::simt

namespace attnjit {

inline void tma_prefetch_descriptor(const TensorMap* map) {
  simt::checked_tensor_map(map, "prefetch.tensormap");
}

inline void tma_load_4d(const TensorMap* map, unsigned bar, unsigned smem_dst, int c0, int c1,
                        int c2, int c3) {
  const int c[4] = {c0, c1, c2, c3};
  simt::tma_load(map, bar, smem_dst, 4, c);
}

inline void tma_load_5d(const TensorMap* map, unsigned bar, unsigned smem_dst, int c0, int c1,
                        int c2, int c3, int c4) {
  const int c[5] = {c0, c1, c2, c3, c4};
  simt::tma_load(map, bar, smem_dst, 5, c);
}

}  // namespace attnjit
