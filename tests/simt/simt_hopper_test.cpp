// The Hopper primitives under the SIMT emulator: the probes of support/hopper_probes.hpp (TMA
// boxes land in the SwizzledTile layout with zeros past the end, wgmma.ss and wgmma.rs agree with
// a CPU matrix product through their descriptors, a warp-specialised producer/consumer ring over
// mbarriers computes the right sum; tests/gpu/hopper_probe_test.cpp runs the same on a GPU), and
// the hazards the hardware punishes are reported with a clear message.
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnjit_simt/launch_abi.hpp"
#include "runtime/tensor_map_encoding.hpp"
#include "simt_harness.hpp"
#include "simt_module.hpp"
#include "support/hopper_probe_kernels.hpp"
#include "support/hopper_probes.hpp"

using namespace attnjit;
using namespace attnjit::hopper_probe;
using attnjit::simt::SimtModule;

namespace {

const SimtModule& module() {
  static const SimtModule instance(
      {kProbeKernels}, std::filesystem::temp_directory_path() /
                           fmt::format("attnjit-simt-hopper-{}", static_cast<long>(::getpid())));
  return instance;
}

// A probe launch under the emulator: maps encoded by the fake driver's encoder (which refuses what
// the real driver refuses), inputs readable, the output writable; the emulator's first error.
std::string run_emulated(const std::string& name, Launch& launch) {
  std::vector<TensorMap> maps(launch.maps.size());
  FwdParams params = launch.params;
  std::vector<SimtRegion> regions = {{launch.output.data(), launch.output.size() * sizeof(float), 1}};
  for (const Matrix* input : launch.inputs) {
    regions.push_back({input->bits.data(), input->bits.size() * 2, 0});
  }
  LaunchGrid grid;
  grid.threads = launch.threads;
  grid.smem_bytes = launch.smem_bytes;
  try {
    for (std::size_t i = 0; i < maps.size(); ++i) {
      encode_tensor_map(simt::encode_fake, launch.maps[i], &maps[i]);
    }
    params.q = maps.data();
    params.k = launch.extra != nullptr ? launch.extra->bits.data() : nullptr;
    params.o = launch.output.data();
    module().run_forward(module().symbol(name), params, grid, regions);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return {};
}

}  // namespace

TEST_CASE("emulated Hopper primitives: the probes a GPU must agree with", "[simt]") {
  run_all_probes(run_emulated);
}

TEST_CASE("emulated Hopper hazards are errors with a clear message", "[simt]") {
  WgmmaSs probe({"wgmma_ss_bf16_n64_k16", true, 64, 16});
  Launch& launch = probe.launch;
  const auto run = [&](const char* kernel) { return run_emulated(kernel, launch); };
  SECTION("reading accumulators before wgmma_wait_group") {
    launch.params.batch = 1;
    CHECK_THAT(run("wgmma_ss_bf16_n64_k16"),
               Catch::Contains("st.global.f32 uses a wgmma accumulator before the "
                               "wgmma_wait_group that delivers it"));
  }
  SECTION("exiting with a wgmma group never waited for") {
    launch.params.batch = 2;
    CHECK_THAT(run("wgmma_ss_bf16_n64_k16"),
               Catch::Contains("exited with 1 wgmma groups never waited for"));
  }
  SECTION("a TMA destination off the 1024-byte swizzle pattern") {
    TmaBox misaligned(1536, 0, 0);
    CHECK_THAT(run_emulated("tma_box", misaligned.launch),
               Catch::Contains("TMA destination at shared byte 1536 is not 1024-byte aligned"));
  }
  SECTION("reading a TMA box without waiting for its mbarrier phase") {
    TmaBox unwaited(1024, 0, 0);
    unwaited.launch.params.batch = 1;
    CHECK_THAT(run_emulated("tma_box", unwaited.launch),
               Catch::Contains("written by a TMA load that completes phase 0 of the mbarrier at "
                               "shared byte 0, before thread") &&
                   Catch::Contains("waited for that phase"));
  }
  SECTION("st.shared handed over by an mbarrier: the release and the acquire order it") {
    launch.params.batch = 0;
    launch.output[0] = 0.0f;
    CHECK(run("mbarrier_handoff") == "");
    CHECK(launch.output[0] == 7.0f);
    launch.params.batch = 1;
    CHECK_THAT(run("mbarrier_handoff"),
               Catch::Contains("read-after-write race on shared byte 0, written by thread 0"));
  }
  SECTION("a slot reused after an mbarrier: the reader's release, the writer's acquire") {
    launch.params.batch = 0;
    launch.output[0] = 0.0f;
    CHECK(run("mbarrier_slot_reuse") == "");
    CHECK(launch.output[0] == 7.0f);
    launch.params.batch = 1;
    CHECK_THAT(run("mbarrier_slot_reuse"),
               Catch::Contains("write-after-read race on shared byte 0, read by warp 1"));
  }
  SECTION("st.shared data read by wgmma needs fence.proxy.async") {
    CHECK(run("generic_writes_then_wgmma") == "");
    CHECK(launch.output[0] == 16.0f);
    launch.params.batch = 1;
    CHECK_THAT(run("generic_writes_then_wgmma"),
               Catch::Contains("has not executed fence.proxy.async since"));
  }
  SECTION("a plain store into a wgmma's operand before the wait that retires it") {
    launch.params.batch = 3;
    CHECK_THAT(run("generic_writes_then_wgmma"),
               Catch::Contains("st.shared.b32 into shared bytes [") &&
                   Catch::Contains("while a wgmma of warp 0 still reads them"));
    // Bytes between the operands are not theirs: storing there meanwhile is fine.
    launch.params.batch = 4;
    launch.smem_bytes = 1024 + 3 * 64 * 128;
    CHECK(run("generic_writes_then_wgmma") == "");
    CHECK(launch.output[0] == 16.0f);
  }
  SECTION("a wgmma issued by only some warps of the warpgroup") {
    launch.params.batch = 2;
    CHECK_THAT(run("generic_writes_then_wgmma"),
               Catch::Contains("warp 0 issued 1 wgmma.mma_async and warp 2 0"));
  }
  SECTION("a named barrier its thread count never reaches") {
    launch.threads = 160;
    CHECK_THAT(run("named_barrier_deadlock"),
               Catch::Contains("deadlock: every live thread waits") &&
                   Catch::Contains("waits at named barrier 1 (128 of 160 threads arrived)"));
  }
  SECTION("a named barrier left half complete when the block ends") {
    launch.threads = 64;
    CHECK_THAT(run("named_barrier_left_half_complete"),
               Catch::Contains("the block ended with named barrier 2 half complete: 32 of 64 "
                               "threads arrived"));
  }
  SECTION("an mbarrier phase no arrival completes") {
    launch.threads = 64;
    CHECK_THAT(run("mbarrier_deadlock"),
               Catch::Contains("deadlock: every live thread waits") &&
                   Catch::Contains("waits (\"mbarrier\") on the mbarrier at shared byte 64 "
                                   "(phase 0: 1 of 2 arrivals and 0 transaction bytes pending)"));
    launch.params.batch = 1;
    CHECK_THAT(run("mbarrier_deadlock"),
               Catch::Contains("waits (\"test full\") on the mbarrier at shared byte 64"));
  }
  SECTION("a stage released to the producer before the wgmma reading it was waited for") {
    Ring ring(1);
    CHECK_THAT(run_emulated(Ring::kernel(), ring.launch),
               Catch::Contains("TMA load into shared bytes") &&
                   Catch::Contains("still reads them (no wgmma_wait_group retired it)"));
  }
  SECTION("a stage released just before the wait that retires the wgmma reading it") {
    // The last arrival lets the released producer run first, as the hardware may.
    Ring ring(2);
    CHECK_THAT(run_emulated(Ring::kernel(), ring.launch),
               Catch::Contains("TMA load into shared bytes") &&
                   Catch::Contains("still reads them (no wgmma_wait_group retired it)"));
  }
}
