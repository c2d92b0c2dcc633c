#include "fake_kernel_source.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "attnjit/fwd_params.cuh"
#include "codegen/kernel_tuning.hpp"
#include "codegen/variant_source.hpp"
#include "expr/expression.hpp"
#include "expr/signature.hpp"
#include "simt_module.hpp"

namespace attnjit::fake_cuda {

namespace {

// The tuning under which generation gives a sidecar's recorded configuration: ATTNJIT_TUNE's
// (what the sm80 kernel and the score's row shift were generated with), with the sm90 kernel's
// recorded tiles and schedule in place of its overrides, since the runtime also generates sm90
// kernels under a tuning of its own (the short-rows kernel, codegen/short_rows.hpp).
attnjit::codegen::KernelTuning recorded_tuning(const nlohmann::json& config) {
  attnjit::codegen::KernelTuning tuning = attnjit::codegen::kernel_tuning_from_environment();
  if (config.value("family", std::string("sm80")) != "sm90") return tuning;
  tuning.sm90_block_m = config.value("block_m", 0);
  tuning.sm90_block_n = config.value("block_n", 0);
  tuning.sm90_stages = config.value("num_stages", 0);
  tuning.sm90_overlap = config.value("overlap", false);
  tuning.sm90_persistent = config.value("persistent", false);
  tuning.sm90_p_smem = config.value("p_in_smem", false);
  tuning.sm90_handoff = config.value("tile_handoff", false);
  tuning.sm90_poly_exp2 = config.value("poly_exp2", 0);
  tuning.sm90_fold_m192 = config.value("fold_m192", false);
  tuning.sm90_blocks_per_sm = config.value("blocks_per_sm", 1);
  tuning.sm90_watchdog_ms = config.value("watchdog_ms", 0);
  return tuning;
}

}  // namespace

std::size_t elf_size(const unsigned char* image) {
  auto read = [&](std::size_t offset, std::size_t bytes) {
    std::uint64_t value = 0;
    std::memcpy(&value, image + offset, bytes);
    return value;
  };
  const std::uint64_t sections_end = read(0x28, 8) + read(0x3C, 2) * read(0x3A, 2);
  const std::uint64_t programs_end = read(0x20, 8) + read(0x38, 2) * read(0x36, 2);
  return static_cast<std::size_t>(std::max(sections_end, programs_end));
}

bool image_contains(const char* image, const char* text) {
  const std::size_t size = std::memcmp(image,
                                       "\x7f"
                                       "ELF",
                                       4) == 0
                               ? elf_size(reinterpret_cast<const unsigned char*>(image))
                               : std::strlen(image);
  const std::string_view haystack(image, size);
  return haystack.find(text) != std::string_view::npos;
}

std::string find_source(const unsigned char* image) {
  const char* dir = std::getenv("ATTNJIT_CACHE_DIR");
  if (dir == nullptr || *dir == '\0' ||
      std::memcmp(image,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return {};
  const std::size_t size = elf_size(image);
  std::error_code error;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, error)) {
    if (entry.path().extension() != ".cubin" || entry.file_size(error) != size) continue;
    std::ifstream file(entry.path(), std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(file), {}};
    if (bytes.size() != size || std::memcmp(bytes.data(), image, size) != 0) continue;
    std::ifstream sidecar_file(std::filesystem::path(entry.path()).replace_extension(".json"));
    const nlohmann::json sidecar = nlohmann::json::parse(sidecar_file, nullptr, false);
    if (sidecar.is_discarded()) return {};
    const nlohmann::json& variant = sidecar["variant"];
    attnjit::expr::Signature signature;
    for (const auto& param : variant["params"]) {
      signature.params.push_back(attnjit::expr::parse_param_decl(param.get<std::string>()));
    }
    for (const auto& tensor : variant["tensors"]) {
      signature.tensors.push_back(attnjit::expr::parse_tensor_decl(tensor.get<std::string>()));
    }
    using attnjit::expr::ExprKind;
    const auto mask = attnjit::expr::parse_expression(
        ExprKind::mask, variant["mask"].get<std::string>(), signature);
    const auto score = attnjit::expr::parse_expression(
        ExprKind::score, variant["score"].get<std::string>(), signature);
    const attnjit::DType dtype =
        variant["dtype"] == "fp16" ? attnjit::DType::fp16 : attnjit::DType::bf16;
    // The arch ("sm_90a") and family the kernel was generated for, so that the same source
    // comes out whatever ATTNJIT_KERNEL_FAMILY says now.
    const std::string arch = sidecar["arch"].get<std::string>();
    const attnjit::codegen::Target target(std::atoi(arch.c_str() + 3), arch.ends_with('a'));
    const auto family = sidecar["config"].value("family", std::string("sm80")) == "sm90"
                            ? attnjit::codegen::FamilyRequest::sm90
                            : attnjit::codegen::FamilyRequest::sm80;
    const int head_dim = variant["head_dim"].get<int>();
    const bool paged = sidecar["config"].value("paged_kv", false);
    if (sidecar["config"].value("split_kv", false)) {  // the sm90 kernel of split calls
      return attnjit::codegen::generate_split_kernel_source(
                 mask, score, dtype, head_dim, target, paged, recorded_tuning(sidecar["config"]))
          .source;
    }
    if (paged) {  // the kernel of a variant's paged calls
      return attnjit::codegen::generate_paged_kernel_source(
                 mask, score, dtype, head_dim, target, family, recorded_tuning(sidecar["config"]))
          .source;
    }
    return attnjit::codegen::generate_kernel_source(mask, score, dtype, head_dim, target, family,
                                                    recorded_tuning(sidecar["config"]))
        .source;
  }
  return {};
}

CUresult emulate(Function& function, const attnjit::LaunchGrid& grid, void** params,
                 bool programmatic) {
  // Note: one launch at a time (the emulator's state is per built module, and launches from
  // several host threads would share it); the device is synchronous anyway.
  static std::mutex launch_mutex;
  std::lock_guard serial(launch_mutex);
  Module& module = *function.module;
  if (module.source.empty()) {
    std::fprintf(stderr,
                 "fake CUDA driver: no kernel source for this module (its cubin is not in "
                 "$ATTNJIT_CACHE_DIR), so %s cannot run\n",
                 function.name.c_str());
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  try {
    if (!module.emulated) {
      static int counter = 0;
      module.emulated = std::make_unique<attnjit::simt::SimtModule>(
          std::vector<std::string>{module.source},
          std::filesystem::temp_directory_path() /
              ("attnjit-fake-cuda-" + std::to_string(::getpid()) + "-" +
               std::to_string(counter++)));
    }
    if (module.probes) {
      module.emulated->run_forward(module.emulated->symbol(function.name),
                                   *static_cast<const attnjit::FwdParams*>(params[0]), grid,
                                   device_regions(), programmatic);
    } else {
      module.emulated->run_launch(0, function.name.c_str(), grid, params, device_regions(),
                                  programmatic);
    }
    return CUDA_SUCCESS;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fake CUDA driver: %s failed: %s\n", function.name.c_str(), error.what());
    return CUDA_ERROR_LAUNCH_FAILED;
  }
}

}  // namespace attnjit::fake_cuda
