// Emulated sm90_wgmma.cuh. Each warp of a warpgroup computes its own 16 rows of D (warp w % 4 owns
// rows 16 * (w % 4) ..): a wgmma is a warp collective that decodes the matrix descriptors field
// by field (start address, LBO, SBO, base offset, swizzle mode; PTX ISA "Matrix Descriptor
// Format"), reads its operands from shared memory through the async proxy checks, and computes
// D = (scale-d ? D : 0) + A * B with exact products and fp32 rounding of the sum, as mma.sync is
// emulated. The result is held back: the lanes' accumulator registers are filled with a NaN
// marker (kInFlightAccumulatorBits) until a wgmma_wait_group retires the group, so reading them
// early is reported where the value is used (stores, conversions, shuffles, exp2), writing them
// early is reported at the wait, and a group never waited for is reported at exit.
// Also checked: a wgmma_fence between the last wgmma_wait_group and the next wgmma, descriptors
// uniform across the warp, and TMA loads into operand bytes of un-waited groups (hopper_tma.hpp).
// Not modelled: swizzle modes other than 128B, a nonzero base offset, the warpgroup-wide
// agreement of the four warps (each warp is checked alone), and setmaxnreg's register budget.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "attnjit/sm90_wgmma.cuh"
#include "attnjit_simt/hopper_state.hpp"
#include "attnjit_simt/primitives.hpp"

namespace attnjit::simt {

struct MatrixDescriptor {
  unsigned start, leading_byte_offset, stride_byte_offset, base_offset, swizzle;
};

inline MatrixDescriptor decode_matrix_descriptor(unsigned long long desc) {
  const auto field = [desc](int shift, unsigned mask) {
    return static_cast<unsigned>((desc >> shift) & mask);
  };
  const MatrixDescriptor decoded{field(0, 0x3fff) << 4, field(16, 0x3fff) << 4,
                                 field(32, 0x3fff) << 4, field(49, 7), field(62, 3)};
  if (decoded.swizzle != 1) {
    fail("wgmma descriptor 0x%llx: swizzle mode %u is not modelled (only 1, 128B)", desc,
         decoded.swizzle);
  }
  if (decoded.base_offset != 0) {
    fail("wgmma descriptor 0x%llx: base offset %u is not modelled (only 0)", desc,
         decoded.base_offset);
  }
  return decoded;
}

// Shared-window address of element (mn, k) of an operand, before the swizzle (PTX ISA, "Shared
// Memory Matrix Layout", 128B swizzle, in 16-byte units T):
//   K-major  ((8, m), (T, 2k)) : ((8T, SBO), (1, T)): 8 rows 128 bytes apart, row groups SBO apart,
//            the 16 K-elements contiguous;
//   MN-major ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO)): 64 MN-elements contiguous, the next
//            64 LBO on; K rows 128 bytes apart, groups of 8 K rows SBO apart.
inline unsigned k_major_address(const MatrixDescriptor& d, int mn, int k) {
  return d.start + static_cast<unsigned>((mn / 8) * d.stride_byte_offset + (mn % 8) * 128 + k * 2);
}
inline unsigned mn_major_address(const MatrixDescriptor& d, int mn, int k) {
  return d.start + static_cast<unsigned>((mn / 64) * d.leading_byte_offset + (mn % 64) * 2 +
                                         (k / 8) * d.stride_byte_offset + (k % 8) * 128);
}

template <typename ELEM>
double widen_element(std::uint16_t bits) {
  return std::is_same_v<ELEM, bf16_t> ? bf16_bits_to_float(bits) : fp16_bits_to_float(bits);
}

// Reads an operand 16 bytes (8 elements along its contiguous dimension) at a time: the swizzle
// permutes whole 16-byte chunks, so the 8 elements after a chunk's first stay in order. Each chunk
// is checked through the async proxy, and the span of all of them is kept for the TMA checks.
class OperandReader {
 public:
  OperandReader(int warp, const char* what) : warp_(warp), what_(what) {}

  // The 8 elements whose first has the unswizzled shared-window address `address`, to out[0..7].
  template <typename ELEM>
  void chunk(unsigned address, double* out) {
    SharedMemory& smem = *emulator().smem;
    const std::size_t offset =
        smem.offset_of_address(address ^ (((address >> 7) & 7) << 4), 16, what_);
    smem.read_async_proxy(offset, 16, warp_, what_);
    begin_ = std::min(begin_, offset);
    end_ = std::max(end_, offset + 16);
    std::uint16_t bits[8];
    std::memcpy(bits, smem.base() + offset, 16);
    for (int i = 0; i < 8; ++i) out[i] = widen_element<ELEM>(bits[i]);
  }
  std::size_t begin() const { return begin_; }
  std::size_t end() const { return end_; }

 private:
  int warp_;
  const char* what_;
  std::size_t begin_ = ~std::size_t{0}, end_ = 0;
};

// The newest op still held back that writes the accumulator array `d`, or nullptr.
inline const WgmmaOp* pending_op_for(const WarpWgmma& ww, const float* d, int lane) {
  for (auto op = ww.open.rbegin(); op != ww.open.rend(); ++op) {
    if (op->d[lane] == d) return &*op;
  }
  for (auto group = ww.committed.rbegin(); group != ww.committed.rend(); ++group) {
    for (auto op = group->rbegin(); op != group->rend(); ++op) {
      if (op->d[lane] == d) return &*op;
    }
  }
  return nullptr;
}

// Lane inputs: u[0..1] desc_a (ss) or u[0..3] the A registers (rs); u[4..5] desc_b; u[6]
// accumulate; u[7] N | bf16 << 16 | rs << 17 | B MN-major << 18; pointer: the lane's
// accumulators. B is MN-major (imm-trans-b 1) for rs and ss_mn, K-major for ss.
template <typename ELEM, int N, bool A_FROM_REGISTERS, bool B_MN_MAJOR = A_FROM_REGISTERS>
void wgmma_issue(WarpState& w) {
  const int warp = emulator().current->warp;
  WarpWgmma& ww = hopper().wgmma[warp];
  const char* what = A_FROM_REGISTERS ? "wgmma.mma_async (A from registers)" : "wgmma.mma_async";
  for (int lane = 1; lane < 32; ++lane) {
    const int first = A_FROM_REGISTERS ? 4 : 0;
    if (!std::equal(w.in[lane].u + first, w.in[lane].u + 8, w.in[0].u + first)) {
      fail("%s: lane %d's descriptors, scale-d or shape differ from lane 0's", what, lane);
    }
  }
  if (!ww.fenced) {
    fail(
        "%s without a wgmma_fence since the warp's last wgmma_wait_group (PTX ISA: wgmma.fence "
        "orders the registers' earlier accesses before wgmma.mma_async)",
        what);
  }
  const auto desc = [&](int i) {
    return static_cast<unsigned long long>(w.in[0].u[i]) |
           (static_cast<unsigned long long>(w.in[0].u[i + 1]) << 32);
  };
  const MatrixDescriptor b_desc = decode_matrix_descriptor(desc(4));
  double a[16][16];
  double b[16][N];
  OperandReader a_reader(warp, "wgmma operand A");
  OperandReader b_reader(warp, "wgmma operand B");
  const int row0 = 16 * (warp % 4);
  if constexpr (A_FROM_REGISTERS) {
    // The m16n8k16 A fragment: (r, k) in register (r / 8) + 2 * (k / 8) of lane
    // 4 * (r % 8) + (k % 8) / 2, half k % 2.
    for (int r = 0; r < 16; ++r) {
      for (int k = 0; k < 16; ++k) {
        const unsigned reg = w.in[4 * (r % 8) + (k % 8) / 2].u[(r / 8) + 2 * (k / 8)];
        a[r][k] = widen_element<ELEM>(static_cast<std::uint16_t>(k % 2 == 0 ? reg : reg >> 16));
      }
    }
  } else {
    const MatrixDescriptor a_desc = decode_matrix_descriptor(desc(0));
    for (int r = 0; r < 16; ++r) {
      for (int k0 = 0; k0 < 16; k0 += 8) {
        a_reader.chunk<ELEM>(k_major_address(a_desc, row0 + r, k0), &a[r][k0]);
      }
    }
  }
  // B(k, n): K-major ([N][K], 8 k per chunk) or MN-major ([K][N], 8 n per chunk; imm-trans-b
  // = 1).
  double run[8];
  for (int n = 0; n < N; n += B_MN_MAJOR ? 8 : 1) {
    for (int k = 0; k < 16; k += B_MN_MAJOR ? 1 : 8) {
      if constexpr (B_MN_MAJOR) {
        b_reader.chunk<ELEM>(mn_major_address(b_desc, n, k), run);
        for (int i = 0; i < 8; ++i) b[k][n + i] = run[i];
      } else {
        b_reader.chunk<ELEM>(k_major_address(b_desc, n, k), run);
        for (int i = 0; i < 8; ++i) b[k + i][n] = run[i];
      }
    }
  }
  WgmmaOp op;
  op.count = N / 2;
  op.result.resize(32 * static_cast<std::size_t>(op.count));
  if (!A_FROM_REGISTERS) op.reads[0] = {a_reader.begin(), a_reader.end()};
  op.reads[1] = {b_reader.begin(), b_reader.end()};
  const bool accumulate = w.in[0].u[6] != 0;
  for (int lane = 0; lane < 32; ++lane) {
    op.d[lane] = static_cast<float*>(w.in[lane].pointer);
    const WgmmaOp* chained = accumulate ? pending_op_for(ww, op.d[lane], lane) : nullptr;
    const int g = lane / 4, q = lane % 4;
    for (int e = 0; e < op.count; ++e) {
      // d[4j + 0..1] = D(g, 8j + 2q + {0, 1}), d[4j + 2..3] = D(g + 8, same columns).
      const int r = g + 8 * ((e % 4) / 2);
      const int n = 8 * (e / 4) + 2 * q + e % 2;
      double sum = 0.0;
      if (accumulate) {
        sum = chained != nullptr ? chained->result[lane * op.count + e] : op.d[lane][e];
      }
      for (int k = 0; k < 16; ++k) sum += a[r][k] * b[k][n];
      op.result[lane * op.count + e] = static_cast<float>(sum);
    }
  }
  float marker;
  std::memcpy(&marker, &kInFlightAccumulatorBits, 4);
  for (int lane = 0; lane < 32; ++lane) std::fill(op.d[lane], op.d[lane] + op.count, marker);
  ww.open.push_back(std::move(op));
  ++ww.issued;
}

// Hands the retired ops' results to the lanes' registers, unless a newer op (later in the group,
// or still held back) writes the same registers.
inline void retire_group(WarpWgmma& ww, std::vector<WgmmaOp>& group) {
  for (std::size_t i = 0; i < group.size(); ++i) {
    const WgmmaOp& op = group[i];
    for (int lane = 0; lane < 32; ++lane) {
      const auto same_registers = [&](const WgmmaOp& later) { return later.d[lane] == op.d[lane]; };
      if (std::any_of(group.begin() + static_cast<std::ptrdiff_t>(i) + 1, group.end(),
                      same_registers) ||
          pending_op_for(ww, op.d[lane], lane) != nullptr) {
        continue;
      }
      for (int e = 0; e < op.count; ++e) {
        std::uint32_t bits;
        std::memcpy(&bits, &op.d[lane][e], 4);
        if (bits != kInFlightAccumulatorBits) {
          fail("wgmma.wait_group: lane %d wrote accumulator %d while its wgmma was in flight", lane,
               e);
        }
      }
      std::memcpy(op.d[lane], &op.result[lane * op.count], sizeof(float) * op.count);
    }
  }
}

template <typename Step>
void wgmma_warp_step(Collective collective, Step step) {
  LaneInput input{};
  warp_collective(collective, input,
                  [&](WarpState&) { step(hopper().wgmma[emulator().current->warp]); });
}

// wgmma is warpgroup-wide (.sync.aligned over 4 warps) while the emulator computes each warp
// alone: when the last thread of a warpgroup exits, its warps must have issued as many.
inline void check_warpgroup_agreement(const ThreadState& t) {
  const Emulator& e = emulator();
  const int first_warp = t.warp / 4 * 4;
  const int end_warp = std::min(first_warp + 4, static_cast<int>(e.warps.size()));
  for (int tid = first_warp * 32; tid < end_warp * 32; ++tid) {
    if (tid != t.tid && !e.threads[tid].done) return;
  }
  const std::vector<WarpWgmma>& warps = hopper().wgmma;
  for (int warp = first_warp + 1; warp < end_warp; ++warp) {
    if (warps[warp].issued != warps[first_warp].issued) {
      fail(
          "warp %d issued %u wgmma.mma_async and warp %d %u: the warps of a warpgroup must "
          "issue every wgmma together",
          first_warp, warps[first_warp].issued, warp, warps[warp].issued);
    }
  }
}

inline void check_wgmma_at_exit(const ThreadState& t) {
  check_warpgroup_agreement(t);
  const WarpWgmma& ww = hopper().wgmma[t.warp];
  if (!ww.open.empty()) {
    fail("exited with %zu wgmma never committed (wgmma_commit_group)", ww.open.size());
  }
  if (!ww.committed.empty()) {
    fail("exited with %zu wgmma groups never waited for (wgmma_wait_group)", ww.committed.size());
  }
}

}  // namespace attnjit::simt

namespace attnjit {

inline void wgmma_fence() {
  simt::wgmma_warp_step(simt::Collective::wgmma_fence,
                        [](simt::WarpWgmma& ww) { ww.fenced = true; });
}

inline void wgmma_commit_group() {
  simt::wgmma_warp_step(simt::Collective::wgmma_commit, [](simt::WarpWgmma& ww) {
    ww.committed.push_back(std::move(ww.open));
    ww.open.clear();
  });
}

template <int N>
void wgmma_wait_group() {
  simt::wgmma_warp_step(simt::Collective::wgmma_wait, [](simt::WarpWgmma& ww) {
    while (ww.committed.size() > static_cast<std::size_t>(N)) {
      std::vector<simt::WgmmaOp> group = std::move(ww.committed.front());
      ww.committed.pop_front();
      simt::retire_group(ww, group);
    }
    ww.fenced = false;
  });
}

template <int R>
void wgmma_fence_accumulators(float (&)[R]) {}

template <int REGS>
void warpgroup_reg_alloc() {
  static_assert(REGS % 8 == 0 && REGS >= 24 && REGS <= 256, "setmaxnreg: 24..256, step 8");
}

template <int REGS>
void warpgroup_reg_dealloc() {
  static_assert(REGS % 8 == 0 && REGS >= 24 && REGS <= 256, "setmaxnreg: 24..256, step 8");
}

template <typename ELEM, int N>
struct Wgmma {
  static_assert(N % 16 == 0 && N >= 64 && N <= 256, "N of the contract (sm90_wgmma.cuh)");
  static constexpr unsigned kShape = N | (std::is_same_v<ELEM, bf16_t> ? 1u << 16 : 0u);

  static void ss(float (&d)[N / 2], unsigned long long desc_a, unsigned long long desc_b,
                 int accumulate) {
    simt::LaneInput input{};
    input.u[0] = static_cast<unsigned>(desc_a);
    input.u[1] = static_cast<unsigned>(desc_a >> 32);
    issue<false>(input, d, desc_b, accumulate);
  }

  static void ss_mn(float (&d)[N / 2], unsigned long long desc_a, unsigned long long desc_b,
                    int accumulate) {
    simt::LaneInput input{};
    input.u[0] = static_cast<unsigned>(desc_a);
    input.u[1] = static_cast<unsigned>(desc_a >> 32);
    issue<false, true>(input, d, desc_b, accumulate);
  }

  static void rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long desc_b,
                 int accumulate) {
    simt::LaneInput input{};
    std::copy(a, a + 4, input.u);
    issue<true>(input, d, desc_b, accumulate);
  }

 private:
  template <bool A_FROM_REGISTERS, bool B_MN_MAJOR = A_FROM_REGISTERS>
  static void issue(simt::LaneInput& input, float (&d)[N / 2], unsigned long long desc_b,
                    int accumulate) {
    input.u[4] = static_cast<unsigned>(desc_b);
    input.u[5] = static_cast<unsigned>(desc_b >> 32);
    input.u[6] = accumulate != 0 ? 1u : 0u;
    input.u[7] = kShape | (A_FROM_REGISTERS ? 1u << 17 : 0u) | (B_MN_MAJOR ? 1u << 18 : 0u);
    input.pointer = d;
    simt::warp_collective(simt::Collective::wgmma, input,
                          simt::wgmma_issue<ELEM, N, A_FROM_REGISTERS, B_MN_MAJOR>);
  }
};

}  // namespace attnjit
