// The device primitives the kernels of kernels_templates/ use, written for the host from the PTX
// ISA: ldmatrix (plain and .trans), mma.sync.m16n8k16 with fp32 accumulation, cp.async with its
// commit/wait groups, shuffles, barriers, conversions and the built-in variables. Same names and
// signatures as the PTX versions (numeric.cuh, mma.cuh, copy.cuh, softmax.cuh), so the kernel
// source compiles unchanged.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "attnjit/numeric.cuh"
#include "attnjit_simt/hopper_state.hpp"
#include "attnjit_simt/scheduler.hpp"
#include "attnjit_simt/shared_memory.hpp"
#include "common/half.hpp"

// ---- Built-in variables and qualifiers.
namespace attnjit::simt {
// The quiet NaN an emulated wgmma leaves in its accumulator registers until wgmma_wait_group
// delivers the result (hopper_wgmma.hpp). Arithmetic carries the payload along, so the
// primitives that consume floats (stores, conversions, shuffles, exp2) report a read of an
// accumulator before its wait.
inline constexpr std::uint32_t kInFlightAccumulatorBits = 0x7fd1e5a5u;
inline void check_not_in_flight(float value, const char* what) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) == kInFlightAccumulatorBits) {
    fail("%s uses a wgmma accumulator before the wgmma_wait_group that delivers it", what);
  }
}

inline Dim3 thread_index() { return Dim3{static_cast<unsigned>(this_thread().tid), 0, 0}; }
}  // namespace attnjit::simt

#define threadIdx (::attnjit::simt::thread_index())
#define blockIdx (::attnjit::simt::emulator().block_idx)
#define blockDim (::attnjit::simt::emulator().block_dim)
#define gridDim (::attnjit::simt::emulator().grid)
#define attnjit_dynamic_smem (::attnjit::simt::emulator().smem->base())
#define __global__ __attribute__((visibility("default")))
#define __launch_bounds__(...)

inline void __syncthreads() { attnjit::simt::block_barrier(); }
inline int __syncthreads_or(int predicate) {
  return attnjit::simt::block_barrier(predicate != 0) ? 1 : 0;
}

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  using namespace attnjit::simt;
  if (mask != 0xffffffffu) fail("__syncwarp with a partial mask 0x%x", mask);
  LaneInput input{};
  warp_collective(Collective::syncwarp, input, [](WarpState& w) { ++w.sync_epoch; });
}

namespace attnjit::simt {
// A 32-bit shuffle of `op` (named `name` in reports): lane l gets the value of lane
// source_lane(l, arg_l), each lane's `arg` passed along with its value.
template <typename T, typename SourceLane>
T emulated_shuffle(Collective op, const char* name, unsigned mask, T value, int arg,
                   SourceLane source_lane) {
  static_assert(sizeof(T) == 4, "32-bit shuffles only");
  if constexpr (std::is_same_v<T, float>) check_not_in_flight(value, collective_name(op));
  if (mask != 0xffffffffu) fail("%s with a partial mask 0x%x", name, mask);
  LaneInput input{};
  std::memcpy(&input.u[0], &value, 4);
  input.u[1] = static_cast<unsigned>(arg);
  const unsigned* out = warp_collective(op, input, [&](WarpState& w) {
    for (int lane = 0; lane < 32; ++lane) {
      w.out[lane][0] = w.in[source_lane(w, lane, static_cast<int>(w.in[lane].u[1]))].u[0];
    }
  });
  T result;
  std::memcpy(&result, &out[0], 4);
  return result;
}
}  // namespace attnjit::simt

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
  using namespace attnjit::simt;
  return emulated_shuffle(Collective::shfl_xor, "__shfl_xor_sync", mask, value, lane_mask,
                          [](const WarpState& w, int lane, int xor_mask) {
                            if (static_cast<unsigned>(xor_mask) != w.in[0].u[1]) {
                              fail("__shfl_xor_sync with different lane masks");
                            }
                            return lane ^ (xor_mask & 31);
                          });
}

// Lane `src_lane` of every lane's value (src_lane taken modulo 32, as the hardware's width of 32
// does); each lane may name its own.
template <typename T>
T __shfl_sync(unsigned mask, T value, int src_lane) {
  using namespace attnjit::simt;
  return emulated_shuffle(Collective::shfl_idx, "__shfl_sync", mask, value, src_lane,
                          [](const WarpState&, int, int source) { return source & 31; });
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  using namespace attnjit::simt;
  if (mask != 0xffffffffu) fail("__ballot_sync with a partial mask 0x%x", mask);
  LaneInput input{};
  input.u[0] = predicate != 0 ? 1u : 0u;
  const unsigned* out = warp_collective(Collective::ballot, input, [](WarpState& w) {
    unsigned bits = 0u;
    for (int lane = 0; lane < 32; ++lane) bits |= w.in[lane].u[0] << lane;
    for (int lane = 0; lane < 32; ++lane) w.out[lane][0] = bits;
  });
  return out[0];
}

// Position of the least significant set bit, 1-based; 0 when no bit is set.
inline int __ffs(int value) { return __builtin_ffs(value); }
inline int __ffsll(long long value) { return __builtin_ffsll(value); }

namespace attnjit {

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

// ---- Conversions (numeric.cuh).
template <typename ELEM>
struct ElemTraits;

template <>
struct ElemTraits<bf16_t> {
  static unsigned pack2(float lo, float hi) {
    simt::check_not_in_flight(lo, "cvt.rn.bf16x2.f32");
    simt::check_not_in_flight(hi, "cvt.rn.bf16x2.f32");
    return static_cast<unsigned>(float_to_bf16_bits(lo)) |
           (static_cast<unsigned>(float_to_bf16_bits(hi)) << 16);
  }
};

template <>
struct ElemTraits<fp16_t> {
  static unsigned pack2(float lo, float hi) {
    simt::check_not_in_flight(lo, "cvt.rn.f16x2.f32");
    simt::check_not_in_flight(hi, "cvt.rn.f16x2.f32");
    return static_cast<unsigned>(float_to_fp16_bits(lo)) |
           (static_cast<unsigned>(float_to_fp16_bits(hi)) << 16);
  }
};

// ex2.approx.ftz / lg2.approx.ftz: subnormal inputs and results flush to zero.
inline float flush_subnormal(float x) { return std::fabs(x) < 1.17549435e-38f ? 0.0f * x : x; }
inline float fast_exp2(float x) {
  simt::check_not_in_flight(x, "ex2.approx");
  return flush_subnormal(std::exp2(flush_subnormal(x)));
}
inline float fast_log2(float x) { return std::log2(flush_subnormal(x)); }
inline float neg_infinity() { return -INFINITY; }
inline float quiet_nan() { return NAN; }

// ---- Shared memory and cp.async (copy.cuh).
inline unsigned smem_address(const void* ptr) {
  simt::SharedMemory& smem = *simt::emulator().smem;
  return simt::SharedMemory::kWindowBase +
         static_cast<unsigned>(smem.offset_of_pointer(ptr, 1, "cvta.to.shared"));
}

namespace simt {

inline const SimtRegion* find_region(const void* pointer, std::size_t bytes) {
  const auto p = reinterpret_cast<std::uintptr_t>(pointer);
  for (const SimtRegion& region : emulator().regions) {
    const auto begin = reinterpret_cast<std::uintptr_t>(region.data);
    if (p >= begin && p + bytes <= begin + region.bytes) return &region;
  }
  return nullptr;
}

inline void land_group(ThreadState& t, const std::vector<CopyOp>& group) {
  SharedMemory& smem = *emulator().smem;
  static const unsigned char zeros[16] = {};
  for (const CopyOp& op : group) {
    const void* data = zeros;
    if (op.valid) {
      if (find_region(op.src, 16) == nullptr) {
        fail("cp.async reads 16 bytes at %p, outside every input buffer", op.src);
      }
      data = op.src;
    }
    smem.land_async(op.dst, data, t.tid, t.warp);
  }
}

}  // namespace simt

inline void cp_async_16(unsigned smem_addr, const void* global_ptr, bool valid) {
  simt::ThreadState& t = simt::this_thread();
  simt::SharedMemory& smem = *simt::emulator().smem;
  const std::size_t offset = smem.offset_of_address(smem_addr, 16, "cp.async destination");
  if (valid && reinterpret_cast<std::uintptr_t>(global_ptr) % 16 != 0) {
    simt::fail("cp.async source %p is not 16-byte aligned", global_ptr);
  }
  smem.issue_async(offset, t.tid, t.warp);
  t.open_group.push_back({static_cast<unsigned>(offset), global_ptr, valid});
}

inline void cp_async_commit() {
  simt::ThreadState& t = simt::this_thread();
  t.in_flight.push_back(std::move(t.open_group));
  t.open_group.clear();
}

template <int N>
void cp_async_wait() {
  simt::ThreadState& t = simt::this_thread();
  while (t.in_flight.size() > static_cast<std::size_t>(N)) {
    simt::land_group(t, t.in_flight.front());
    t.in_flight.pop_front();
  }
}

inline void store_shared_32(unsigned char* smem_ptr, unsigned value) {
  simt::ThreadState& t = simt::this_thread();
  simt::SharedMemory& smem = *simt::emulator().smem;
  const std::size_t offset = smem.offset_of_pointer(smem_ptr, 4, "st.shared.b32");
  simt::check_no_wgmma_reads(offset, offset + 4, "st.shared.b32");
  smem.write(offset, &value, 4, t.tid, t.warp, "st.shared.b32");
}

inline unsigned load_shared_u32(const unsigned char* smem_ptr) {
  simt::ThreadState& t = simt::this_thread();
  simt::SharedMemory& smem = *simt::emulator().smem;
  const std::size_t offset = smem.offset_of_pointer(smem_ptr, 4, "ld.shared.b32");
  smem.read(offset, 4, t.tid, t.warp, "ld.shared.b32");
  unsigned value;
  std::memcpy(&value, smem.base() + offset, 4);
  return value;
}

inline Bytes16 load_shared_16(const unsigned char* smem_ptr) {
  simt::ThreadState& t = simt::this_thread();
  simt::SharedMemory& smem = *simt::emulator().smem;
  const std::size_t offset = smem.offset_of_pointer(smem_ptr, 16, "ld.shared.v4");
  smem.read(offset, 16, t.tid, t.warp, "ld.shared.v4");
  Bytes16 value;
  std::memcpy(&value, smem.base() + offset, 16);
  return value;
}

namespace simt {
inline void check_global_store(const void* pointer, std::size_t bytes, const char* what) {
  if (reinterpret_cast<std::uintptr_t>(pointer) % bytes != 0) {
    fail("%s at %p is misaligned", what, pointer);
  }
  const SimtRegion* region = find_region(pointer, bytes);
  if (region == nullptr || region->writable == 0) {
    fail("%s writes %zu bytes at %p, outside every output buffer", what, bytes, pointer);
  }
}
}  // namespace simt

inline void store_global_16(unsigned short* global, Bytes16 value) {
  simt::check_global_store(global, 16, "st.global.v4");
  std::memcpy(global, &value, 16);
}

inline Bytes16 load_global_16(const void* global) {
  if (reinterpret_cast<std::uintptr_t>(global) % 16 != 0) {
    simt::fail("ld.global.v4 at %p is misaligned", global);
  }
  Bytes16 value;
  std::memcpy(&value, global, 16);
  return value;
}

// ---- Programmatic dependent launch (grid_dependency.cuh). The emulator runs a launch's kernels
// one after another, so the ordering itself needs nothing; what it checks is the contract: in a
// launch the host made programmatic, a thread reads the kernel before's results only after its
// griddepcontrol.wait.
inline void launch_dependent_grids() {}

inline void wait_for_prerequisite_grids() { simt::this_thread().waited_for_grids = true; }

inline void note_prerequisite_read(const char* what) {
  if (simt::emulator().programmatic && !simt::this_thread().waited_for_grids) {
    simt::fail(
        "reads %s before griddepcontrol.wait in a programmatic launch: on the GPU the "
        "kernel that writes them may still be running",
        what);
  }
}

// ---- The sm90 kernel's timeline stamps (sm90_timeline.cuh): one counter for the process that
// every read advances, so that stamps taken one after another in emulated time are ordered as
// they were taken and never 0 (the record's "not reached"); one emulated SM.
inline unsigned long long timeline_clock() {
  static std::atomic<unsigned long long> ticks{0};
  return ++ticks;
}
inline unsigned long long timeline_ns() { return timeline_clock(); }
inline unsigned timeline_smid() { return 0; }

inline void store_global_f32(float* global, float value) {
  simt::check_not_in_flight(value, "st.global.f32");
  simt::check_global_store(global, 4, "st.global.f32");
  std::memcpy(global, &value, 4);
}

// ---- ldmatrix (mma.cuh): lanes 8i..8i+7 address the rows of matrix i.
namespace simt {

template <bool TRANSPOSE>
void ldmatrix_x4(unsigned smem_addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  LaneInput input{};
  input.u[0] = smem_addr;
  const unsigned* out = warp_collective(
      TRANSPOSE ? Collective::ldmatrix_trans : Collective::ldmatrix, input, [](WarpState& w) {
        SharedMemory& smem = *emulator().smem;
        const int warp = emulator().current->warp;
        std::size_t row_offset[32];
        for (int lane = 0; lane < 32; ++lane) {
          row_offset[lane] = smem.offset_of_address(w.in[lane].u[0], 16, "ldmatrix row");
          smem.read(row_offset[lane], 16, -1, warp, "ldmatrix");
        }
        auto element = [&](int matrix, int row, int col) {
          std::uint16_t value;
          std::memcpy(&value, smem.base() + row_offset[8 * matrix + row] + 2 * col, 2);
          return static_cast<unsigned>(value);
        };
        for (int lane = 0; lane < 32; ++lane) {
          for (int matrix = 0; matrix < 4; ++matrix) {
            // Plain: (row lane/4, cols 2*(lane%4), +1). Transposed: (rows 2*(lane%4), +1; col
            // lane/4). The element with the smaller index goes to the low half.
            const unsigned lo = TRANSPOSE ? element(matrix, 2 * (lane % 4), lane / 4)
                                          : element(matrix, lane / 4, 2 * (lane % 4));
            const unsigned hi = TRANSPOSE ? element(matrix, 2 * (lane % 4) + 1, lane / 4)
                                          : element(matrix, lane / 4, 2 * (lane % 4) + 1);
            w.out[lane][matrix] = lo | (hi << 16);
          }
        }
      });
  r0 = out[0];
  r1 = out[1];
  r2 = out[2];
  r3 = out[3];
}

// m16n8k16, row.col, fp32 accumulate. Fragments (lane = 4 * group + tig):
//   A(r, k): register (r / 8) + 2 * (k / 8) of lane 4 * (r % 8) + (k % 8) / 2, half k % 2
//   B(k, n): register k / 8 of lane 4 * n + (k % 8) / 2, half k % 2
//   C(r, n): element 2 * (r / 8) + n % 2 of lane 4 * (r % 8) + n / 2
template <typename ELEM>
void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  LaneInput input{};
  for (int i = 0; i < 4; ++i) input.u[i] = a[i];
  input.u[4] = b0;
  input.u[5] = b1;
  for (int i = 0; i < 4; ++i) input.f[i] = d[i];
  constexpr bool kBf16 = std::is_same_v<ELEM, bf16_t>;
  const unsigned* out = warp_collective(
      kBf16 ? Collective::mma_bf16 : Collective::mma_fp16, input, [](WarpState& w) {
        auto widen = [](unsigned reg, int half) {
          const auto bits = static_cast<std::uint16_t>(half == 0 ? reg & 0xffffu : reg >> 16);
          return static_cast<double>(kBf16 ? bf16_bits_to_float(bits) : fp16_bits_to_float(bits));
        };
        double a_val[16][16], b_val[16][8];
        for (int r = 0; r < 16; ++r) {
          for (int k = 0; k < 16; ++k) {
            a_val[r][k] = widen(w.in[4 * (r % 8) + (k % 8) / 2].u[(r / 8) + 2 * (k / 8)], k % 2);
          }
        }
        for (int k = 0; k < 16; ++k) {
          for (int n = 0; n < 8; ++n) {
            b_val[k][n] = widen(w.in[4 * n + (k % 8) / 2].u[4 + k / 8], k % 2);
          }
        }
        for (int r = 0; r < 16; ++r) {
          for (int n = 0; n < 8; ++n) {
            const int lane = 4 * (r % 8) + n / 2;
            const int e = 2 * (r / 8) + n % 2;
            double sum = w.in[lane].f[e];
            for (int k = 0; k < 16; ++k) sum += a_val[r][k] * b_val[k][n];
            const auto result = static_cast<float>(sum);
            std::memcpy(&w.out[lane][e], &result, 4);
          }
        }
      });
  for (int i = 0; i < 4; ++i) std::memcpy(&d[i], &out[i], 4);
}

}  // namespace simt

inline void ldmatrix_x4(unsigned smem_addr, unsigned& r0, unsigned& r1, unsigned& r2,
                        unsigned& r3) {
  simt::ldmatrix_x4<false>(smem_addr, r0, r1, r2, r3);
}

inline void ldmatrix_x4_trans(unsigned smem_addr, unsigned& r0, unsigned& r1, unsigned& r2,
                              unsigned& r3) {
  simt::ldmatrix_x4<true>(smem_addr, r0, r1, r2, r3);
}

template <typename ELEM>
struct Mma {
  static void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    simt::mma_m16n8k16<ELEM>(d, a, b0, b1);
  }
};

}  // namespace attnjit
