// The Hopper primitives on an H100: the probes of support/hopper_probes.hpp, compiled by NVRTC for
// sm_90a and run on one block each, against the expectations they meet under the SIMT emulator
// (tests/simt/simt_hopper_test.cpp). The sm90 kernel was built against the emulator's model of
// these encodings; when it fails on hardware, the probe that fails here names the encoding (the
// 128-byte swizzle of a TMA box, a wgmma descriptor, the register fragment of P, the mbarrier
// ring). tools/gpu-check.sh runs them in a process of their own before test_gpu's other cases,
// because a kernel fault ends the context for every later test of the process. Without a GPU,
// ctest runs test_gpu on the fake device (tests/fake_driver), which emulates the probe module.
#include <catch2/catch.hpp>
#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "driver/cuda_driver.hpp"
#include "driver/watchdog_record.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/cuda_memory.hpp"
#include "runtime/tensor_map_encoding.hpp"
#include "support/hopper_probe_kernels.hpp"
#include "support/hopper_probes.hpp"

namespace attnjit::hopper_probe {
namespace {

// Bytes of padding a probe may skip to reach a 1024-byte boundary of dynamic shared memory.
constexpr unsigned kAlignmentSlack = 1024;

std::span<const std::byte> bytes_of(const void* data, std::size_t size) {
  return {static_cast<const std::byte*>(data), size};
}

// The probe kernels' cubin, compiled once per process (a few seconds of NVRTC).
const std::vector<char>& probe_cubin() {
  static const std::vector<char> image = nvrtc::compile_program(kProbeKernels, "sm_90a", false).image;
  return image;
}

// The probe module, loaded for one test case and unloaded after it. Its watchdog record is
// attached, so a wait that never completes faults with the wait's name instead of hanging.
class ProbeModule {
 public:
  ProbeModule() {
    cuda::current_device();  // makes a context current
    ATTNJIT_CU(cuModuleLoadData, &module_, probe_cubin().data());
    driver::attach_watchdog_record(module_);
  }
  ~ProbeModule() {
    if (module_ != nullptr) driver::api().cuModuleUnload(module_);
  }
  ProbeModule(const ProbeModule&) = delete;
  ProbeModule& operator=(const ProbeModule&) = delete;

  // Runs `name` on one block of `launch`; the driver's error, empty when none.
  std::string run(const std::string& name, Launch& launch) const {
    try {
      launch_on_device(name, launch);
    } catch (const Error& error) {
      return error.what();
    }
    return {};
  }

 private:
  void launch_on_device(const std::string& name, Launch& launch) const {
    const driver::DriverApi& d = driver::api();
    std::map<const void*, CUdeviceptr> device_address;
    std::vector<cuda::DeviceBuffer> inputs;
    for (const Matrix* input : launch.inputs) {
      const std::size_t bytes = input->bits.size() * sizeof(input->bits[0]);
      inputs.emplace_back(bytes);
      inputs.back().upload(bytes_of(input->bits.data(), bytes));
      device_address[input->bits.data()] = inputs.back().address();
    }
    // The maps are encoded as the CUDA backend encodes the kernel's (cuda_backend.cpp), over the
    // device copies, and read by the kernel from global memory.
    std::vector<TensorMap> maps(launch.maps.size());
    for (std::size_t i = 0; i < maps.size(); ++i) {
      TensorMapRequest request = launch.maps[i];
      request.address = reinterpret_cast<const void*>(device_address.at(request.address));
      driver::check(encode_tensor_map(d.cuTensorMapEncodeTiled, request, &maps[i]),
                    "cuTensorMapEncodeTiled");
      apply_small_tensor_map_workaround(maps[i], d.driver_version,
                                        tensor_map_span_bytes(request));
    }
    cuda::DeviceBuffer map_buffer(maps.size() * sizeof(TensorMap));
    map_buffer.upload(bytes_of(maps.data(), maps.size() * sizeof(TensorMap)));
    const std::size_t output_bytes = launch.output.size() * sizeof(float);
    cuda::DeviceBuffer output(output_bytes);
    output.upload(bytes_of(launch.output.data(), output_bytes));

    FwdParams params = launch.params;
    params.q = map_buffer.get();
    params.k = launch.extra != nullptr
                   ? reinterpret_cast<const void*>(device_address.at(launch.extra->bits.data()))
                   : nullptr;
    params.o = output.get();
    CUfunction function = nullptr;
    ATTNJIT_CU(cuModuleGetFunction, &function, module_, name.c_str());
    const unsigned smem_bytes = launch.smem_bytes + kAlignmentSlack;
    ATTNJIT_CU(cuFuncSetAttribute, function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
               static_cast<int>(smem_bytes));
    void* args[] = {&params};
    ATTNJIT_CU(cuLaunchKernel, function, 1u, 1u, 1u, launch.threads, 1u, 1u, smem_bytes, nullptr,
               args, nullptr);
    ATTNJIT_CU(cuCtxSynchronize);
    output.download({reinterpret_cast<std::byte*>(launch.output.data()), output_bytes});
  }

  CUmodule module_ = nullptr;
};

}  // namespace

TEST_CASE("Hopper primitives on the GPU meet the emulator's expectations", "[gpu][sm90_probe]") {
  const cuda::DeviceInfo device = cuda::current_device();
  if (device.sm != 90) {
    WARN("skipped: the Hopper probes need compute capability 9.0 (this device is sm_"
         << device.sm << ")");
    return;
  }
  const ProbeModule module;
  run_all_probes([&](const std::string& name, Launch& launch) { return module.run(name, launch); });
}

}  // namespace attnjit::hopper_probe
