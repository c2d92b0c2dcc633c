// Helpers for the cache tests: scratch directories, a hand-written kernel (the cache stage is
// tested without codegen), and capture of the library's warnings.
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cache/cache_key.hpp"
#include "cache/kernel_cache.hpp"
#include "common/log.hpp"
#include "compile/nvrtc_compiler.hpp"

namespace attnjit::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "attnjit-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

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
  return cache::compute_key(cache::current_key_inputs(source, arch, ptx));
}

struct Lookup {
  CacheLookup result;
  int compiles = 0;
};

// Looks the source up, compiling it with NVRTC on a miss; counts compiles.
inline Lookup lookup(KernelCache& cache, const std::string& source, const std::string& arch = "sm_90",
                     bool ptx = false) {
  Lookup out;
  out.result = cache.get_or_compile(test_key(source, arch, ptx), arch, ptx, [&] {
    ++out.compiles;
    auto program = nvrtc::compile_program(source, arch, ptx);
    CompiledKernel compiled;
    compiled.binary.image = std::move(program.image);
    compiled.binary.config.block_m = 64;
    compiled.binary.config.block_n = 32;
    compiled.binary.forward_resources = program.resources["attnjit_fwd"];
    compiled.details = {{"variant", {{"name", "test"}, {"mask", "true"}, {"score", "score"},
                                     {"dtype", "bf16"}, {"head_dim", 64}}},
                        {"options", program.options}};
    return compiled;
  });
  return out;
}

// Captures the library's log messages at warn level and above while alive.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)) {
    sink_->set_pattern("%v");
    log().sinks().push_back(sink_);
    previous_ = log().level();
    log().set_level(spdlog::level::warn);
  }
  ~LogCapture() {
    auto& sinks = log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    log().set_level(previous_);
  }
  std::vector<std::string> messages() const { return sink_->last_formatted(); }
  std::size_t count(const std::string& needle) const {
    std::size_t n = 0;
    for (const auto& message : messages()) n += message.find(needle) != std::string::npos;
    return n;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  spdlog::level::level_enum previous_;
};

}  // namespace attnjit::test
