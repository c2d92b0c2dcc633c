// The emulated Hopper primitives (include/attnjit_simt/hopper_*.hpp) on small kernels
// (hopper_test_kernels.hpp): TMA boxes land in the SwizzledTile layout with zeros past the end,
// wgmma.ss and wgmma.rs agree with a CPU matrix product through their descriptors, a warp-
// specialised producer/consumer ring over mbarriers computes the right sum, and the hazards the
// hardware punishes are reported with a clear message.
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnjit/copy.cuh"
#include "attnjit/sm90_tma.cuh"
#include "attnjit_simt/fake_tensor_map.hpp"
#include "common/half.hpp"
#include "hopper_test_kernels.hpp"
#include "simt_module.hpp"

using namespace attnjit;
using attnjit::simt::SimtModule;

namespace {

const SimtModule& module() {
  static const SimtModule instance(
      {simt::test::kHopperKernels},
      std::filesystem::temp_directory_path() /
          fmt::format("attnjit-simt-hopper-{}", static_cast<long>(::getpid())));
  return instance;
}

// A row-major matrix of 16-bit elements with uniform random values, and the values it holds.
struct Matrix {
  int rows, cols;
  std::vector<std::uint16_t> bits;
  std::vector<double> values;

  Matrix(int rows_, int cols_, bool bf16, unsigned seed) : rows(rows_), cols(cols_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    for (int i = 0; i < rows * cols; ++i) {
      const float x = uniform(rng);
      bits.push_back(bf16 ? float_to_bf16_bits(x) : float_to_fp16_bits(x));
      values.push_back(bf16 ? bf16_bits_to_float(bits.back()) : fp16_bits_to_float(bits.back()));
    }
  }
  double at(int r, int c) const { return values[static_cast<std::size_t>(r) * cols + c]; }
};

// An attnjit tensor map over `data` [batch][heads][len][head_dim]: box {64, box_rows, 1, 1}, 128B
// swizzle, zero fill.
TensorMap make_map(const std::uint16_t* data, std::uint64_t head_dim, std::uint64_t len,
                   std::uint64_t heads, std::uint32_t box_rows, bool bf16) {
  const std::uint64_t dims[4] = {head_dim, len, heads, 1};
  const std::uint64_t strides[3] = {head_dim * 2, len * head_dim * 2, heads * len * head_dim * 2};
  const std::uint32_t box[4] = {64, box_rows, 1, 1};
  const std::uint32_t unit[4] = {1, 1, 1, 1};
  TensorMap map;
  const std::string why = simt::encode_fake_tensor_map(
      &map, bf16 ? simt::kFakeDataTypeBfloat16 : simt::kFakeDataTypeFloat16, 4,
      const_cast<std::uint16_t*>(data), dims, strides, box, unit, simt::kFakeInterleaveNone,
      simt::kFakeSwizzle128B, 2, simt::kFakeOobFillNone);
  INFO(why);
  REQUIRE(why.empty());
  return map;
}

struct Launch {
  std::vector<TensorMap> maps;
  std::vector<const Matrix*> inputs;  // readable by the kernel (TMA sources, P)
  const void* extra = nullptr;        // p.k
  std::vector<float> output = std::vector<float>(64 * 128, 0.0f);
  unsigned threads = 128;
  unsigned smem_bytes = 1024;
  FwdParams params{};

  // Runs kernel `name` on one block; the emulator's error, empty when none.
  std::string run(const std::string& name) {
    params.q = maps.data();
    params.k = extra;
    params.o = output.data();
    std::vector<SimtRegion> regions = {{output.data(), output.size() * sizeof(float), 1}};
    for (const Matrix* input : inputs) {
      regions.push_back({input->bits.data(), input->bits.size() * 2, 0});
    }
    LaunchGrid grid;
    grid.threads = threads;
    grid.smem_bytes = smem_bytes;
    try {
      module().run_forward(module().symbol(name), params, grid, regions);
    } catch (const std::runtime_error& error) {
      return error.what();
    }
    return {};
  }
};

// D[64][n] against `expected(r, c)`: the emulator computes exact products summed in double and
// rounded once, so only the final fp32 rounding separates the two.
template <typename Expected>
void check_product(const std::vector<float>& output, int n, Expected expected) {
  for (int r = 0; r < 64; ++r) {
    for (int c = 0; c < n; ++c) {
      INFO("D(" << r << ", " << c << ")");
      REQUIRE(output[static_cast<std::size_t>(r) * n + c] ==
              Approx(expected(r, c)).epsilon(1e-6).margin(1e-5));
    }
  }
}

// tma_box over bf16 [1][2 heads][100 rows][96]: the box of 64 rows x 64 columns from (column,
// row) of head 1 into shared byte `dst`.
struct TmaBox {
  static constexpr int kRows = 100, kColumns = 96;
  Matrix tensor{2 * kRows, kColumns, true, 11};
  Launch launch;

  TmaBox(int dst, int column, int row) {
    launch.maps = {make_map(tensor.bits.data(), kColumns, kRows, 2, 64, true)};
    launch.inputs = {&tensor};
    launch.threads = 32;
    launch.smem_bytes = static_cast<unsigned>(dst) + 64 * 128;
    launch.params.q_len = 64 * 128;
    launch.params.num_heads_q = dst;
    launch.params.num_heads_kv = column;
    launch.params.kv_len = row;
  }
  TmaBox(const TmaBox&) = delete;  // launch points into tensor
};

}  // namespace

TEST_CASE("emulated TMA: a box lands as a SwizzledTile block, out-of-range elements as zeros",
          "[simt]") {
  // In range; rows past the end; columns past the end and rows before the start.
  const auto [column, row] = GENERATE(std::pair{0, 0}, std::pair{0, 64}, std::pair{64, -8});
  TmaBox box(1024, column, row);
  REQUIRE(box.launch.run("tma_box") == "");
  const auto* out = reinterpret_cast<const unsigned char*>(box.launch.output.data());
  for (int r = 0; r < 64; ++r) {
    for (int chunk = 0; chunk < 8; ++chunk) {
      INFO("box row " << r << " chunk " << chunk);
      std::uint16_t expected[8] = {};
      for (int i = 0; i < 8; ++i) {
        const int x = column + 8 * chunk + i, y = row + r;
        if (x < TmaBox::kColumns && y >= 0 && y < TmaBox::kRows) {
          expected[i] = box.tensor.bits[(TmaBox::kRows + y) * TmaBox::kColumns + x];
        }
      }
      CHECK(std::memcmp(out + SwizzledTile<64, 64>::offset(r, chunk), expected, 16) == 0);
    }
  }
}

TEST_CASE("emulated wgmma.ss: descriptors over TMA-loaded tiles compute A * B^T", "[simt]") {
  struct Shape {
    const char* kernel;
    bool bf16;
    int n, k;
  };
  const Shape shape = GENERATE(Shape{"wgmma_ss_bf16_n64_k16", true, 64, 16},
                               Shape{"wgmma_ss_fp16_n64_k16", false, 64, 16},
                               Shape{"wgmma_ss_bf16_n128_k16", true, 128, 16},
                               Shape{"wgmma_ss_fp16_n128_k16", false, 128, 16},
                               Shape{"wgmma_ss_bf16_n64_k128", true, 64, 128},
                               Shape{"wgmma_ss_fp16_n64_k128", false, 64, 128},
                               Shape{"wgmma_ss_bf16_n128_k128", true, 128, 128},
                               Shape{"wgmma_ss_fp16_n128_k128", false, 128, 128});
  INFO(shape.kernel);
  const Matrix a(64, shape.k, shape.bf16, 21);
  const Matrix b(shape.n, shape.k, shape.bf16, 22);
  Launch launch;
  launch.maps = {make_map(a.bits.data(), shape.k, 64, 1, 64, shape.bf16),
                 make_map(b.bits.data(), shape.k, shape.n, 1, shape.n, shape.bf16)};
  launch.inputs = {&a, &b};
  launch.smem_bytes = 1024 + (shape.k + 63) / 64 * (64 + shape.n) * 128;
  REQUIRE(launch.run(shape.kernel) == "");
  check_product(launch.output, shape.n, [&](int r, int c) {
    double sum = 0.0;
    for (int k = 0; k < shape.k; ++k) sum += a.at(r, k) * b.at(c, k);
    return sum;
  });
}

TEST_CASE("emulated wgmma.rs: P from registers times V read MN-major from two boxes", "[simt]") {
  const bool bf16 = GENERATE(true, false);
  const Matrix p(64, 64, bf16, 31);
  const Matrix v(64, 128, bf16, 32);
  Launch launch;
  launch.maps = {make_map(v.bits.data(), 128, 64, 1, 64, bf16)};
  launch.inputs = {&p, &v};
  launch.extra = p.bits.data();
  launch.smem_bytes = 1024 + 2 * 64 * 128;
  REQUIRE(launch.run(bf16 ? "wgmma_rs_bf16" : "wgmma_rs_fp16") == "");
  check_product(launch.output, 128, [&](int r, int c) {
    double sum = 0.0;
    for (int k = 0; k < 64; ++k) sum += p.at(r, k) * v.at(k, c);
    return sum;
  });
}

namespace {

// Q [64][64] and `tiles` key tiles [64 * tiles][64] for producer_consumer_ring.
struct Ring {
  static constexpr int kTiles = 5;
  Matrix q{64, 64, true, 41};
  Matrix keys{64 * kTiles, 64, true, 42};
  Launch launch;

  explicit Ring(int variant) {
    launch.maps = {make_map(q.bits.data(), 64, 64, 1, 64, true),
                   make_map(keys.bits.data(), 64, 64 * kTiles, 1, 64, true)};
    launch.inputs = {&q, &keys};
    launch.threads = 160;
    launch.smem_bytes = 1024 + 3 * 64 * 128;
    launch.params.num_heads_q = kTiles;
    launch.params.batch = variant;
  }
  Ring(const Ring&) = delete;  // launch points into q and keys
};

}  // namespace

TEST_CASE("emulated warp specialisation: a producer warp feeds consumers through a 2-stage ring",
          "[simt]") {
  Ring ring(0);
  REQUIRE(ring.launch.run("producer_consumer_ring") == "");
  check_product(ring.launch.output, 64, [&](int r, int c) {
    double sum = 0.0;
    for (int tile = 0; tile < Ring::kTiles; ++tile) {
      for (int k = 0; k < 64; ++k) sum += ring.q.at(r, k) * ring.keys.at(64 * tile + c, k);
    }
    return sum;
  });
}

TEST_CASE("emulated Hopper hazards are errors with a clear message", "[simt]") {
  const Matrix a(64, 16, true, 51);
  const Matrix b(64, 16, true, 52);
  Launch launch;
  launch.maps = {make_map(a.bits.data(), 16, 64, 1, 64, true),
                 make_map(b.bits.data(), 16, 64, 1, 64, true)};
  launch.inputs = {&a, &b};
  launch.smem_bytes = 1024 + 2 * 64 * 128;
  SECTION("reading accumulators before wgmma_wait_group") {
    launch.params.batch = 1;
    CHECK_THAT(launch.run("wgmma_ss_bf16_n64_k16"),
               Catch::Contains("st.global.f32 uses a wgmma accumulator before the "
                               "wgmma_wait_group that delivers it"));
  }
  SECTION("exiting with a wgmma group never waited for") {
    launch.params.batch = 2;
    CHECK_THAT(launch.run("wgmma_ss_bf16_n64_k16"),
               Catch::Contains("exited with 1 wgmma groups never waited for"));
  }
  SECTION("a TMA destination off the 1024-byte swizzle pattern") {
    TmaBox misaligned(1536, 0, 0);
    CHECK_THAT(misaligned.launch.run("tma_box"),
               Catch::Contains("TMA destination at shared byte 1536 is not 1024-byte aligned"));
  }
  SECTION("reading a TMA box without waiting for its mbarrier phase") {
    TmaBox unwaited(1024, 0, 0);
    unwaited.launch.params.batch = 1;
    CHECK_THAT(unwaited.launch.run("tma_box"),
               Catch::Contains("written by a TMA load that completes phase 0 of the mbarrier at "
                               "shared byte 0, before thread") &&
                   Catch::Contains("waited for that phase"));
  }
  SECTION("st.shared data read by wgmma needs fence.proxy.async") {
    CHECK(launch.run("generic_writes_then_wgmma") == "");
    CHECK(launch.output[0] == 16.0f);
    launch.params.batch = 1;
    CHECK_THAT(launch.run("generic_writes_then_wgmma"),
               Catch::Contains("has not executed fence.proxy.async since"));
  }
  SECTION("a plain store into a wgmma's operand before the wait that retires it") {
    launch.params.batch = 3;
    CHECK_THAT(launch.run("generic_writes_then_wgmma"),
               Catch::Contains("st.shared.b32 into shared bytes [") &&
                   Catch::Contains("while a wgmma of warp 0 still reads them"));
    // Bytes between the operands are not theirs: storing there meanwhile is fine.
    launch.params.batch = 4;
    launch.smem_bytes = 1024 + 3 * 64 * 128;
    CHECK(launch.run("generic_writes_then_wgmma") == "");
    CHECK(launch.output[0] == 16.0f);
  }
  SECTION("a wgmma issued by only some warps of the warpgroup") {
    launch.params.batch = 2;
    CHECK_THAT(launch.run("generic_writes_then_wgmma"),
               Catch::Contains("warp 0 issued 1 wgmma.mma_async and warp 2 0"));
  }
  SECTION("a named barrier its thread count never reaches") {
    launch.threads = 160;
    CHECK_THAT(launch.run("named_barrier_deadlock"),
               Catch::Contains("deadlock: every live thread waits") &&
                   Catch::Contains("waits at named barrier 1 (128 of 160 threads arrived)"));
  }
  SECTION("a named barrier left half complete when the block ends") {
    launch.threads = 64;
    CHECK_THAT(launch.run("named_barrier_left_half_complete"),
               Catch::Contains("the block ended with named barrier 2 half complete: 32 of 64 "
                               "threads arrived"));
  }
  SECTION("an mbarrier phase no arrival completes") {
    launch.threads = 64;
    CHECK_THAT(launch.run("mbarrier_deadlock"),
               Catch::Contains("deadlock: every live thread waits") &&
                   Catch::Contains("waits (\"mbarrier\") on the mbarrier at shared byte 64 "
                                   "(phase 0: 1 of 2 arrivals and 0 transaction bytes pending)"));
    launch.params.batch = 1;
    CHECK_THAT(launch.run("mbarrier_deadlock"),
               Catch::Contains("waits (\"test full\") on the mbarrier at shared byte 64"));
  }
  SECTION("a stage released to the producer before the wgmma reading it was waited for") {
    Ring ring(1);
    CHECK_THAT(ring.launch.run("producer_consumer_ring"),
               Catch::Contains("TMA load into shared bytes") &&
                   Catch::Contains("still reads them (no wgmma_wait_group retired it)"));
  }
  SECTION("a stage released just before the wait that retires the wgmma reading it") {
    // The last arrival lets the released producer run first, as the hardware may.
    Ring ring(2);
    CHECK_THAT(ring.launch.run("producer_consumer_ring"),
               Catch::Contains("TMA load into shared bytes") &&
                   Catch::Contains("still reads them (no wgmma_wait_group retired it)"));
  }
}
