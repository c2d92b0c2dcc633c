#include "testkit/example_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnjit::testkit {
namespace {

// example[section][name], or nullptr when the example does not give it.
const nlohmann::json* example_entry(const nlohmann::json& example, const char* section,
                                    const std::string& name) {
  if (!example.is_object() || !example.contains(section)) return nullptr;
  const nlohmann::json& entries = example[section];
  if (!entries.is_object() || !entries.contains(name)) return nullptr;
  return &entries[name];
}

// The numbers of {"fill": [...]}; std::invalid_argument naming the tensor unless an array of
// numbers (filled_lengths checks their range).
std::vector<double> fill_fractions(const nlohmann::json& given, const std::string& name) {
  const nlohmann::json& fill = given["fill"];
  std::vector<double> fractions;
  const bool numbers = fill.is_array() && std::all_of(fill.begin(), fill.end(),
                                                      [](const auto& v) { return v.is_number(); });
  if (!numbers) {
    throw std::invalid_argument("example tensor '" + name +
                                "': \"fill\" must be an array of fractions in [0, 1]");
  }
  for (const nlohmann::json& value : fill) fractions.push_back(value.get<double>());
  return fractions;
}

}  // namespace

ExampleInputs example_inputs(const attnjit_manifest_variant& variant, int seq_len, int heads) {
  const nlohmann::json example = nlohmann::json::parse(variant.example_json);
  ExampleInputs inputs;
  for (int i = 0; i < variant.num_params; ++i) {
    const attnjit_param_decl& decl = variant.params[i];
    const nlohmann::json* value = example_entry(example, "params", decl.name);
    attnjit_scalar scalar{};
    if (decl.type == ATTNJIT_PARAM_FLOAT) {
      scalar.f = value != nullptr ? value->get<float>() : 30.0f;
    } else {
      scalar.i = value != nullptr ? value->get<std::int32_t>() : 1024;
    }
    inputs.params.push_back(scalar);
  }
  inputs.tensor_data.resize(static_cast<std::size_t>(variant.num_tensors));
  for (int i = 0; i < variant.num_tensors; ++i) {
    const attnjit_tensor_decl& decl = variant.tensors[i];
    std::vector<std::int32_t>& data = inputs.tensor_data[static_cast<std::size_t>(i)];
    attnjit_tensor_arg arg{};
    if (decl.rank == 1) {
      const nlohmann::json* given = example_entry(example, "tensors", decl.name);
      data.resize(static_cast<std::size_t>(seq_len));
      if (given != nullptr && given->contains("fill")) {
        // Lengths: element j is fill[j % n] of seq_len (a batch of caches filled to those
        // fractions, read as len[b]).
        const std::vector<double> fractions = fill_fractions(*given, decl.name);
        try {
          data = filled_lengths(fractions, data.size(), seq_len);
        } catch (const std::invalid_argument& error) {
          throw std::invalid_argument("example tensor '" + std::string(decl.name) +
                                      "': \"fill\": " + error.what());
        }
      } else {
        // Document ids in `documents` equal runs (the manifest's example, else 4).
        const int documents = given != nullptr ? given->value("documents", 4) : 4;
        for (int j = 0; j < seq_len; ++j) {
          data[static_cast<std::size_t>(j)] =
              static_cast<std::int32_t>(static_cast<std::int64_t>(j) * documents / seq_len);
        }
      }
      arg.dims[0] = seq_len;
      arg.dims[1] = 1;
    } else {
      // Rank 2: a [heads, seq_len] table of small values (e.g. a bias).
      data.assign(static_cast<std::size_t>(heads) * static_cast<std::size_t>(seq_len), 0);
      for (std::size_t j = 0; j < data.size(); ++j) {
        data[j] = decl.type == ATTNJIT_TENSOR_FLOAT32
                      ? std::bit_cast<std::int32_t>(static_cast<float>(j % 7) * 0.1f)
                      : static_cast<std::int32_t>(j % 7);
      }
      arg.dims[0] = heads;
      arg.dims[1] = seq_len;
    }
    arg.data = data.data();
    inputs.tensors.push_back(arg);
  }
  return inputs;
}

std::vector<std::int32_t> filled_lengths(const std::vector<double>& fractions, std::size_t count,
                                         int length) {
  if (fractions.empty()) throw std::invalid_argument("no fractions: give at least one in [0, 1]");
  for (const double f : fractions) {
    if (!(f >= 0.0 && f <= 1.0)) {
      throw std::invalid_argument(fmt::format("{} is not a fraction in [0, 1]", f));
    }
  }
  std::vector<std::int32_t> lengths(count);
  for (std::size_t j = 0; j < count; ++j) {
    lengths[j] = static_cast<std::int32_t>(std::llround(fractions[j % fractions.size()] * length));
  }
  return lengths;
}

DeviceTensors upload_tensors(const ExampleInputs& inputs) {
  DeviceTensors device{{}, inputs.tensors};
  for (std::size_t i = 0; i < inputs.tensor_data.size(); ++i) {
    const std::size_t bytes = inputs.tensor_data[i].size() * sizeof(std::int32_t);
    device.buffers.emplace_back(bytes);
    device.buffers.back().upload(inputs.tensor_data[i].data(), bytes);
    device.args[i].data = device.buffers.back().get();
  }
  return device;
}

attnjit_variant_desc manifest_variant_desc(const attnjit_manifest_variant& variant,
                                           attnjit_dtype dtype, int head_dim) {
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = variant.mask;
  desc.score = variant.score;
  desc.params = variant.params;
  desc.num_params = variant.num_params;
  desc.tensors = variant.tensors;
  desc.num_tensors = variant.num_tensors;
  desc.dtype = dtype;
  desc.head_dim = head_dim;
  return desc;
}

}  // namespace attnjit::testkit
