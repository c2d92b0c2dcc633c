// The Hopper primitives of kernels_templates/attnjit/sm90_*.cuh compile with NVRTC for sm_90a
// (the embedded templates, as the library compiles them): every wgmma shape and form, TMA,
// mbarriers, named barriers, fences, elect.sync and setmaxnreg reach the PTX, and, when cuobjdump
// can be found, the SASS holds the Hopper instructions (HGMMA, UTMALDG). Needs no GPU.
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compile/nvrtc_compiler.hpp"
#include "support/hopper_probe_kernels.hpp"
#include "support/hopper_probes.hpp"
#include "testkit/sass.hpp"

namespace {

namespace fs = std::filesystem;

// A warp-specialised block: warp 4 loads two TMA boxes onto an mbarrier, warpgroup 0 waits and
// issues wgmma of shape (ELEM, N) in both forms; one kernel per shape.
// Note: __launch_bounds__ names the minimum of 1 block per SM: without it ptxas cannot tell the
// register count at entry for a 160-thread block and drops setmaxnreg (info C7508).
constexpr const char* kKernels = R"(
#include "attnjit/copy.cuh"
#include "attnjit/sm90_barrier.cuh"
#include "attnjit/sm90_tma.cuh"
#include "attnjit/sm90_wgmma.cuh"
using namespace attnjit;

template <typename ELEM, int N>
__device__ void probe(const TensorMap& map, float* out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const unsigned tile = smem_address(smem);
  const unsigned full = smem_address(smem + 65536), done = full + 8;
  if (threadIdx.x == 0) {
    mbarrier_init(full, 1);
    mbarrier_init(done, 128);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x >= 128) {
    warpgroup_reg_dealloc<40>();
    if (elect_one_lane()) {
      tma_prefetch_descriptor(&map);
      mbarrier_arrive_expect_tx(full, 2 * 64 * 128);
      tma_load_4d(&map, full, tile, 0, 0, 0, 0);
      tma_load_4d(&map, full, tile + 64 * 128, 64, 0, 0, 0);
    }
    named_barrier_arrive(1, 160);
    return;
  }
  warpgroup_reg_alloc<232>();
  named_barrier_sync(1, 160);
  mbarrier_wait(full, 0);
  float d[N / 2];
  const unsigned a[4] = {threadIdx.x, 1u, 2u, 3u};
  wgmma_fence();
  Wgmma<ELEM, N>::ss(d, wgmma_desc_k_major(tile), wgmma_desc_k_major(tile + 32), 0);
  Wgmma<ELEM, N>::rs(d, a, wgmma_desc_mn_major(tile, 64 * 128), 1);
  Wgmma<ELEM, N>::ss_mn(d, wgmma_desc_k_major(tile), wgmma_desc_mn_major(tile, 64 * 128), 1);
  wgmma_commit_group();
  wgmma_wait_group<0>();
  wgmma_fence_accumulators(d);
  fence_proxy_async_shared();
  mbarrier_arrive(done);
  for (int i = 0; i < N / 2; ++i) out[threadIdx.x * (N / 2) + i] = d[i];
}
)";

struct Shape {
  const char* elem;
  int n;
};

// Every shape sm90_wgmma.cuh defines: N a multiple of 16 from 64 to 256, bf16 and fp16.
std::vector<Shape> wgmma_shapes() {
  std::vector<Shape> shapes;
  for (const char* elem : {"bf16_t", "fp16_t"}) {
    for (int n = 64; n <= 256; n += 16) shapes.push_back({elem, n});
  }
  return shapes;
}
const std::vector<Shape> kShapes = wgmma_shapes();

std::string probe_source() {
  std::string source = kKernels;
  for (const Shape& shape : kShapes) {
    source += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__(160, 1) probe_{0}_{1}("
        "const __grid_constant__ TensorMap map, float* out) {{ probe<{0}, {1}>(map, out); }}\n",
        shape.elem, shape.n);
  }
  return source;
}

}  // namespace

TEST_CASE("sm90 primitives: every one reaches the PTX for sm_90a", "[kernels][nvrtc]") {
  const auto compiled = attnjit::nvrtc::compile_program(probe_source(), "sm_90a", true);
  REQUIRE(compiled.is_ptx);
  const std::string ptx(compiled.image.begin(), compiled.image.end());
  for (const Shape& shape : kShapes) {
    const std::string instruction = fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}",
                                                shape.n, shape.elem[0] == 'b' ? "bf16" : "f16");
    INFO(instruction);
    CHECK(ptx.find(instruction) != std::string::npos);
  }
  for (const char* needle :
       {"cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64",
        "mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster",
        "fence.proxy.async.shared::cta", "setmaxnreg.inc.sync.aligned.u32 232",
        "setmaxnreg.dec.sync.aligned.u32 40", "elect.sync", "prefetch.tensormap", "bar.arrive",
        "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
        "wgmma.wait_group.sync.aligned 0"}) {
    INFO(needle);
    CHECK(ptx.find(needle) != std::string::npos);
  }
}

TEST_CASE("sm90 primitives: ptxas accepts them and the SASS has HGMMA and UTMALDG",
          "[kernels][nvrtc]") {
  const auto compiled = attnjit::nvrtc::compile_program(probe_source(), "sm_90a", false);
  REQUIRE_FALSE(compiled.is_ptx);
  for (const Shape& shape : kShapes) {
    const std::string entry = fmt::format("probe_{}_{}", shape.elem, shape.n);
    INFO(entry << "\n" << compiled.log);
    CHECK(compiled.resources.count(entry) == 1);
  }
  INFO(compiled.log);
  CHECK(compiled.log.find("'setmaxnreg' ignored") == std::string::npos);
  const std::string cuobjdump = attnjit::testkit::find_cuobjdump();
  if (cuobjdump.empty()) {
    WARN("cuobjdump not found (" << attnjit::testkit::kCuobjdumpSearch << "): SASS not checked");
    return;
  }
  const fs::path cubin = fs::temp_directory_path() /
                         fmt::format("attnjit-sm90-probe-{}.cubin", static_cast<long>(getpid()));
  {
    std::ofstream file(cubin, std::ios::binary);
    file.write(compiled.image.data(), static_cast<std::streamsize>(compiled.image.size()));
  }
  std::string sass;
  try {
    sass = attnjit::testkit::dump_sass(cuobjdump, cubin.string());
  } catch (const std::exception& error) {
    sass = error.what();  // the checks below fail with it in their message
  }
  fs::remove(cubin);
  INFO(cuobjdump);
  for (const char* needle : {"HGMMA.64x64x16.F32.BF16", "HGMMA.64x256x16.F32", "UTMALDG.4D",
                             "SYNCS.PHASECHK", "USETMAXREG", "ELECT"}) {
    INFO(needle);
    CHECK(sass.find(needle) != std::string::npos);
  }
}

// The probes test_gpu runs on an H100 (tests/gpu/hopper_probe_test.cpp) must compile there; this
// is where a mistake in them shows without a GPU.
TEST_CASE("sm90 primitives: the GPU probe kernels compile for sm_90a, spill-free",
          "[kernels][nvrtc]") {
  using namespace attnjit::hopper_probe;
  const auto compiled = attnjit::nvrtc::compile_program(kProbeKernels, "sm_90a", false);
  std::vector<std::string> entries = {"tma_box",          "wgmma_rs_bf16",    "wgmma_rs_fp16",
                                      "wgmma_ss_mn_bf16", "wgmma_ss_mn_fp16", Ring::kernel()};
  for (const WgmmaShape& shape : wgmma_ss_shapes()) entries.emplace_back(shape.kernel);
  for (const std::string& entry : entries) {
    INFO(entry << "\n" << compiled.log);
    REQUIRE(compiled.resources.count(entry) == 1);
    const attnjit::ResourceUsage& usage = compiled.resources.find(entry)->second;
    CHECK(usage.spill_store_bytes == 0);
    CHECK(usage.spill_load_bytes == 0);
  }
  INFO(compiled.log);
  CHECK(compiled.log.find("'setmaxnreg' ignored") == std::string::npos);
}
