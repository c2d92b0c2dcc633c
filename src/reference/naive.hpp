// A deliberately simple second implementation of the attention definition in
// reference/attention.hpp, to check the tiled reference and the GPU kernels against: every
// element is evaluated directly (no block analysis, no tiles, no online softmax) and everything
// but the score expression is computed in double. The score expression gets the raw score
// rounded to fp32 and is evaluated in fp32 through expr::evaluate_score, as the kernels do.
#pragma once

#include <span>
#include <vector>

#include "attnjit/variant_args.cuh"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"

namespace attnjit::reference {

// Per-sequence query and key counts for naive_attention: sequence b has q_lens[b] queries and
// kv_lens[b] keys, the first rows of its batch entry of the (padded) dense tensors, and the mask
// and score see those counts as q_len and kv_len. Empty: every sequence has the call's.
struct SequenceLengths {
  std::span<const int> q_lens;
  std::span<const int> kv_lens;
};

// out: [batch, num_heads_q, q_len, head_dim] contiguous; lse: [batch, num_heads_q, q_len]
// contiguous, natural log, -inf for rows with nothing kept (whose output is zero) and for a
// shorter sequence's rows past its count (zero output). Both are resized. buffers.out and
// buffers.lse are not touched. Single-threaded. Throws Error(invalid_argument) like
// attention_forward.
void naive_attention(const expr::Expression& mask, const expr::Expression& score,
                     const VariantArgs& args, const AttentionShape& shape,
                     const AttentionBuffers& buffers, std::vector<double>& out,
                     std::vector<double>& lse, const SequenceLengths& lengths = {});

}  // namespace attnjit::reference
