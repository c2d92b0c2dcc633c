// Host tensors and arguments for evaluating expressions in tests.
#pragma once

#include <cstring>
#include <vector>

#include "attnjit/variant_args.cuh"
#include "expr/evaluate.hpp"

namespace attnjit::test {

inline int float_bits(float value) {
  int bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline TensorArg tensor_arg(const std::vector<int>& data, int rows, int cols = 1, int rank = 1) {
  TensorArg arg{};
  arg.data = data.data();
  arg.dims[0] = rows;
  arg.dims[1] = cols;
  arg.rank = rank;
  arg.elem = kTensorInt32;
  return arg;
}

inline TensorArg tensor_arg(const std::vector<float>& data, int rows, int cols = 1, int rank = 1) {
  TensorArg arg{};
  arg.data = data.data();
  arg.dims[0] = rows;
  arg.dims[1] = cols;
  arg.rank = rank;
  arg.elem = kTensorFloat32;
  return arg;
}

inline expr::ElementIndex element(int q_idx, int kv_idx) {
  return expr::ElementIndex{0, 0, q_idx, kv_idx, 64, 64, 8};
}

}  // namespace attnjit::test
