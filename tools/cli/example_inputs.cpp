#include "example_inputs.hpp"

#include <bit>

namespace attnjit::cli {

VariantInputs example_inputs(const ManifestVariant& variant, int seq_len, int heads) {
  VariantInputs inputs;
  const nlohmann::json& example = variant.example;
  const expr::Signature& signature = variant.signature;
  for (std::size_t i = 0; i < signature.params.size(); ++i) {
    const expr::ParamDecl& decl = signature.params[i];
    const nlohmann::json* value = nullptr;
    if (example.is_object() && example.contains("params") &&
        example["params"].contains(decl.name)) {
      value = &example["params"][decl.name];
    }
    if (decl.type == expr::ValueType::floating) {
      const float f = value != nullptr ? value->get<float>() : 30.0f;
      inputs.host.scalars[i] = std::bit_cast<std::int32_t>(f);
    } else {
      inputs.host.scalars[i] = value != nullptr ? value->get<int>() : 1024;
    }
  }
  inputs.tensor_data.resize(signature.tensors.size());
  for (std::size_t i = 0; i < signature.tensors.size(); ++i) {
    const expr::TensorDecl& decl = signature.tensors[i];
    std::vector<std::int32_t>& data = inputs.tensor_data[i];
    TensorArg& arg = inputs.host.tensors[i];
    arg.rank = decl.rank;
    if (decl.rank == 1) {
      // Rank 1: document ids in `documents` equal runs (the manifest's example, else 4).
      int documents = 4;
      if (example.is_object() && example.contains("tensors") &&
          example["tensors"].contains(decl.name)) {
        documents = example["tensors"][decl.name].value("documents", 4);
      }
      data.resize(static_cast<std::size_t>(seq_len));
      for (int j = 0; j < seq_len; ++j) {
        data[j] = static_cast<std::int32_t>(static_cast<std::int64_t>(j) * documents / seq_len);
      }
      arg.dims[0] = seq_len;
      arg.dims[1] = 1;
    } else {
      // Rank 2: a [heads, seq_len] table of small values (e.g. a bias).
      data.assign(static_cast<std::size_t>(heads) * seq_len, 0);
      for (std::size_t j = 0; j < data.size(); ++j) {
        data[j] = decl.elem == expr::TensorElemType::float32
                      ? std::bit_cast<std::int32_t>(static_cast<float>(j % 7) * 0.1f)
                      : static_cast<std::int32_t>(j % 7);
      }
      arg.dims[0] = heads;
      arg.dims[1] = seq_len;
    }
    arg.elem = decl.elem == expr::TensorElemType::int32 ? kTensorInt32 : kTensorFloat32;
    arg.data = data.data();
  }
  return inputs;
}

}  // namespace attnjit::cli
