#include "public_variant.hpp"

#include <vector>

#include "common/error.hpp"

namespace attnjit::cli {

void check_status(attnjit_status status) {
  if (status != ATTNJIT_OK) throw Error(static_cast<Status>(status), attnjit_last_error());
}

attnjit_dtype c_dtype(DType dtype) {
  switch (dtype) {
    case DType::bf16: return ATTNJIT_DTYPE_BF16;
    case DType::fp16: return ATTNJIT_DTYPE_FP16;
    case DType::fp32: return ATTNJIT_DTYPE_FP32;
  }
  return ATTNJIT_DTYPE_BF16;
}

c::RuntimePtr create_runtime(attnjit_backend backend, const std::string& cache_dir) {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);
  options.backend = backend;
  options.cache_dir = cache_dir.empty() ? nullptr : cache_dir.c_str();
  attnjit_runtime* runtime = nullptr;
  check_status(attnjit_runtime_create(&runtime, &options));
  return c::RuntimePtr(runtime);
}

c::VariantPtr create_variant(attnjit_runtime* runtime, const VariantSpec& spec) {
  std::vector<attnjit_param_decl> param_decls;
  for (const auto& p : spec.signature.params) {
    param_decls.push_back({p.name.c_str(), p.type == expr::ValueType::integer
                                               ? ATTNJIT_PARAM_INT
                                               : ATTNJIT_PARAM_FLOAT});
  }
  std::vector<attnjit_tensor_decl> tensor_decls;
  for (const auto& t : spec.signature.tensors) {
    tensor_decls.push_back({t.name.c_str(),
                            t.elem == expr::TensorElemType::int32 ? ATTNJIT_TENSOR_INT32
                                                                  : ATTNJIT_TENSOR_FLOAT32,
                            t.rank});
  }
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = spec.mask.c_str();
  desc.score = spec.score.c_str();
  desc.params = param_decls.data();
  desc.num_params = static_cast<int>(param_decls.size());
  desc.tensors = tensor_decls.data();
  desc.num_tensors = static_cast<int>(tensor_decls.size());
  desc.dtype = c_dtype(spec.dtype);
  desc.head_dim = spec.head_dim;
  attnjit_variant* variant = nullptr;
  check_status(attnjit_variant_create(&variant, runtime, &desc));
  return c::VariantPtr(variant);
}

}  // namespace attnjit::cli
