// Warp-level tensor-core primitives for SM80+: ldmatrix (plain and transposed) and
// mma.sync.m16n8k16 with fp32 accumulation.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), lane = 4 * group + tig:
//   A (16x16, row-major), 4 registers of two 16-bit elements each:
//     a0: (row group,     cols 2*tig, 2*tig+1)    a1: (row group + 8, cols 2*tig, 2*tig+1)
//     a2: (row group,     cols 2*tig+8, +9)        a3: (row group + 8, cols 2*tig+8, +9)
//   B (16x8, "col": element (k, n)), 2 registers:
//     b0: (k 2*tig, 2*tig+1; n group)              b1: (k 2*tig+8, +9; n group)
//   C/D (16x8 fp32), 4 registers:
//     c0, c1: (row group, cols 2*tig, 2*tig+1)     c2, c3: (row group + 8, same cols)
// The lower 16 bits of a packed register hold the element with the smaller index.
#pragma once

#include "attnjit/numeric.cuh"

namespace attnjit {

#if ATTNJIT_DEVICE_COMPILE

// Four 8x8 matrices of 16-bit elements; lanes 8i..8i+7 give the row addresses of matrix i and
// register i receives matrix i: lane holds (row lane/4, cols 2*(lane%4), +1).
ATTNJIT_DEVICE void ldmatrix_x4(unsigned smem_addr, unsigned& r0, unsigned& r1, unsigned& r2,
                                unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(smem_addr));
}

// Same addressing, transposed delivery: lane holds (rows 2*(lane%4), +1; col lane/4) of each
// matrix, i.e. the B fragment of a row-major [k][n] tile.
ATTNJIT_DEVICE void ldmatrix_x4_trans(unsigned smem_addr, unsigned& r0, unsigned& r1,
                                      unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(smem_addr));
}

template <typename ELEM>
struct Mma;

// d = a * b + d for one m16n8k16 tile.
template <>
struct Mma<bf16_t> {
  ATTNJIT_DEVICE static void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct Mma<fp16_t> {
  ATTNJIT_DEVICE static void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

#endif  // ATTNJIT_DEVICE_COMPILE

}  // namespace attnjit
