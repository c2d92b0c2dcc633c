// The host side of TMA tensor maps (src/runtime/tensor_map_encoding.hpp): the span a map covers
// and the small-tensor driver workaround applied after encoding.
#include "runtime/tensor_map_encoding.hpp"

#include <catch2/catch.hpp>

using namespace attnjit;

namespace {

// K of a [batch 2, heads 3, len 70, head_dim 64] bf16 tensor in BHLD layout.
TensorMapRequest bhld_request() {
  TensorMapRequest request;
  request.dims[0] = 64;
  request.dims[1] = 70;
  request.dims[2] = 3;
  request.dims[3] = 2;
  request.strides[0] = 64 * 2;
  request.strides[1] = 70 * 64 * 2;
  request.strides[2] = 3 * 70 * 64 * 2;
  return request;
}

TensorMap all_ones() {
  TensorMap map;
  for (unsigned long long& word : map.opaque) word = ~0ull;
  return map;
}

}  // namespace

TEST_CASE("tensor_map_span_bytes is the distance from the first element to past the last",
          "[runtime][tma]") {
  CHECK(tensor_map_span_bytes(bhld_request()) == 2ull * 3 * 70 * 64 * 2);
  TensorMapRequest gap = bhld_request();
  gap.strides[2] = 1'000'000;  // batches far apart: the span reaches into the last one only
  CHECK(tensor_map_span_bytes(gap) == 1'000'000ull + 3 * 70 * 64 * 2);
}

TEST_CASE("the small-tensor workaround clears bit 21 of word 1 on CUDA <= 13.1 drivers only",
          "[runtime][tma]") {
  const std::uint64_t small = 128 * 1024 - 2;
  const std::uint64_t large = 128 * 1024;
  TensorMap map = all_ones();
  apply_small_tensor_map_workaround(map, 13000, small);
  CHECK(map.opaque[1] == ~(1ull << 21));
  for (int i = 0; i < 16; ++i) {
    if (i != 1) CHECK(map.opaque[i] == ~0ull);
  }
  for (const auto& [driver, span] : {std::pair{13020, small}, std::pair{13010, large}}) {
    TensorMap untouched = all_ones();
    apply_small_tensor_map_workaround(untouched, driver, span);
    CHECK(untouched.opaque[1] == ~0ull);
  }
  TensorMap latest_affected = all_ones();
  apply_small_tensor_map_workaround(latest_affected, 13010, small);
  CHECK(latest_affected.opaque[1] == ~(1ull << 21));
}
