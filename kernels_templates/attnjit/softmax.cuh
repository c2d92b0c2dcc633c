// Online softmax over the rows a thread holds in mma accumulator fragments.
// A thread holds two rows of a warp's 16-row slice (rows group and group + 8); the four threads
// of a quad (lanes 4g .. 4g+3) share those rows, so row reductions are two xor-shuffles.
#pragma once

#include "attnjit/numeric.cuh"

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

  // `scores` holds one kv tile in log2 units (masked entries are -inf). Replaces them with
  // exp2(score - max), advances the running max and sum, and returns in `rescale` the factor the
  // output accumulated so far must be multiplied by (rescale_output); split from it so that the
  // sm90 kernel can do this while its previous P V product still owns the accumulators.
  // Note: a row whose max is still -inf (all masked so far) uses 0 as the exponent offset, so
  // exp2(-inf - 0) = 0 everywhere and no -inf - -inf = NaN appears.
  template <int N_TILES>
  ATTNJIT_DEVICE void exponentiate(float (&scores)[N_TILES][4], float (&rescale)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tile_max = row_max[r];
#pragma unroll
      for (int j = 0; j < N_TILES; ++j) {
        tile_max = fmaxf(tile_max, fmaxf(scores[j][2 * r], scores[j][2 * r + 1]));
      }
      tile_max = quad_max(tile_max);
      const float offset = tile_max == neg_infinity() ? 0.0f : tile_max;
      rescale[r] = fast_exp2(row_max[r] - offset);
      row_max[r] = tile_max;
      float tile_sum = 0.0f;
#pragma unroll
      for (int j = 0; j < N_TILES; ++j) {
        scores[j][2 * r] = fast_exp2(scores[j][2 * r] - offset);
        scores[j][2 * r + 1] = fast_exp2(scores[j][2 * r + 1] - offset);
        tile_sum += scores[j][2 * r] + scores[j][2 * r + 1];
      }
      row_sum[r] = row_sum[r] * rescale[r] + tile_sum;
    }
  }

  template <int D_TILES>
  ATTNJIT_DEVICE static void rescale_output(float (&acc_o)[D_TILES][4], const float (&rescale)[2]) {
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
  template <int N_TILES, int D_TILES>
  ATTNJIT_DEVICE void update(float (&scores)[N_TILES][4], float (&acc_o)[D_TILES][4]) {
    float rescale[2];
    exponentiate(scores, rescale);
    rescale_output(acc_o, rescale);
  }
};

#endif  // ATTNJIT_KERNEL_CODE

}  // namespace attnjit
