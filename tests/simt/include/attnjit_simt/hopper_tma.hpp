// Emulated sm90_tma.cuh: a tiled 4-d TMA load reads the fake tensor map (fake_tensor_map.hpp),
// copies the box from the input buffers with zeros for out-of-range elements, lays it out with the
// 128B swizzle and completes its bytes on the mbarrier, all at issue. The words it writes stay tied
// to the mbarrier phase (shared_memory.hpp), so a thread reading them without having waited for
// that phase is reported, and a load into bytes an un-waited wgmma group still reads is reported
// as the race it is on the hardware.
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

// Reads box row (x1, x2, x3) of `map` into `row` (box_dim[0] elements), zeros out of range.
inline void read_box_row(const FakeTensorMap& map, long long x0, long long x1, long long x2,
                         long long x3, unsigned char* row) {
  const long long dims[4] = {x0, x1, x2, x3};
  for (int d = 1; d < 4; ++d) {
    if (dims[d] < 0 || dims[d] >= static_cast<long long>(map.global_dim[d])) return;
  }
  const long long first = x0 < 0 ? -x0 : 0;
  const long long last =
      std::min<long long>(map.box_dim[0], static_cast<long long>(map.global_dim[0]) - x0);
  if (first >= last) return;
  const std::uintptr_t address =
      map.global_address +
      static_cast<std::uintptr_t>((x0 + first) * 2 +
                                  x1 * static_cast<long long>(map.global_strides[0]) +
                                  x2 * static_cast<long long>(map.global_strides[1]) +
                                  x3 * static_cast<long long>(map.global_strides[2]));
  const auto* source = reinterpret_cast<const void*>(address);
  const std::size_t bytes = static_cast<std::size_t>(last - first) * 2;
  if (find_region(source, bytes) == nullptr) {
    fail("TMA load reads %zu bytes at %p, outside every input buffer", bytes, source);
  }
  std::memcpy(row + first * 2, source, bytes);
}

}  // namespace attnjit::simt

namespace attnjit {

inline void tma_prefetch_descriptor(const TensorMap* map) {
  simt::checked_tensor_map(map, "prefetch.tensormap");
}

inline void tma_load_4d(const TensorMap* map, unsigned bar, unsigned smem_dst, int c0, int c1,
                        int c2, int c3) {
  using namespace simt;
  const FakeTensorMap m = checked_tensor_map(map, "TMA load");
  if (m.rank != 4) fail("tma_load_4d with a rank-%u tensor map", m.rank);
  if (fake_tensor_map_element_bytes(m.data_type) != 2 || m.interleave != kFakeInterleaveNone ||
      m.element_strides[0] != 1 || m.element_strides[1] != 1 || m.element_strides[2] != 1 ||
      m.element_strides[3] != 1) {
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
  const std::size_t rows = std::size_t{m.box_dim[1]} * m.box_dim[2] * m.box_dim[3];
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
  std::size_t row = 0;
  for (unsigned i3 = 0; i3 < m.box_dim[3]; ++i3) {
    for (unsigned i2 = 0; i2 < m.box_dim[2]; ++i2) {
      for (unsigned i1 = 0; i1 < m.box_dim[1]; ++i1, ++row) {
        read_box_row(m, c0, static_cast<long long>(c1) + i1, static_cast<long long>(c2) + i2,
                     static_cast<long long>(c3) + i3, box.data() + row * row_bytes);
      }
    }
  }
  for (std::size_t chunk = 0; chunk < bytes; chunk += 16) {
    const std::size_t at = swizzled ? swizzle_128b(dst + chunk) : dst + chunk;
    smem.land_tma(at, box.data() + chunk, 16, bar_offset, barrier.phase);
  }
  // Note: out-of-range elements count as transferred bytes.
  mbarrier_complete_tx(bar_offset, barrier, static_cast<unsigned>(bytes));
}

}  // namespace attnjit
