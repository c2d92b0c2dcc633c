// A deliberately simple second implementation of the attention definition in
// reference/attention.hpp, to check the tiled reference and the GPU kernels against: every
// element is evaluated directly (no block analysis, no tiles, no online softmax) and everything
// but the score expression is computed in double. The score expression gets the raw score
// rounded to fp32 and is evaluated in fp32 through expr::evaluate_score, as the kernels do.
#pragma once

#include <vector>

#include "attnjit/variant_args.cuh"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"

namespace attnjit::reference {

// out: [batch, num_heads_q, q_len, head_dim] contiguous; lse: [batch, num_heads_q, q_len]
// contiguous, natural log, -inf for rows with nothing kept (whose output is zero). Both are
// resized. buffers.out and buffers.lse are not touched. Single-threaded.
// Throws Error(invalid_argument) like attention_forward.
void naive_attention(const expr::Expression& mask, const expr::Expression& score,
                     const VariantArgs& args, const AttentionShape& shape,
                     const AttentionBuffers& buffers, std::vector<double>& out,
                     std::vector<double>& lse);

}  // namespace attnjit::reference
