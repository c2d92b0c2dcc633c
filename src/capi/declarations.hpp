// A signature's declarations as the C API hands them out (attnjit_param_decl and
// attnjit_tensor_decl arrays), with the names they point to.
#pragma once

#include <vector>

#include "attnjit/attnjit.h"
#include "expr/signature.hpp"

namespace attnjit::capi {

class Declarations {
 public:
  explicit Declarations(expr::Signature signature);
  // Note: the arrays point into signature_'s strings, which a move could relocate (short
  // strings live inside the object): built in place, never copied or moved.
  Declarations(const Declarations&) = delete;
  Declarations& operator=(const Declarations&) = delete;

  // Sets params, num_params, tensors and num_tensors of a C struct that has them.
  template <typename CStruct>
  void fill(CStruct& c) const {
    c.params = params_.data();
    c.num_params = static_cast<int>(params_.size());
    c.tensors = tensors_.data();
    c.num_tensors = static_cast<int>(tensors_.size());
  }

 private:
  expr::Signature signature_;
  std::vector<attnjit_param_decl> params_;
  std::vector<attnjit_tensor_decl> tensors_;
};

}  // namespace attnjit::capi
