// Hopper warpgroup matrix multiply (wgmma.mma_async, PTX ISA "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate Instructions"): a warpgroup of 4 consecutive warps (128 threads, the first
// warp's index a multiple of 4) computes D[64][N] (+)= A[64][16] * B[16][N] with fp32
// accumulators in registers, A from shared memory or registers, B from shared memory, both
// described by 64-bit matrix descriptors. The instruction is asynchronous: it belongs to the
// group the next wgmma.commit_group closes, and its accumulators may be read only after a
// wgmma.wait_group that retires that group.
//
// Register layouts (PTX ISA, "Register Fragments and Shared Memory Matrix Layouts" for
// .m64nNk16), warpgroup thread t = 32 * w + lane, lane = 4 * g + q:
//   accumulator d[4 * j + 0..1] = D(16 * w + g,     8 * j + 2 * q + {0, 1}),
//               d[4 * j + 2..3] = D(16 * w + g + 8, 8 * j + 2 * q + {0, 1}), j < N / 8
//     (per warp, the mma.sync m16n8 C fragment of mma.cuh repeated over the N / 8 column chunks);
//   register A (.rs) of warp w: rows 16 * w .. 16 * w + 15 in the mma.sync m16n8k16 A layout.
// Shared-memory layout: the 128-byte-swizzled [rows][64] boxes of sm90_tma.cuh. One swizzle atom is
// 8 rows x 128 bytes (1024 bytes, 1024-byte aligned); the hardware applies the swizzle to the
// address it computes (bits [4:6] ^= bits [7:9]), so a descriptor may start 32 bytes into a row
// (the k-th 16-column step of a 64-column box) and still see the layout TMA wrote.
// Note: the SIMT emulator (tests/simt/include/attnjit_simt/hopper_wgmma.hpp) decodes these
// descriptors field by field and computes the products for host runs.
#pragma once

#include "attnjit/numeric.cuh"

namespace attnjit {

// Matrix descriptor fields (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address >> 4,
// 16-29 leading dimension byte offset >> 4, 32-45 stride dimension byte offset >> 4, 49-51 matrix
// base offset (0: every atom we address starts on a 1024-byte boundary, or 32/64/96 bytes into
// its first row, which the address-based swizzle handles), 62-63 swizzle mode (0 none, 1 128B,
// 2 64B, 3 32B).
struct WgmmaDescriptorFields {
  static constexpr unsigned long long kSwizzle128B = 1ull << 62;
  static constexpr unsigned kAtomBytes = 1024;  // 8 rows of 128 bytes
  ATTNJIT_HD static constexpr unsigned long long field(unsigned bytes, int shift) {
    return static_cast<unsigned long long>((bytes & 0x3ffffu) >> 4) << shift;
  }
};

// K-major operand ([M or N rows][K], K contiguous: the Q and K tiles). Canonical layout (PTX ISA,
// "Shared Memory Matrix Layout", 128B swizzle, K-major): ((8, m), (T, 2k)) : ((8T, SBO), (1, T)) in
// 16-byte units T: 8 rows 128 bytes apart, the next 8 rows SBO = 1024 bytes on; the 16 K-elements
// are the first 32 bytes of each row. LBO is unused for swizzled K-major layouts (1 by
// convention). K-steps of 16 advance `smem_addr` by 32 bytes inside a 64-column box; the next box
// starts BOX_ROWS * 128 bytes on.
ATTNJIT_HD unsigned long long wgmma_desc_k_major(unsigned smem_addr) {
  using F = WgmmaDescriptorFields;
  return F::field(smem_addr, 0) | F::field(16, 16) | F::field(F::kAtomBytes, 32) | F::kSwizzle128B;
}

// MN-major B operand ([K rows][N], N contiguous: the V tile of P.V, K = key rows, N = head dim in
// 64-column boxes `box_bytes` apart). Canonical layout (128B swizzle, MN-major):
// ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO)): 64 N-elements fill a 128-byte row, the next 64
// are LBO = box_bytes on; K rows are 128 bytes apart, the next 8 rows SBO = 1024 bytes on. K-steps
// of 16 advance `smem_addr` by 16 rows = 2048 bytes.
ATTNJIT_HD unsigned long long wgmma_desc_mn_major(unsigned smem_addr, unsigned box_bytes) {
  using F = WgmmaDescriptorFields;
  return F::field(smem_addr, 0) | F::field(box_bytes, 16) | F::field(F::kAtomBytes, 32) |
         F::kSwizzle128B;
}

// The descriptor of the same layout `bytes` further on: the offset >> 4 added to the start-address
// field (bits 0-13). It never carries into the leading byte offset: every shared-memory address
// is below 2^18 (the field holds address bits 4-17). One add of a constant per k-step (a
// UIADD3.64 where the descriptor is uniform), where building each step's descriptor from its
// address took an add, a mask, a shift and an or.
ATTNJIT_HD unsigned long long wgmma_desc_advance(unsigned long long desc, unsigned bytes) {
  return desc + (bytes >> 4);
}

#if ATTNJIT_DEVICE_COMPILE

// Orders the warpgroup's earlier register and shared-memory accesses before the next
// wgmma.mma_async reads them; needed before the first wgmma and whenever the accumulators or the
// A registers were written by other instructions.
ATTNJIT_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Closes a group of all wgmma.mma_async issued since the previous commit.
ATTNJIT_DEVICE void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most N committed groups are still pending.
template <int N>
ATTNJIT_DEVICE void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of the accumulators across wgmma_wait_group or
// wgmma_fence: the asm statements above do not name the registers, so without this the compiler
// may read an accumulator before the wait that makes it valid. Call it on the accumulators right
// after wgmma_wait_group and right before issuing wgmma on them.
template <int R>
ATTNJIT_DEVICE void wgmma_fence_accumulators(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// setmaxnreg (PTX ISA, "setmaxnreg"): every warp of the warpgroup raises (inc) or lowers (dec) its
// per-thread register limit to REGS, a multiple of 8 in [24, 256]; producers give registers back
// so the consumer warpgroups can hold larger accumulators.
template <int REGS>
ATTNJIT_DEVICE void warpgroup_reg_alloc() {
  static_assert(REGS % 8 == 0 && REGS >= 24 && REGS <= 256, "setmaxnreg: 24..256, step 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

template <int REGS>
ATTNJIT_DEVICE void warpgroup_reg_dealloc() {
  static_assert(REGS % 8 == 0 && REGS >= 24 && REGS <= 256, "setmaxnreg: 24..256, step 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

template <typename ELEM, int N>
struct Wgmma;

// The accumulator operand lists of m64nNk16 with R = N / 2 registers: "%0, ..., %<R-1>" in the
// instruction text and the matching "+f" constraints, built up 8 registers at a time (every N
// that is a multiple of 16 from 64 to 256).
#define ATTNJIT_WGMMA_REGS_32                                                                  \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define ATTNJIT_WGMMA_REGS_40 ATTNJIT_WGMMA_REGS_32 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define ATTNJIT_WGMMA_REGS_48 ATTNJIT_WGMMA_REGS_40 ", %40, %41, %42, %43, %44, %45, %46, %47"
#define ATTNJIT_WGMMA_REGS_56 ATTNJIT_WGMMA_REGS_48 ", %48, %49, %50, %51, %52, %53, %54, %55"
#define ATTNJIT_WGMMA_REGS_64 ATTNJIT_WGMMA_REGS_56 ", %56, %57, %58, %59, %60, %61, %62, %63"
#define ATTNJIT_WGMMA_REGS_72 ATTNJIT_WGMMA_REGS_64 ", %64, %65, %66, %67, %68, %69, %70, %71"
#define ATTNJIT_WGMMA_REGS_80 ATTNJIT_WGMMA_REGS_72 ", %72, %73, %74, %75, %76, %77, %78, %79"
#define ATTNJIT_WGMMA_REGS_88 ATTNJIT_WGMMA_REGS_80 ", %80, %81, %82, %83, %84, %85, %86, %87"
#define ATTNJIT_WGMMA_REGS_96 ATTNJIT_WGMMA_REGS_88 ", %88, %89, %90, %91, %92, %93, %94, %95"
#define ATTNJIT_WGMMA_REGS_104 ATTNJIT_WGMMA_REGS_96 ", %96, %97, %98, %99, %100, %101, %102, %103"
#define ATTNJIT_WGMMA_REGS_112 \
  ATTNJIT_WGMMA_REGS_104 ", %104, %105, %106, %107, %108, %109, %110, %111"
#define ATTNJIT_WGMMA_REGS_120 \
  ATTNJIT_WGMMA_REGS_112 ", %112, %113, %114, %115, %116, %117, %118, %119"
#define ATTNJIT_WGMMA_REGS_128 \
  ATTNJIT_WGMMA_REGS_120 ", %120, %121, %122, %123, %124, %125, %126, %127"
#define ATTNJIT_WGMMA_D8(i)                                                                   \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define ATTNJIT_WGMMA_D_32 \
  ATTNJIT_WGMMA_D8(0), ATTNJIT_WGMMA_D8(8), ATTNJIT_WGMMA_D8(16), ATTNJIT_WGMMA_D8(24)
#define ATTNJIT_WGMMA_D_40 ATTNJIT_WGMMA_D_32, ATTNJIT_WGMMA_D8(32)
#define ATTNJIT_WGMMA_D_48 ATTNJIT_WGMMA_D_40, ATTNJIT_WGMMA_D8(40)
#define ATTNJIT_WGMMA_D_56 ATTNJIT_WGMMA_D_48, ATTNJIT_WGMMA_D8(48)
#define ATTNJIT_WGMMA_D_64 ATTNJIT_WGMMA_D_56, ATTNJIT_WGMMA_D8(56)
#define ATTNJIT_WGMMA_D_72 ATTNJIT_WGMMA_D_64, ATTNJIT_WGMMA_D8(64)
#define ATTNJIT_WGMMA_D_80 ATTNJIT_WGMMA_D_72, ATTNJIT_WGMMA_D8(72)
#define ATTNJIT_WGMMA_D_88 ATTNJIT_WGMMA_D_80, ATTNJIT_WGMMA_D8(80)
#define ATTNJIT_WGMMA_D_96 ATTNJIT_WGMMA_D_88, ATTNJIT_WGMMA_D8(88)
#define ATTNJIT_WGMMA_D_104 ATTNJIT_WGMMA_D_96, ATTNJIT_WGMMA_D8(96)
#define ATTNJIT_WGMMA_D_112 ATTNJIT_WGMMA_D_104, ATTNJIT_WGMMA_D8(104)
#define ATTNJIT_WGMMA_D_120 ATTNJIT_WGMMA_D_112, ATTNJIT_WGMMA_D8(112)
#define ATTNJIT_WGMMA_D_128 ATTNJIT_WGMMA_D_120, ATTNJIT_WGMMA_D8(120)

// wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T with T bf16 or f16 (PTX ISA, "wgmma.mma_async"):
//   .ss: d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
//   .rs: d, {a0..a3}, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b
// scale-d is a predicate (false: D = A * B, the accumulators' old values are ignored); the scales
// are +1 (no negation); trans 0 is K-major, 1 is MN-major: `ss` reads both operands K-major
// (S = Q K^T), `ss_mn` and `rs` read B MN-major (O += P V with V [key][d]). `R` is N / 2 and
// I0..I5 the operand numbers R..R + 5 spelled out, because the instruction text must be a
// literal.
// One .ss form, B K-major (TRANS_B 0) or MN-major (1).
#define ATTNJIT_WGMMA_SS(NAME, PTX_TYPE, N, R, I0, I1, I2, TRANS_B)                           \
  ATTNJIT_DEVICE static void NAME(float (&d)[R], unsigned long long desc_a,                    \
                                  unsigned long long desc_b, int accumulate) {                 \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" I2                                       \
                 ", 0;\n"                                                                      \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE       \
                 " {" ATTNJIT_WGMMA_REGS_##R "}, %" I0 ", %" I1 ", p, 1, 1, 0, " #TRANS_B      \
                 ";\n}\n"                                                                      \
                 : ATTNJIT_WGMMA_D_##R                                                         \
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate)                                   \
                 : "memory");                                                                  \
  }
#define ATTNJIT_DEFINE_WGMMA(ELEM, PTX_TYPE, N, R, I0, I1, I2, I3, I4, I5)                     \
  template <>                                                                                  \
  struct Wgmma<ELEM, N> {                                                                      \
    ATTNJIT_WGMMA_SS(ss, PTX_TYPE, N, R, I0, I1, I2, 0)                                        \
    ATTNJIT_WGMMA_SS(ss_mn, PTX_TYPE, N, R, I0, I1, I2, 1)                                     \
    ATTNJIT_DEVICE static void rs(float (&d)[R], const unsigned (&a)[4],                       \
                                  unsigned long long desc_b, int accumulate) {                 \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" I5                                     \
                   ", 0;\n"                                                                    \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE     \
                   " {" ATTNJIT_WGMMA_REGS_##R "}, {%" I0 ", %" I1 ", %" I2 ", %" I3 "}, %" I4 \
                                               ", p, 1, 1, 1;\n}\n"                            \
                   : ATTNJIT_WGMMA_D_##R                                                       \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate)  \
                   : "memory");                                                                \
    }                                                                                          \
  };

ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 64, 32, "32", "33", "34", "35", "36", "37")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 80, 40, "40", "41", "42", "43", "44", "45")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 96, 48, "48", "49", "50", "51", "52", "53")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 112, 56, "56", "57", "58", "59", "60", "61")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 128, 64, "64", "65", "66", "67", "68", "69")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 144, 72, "72", "73", "74", "75", "76", "77")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 160, 80, "80", "81", "82", "83", "84", "85")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 176, 88, "88", "89", "90", "91", "92", "93")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 192, 96, "96", "97", "98", "99", "100", "101")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 208, 104, "104", "105", "106", "107", "108", "109")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 224, 112, "112", "113", "114", "115", "116", "117")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 240, 120, "120", "121", "122", "123", "124", "125")
ATTNJIT_DEFINE_WGMMA(bf16_t, "bf16", 256, 128, "128", "129", "130", "131", "132", "133")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 64, 32, "32", "33", "34", "35", "36", "37")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 80, 40, "40", "41", "42", "43", "44", "45")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 96, 48, "48", "49", "50", "51", "52", "53")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 112, 56, "56", "57", "58", "59", "60", "61")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 128, 64, "64", "65", "66", "67", "68", "69")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 144, 72, "72", "73", "74", "75", "76", "77")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 160, 80, "80", "81", "82", "83", "84", "85")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 176, 88, "88", "89", "90", "91", "92", "93")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 192, 96, "96", "97", "98", "99", "100", "101")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 208, 104, "104", "105", "106", "107", "108", "109")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 224, 112, "112", "113", "114", "115", "116", "117")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 240, 120, "120", "121", "122", "123", "124", "125")
ATTNJIT_DEFINE_WGMMA(fp16_t, "f16", 256, 128, "128", "129", "130", "131", "132", "133")

#undef ATTNJIT_DEFINE_WGMMA
#undef ATTNJIT_WGMMA_SS
#undef ATTNJIT_WGMMA_D_32
#undef ATTNJIT_WGMMA_D_40
#undef ATTNJIT_WGMMA_D_48
#undef ATTNJIT_WGMMA_D_56
#undef ATTNJIT_WGMMA_D_64
#undef ATTNJIT_WGMMA_D_72
#undef ATTNJIT_WGMMA_D_80
#undef ATTNJIT_WGMMA_D_88
#undef ATTNJIT_WGMMA_D_96
#undef ATTNJIT_WGMMA_D_104
#undef ATTNJIT_WGMMA_D_112
#undef ATTNJIT_WGMMA_D_120
#undef ATTNJIT_WGMMA_D_128
#undef ATTNJIT_WGMMA_D8
#undef ATTNJIT_WGMMA_REGS_32
#undef ATTNJIT_WGMMA_REGS_40
#undef ATTNJIT_WGMMA_REGS_48
#undef ATTNJIT_WGMMA_REGS_56
#undef ATTNJIT_WGMMA_REGS_64
#undef ATTNJIT_WGMMA_REGS_72
#undef ATTNJIT_WGMMA_REGS_80
#undef ATTNJIT_WGMMA_REGS_88
#undef ATTNJIT_WGMMA_REGS_96
#undef ATTNJIT_WGMMA_REGS_104
#undef ATTNJIT_WGMMA_REGS_112
#undef ATTNJIT_WGMMA_REGS_120
#undef ATTNJIT_WGMMA_REGS_128

#endif  // ATTNJIT_DEVICE_COMPILE

}  // namespace attnjit
