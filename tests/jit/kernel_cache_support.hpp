// Helpers for the kernel cache tests: a hand-written kernel (the cache is tested without
// codegen), its request, and a lookup that compiles it with NVRTC on a miss.
#pragma once

#include <string>

#include "../cache/cache_test_support.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/cache_key.hpp"
#include "jit/kernel_cache.hpp"

namespace attnjit::test {

// A small kernel with a distinct constant per `variant`, so tests can make distinct keys.
inline std::string test_source(int variant = 0) {
  return "#include \"attnjit/fwd_params.cuh\"\n"
         "extern \"C\" __global__ void attnjit_fwd(attnjit::FwdParams params) {\n"
         "  __shared__ float tile[128];\n"
         "  tile[threadIdx.x] = params.scale * " + std::to_string(variant) + ".0f;\n"
         "  __syncthreads();\n"
         "  static_cast<float*>(params.o)[threadIdx.x] = tile[(threadIdx.x + 1) % 128];\n"
         "}\n";
}

inline std::string test_key(const std::string& source, const std::string& arch, bool ptx = false) {
  return compute_key(current_key_inputs(source, arch, ptx));
}

// The request a variant of test_source would make.
inline KernelRequest test_request(const std::string& source, const std::string& arch = "sm_90",
                                  bool ptx = false) {
  KernelRequest request;
  request.key = test_key(source, arch, ptx);
  request.arch = arch;
  request.ptx = ptx;
  request.label = "bf16-d64";
  request.config.block_m = 64;
  request.config.block_n = 32;
  request.variant = {{"name", "test"}, {"mask", "true"}, {"score", "score"},
                     {"mask_canonical", "true"}, {"dtype", "bf16"}, {"head_dim", 64}};
  return request;
}

struct Lookup {
  CacheLookup result;
  int compiles = 0;
};

// Looks the request up, compiling its source with NVRTC on a miss; counts compiles.
inline Lookup lookup(KernelCache& cache, const std::string& source, const KernelRequest& request) {
  Lookup out;
  out.result = cache.get_or_compile(request, [&] {
    ++out.compiles;
    auto program = nvrtc::compile_program(source, request.arch, request.ptx);
    CompiledKernel compiled;
    compiled.binary.image = std::move(program.image);
    compiled.binary.entry_resources = program.resources;
    compiled.details = {{"options", program.options}};
    return compiled;
  });
  return out;
}

inline Lookup lookup(KernelCache& cache, const std::string& source, const std::string& arch = "sm_90",
                     bool ptx = false) {
  return lookup(cache, source, test_request(source, arch, ptx));
}

}  // namespace attnjit::test
