// The attention variants the reference tests run, each with the arguments it needs for a
// given shape (parameters, and tensors whose data the variant owns).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnjit/variant_args.cuh"
#include "common/attention_problem.hpp"
#include "expr/expression.hpp"
#include "expr/signature.hpp"

namespace attnjit::testing {

struct TestVariant {
  std::string name;
  expr::Expression mask;
  expr::Expression score;
  VariantArgs args{};
  std::vector<std::vector<int>> int_tensors;  // storage behind args.tensors
  std::vector<std::vector<float>> float_tensors;
};

inline expr::Signature make_signature(const std::vector<std::string>& params,
                                      const std::vector<std::string>& tensors) {
  expr::Signature signature;
  for (const auto& text : params) signature.params.push_back(expr::parse_param_decl(text));
  for (const auto& text : tensors) signature.tensors.push_back(expr::parse_tensor_decl(text));
  return signature;
}

inline std::unique_ptr<TestVariant> make_variant_from(const std::string& name,
                                                      const std::string& mask,
                                                      const std::string& score,
                                                      const expr::Signature& signature) {
  return std::unique_ptr<TestVariant>(
      new TestVariant{name,
                      expr::parse_expression(expr::ExprKind::mask, mask, signature),
                      expr::parse_expression(expr::ExprKind::score, score, signature),
                      VariantArgs{},
                      {},
                      {}});
}

inline void attach_int_tensor(TestVariant& variant, int index, std::vector<int> data) {
  variant.int_tensors.push_back(std::move(data));
  const std::vector<int>& stored = variant.int_tensors.back();
  variant.args.tensors[index] =
      TensorArg{stored.data(), {static_cast<int>(stored.size()), 1}, 1, kTensorInt32, {}, {}};
}

inline void attach_float_vector(TestVariant& variant, int index, std::vector<float> data) {
  variant.float_tensors.push_back(std::move(data));
  const std::vector<float>& stored = variant.float_tensors.back();
  variant.args.tensors[index] =
      TensorArg{stored.data(), {static_cast<int>(stored.size()), 1}, 1, kTensorFloat32, {}, {}};
}

inline void attach_float_tensor(TestVariant& variant, int index, std::vector<float> data, int rows,
                                int cols) {
  variant.float_tensors.push_back(std::move(data));
  variant.args.tensors[index] =
      TensorArg{variant.float_tensors.back().data(), {rows, cols}, 2, kTensorFloat32, {}, {}};
}

// Document ids over max(q_len, kv_len) positions. Sorted: `documents` contiguous runs of
// uneven length. Unsorted: ids that jump around.
inline std::vector<int> document_ids(int length, int documents, bool sorted) {
  std::vector<int> ids(static_cast<std::size_t>(length));
  for (int i = 0; i < length; ++i) {
    if (sorted) {
      // Run boundaries at (k/documents)^1.5 of the length: uneven, not tile-aligned.
      int id = 0;
      while (id + 1 < documents) {
        const double next = static_cast<double>(id + 1) / documents;
        if (i < static_cast<int>(length * next * std::sqrt(next))) break;
        ++id;
      }
      ids[static_cast<std::size_t>(i)] = id;
    } else {
      ids[static_cast<std::size_t>(i)] =
          static_cast<int>((static_cast<unsigned>(i) * 2654435761u) >> 30);
    }
  }
  return ids;
}

inline std::vector<std::string> variant_names() {
  return {
      "noop",  "causal",  "sliding_window", "prefix_lm",     "document_sorted", "document_unsorted",
      "alibi", "softcap", "relative_bias",  "causal_softcap"};
}

inline std::unique_ptr<TestVariant> make_variant(const std::string& name,
                                                 const AttentionShape& shape) {
  const int max_len = std::max(shape.q_len, shape.kv_len);
  if (name == "noop") return make_variant_from(name, "true", "score", {});
  if (name == "causal") return make_variant_from(name, "q_idx >= kv_idx", "", {});
  if (name == "sliding_window") {
    auto variant = make_variant_from(name, "q_idx >= kv_idx && q_idx - kv_idx < W", "",
                                     make_signature({"W:int"}, {}));
    variant->args.scalars[0] = 13;
    return variant;
  }
  if (name == "prefix_lm") {
    auto variant = make_variant_from(name, "kv_idx < prefix || q_idx >= kv_idx", "",
                                     make_signature({"prefix:int"}, {}));
    variant->args.scalars[0] = 9;
    return variant;
  }
  if (name == "document_sorted" || name == "document_unsorted") {
    auto variant = make_variant_from(name, "doc[q_idx] == doc[kv_idx]", "",
                                     make_signature({}, {"doc:int32[1]"}));
    attach_int_tensor(*variant, 0, document_ids(max_len, 4, name == "document_sorted"));
    return variant;
  }
  if (name == "alibi") {
    return make_variant_from(
        name, "", "score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)",
        {});
  }
  if (name == "softcap" || name == "causal_softcap") {
    auto variant = make_variant_from(name, name == "softcap" ? "true" : "q_idx >= kv_idx",
                                     "cap * tanh(score / cap)", make_signature({"cap:float"}, {}));
    variant->args.scalars[0] = std::bit_cast<int>(1.5f);  // small enough to bite
    return variant;
  }
  if (name == "relative_bias") {
    auto variant = make_variant_from(name, "", "score + bias[h, kv_idx - q_idx + 64]",
                                     make_signature({}, {"bias:float32[2]"}));
    std::vector<float> bias(static_cast<std::size_t>(shape.num_heads_q) * 129);
    for (std::size_t i = 0; i < bias.size(); ++i) {
      bias[i] = static_cast<float>(static_cast<int>((i * 37) % 101) - 50) / 25.0f;
    }
    attach_float_tensor(*variant, 0, std::move(bias), shape.num_heads_q, 129);
    return variant;
  }
  throw std::invalid_argument("unknown test variant " + name);
}

}  // namespace attnjit::testing
