// The emulator's own checks, on small hand-written kernels: each hazard the forward tests rely on
// it to find (races, missing cp.async waits, uninitialised reads, divergence, stray stores) is
// reported with its place, the correct version of each kernel passes, and the emulated mma and
// ldmatrix agree with a plain matrix product.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "codegen/variant_source.hpp"
#include "common/half.hpp"
#include "expr/block_analysis.hpp"
#include "expr/test_support.hpp"
#include "simt_module.hpp"

using namespace attnjit;
using attnjit::simt::SimtModule;

namespace {

// Every kernel takes FwdParams (the forward entry's signature) and reads its output buffer from
// params.o, its input from params.q.
constexpr const char* kKernels = R"(
using attnjit::FwdParams;
extern "C" __global__ void race_then_read(FwdParams p) {
  unsigned char* smem = attnjit_dynamic_smem;
  if (threadIdx.x == 0) attnjit::store_shared_32(smem, 1u);
  if (threadIdx.x == 32) attnjit::load_shared_16(smem);
}
extern "C" __global__ void barrier_then_read(FwdParams p) {
  unsigned char* smem = attnjit_dynamic_smem;
  if (threadIdx.x < 4) attnjit::store_shared_32(smem + 4 * threadIdx.x, 1u);
  __syncthreads();
  if (threadIdx.x == 32) attnjit::load_shared_16(smem);
}
extern "C" __global__ void syncwarp_then_read(FwdParams p) {
  unsigned char* smem = attnjit_dynamic_smem;
  if (threadIdx.x < 4) attnjit::store_shared_32(smem + 4 * threadIdx.x, 1u);
  __syncwarp();
  if (threadIdx.x == 5) attnjit::load_shared_16(smem);
}
extern "C" __global__ void write_after_read(FwdParams p) {
  unsigned char* smem = attnjit_dynamic_smem;
  if (threadIdx.x < 4) attnjit::store_shared_32(smem + 4 * threadIdx.x, 1u);
  __syncthreads();
  if (threadIdx.x == 0) attnjit::load_shared_16(smem);
  if (threadIdx.x == 40) attnjit::store_shared_32(smem, 2u);
}
extern "C" __global__ void uninitialised_read(FwdParams p) {
  if (threadIdx.x == 0) attnjit::load_shared_16(attnjit_dynamic_smem + 16);
}
extern "C" __global__ void copy_without_wait(FwdParams p) {
  const unsigned smem = attnjit::smem_address(attnjit_dynamic_smem);
  attnjit::cp_async_16(smem + 16 * threadIdx.x, static_cast<const char*>(p.q) + 16 * threadIdx.x,
                       true);
  attnjit::cp_async_commit();
  __syncthreads();
  attnjit::load_shared_16(attnjit_dynamic_smem + 16 * ((threadIdx.x + 1) % blockDim.x));
  attnjit::cp_async_wait<0>();
}
extern "C" __global__ void copy_wait_barrier(FwdParams p) {
  const unsigned smem = attnjit::smem_address(attnjit_dynamic_smem);
  attnjit::cp_async_16(smem + 16 * threadIdx.x, static_cast<const char*>(p.q) + 16 * threadIdx.x,
                       true);
  attnjit::cp_async_commit();
  attnjit::cp_async_wait<0>();
  __syncthreads();
  const unsigned next = (threadIdx.x + 1) % blockDim.x;
  attnjit::store_global_16(static_cast<unsigned short*>(p.o) + 8 * threadIdx.x,
                           attnjit::load_shared_16(attnjit_dynamic_smem + 16 * next));
}
extern "C" __global__ void copy_out_of_bounds(FwdParams p) {
  const unsigned smem = attnjit::smem_address(attnjit_dynamic_smem);
  attnjit::cp_async_16(smem, static_cast<const char*>(p.q) + 4096, threadIdx.x == 0);
  attnjit::cp_async_commit();
  attnjit::cp_async_wait<0>();
}
extern "C" __global__ void store_out_of_bounds(FwdParams p) {
  attnjit::store_global_f32(static_cast<float*>(p.o) - 1, 0.0f);
}
extern "C" __global__ void divergent_barrier(FwdParams p) {
  if (threadIdx.x < 32) __syncthreads();
}
extern "C" __global__ void divergent_warp(FwdParams p) {
  if (threadIdx.x % 2 == 0) __syncwarp();
  else __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}
// Every thread votes at two __syncthreads_or: thread p.batch (none when negative) at the first,
// nobody at the second; each writes both results.
extern "C" __global__ void barrier_or(FwdParams p) {
  const int first = __syncthreads_or(static_cast<int>(threadIdx.x) == p.batch);
  const int second = __syncthreads_or(0);
  float* out = static_cast<float*>(p.o) + 2 * threadIdx.x;
  attnjit::store_global_f32(out, static_cast<float>(first));
  attnjit::store_global_f32(out + 1, static_cast<float>(second));
}
extern "C" __global__ void shared_out_of_bounds(FwdParams p) {
  attnjit::store_shared_32(attnjit_dynamic_smem + 1024, 0u);
}
// One m16n8k16 product: A [16][16] and B^T [8][16] (row-major, bf16) from params.q, loaded with
// ldmatrix exactly as the forward kernel loads Q and K; D [16][8] fp32 to params.o.
extern "C" __global__ void one_mma(FwdParams p) {
  const int lane = threadIdx.x;
  const unsigned smem = attnjit::smem_address(attnjit_dynamic_smem);
  for (int chunk = lane; chunk < 48; chunk += 32) {
    attnjit::cp_async_16(smem + 16 * chunk, static_cast<const char*>(p.q) + 16 * chunk, true);
  }
  attnjit::cp_async_commit();
  attnjit::cp_async_wait<0>();
  __syncwarp();
  // A: matrices (rows 0-7 | 8-15) x (cols 0-7 | 8-15) in a0..a3 order; lanes 0-15 rows at
  // column 0, lanes 16-31 the same rows at column 8.
  unsigned a[4];
  attnjit::ldmatrix_x4(smem + (lane % 16) * 32 + (lane / 16) * 16, a[0], a[1], a[2], a[3]);
  // B from B^T [n][k]: matrix 0 = n 0-7 x k 0-7 (b0), 1 = n 0-7 x k 8-15 (b1).
  unsigned b0, b1, unused0, unused1;
  attnjit::ldmatrix_x4(smem + 512 + (lane % 8) * 32 + ((lane / 8) % 2) * 16, b0, b1, unused0,
                       unused1);
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  attnjit::Mma<attnjit::bf16_t>::run(d, a, b0, b1);
  float* out = static_cast<float*>(p.o);
  const int group = lane / 4, tig = lane % 4;
  for (int e = 0; e < 4; ++e) {
    attnjit::store_global_f32(out + (group + 8 * (e / 2)) * 8 + 2 * tig + e % 2, d[e]);
  }
}
)";

const SimtModule& module() {
  static const SimtModule instance(
      {kKernels}, std::filesystem::temp_directory_path() /
                      fmt::format("attnjit-simt-checks-{}", static_cast<long>(::getpid())));
  return instance;
}

struct Buffers {
  std::vector<unsigned char> input = std::vector<unsigned char>(4096, 1);
  std::vector<float> output = std::vector<float>(1024, 0.0f);
};

// Runs `name` with one block of `threads` threads and 1 KB of shared memory; returns the
// emulator's error, empty when none.
std::string run(const std::string& name, Buffers& buffers, unsigned threads = 64, int batch = 0) {
  FwdParams params{};
  params.batch = batch;
  params.q = buffers.input.data();
  params.o = buffers.output.data();
  const SimtRegion regions[] = {
      {buffers.input.data(), buffers.input.size(), 0},
      {buffers.output.data(), buffers.output.size() * sizeof(float), 1}};
  LaunchGrid grid;
  grid.threads = threads;
  grid.smem_bytes = 1024;
  try {
    module().run_forward(module().symbol(name), params, grid, regions);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return {};
}

std::string run(const std::string& name) {
  Buffers buffers;
  return run(name, buffers);
}

}  // namespace

TEST_CASE("emulator: races between threads are reported, barriers order them", "[simt]") {
  CHECK_THAT(run("race_then_read"), Catch::Contains("read-after-write race on shared byte 0") &&
                                        Catch::Contains("thread 32 (warp 1, lane 0)"));
  CHECK(run("barrier_then_read").empty());
  CHECK(run("syncwarp_then_read").empty());
  CHECK_THAT(run("write_after_read"), Catch::Contains("write-after-read race"));
}

TEST_CASE("emulator: cp.async must be waited for and read in bounds", "[simt]") {
  CHECK_THAT(run("copy_without_wait"), Catch::Contains("cp.async into it is in flight"));
  CHECK_THAT(run("copy_out_of_bounds"), Catch::Contains("outside every input buffer"));
  Buffers buffers;
  for (std::size_t i = 0; i < buffers.input.size(); ++i) {
    buffers.input[i] = static_cast<unsigned char>(i * 7);
  }
  REQUIRE(run("copy_wait_barrier", buffers).empty());
  // Thread t stored the chunk thread t + 1 copied: the copies landed where they were aimed.
  const auto* out = reinterpret_cast<const unsigned char*>(buffers.output.data());
  for (int t = 0; t < 64; ++t) {
    const int next = (t + 1) % 64;
    CHECK(std::memcmp(out + 16 * t, buffers.input.data() + 16 * next, 16) == 0);
  }
}

TEST_CASE("emulator: uninitialised and out-of-bounds accesses are reported", "[simt]") {
  CHECK_THAT(run("uninitialised_read"), Catch::Contains("which nothing wrote"));
  CHECK_THAT(run("store_out_of_bounds"), Catch::Contains("outside every output buffer"));
  CHECK_THAT(run("shared_out_of_bounds"), Catch::Contains("past the 1024 bytes"));
}

TEST_CASE("emulator: divergent barriers and collectives are errors, not hangs", "[simt]") {
  CHECK_THAT(run("divergent_barrier"), Catch::Contains("exited while other threads wait") ||
                                           Catch::Contains("deadlock"));
  CHECK_THAT(run("divergent_warp"), Catch::Contains("divergent warp"));
}

TEST_CASE("emulator: __syncthreads_or tells every thread whether any voted", "[simt]") {
  for (const int voter : {-1, 0, 37, 63}) {
    INFO("voter " << voter);
    Buffers buffers;
    REQUIRE(run("barrier_or", buffers, 64, voter).empty());
    for (int t = 0; t < 64; ++t) {
      CHECK(buffers.output[2 * t] == (voter >= 0 ? 1.0f : 0.0f));
      CHECK(buffers.output[2 * t + 1] == 0.0f);  // the next barrier starts from nobody
    }
  }
}

TEST_CASE("emulator: ldmatrix and mma compute A * B", "[simt]") {
  Buffers buffers;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  float a[16][16], bt[8][16];
  auto put = [&](int index, float value) {
    const std::uint16_t bits = float_to_bf16_bits(value);
    std::memcpy(buffers.input.data() + 2 * index, &bits, 2);
    return bf16_bits_to_float(bits);
  };
  for (int r = 0; r < 16; ++r) {
    for (int k = 0; k < 16; ++k) a[r][k] = put(r * 16 + k, uniform(rng));
  }
  for (int n = 0; n < 8; ++n) {
    for (int k = 0; k < 16; ++k) bt[n][k] = put(256 + n * 16 + k, uniform(rng));
  }
  REQUIRE(run("one_mma", buffers, 32).empty());
  for (int r = 0; r < 16; ++r) {
    for (int n = 0; n < 8; ++n) {
      double expected = 0.0;
      for (int k = 0; k < 16; ++k) expected += static_cast<double>(a[r][k]) * bt[n][k];
      INFO("D(" << r << ", " << n << ")");
      CHECK(buffers.output[r * 8 + n] == Approx(expected).margin(1e-4));
    }
  }
}

// The tensor-summary kernel (tensor_summary.cuh) as the runtime launches it (plan_summaries'
// grid: one warp per summary block) against the host's expr::build_summary, on values whose
// extremes sit anywhere in a block (random over the whole int range): granularities that are
// and are not multiples of 32, tensors shorter and longer than the index range (reads past the
// end are 0), and a grid that is not a whole number of summary blocks per warp.
TEST_CASE("emulated tensor summaries match the host's, block by block", "[simt]") {
  using namespace attnjit;
  const expr::Expression mask =
      test::parse_mask("doc[q_idx] == doc[kv_idx]");
  const codegen::GeneratedKernel kernel = codegen::generate_kernel_source(
      mask, test::parse_score(""), DType::bf16, 64, codegen::Target(80),
      codegen::FamilyRequest::sm80, codegen::KernelTuning{});
  const simt::SimtModule module({kernel.source},
                                std::filesystem::temp_directory_path() /
                                    fmt::format("attnjit-simt-summary-{}",
                                                static_cast<long>(::getpid())));
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> value(-2000000000, 2000000000);
  struct Shape {
    int q_len, kv_len, tensor_len, block_m, block_n;
  };
  for (const Shape s : {Shape{300, 1000, 1000, 128, 64}, Shape{77, 333, 200, 48, 16},
                        Shape{129, 4100, 4200, 192, 176}, Shape{5, 40, 3, 16, 32}}) {
    INFO("q_len " << s.q_len << " kv_len " << s.kv_len << " tensor " << s.tensor_len
                  << " tiles " << s.block_m << " x " << s.block_n);
    std::vector<int> data(static_cast<std::size_t>(s.tensor_len));
    for (int& v : data) v = value(rng);
    VariantArgs args{};
    args.tensors[0] = TensorArg{data.data(), {s.tensor_len, 1}, 1, kTensorInt32, {}, {}};
    AttentionShape shape;
    shape.batch = 1;
    shape.num_heads_q = shape.num_heads_kv = 1;
    shape.q_len = s.q_len;
    shape.kv_len = s.kv_len;
    shape.head_dim = 64;
    codegen::KernelConfig config = kernel.config;
    config.block_m = s.block_m;
    config.block_n = s.block_n;
    const SummaryPlan plan = plan_summaries(expr::summary_requests(mask), shape, config, args);
    REQUIRE(plan.launches.size() == 2);
    std::vector<int> scratch(plan.total_ints, 12345);
    const std::vector<SimtRegion> regions = {
        {data.data(), data.size() * sizeof(int), 0},
        {scratch.data(), scratch.size() * sizeof(int), 1}};
    for (const SummaryLaunch& launch : plan.launches) {
      int* min = scratch.data() + launch.offset;
      const SimtSummaryArgs summary{data.data(), launch.len, launch.index_len,
                                          launch.granularity, min, min + launch.num_blocks};
      module.run_summary(module.summary_entry(0), summary, launch.grid, regions);
      const expr::HostSummary host =
          expr::build_summary(args.tensors[0], launch.granularity, launch.index_len);
      REQUIRE(host.min.size() == static_cast<std::size_t>(launch.num_blocks));
      for (int block = 0; block < launch.num_blocks; ++block) {
        INFO("granularity " << launch.granularity << " block " << block);
        CHECK(min[block] == host.min[static_cast<std::size_t>(block)]);
        CHECK(min[launch.num_blocks + block] == host.max[static_cast<std::size_t>(block)]);
      }
    }
  }
}
