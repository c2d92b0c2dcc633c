#include "compile/nvrtc_compiler.hpp"

#include <catch2/catch.hpp>

#include <string>

#include "common/error.hpp"

using namespace attnjit;

namespace {

// A hand-written kernel using an embedded template, with a __device__ callee whose own
// properties must not be mistaken for the kernel's.
const std::string kSource = R"(#include "attnjit/fwd_params.cuh"
__device__ __noinline__ float helper(float x) { return x * 2.0f; }
extern "C" __global__ void attnjit_fwd(attnjit::FwdParams params) {
  __shared__ float tile[256];
  tile[threadIdx.x] = helper(params.scale);
  __syncthreads();
  static_cast<float*>(params.o)[threadIdx.x] = tile[(threadIdx.x + 1) % 256];
}
extern "C" __global__ void attnjit_tensor_summary(int* out) { out[threadIdx.x] = 1; }
)";

}  // namespace

TEST_CASE("compile_program compiles a cubin and parses the resource report", "[nvrtc]") {
  const auto compiled = nvrtc::compile_program(kSource, "sm_90", false);
  CHECK_FALSE(compiled.is_ptx);
  REQUIRE(compiled.image.size() > 4);
  CHECK(std::string(compiled.image.data() + 1, 3) == "ELF");
  REQUIRE(compiled.resources.count("attnjit_fwd") == 1);
  REQUIRE(compiled.resources.count("attnjit_tensor_summary") == 1);
  const ResourceUsage& fwd = compiled.resources.at("attnjit_fwd");
  CHECK(fwd.registers > 0);
  CHECK(fwd.shared_bytes == 1024);
  CHECK(compiled.resources.at("attnjit_tensor_summary").shared_bytes == 0);
  CHECK(compiled.log.find("ptxas") != std::string::npos);
}

TEST_CASE("parse_ptxas_report reads registers, smem, stack and spills per entry", "[nvrtc]") {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for helper\n"
      "ptxas         .     99 bytes stack frame, 99 bytes spill stores, 99 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'attnjit_fwd' for 'sm_80'\n"
      "ptxas info    : Function properties for attnjit_fwd\n"
      "ptxas         .     48 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 48 bytes cumulative stack size, "
      "49152 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_80'\n"
      "ptxas info    : Function properties for other\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n";
  const auto report = nvrtc::parse_ptxas_report(log);
  REQUIRE(report.size() == 2);
  const ResourceUsage& fwd = report.at("attnjit_fwd");
  CHECK(fwd.registers == 255);
  CHECK(fwd.shared_bytes == 49152);
  CHECK(fwd.stack_frame_bytes == 48);
  CHECK(fwd.spill_store_bytes == 16);
  CHECK(fwd.spill_load_bytes == 12);
  CHECK(report.at("other").registers == 8);
  CHECK(report.at("other").stack_frame_bytes == 0);
}

TEST_CASE("a compile failure carries the NVRTC log with the generated source's line", "[nvrtc]") {
  const std::string source =
      "extern \"C\" __global__ void attnjit_fwd(float* x) {\n"
      "  x[0] = 1.0f;\n"
      "  x[1] = undeclared_name;\n"
      "}\n";
  try {
    nvrtc::compile_program(source, "sm_80", false);
    FAIL("expected a compile error");
  } catch (const nvrtc::CompileError& e) {
    CHECK(e.status() == Status::compile);
    const std::string message = e.what();
    CHECK(message.find("attnjit_variant.cu(3)") != std::string::npos);
    CHECK(message.find("undeclared_name") != std::string::npos);
    CHECK(e.log().find("attnjit_variant.cu(3)") != std::string::npos);
    CHECK(e.source() == source);
  }
}

TEST_CASE("validate_arch accepts sm_80 to sm_90a and refuses the rest", "[nvrtc]") {
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
    CHECK(nvrtc::validate_arch(arch) == arch);
  }
  CHECK(nvrtc::arch_sm("sm_90a") == 90);
  const auto status_of = [](const char* arch) {
    try {
      nvrtc::validate_arch(arch);
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("sm_80, sm_86, sm_89, sm_90") != std::string::npos);
      return e.status();
    }
    return Status::ok;
  };
  CHECK(status_of("sm_75") == Status::unsupported);
  CHECK(status_of("sm_70") == Status::unsupported);
  CHECK(status_of("sm_87") == Status::unsupported);
  CHECK(status_of("sm_86a") == Status::unsupported);
  CHECK(status_of("90") == Status::invalid_argument);
  CHECK(status_of("sm_9x") == Status::invalid_argument);
  CHECK(status_of("sm_090") == Status::invalid_argument);
  CHECK(status_of("") == Status::invalid_argument);
  CHECK_THROWS_AS(nvrtc::compile_program(kSource, "sm_75", false), Error);
}

TEST_CASE("sm_90a is an arch of its own, and compute capability 9.0 gets it", "[nvrtc]") {
  CHECK(nvrtc::supported_arches_text() == "sm_80, sm_86, sm_89, sm_90, sm_90a");
  CHECK(nvrtc::arch_specific("sm_90a"));
  CHECK_FALSE(nvrtc::arch_specific("sm_90"));
  CHECK(nvrtc::device_arch(90) == "sm_90a");
  CHECK(nvrtc::device_arch(86) == "sm_86");
  CHECK(nvrtc::device_arch(80) == "sm_80");
  CHECK(nvrtc::compile_options("sm_90a", false, false) ==
        std::vector<std::string>{"-std=c++17", "--gpu-architecture=sm_90a", "-Xptxas=-v",
                                 "--no-cache"});
  CHECK(nvrtc::compile_options("sm_90a", true, false) ==
        std::vector<std::string>{"-std=c++17", "--gpu-architecture=compute_90a"});
  const auto compiled = nvrtc::compile_program(kSource, "sm_90a", true);
  const std::string ptx(compiled.image.begin(), compiled.image.end());
  CHECK(ptx.find(".target sm_90a") != std::string::npos);
}

TEST_CASE("compile_program emits PTX on request", "[nvrtc]") {
  const auto compiled = nvrtc::compile_program(kSource, "sm_86", true);
  CHECK(compiled.is_ptx);
  const std::string ptx(compiled.image.begin(), compiled.image.end());
  CHECK(ptx.find(".target sm_86") != std::string::npos);
  CHECK(ptx.find(".entry attnjit_fwd") != std::string::npos);
  CHECK(ptx.find('\0') == std::string::npos);
  CHECK(compiled.resources.empty());
}

TEST_CASE("compile options are fixed and deterministic", "[nvrtc]") {
  const auto options = nvrtc::compile_options("sm_90", false, false);
  CHECK(options == std::vector<std::string>{"-std=c++17", "--gpu-architecture=sm_90", "-Xptxas=-v",
                                            "--no-cache"});
  // NVRTC 13 on a GPU machine would otherwise take a cubin it compiled before from the driver's
  // compute cache, without running ptxas, and the resource report would be missing from the log.
  // The option changes nothing in the cubin, so a cache key leaves it out (prewarmed caches stay
  // valid).
  CHECK(nvrtc::nvrtc_has_no_cache_option());
  CHECK(nvrtc::compile_options("sm_90", false, false, true) ==
        std::vector<std::string>{"-std=c++17", "--gpu-architecture=sm_90", "-Xptxas=-v"});
  CHECK(nvrtc::compile_options("sm_90", true, false) ==
        std::vector<std::string>{"-std=c++17", "--gpu-architecture=compute_90"});
  CHECK(nvrtc::compile_options("sm_80", false, true, true).back() == "--include-path=<cuda-toolkit>");
  CHECK(nvrtc::includes_system_header("#include <cuda_bf16.h>\n"));
  CHECK(nvrtc::includes_system_header("#  include\t<x>"));
  CHECK_FALSE(nvrtc::includes_system_header("#include \"attnjit/hd.cuh\"\n"));
  CHECK(nvrtc::nvrtc_version() == "13.0");
}

TEST_CASE("embedded templates are sorted and include the host/device headers", "[nvrtc]") {
  const auto files = embedded_templates();
  REQUIRE_FALSE(files.empty());
  bool found = false;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i > 0) CHECK(files[i - 1].name < files[i].name);
    found = found || files[i].name == "attnjit/fwd_params.cuh";
  }
  CHECK(found);
}
