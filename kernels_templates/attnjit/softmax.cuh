// Online softmax over the rows a thread holds in mma accumulator fragments.
// A thread holds two rows of a warp's 16-row slice (rows group and group + 8); the four threads
// of a quad (lanes 4g .. 4g+3) share those rows, so row reductions are two xor-shuffles.
#pragma once

#include "attnjit/numeric.cuh"
#include "attnjit/poly_exp2.cuh"

namespace attnjit {

#if ATTNJIT_KERNEL_CODE

ATTNJIT_DEVICE float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
  return x;
}

ATTNJIT_DEVICE float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  return x;
}

// A score's row shift for a thread's two rows (codegen/factor_score.hpp,
// AttentionForward::row_shifts): row r's score at register (j, c) of a tile is
// scores[j][2r + c] + key_slope * (8j + c) + shift[r], where 8j + c is the column's step from
// the lane's first column (ForwardLayout::acc_col_step).
struct RowShift {
  float shift[2] = {0.0f, 0.0f};
  float key_slope = 0.0f;
};

// Running state of the two rows: max in log2 units and the partial sum of this thread's columns
// (the quad reduction of the sum is deferred to the end: every lane of a quad rescales by the
// same factor, so the partial sums stay consistent).
struct OnlineSoftmax {
  float row_max[2];
  float row_sum[2];

  ATTNJIT_DEVICE void init() {
    row_max[0] = row_max[1] = neg_infinity();
    row_sum[0] = row_sum[1] = 0.0f;
  }

  // `scores` holds one kv tile in log2 units (masked entries are -inf), or, with FOLDED, one
  // that `score_scale` (> 0) turns into log2 units: the raw Q K^T products with the softmax
  // scale * log2(e) still to apply (score_scale 1 when they are already in log2 units).
  // Replaces them with exp2(score - max), advances the running max (in log2 units) and sum, and
  // returns in `rescale` the factor the output accumulated so far must be multiplied by
  // (rescale_output); split from it so that the sm90 kernel can do this while its previous P V
  // product still owns the accumulators.
  // Note: FOLDED puts the scale into the exponent's FFMA (FlashAttention-2's scale_apply_exp2):
  // one FFMA and one MUFU per element instead of an FMUL, an FADD and the MUFU. The row max of
  // the raw values, times the scale, is the max of the scaled values because rounding is
  // monotonic and the scale positive. Without it, the code is what it was before the fold (the
  // three-consumer sm90 kernels, where ptxas spilled more with it: AttentionForward::apply_scores).
  // Note: a row whose max is still -inf (all masked so far) uses 0 as the exponent offset, so
  // exp2(-inf - 0) = 0 everywhere and no -inf - -inf = NaN appears.
  // POLY_EXP2 (0..8): of each 8 consecutive n8 chunks of the tile, the first POLY_EXP2 use
  // poly_exp2 on the FMA pipe instead of MUFU's ex2 (the sm90 kernel's kPolyExp2: a MUFU-bound
  // softmax moves part of its exponentials to the FMA pipe; poly_exp2.cuh).
  // SHIFTED: the scores have a row shift (RowShift, in their units; KEY_SLOPE: with a key
  // slope). The key slope is added to each score here, in the max loop (one FFMA, the step an
  // immediate); the row's shift joins the row's max before the quad's lanes (whose shifts
  // differ) compare theirs, and the exponent's offset after it. A row whose elements are all
  // -inf stays -inf whatever its shift.
  template <bool FOLDED, int N_TILES, int POLY_EXP2 = 0, bool SHIFTED = false,
            bool KEY_SLOPE = false>
  ATTNJIT_DEVICE void exponentiate(float (&scores)[N_TILES][4], float (&rescale)[2],
                                   float score_scale, const RowShift& shift) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tile_max = FOLDED || SHIFTED ? neg_infinity() : row_max[r];
#pragma unroll
      for (int j = 0; j < N_TILES; ++j) {
        if constexpr (KEY_SLOPE) {
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            scores[j][2 * r + c] =
                fmaf(shift.key_slope, static_cast<float>(8 * j + c), scores[j][2 * r + c]);
          }
        }
        tile_max = fmaxf(tile_max, fmaxf(scores[j][2 * r], scores[j][2 * r + 1]));
      }
      if constexpr (SHIFTED) {
        const float shifted_max = quad_max(tile_max + shift.shift[r]);
        tile_max = fmaxf(row_max[r], FOLDED ? shifted_max * score_scale : shifted_max);
      } else if constexpr (FOLDED) {
        tile_max = fmaxf(row_max[r], quad_max(tile_max) * score_scale);
      } else {
        tile_max = quad_max(tile_max);
      }
      const float offset = tile_max == neg_infinity() ? 0.0f : tile_max;
      rescale[r] = fast_exp2(row_max[r] - offset);
      row_max[r] = tile_max;
      // What the exponent adds to each (scaled) score: -offset, plus the shift with SHIFTED.
      // Note: score + (-offset) is score - offset exactly, so the unshifted code is as before.
      float bias = -offset;
      if constexpr (SHIFTED) {
        bias = FOLDED ? fmaf(shift.shift[r], score_scale, -offset) : shift.shift[r] - offset;
      }
      float tile_sum = 0.0f;
#pragma unroll
      for (int j = 0; j < N_TILES; ++j) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          float& score = scores[j][2 * r + c];
          const float x = FOLDED ? fmaf(score, score_scale, bias) : score + bias;
          score = j % 8 < POLY_EXP2 ? poly_exp2(x) : fast_exp2(x);
        }
        tile_sum += scores[j][2 * r] + scores[j][2 * r + 1];
      }
      row_sum[r] = row_sum[r] * rescale[r] + tile_sum;
    }
  }

  // Called by the whole warp. With SKIP_UNMOVED, skipped when the running max of none of the
  // warp's rows moved: every factor is then exactly 1, and x * 1 == x, so only the multiplies go
  // (a NaN factor is not 1 and still reaches O). With keys in random order a row's max moves at
  // tile i with probability about 1/i, so after the first few tiles most are skipped.
  // Note: the sm90 kernel, and the SM80 kernel only at head dim 256 (kSkipUnmovedRescale). In
  // the SM80 kernel the ballot's branch sits between the softmax and P V, where ptxas used to
  // interleave the exponentials (MUFU) with P V's mma.sync: with it, noop D=128 at 16K went from
  // 28.3 to 31.9 ms and document from 4.03 to 4.61 ms on an H200 (bisected over builds,
  // 2026-11-26; docs/PERFORMANCE.md). The sm90 kernel's wgmma are asynchronous, so there the
  // branch holds back no tensor-core work.
  template <bool SKIP_UNMOVED, int D_TILES>
  ATTNJIT_DEVICE static void rescale_output(float (&acc_o)[D_TILES][4], const float (&rescale)[2]) {
    if constexpr (SKIP_UNMOVED) {
      const bool moved = rescale[0] != 1.0f || rescale[1] != 1.0f;
      if (__ballot_sync(0xffffffffu, moved) == 0u) return;
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int j = 0; j < D_TILES; ++j) {
        acc_o[j][2 * r] *= rescale[r];
        acc_o[j][2 * r + 1] *= rescale[r];
      }
    }
  }

  // Both steps at once: the scores become probabilities and `acc_o` is rescaled.
  template <bool FOLDED, bool SKIP_UNMOVED, int POLY_EXP2 = 0, bool SHIFTED = false,
            bool KEY_SLOPE = false, int N_TILES, int D_TILES>
  ATTNJIT_DEVICE void update(float (&scores)[N_TILES][4], float (&acc_o)[D_TILES][4],
                             float score_scale, const RowShift& shift) {
    float rescale[2];
    exponentiate<FOLDED, N_TILES, POLY_EXP2, SHIFTED, KEY_SLOPE>(scores, rescale, score_scale,
                                                                 shift);
    rescale_output<SKIP_UNMOVED>(acc_o, rescale);
  }
};

#endif  // ATTNJIT_KERNEL_CODE

}  // namespace attnjit
