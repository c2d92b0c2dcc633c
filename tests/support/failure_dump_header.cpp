#include "failure_dump_header.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdlib>

#include "expr/signature.hpp"

namespace attnjit::kernel_test {
namespace {

using nlohmann::json;

json stats_json(const reference::ErrorStats& stats) {
  return {{"count", stats.count},
          {"non_finite", stats.non_finite},
          {"max_abs_error", stats.max_abs_error},
          {"worst_index", stats.worst_index},
          {"nmse", stats.nmse}};
}

json limit_json(const reference::Tolerance& limit) {
  return {{"max_abs_error", limit.max_abs_error}, {"nmse", limit.nmse}};
}

json env_or_null(const char* name) {
  const char* value = std::getenv(name);
  return value ? json(value) : json(nullptr);
}

}  // namespace

json failure_dump_header(const FailureRecord& record) {
  const PreparedCase& prepared = record.prepared;
  const KernelCase& c = prepared.test_case;
  const AttentionShape& shape = prepared.shape;
  json params = json::array();
  for (std::size_t i = 0; i < c.params.size() && i < c.scalars.size(); ++i) {
    const bool is_float = prepared.spec.signature.params[i].type == expr::ValueType::floating;
    params.push_back({{"decl", c.params[i]},
                      {"bits", c.scalars[i]},
                      {"value", is_float ? fmt::format("{}", std::bit_cast<float>(c.scalars[i]))
                                         : fmt::format("{}", c.scalars[i])}});
  }
  json tensors = json::array();
  for (const TensorInput& tensor : c.tensors) {
    tensors.push_back({{"decl", tensor.decl}, {"dims", {tensor.dims[0], tensor.dims[1]}}});
  }
  json planted = json::array();
  for (const PlantedValue& p : c.planted) {
    planted.push_back({{"tensor", std::string(1, p.tensor)},
                       {"b", p.b},
                       {"h", p.h},
                       {"row", p.row},
                       {"d", p.d},
                       {"value", fmt::format("{}", p.value)}});
  }
  AttentionBuffers scale_only;
  scale_only.scale = c.scale;
  const CaseResult& result = record.result;
  return {
      {"format", "attnjit-failure-dump"},
      {"version", 1},
      {"case", c.name()},
      {"mask", c.mask.empty() ? "true" : c.mask},
      {"score", c.score.empty() ? "score" : c.score},
      {"params", params},
      {"tensors", tensors},
      {"planted", planted},
      {"dtype", dtype_short_name(c.dtype)},
      {"layout", c.layout == Layout::bhld ? "bhld" : "blhd"},
      {"head_dim", c.head_dim},
      {"shape",
       {{"batch", shape.batch},
        {"heads_q", shape.num_heads_q},
        {"heads_kv", shape.num_heads_kv},
        {"q_len", shape.q_len},
        {"kv_len", shape.kv_len},
        {"row_padding", c.row_padding}}},
      {"seed", c.seed},
      {"scale", c.scale},
      {"effective_scale", effective_scale(shape, scale_only)},
      {"with_lse", c.with_lse},
      {"errors",
       {{"out", stats_json(result.out)},
        {"out_limit", limit_json(result.out_limit)},
        {"lse", c.with_lse ? stats_json(result.lse) : json(nullptr)},
        {"lse_limit", limit_json(result.lse_limit)},
        {"padding_writes", result.padding_writes}}},
      {"anatomy", result.anatomy},
      {"kernel_family", env_or_null("ATTNJIT_KERNEL_FAMILY")},
      {"tune", env_or_null("ATTNJIT_TUNE")},
  };
}

}  // namespace attnjit::kernel_test
