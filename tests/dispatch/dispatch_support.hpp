// What the dispatch tests share: the emulated module behind a set of cases, the GPU harness's
// run of a case through the backend, C API runtimes and variants on the cuda backend, and a
// case's inputs in the fake device's memory.
//
// The cases check the sm80 kernel's launches unless they ask for the sm90 kernel themselves (the
// process's default family: dispatch_support.cpp).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "attnjit/attnjit.h"
#include "emulated_device.hpp"
#include "runtime/cuda_memory.hpp"
#include "simt_module.hpp"
#include "support/kernel_case.hpp"
#include "support/scoped_env.hpp"

namespace attnjit::dispatch_test {

using kernel_test::CaseResult;
using kernel_test::KernelCase;
using kernel_test::PreparedCase;

// A fresh directory name under the temporary directory, unique to the process and the call.
std::filesystem::path work_dir(const char* what);

// The kernel sources the backend compiles for the fake device (its arch, the family
// ATTNJIT_KERNEL_FAMILY selects), in one emulated module.
// `paged_family`: the family of a paged case's kernel (the backend's choice: the sm80 kernel for
// decoding steps and small pages, the sm90 kernel for prefills where it serves the variant), and
// of a case with sequence tables (the sm80 kernel for decoding steps with key counts alone).
std::unique_ptr<simt::SimtModule> emulated_module(
    const std::vector<KernelCase>& cases,
    codegen::FamilyRequest paged_family = codegen::FamilyRequest::sm80);

// Each case through the GPU harness (tests/gpu) on the backend, its launches emulated, against
// the reference.
void check_through_backend(const std::vector<KernelCase>& cases);

// A C API runtime on the cuda backend, with the cache ATTNJIT_CACHE_DIR names.
attnjit_runtime* cuda_runtime();

// For a test of the sm90 family's calls: ATTNJIT_KERNEL_FAMILY=sm90 and a cache directory of its
// own (ATTNJIT_CACHE_DIR) while it lives, and a cuda_runtime() on them; the runtime is destroyed
// and the directory removed with it.
struct Sm90CudaRuntime {
  explicit Sm90CudaRuntime(const char* cache_name);
  ~Sm90CudaRuntime();
  Sm90CudaRuntime(const Sm90CudaRuntime&) = delete;
  Sm90CudaRuntime& operator=(const Sm90CudaRuntime&) = delete;

  test::ScopedEnv family;
  std::filesystem::path cache;
  test::ScopedEnv cache_dir;
  attnjit_runtime* runtime;
};

// A maskless variant for the case's dtype and head dim, through the C API.
attnjit_variant* maskless_c_variant(attnjit_runtime* runtime, const KernelCase& c);

// The case's variant (mask, score, scalar parameters "NAME:int|float" and tensors
// "NAME:int32|float32[RANK]"), through the C API.
attnjit_variant* c_variant(attnjit_runtime* runtime, const KernelCase& c);

// A case's inputs in the fake device's memory, and the attnjit_forward_args that pass them.
struct DeviceCall {
  explicit DeviceCall(const KernelCase& c);
  DeviceCall(const DeviceCall&) = delete;
  DeviceCall& operator=(const DeviceCall&) = delete;

  // The results against the reference, after a forward call.
  CaseResult check();

  PreparedCase prepared;
  std::unique_ptr<cuda::DeviceBuffer> q, k, v, out, lse;
  std::unique_ptr<cuda::DeviceBuffer> page_table;  // a paged case's (k and v are its pools)
  // A case with sequence tables: the tables (q, out, lse, k and v are then its packed tensors
  // where it packs them).
  std::unique_ptr<cuda::DeviceBuffer> q_starts, kv_starts, kv_lens;
  std::vector<attnjit_scalar> scalars;
  std::vector<std::unique_ptr<cuda::DeviceBuffer>> tensors;  // one per TensorInput
  std::vector<attnjit_tensor_arg> tensor_args;
  attnjit_forward_args args;
};

// The launch plan of a call (attnjit_variant_launch_plan), required to succeed.
attnjit_launch_plan launch_plan(attnjit_variant* variant, const attnjit_forward_args& args);
// The call's whole launch reason (attnjit_variant_launch_reason), checked against its buffer
// protocol (the length asked first, a buffer one byte short refused and left untouched) and
// against the launch plan's reason asked after it: the same text, or its first 252 characters
// and "...". Note: the first call to plan may change what later ones say (a short-rows kernel
// that fails to build is not asked for again), so call this one before launch_plan.
std::string launch_reason(attnjit_variant* variant, const attnjit_forward_args& args);

// A case through `variant` (maskless_c_variant, c_variant): device copies of its inputs,
// attnjit_forward with its parameters, the result against the reference. The call's launch
// plan, asked for first, must name the launch forward makes.
CaseResult run_variant_through_c_api(attnjit_variant* variant, const KernelCase& c);

// The same with a variant made for the call and destroyed after it.
CaseResult run_through_c_api(attnjit_runtime* runtime, const KernelCase& c);

// The sm90 kernel with a 1 s mbarrier watchdog, compiled into a cache of its own (where the fake
// driver finds the cubins' sources).
struct WatchdogSetting {
  explicit WatchdogSetting(const char* cache_name)
      : family("ATTNJIT_KERNEL_FAMILY", "sm90"),
        tuning("ATTNJIT_TUNE", "sm90_watchdog_ms=1000"),
        cache("ATTNJIT_CACHE_DIR", work_dir(cache_name).c_str()) {}
  test::ScopedEnv family, tuning, cache;
};

// The entries of the last `count` launches, oldest first, a programmatic one marked
// "(overlaps)" (overlapped).
std::vector<std::string> last_launches(std::size_t count);

// How `function` appears in last_launches when the backend launches it after another kernel of
// the call: programmatic on sm_90 and later (overlap_launches), plain below.
std::string overlapped(const std::string& function);

// A small causal case for the watchdog tests.
KernelCase watchdog_case();

}  // namespace attnjit::dispatch_test
