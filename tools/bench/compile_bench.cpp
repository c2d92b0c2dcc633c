// compile_bench: what a kernel costs to get, per standard variant (bf16, one head dim, one arch):
//   cold       codegen + NVRTC into an empty cache directory
//   disk hit   first request in a fresh process whose cache directory holds the kernel
//              (median of several processes; the time of the request, not of process start-up)
//   memory hit repeated request in one process (median of many): acquire_variant, which returns
//              the shared binary, and compile_variant, which copies the image
//   key        what the first-level request map saves: source generation + hashing
// Usage: compile_bench [--arch sm_90] [--head-dim 128] [--repeat 5000] [--processes 5]
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "jit/kernel_cache.hpp"
#include "jit/manifest.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/variant_compiler.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

const attnjit::ManifestVariant& find_variant(const std::string& name) {
  for (const auto& variant : attnjit::standard_manifest().variants) {
    if (variant.name == name) return variant;
  }
  throw std::runtime_error("no standard variant " + name);
}

attnjit::VariantSpec spec_of(const attnjit::ManifestVariant& variant, int head_dim) {
  attnjit::VariantSpec spec;
  spec.mask = variant.mask;
  spec.score = variant.score;
  spec.signature = variant.signature;
  spec.dtype = attnjit::DType::bf16;
  spec.head_dim = head_dim;
  return spec;
}

// Child mode: one request against ROOT; prints its duration in microseconds and the origin.
int disk_hit_child(const std::string& root, const std::string& name, const std::string& arch,
                   int head_dim) {
  attnjit::KernelCache cache{fs::path(root)};
  const auto spec = spec_of(find_variant(name), head_dim);
  const auto start = Clock::now();
  const auto kernel = attnjit::acquire_variant(spec, arch, cache);
  const double us = micros_since(start);
  fmt::print("{:.1f} {}\n", us, kernel.origin == attnjit::KernelOrigin::disk ? "disk" : "other");
  return 0;
}

double spawn_disk_hit(const std::string& self, const std::string& root, const std::string& name,
                      const std::string& arch, int head_dim) {
  const std::string out = root + "/child.out";
  const std::string head = std::to_string(head_dim);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<const char*> argv = {self.c_str(), "--disk-hit", root.c_str(), name.c_str(),
                                   arch.c_str(), head.c_str(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), &actions, nullptr, const_cast<char**>(argv.data()),
                  environ) != 0) {
    throw std::runtime_error("posix_spawn failed");
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  waitpid(pid, &status, 0);
  double us = -1;
  char origin[16] = {};
  if (std::FILE* file = std::fopen(out.c_str(), "r")) {
    if (std::fscanf(file, "%lf %15s", &us, origin) != 2) us = -1;
    std::fclose(file);
  }
  if (std::string(origin) != "disk") throw std::runtime_error("child did not hit the disk");
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  std::string arch = "sm_90";
  int head_dim = 128, repeat = 5000, processes = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--disk-hit" && i + 4 < argc) {
      return disk_hit_child(argv[i + 1], argv[i + 2], argv[i + 3], std::stoi(argv[i + 4]));
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "usage: compile_bench [--arch sm_90] [--head-dim 128] [--repeat N] "
                 "[--processes N]\n");
      return 2;
    }
    if (arg == "--arch") arch = argv[++i];
    else if (arg == "--head-dim") head_dim = std::stoi(argv[++i]);
    else if (arg == "--repeat") repeat = std::stoi(argv[++i]);
    else if (arg == "--processes") processes = std::stoi(argv[++i]);
  }
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  char pattern[] = "/tmp/attnjit-bench-XXXXXX";
  if (mkdtemp(pattern) == nullptr) return 1;
  const fs::path scratch = pattern;

  fmt::print("attnjit compile_bench: {} bf16 d{}, NVRTC {}, cache in {}\n", arch, head_dim,
             attnjit::nvrtc::nvrtc_version(), scratch.string());
  fmt::print("{:<15} {:>10} {:>10} {:>12} {:>12} {:>12} {:>8} {:>6}\n", "variant", "cold ms",
             "disk ms", "mem us", "mem+copy us", "key us", "cubin KB", "regs");
  for (const auto& variant : attnjit::standard_manifest().variants) {
    const auto spec = spec_of(variant, head_dim);
    const std::string root = (scratch / variant.name).string();
    attnjit::KernelCache cache{fs::path(root)};

    auto start = Clock::now();
    const auto cold = attnjit::acquire_variant(spec, arch, cache);
    const double cold_ms = micros_since(start) / 1000.0;

    std::vector<double> disk;
    for (int p = 0; p < processes; ++p) disk.push_back(spawn_disk_hit(self, root, variant.name, arch, head_dim));

    std::vector<double> memory, memory_copy, key;
    for (int r = 0; r < repeat; ++r) {
      start = Clock::now();
      const auto hit = attnjit::acquire_variant(spec, arch, cache);
      memory.push_back(micros_since(start));
      if (hit.origin != attnjit::KernelOrigin::memory) return 1;
    }
    for (int r = 0; r < std::max(1, repeat / 10); ++r) {
      start = Clock::now();
      const auto copy = attnjit::compile_variant(spec, arch, cache);
      memory_copy.push_back(micros_since(start));
    }
    for (int r = 0; r < std::max(1, repeat / 50); ++r) {
      start = Clock::now();
      const auto k = attnjit::variant_cache_key(spec, arch);
      key.push_back(micros_since(start));
    }
    fmt::print("{:<15} {:>10.1f} {:>10.3f} {:>12.2f} {:>12.2f} {:>12.1f} {:>8.1f} {:>6}\n",
               variant.name, cold_ms, median(disk) / 1000.0, median(memory), median(memory_copy),
               median(key), static_cast<double>(cold.binary->image.size()) / 1024.0,
               cold.binary->forward_resources().registers);
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return 0;
}
