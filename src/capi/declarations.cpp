#include "capi/declarations.hpp"

#include <utility>

namespace attnjit::capi {

Declarations::Declarations(expr::Signature signature) : signature_(std::move(signature)) {
  for (const expr::ParamDecl& param : signature_.params) {
    params_.push_back({param.name.c_str(), param.type == expr::ValueType::integer
                                               ? ATTNJIT_PARAM_INT
                                               : ATTNJIT_PARAM_FLOAT});
  }
  for (const expr::TensorDecl& tensor : signature_.tensors) {
    tensors_.push_back(
        {tensor.name.c_str(),
         tensor.elem == expr::TensorElemType::int32 ? ATTNJIT_TENSOR_INT32 : ATTNJIT_TENSOR_FLOAT32,
         tensor.rank});
  }
}

}  // namespace attnjit::capi
