// The sm90 kernel's part of a forward plan (src/runtime/forward_plan.cpp): the launch grid, the
// TMA tensor maps of Q, K and V, and the calls TMA cannot express (which run on the sm80 kernel
// instead).
#include "runtime/forward_plan.hpp"

#include <catch2/catch.hpp>

using namespace attnjit;

namespace {

// A GQA call (4 query heads over 2 key/value heads) with lengths that are not multiples of the
// tiles, in the given layout, over fake 16-byte aligned addresses (nothing is dereferenced).
struct Call {
  AttentionShape shape{2, 4, 2, 100, 70, 64};
  AttentionBuffers buffers;
  alignas(16) static inline unsigned char memory[64];

  explicit Call(Layout layout) {
    buffers.q = memory;
    buffers.k = memory + 16;
    buffers.v = memory + 32;
    buffers.out = memory + 48;
    buffers.q_strides = layout_strides(layout, 4, 100, 64);
    buffers.k_strides = buffers.v_strides = layout_strides(layout, 2, 70, 64);
    buffers.out_strides = buffers.q_strides;
  }
};

}  // namespace

TEST_CASE(
    "a plain grid has a block per query tile and (batch head) and a persistent one a "
    "block per SM but at most one per work item",
    "[runtime]") {
  const AttentionShape shape{2, 4, 2, 300, 70, 64};  // 3 query tiles x 8 (batch, head) = 24 items
  codegen::KernelTuning tuning;
  const auto plain = forward_grid(shape, codegen::sm90_kernel_config(64, tuning), 132);
  CHECK(plain.grid_x == 3u);
  CHECK(plain.grid_y == 8u);
  CHECK(plain.threads == 384u);
  tuning.sm90_persistent = true;
  const auto config = codegen::sm90_kernel_config(64, tuning);
  const std::pair<int, unsigned> sms_to_blocks[] = {{132, 24u}, {24, 24u}, {4, 4u}, {1, 1u}};
  for (const auto& [multiprocessors, blocks] : sms_to_blocks) {
    INFO(multiprocessors << " SMs");
    const LaunchGrid grid = forward_grid(shape, config, multiprocessors);
    CHECK(grid.grid_x == blocks);
    CHECK(grid.grid_y == 1u);
    CHECK(grid.threads == 384u);
    CHECK(grid.smem_bytes == static_cast<unsigned>(config.smem_bytes));
  }
  // The sm80 kernel's grid does not depend on the SM count.
  const auto sm80 = codegen::choose_kernel_config(90, DType::bf16, 64);
  CHECK(forward_grid(shape, sm80, 4).grid_x == 3u);
  CHECK(forward_grid(shape, sm80, 4).grid_y == 8u);
}

TEST_CASE(
    "three consumer warpgroups (sm90_block_m=192): 512 threads, 192-row query tiles and "
    "Q boxes",
    "[runtime][tma]") {
  const AttentionShape shape{2, 4, 2, 400, 70, 64};  // 3 query tiles of 192 x 8 = 24 items
  codegen::KernelTuning tuning;
  tuning.sm90_block_m = 192;
  const auto config = codegen::sm90_kernel_config(64, tuning);
  const auto plain = forward_grid(shape, config, 132);
  CHECK(plain.grid_x == 3u);
  CHECK(plain.grid_y == 8u);
  CHECK(plain.threads == 512u);
  tuning.sm90_persistent = true;
  const auto persistent = forward_grid(shape, codegen::sm90_kernel_config(64, tuning), 4);
  CHECK(persistent.grid_x == 4u);
  CHECK(persistent.threads == 512u);
  const Call call(Layout::bhld);
  const auto maps = sm90_tensor_maps(call.shape, call.buffers, config);
  CHECK(maps[0].box[1] == 192u);
  CHECK(maps[1].box[1] == static_cast<unsigned>(config.block_n));
}

TEST_CASE("sm90 tensor maps are {head_dim, len, heads, batch} with byte strides and tile boxes",
          "[runtime][tma]") {
  const auto config = codegen::sm90_kernel_config(64);
  const Call bhld(Layout::bhld);
  CHECK(tma_limitation(bhld.shape, bhld.buffers).empty());
  const auto maps = sm90_tensor_maps(bhld.shape, bhld.buffers, config);
  const TensorMapRequest& q = maps[0];
  CHECK(q.address == bhld.buffers.q);
  CHECK(q.dims[0] == 64);
  CHECK(q.dims[1] == 100);
  CHECK(q.dims[2] == 4);
  CHECK(q.dims[3] == 2);
  CHECK(q.strides[0] == 64 * 2);
  CHECK(q.strides[1] == 100 * 64 * 2);
  CHECK(q.strides[2] == 4 * 100 * 64 * 2);
  CHECK(q.box[0] == 64);
  CHECK(q.box[1] == 128);
  CHECK((q.box[2] == 1 && q.box[3] == 1));
  for (const TensorMapRequest* kv : {&maps[1], &maps[2]}) {
    CHECK(kv->dims[1] == 70);
    CHECK(kv->dims[2] == 2);
    CHECK(kv->strides[1] == 70 * 64 * 2);
    CHECK(kv->box[1] == static_cast<unsigned>(config.block_n));
  }
  CHECK(maps[1].address == bhld.buffers.k);
  CHECK(maps[2].address == bhld.buffers.v);

  // [batch, len, heads, dim]: rows are a head apart, heads one row of the head dim apart.
  const Call blhd(Layout::blhd);
  const TensorMapRequest k = sm90_tensor_maps(blhd.shape, blhd.buffers, config)[1];
  CHECK(k.strides[0] == 2 * 64 * 2);
  CHECK(k.strides[1] == 64 * 2);
  CHECK(k.strides[2] == 70 * 2 * 64 * 2);
}

TEST_CASE("a dimension of extent 1 gets a packed stride whatever the call's", "[runtime][tma]") {
  Call call(Layout::bhld);
  call.shape.batch = 1;
  call.shape.num_heads_q = call.shape.num_heads_kv = 1;
  call.buffers.k_strides.batch = 0;  // broadcast: legal for a single batch
  call.buffers.k_strides.head = 0;
  CHECK(tma_limitation(call.shape, call.buffers).empty());
  const TensorMapRequest k =
      sm90_tensor_maps(call.shape, call.buffers, codegen::sm90_kernel_config(64))[1];
  CHECK(k.strides[1] == 70 * 64 * 2);
  CHECK(k.strides[2] == 70 * 64 * 2);
}

TEST_CASE("tma_limitation names what TMA cannot express", "[runtime][tma]") {
  SECTION("a key broadcast over the batch (stride 0)") {
    Call call(Layout::bhld);
    call.buffers.k_strides.batch = 0;
    CHECK(tma_limitation(call.shape, call.buffers) ==
          "the key batch stride of 0 bytes is not a positive multiple of 16 below 2^40");
  }
  SECTION("a base address off 16 bytes") {
    Call call(Layout::bhld);
    call.buffers.v = Call::memory + 8;
    CHECK_THAT(tma_limitation(call.shape, call.buffers),
               Catch::StartsWith("the value base address ") &&
                   Catch::EndsWith(" is not 16-byte aligned"));
  }
  SECTION("a row stride that is not a multiple of 16 bytes") {
    Call call(Layout::bhld);
    call.buffers.q_strides.row = 68;
    CHECK(tma_limitation(call.shape, call.buffers) ==
          "the query row stride of 136 bytes is not a positive multiple of 16 below 2^40");
  }
  SECTION("a stride of 2^40 bytes") {
    Call call(Layout::bhld);
    call.buffers.q_strides.batch = std::int64_t{1} << 39;
    CHECK_THAT(tma_limitation(call.shape, call.buffers), Catch::Contains("query batch stride"));
  }
}
