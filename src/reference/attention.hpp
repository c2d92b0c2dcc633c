// The CPU reference forward pass: the definition of what every GPU kernel computes.
//
//   s    = scale * dot(q[b, h, i], k[b, h / group, j])   in fp32; scale 0 means 1/sqrt(head_dim)
//   s'   = score(s, b, h, i, j)                           skipped when the score is the identity
//   kept = mask(b, h, i, j)
//   out[b, h, i] = sum_j softmax_j(s') v[b, h / group, j]    over kept pairs only
//   lse[b, h, i] = log(sum_j exp(s'))                         natural log, over kept pairs only
//
// with group = num_heads_q / num_heads_kv (GQA / MQA). A row with no kept pair, or whose kept
// scores are all -inf, gets a zero output and lse = -inf, never NaN. A row with a kept score that
// is NaN or +inf (NaN or inf in q or k, or made by the score expression) gets NaN output and
// lse, as in FlashAttention: bad input shows where it lands instead of passing for a masked row.
// The output is written in the dtype of q, rounded to nearest even.
//
// Like the GPU kernels it walks (q-tile, kv-tile) blocks with an fp32 online softmax per row,
// asks the block analysis (expr::classify_tile) about each tile, skips empty tiles and skips the
// mask on full ones. Each (batch, head, q-tile) is computed by one thread in a fixed order, so
// the result does not depend on the number of threads.
#pragma once

#include <cstdint>

#include "attnjit/variant_args.cuh"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"

namespace attnjit::reference {

struct ReferenceOptions {
  int num_threads = 0;  // 0 = std::thread::hardware_concurrency()
  int tile_q = 64;      // also the q-axis granularity of tensor summaries
  int tile_kv = 64;     // also the kv-axis granularity of tensor summaries
};

// Tiles of the attention matrix over all (batch, query head) pairs, by block-analysis class.
struct TileStats {
  std::int64_t total = 0;
  std::int64_t empty = 0;
  std::int64_t full = 0;
  std::int64_t partial = 0;

  // The fraction of tiles skipped outright; 0 when there are none.
  double skipped_fraction() const {
    return total == 0 ? 0.0 : static_cast<double>(empty) / static_cast<double>(total);
  }
};

// Throws Error(invalid_argument) for a bad problem (see validate_problem), options, or args that
// lack what the expressions' signatures declare (tensor data, dims, rank, element type).
// `args` holds host pointers; tensor summaries the mask can use are built here, not read.
TileStats attention_forward(const expr::Expression& mask, const expr::Expression& score,
                            const VariantArgs& args, const AttentionShape& shape,
                            const AttentionBuffers& buffers, const ReferenceOptions& options = {});

// Shared by attention_forward and naive_attention: the checks above, and the expression kinds.
void validate_variant_call(const expr::Expression& mask, const expr::Expression& score,
                           const VariantArgs& args, const AttentionShape& shape,
                           const AttentionBuffers& buffers);


}  // namespace attnjit::reference
