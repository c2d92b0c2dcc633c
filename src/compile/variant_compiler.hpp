// From a variant description to a cubin (or PTX) for one arch, through the kernel cache:
// parse -> lower -> generate source -> cache lookup -> NVRTC on a miss.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/variant_source.hpp"
#include "expr/signature.hpp"

namespace attnjit {

struct VariantSpec {
  std::string mask;   // empty means the default "true"
  std::string score;  // empty means the default "score"
  expr::Signature signature;
  DType dtype = DType::bf16;
  int head_dim = 128;
};

struct ResourceUsage {
  int registers = 0;
  int shared_bytes = 0;  // static shared memory
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
};

enum class KernelOrigin { memory, disk, compiled };

struct KernelBinary {
  std::string arch;            // "sm_90"
  bool is_ptx = false;
  std::vector<char> image;     // cubin bytes or PTX text
  codegen::KernelConfig config;
  ResourceUsage forward_resources;  // of kForwardEntry
  std::string key;             // cache key (hex)
  std::string path;            // cache file, empty when not stored
  KernelOrigin origin = KernelOrigin::compiled;
};

}  // namespace attnjit
