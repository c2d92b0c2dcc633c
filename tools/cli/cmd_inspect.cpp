// attnjit inspect: what attnjit makes of one variant — the generated source, the PTX, the
// resource report of the compiled kernel, or its cache key and path.
#include <fmt/format.h>

#include "jit/kernel_cache.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "expr/expression.hpp"
#include "local_gpu.hpp"
#include "option_checks.hpp"
#include "variant_options.hpp"

namespace attnjit::cli {
namespace {

struct InspectOptions {
  VariantOptions variant;
  std::string arch;
  std::string emit = "source";
  std::string cache_dir;
};

const char* origin_name(KernelOrigin origin) {
  switch (origin) {
    case KernelOrigin::memory: return "memory";
    case KernelOrigin::disk: return "disk cache";
    case KernelOrigin::compiled: return "compiled now";
  }
  return "?";
}

void print_resources(const VariantSpec& spec, const KernelBinary& binary) {
  const auto mask = expr::parse_expression(expr::ExprKind::mask, spec.mask, spec.signature);
  const ResourceUsage& usage = binary.forward_resources;
  const codegen::KernelConfig& config = binary.config;
  fmt::print("kernel        {} for {}\n", codegen::kForwardEntry, binary.arch);
  fmt::print("registers     {}\n", usage.registers);
  fmt::print("static smem   {} bytes\n", usage.shared_bytes);
  fmt::print("dynamic smem  {} bytes\n", config.smem_bytes);
  fmt::print("stack frame   {} bytes\n", usage.stack_frame_bytes);
  fmt::print("spills        {} bytes stored, {} bytes loaded{}\n", usage.spill_store_bytes,
             usage.spill_load_bytes,
             usage.spill_store_bytes + usage.spill_load_bytes > 0 ? "  (warning: spills)" : "");
  fmt::print("config        block_m={} block_n={} num_warps={} num_stages={}\n", config.block_m,
             config.block_n, config.num_warps, config.num_stages);
  fmt::print("mask          {}\n", mask.canonical());
  fmt::print("index-only    {}\n",
             mask.reads_tensors() ? "no (reads tensors: block summaries are computed per call)"
                                  : "yes (tiles are classified from indices alone)");
  fmt::print("cubin         {} bytes, {} ({})\n", binary.image.size(),
             binary.path.empty() ? "not stored" : binary.path, origin_name(binary.origin));
}

void run_inspect(const InspectOptions& options) {
  const VariantSpec spec = options.variant.spec();
  std::string arch = options.arch;
  if (arch.empty()) arch = local_gpu_arch().value_or("sm_90");
  arch = nvrtc::validate_arch(arch);
  KernelCache cache{std::filesystem::path(options.cache_dir)};
  if (options.emit == "source") {
    fmt::print("{}", generate_variant_source(spec, nvrtc::arch_sm(arch)).source);
  } else if (options.emit == "ptx") {
    const KernelBinary binary = compile_variant(spec, arch, cache, /*ptx=*/true);
    fmt::print("{}", std::string_view(binary.image.data(), binary.image.size()));
  } else if (options.emit == "resources") {
    print_resources(spec, compile_variant(spec, arch, cache));
  } else {  // key
    const VariantCacheEntry entry = variant_cache_entry(spec, arch, cache);
    std::error_code ec;
    fmt::print("key   {}\npath  {}{}\n", entry.key, entry.binary.string(),
               std::filesystem::exists(entry.binary, ec) ? "" : "  (not cached)");
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* command = app.add_subcommand(
      "inspect", "Show the generated source, PTX, resource report or cache key of a variant");
  options->variant.add_to(*command);
  command->add_option("--arch", options->arch,
                      "target arch: sm_80, sm_86, sm_89, sm_90, sm_90a (default: the local GPU's, "
                      "else sm_90)");
  command->add_option("--emit", options->emit, "what to print")
      ->check(CLI::IsMember({"source", "ptx", "resources", "key"}))
      ->capture_default_str();
  add_cache_dir_option(*command, options->cache_dir);
  command->callback([options] { run_inspect(*options); });
}

}  // namespace attnjit::cli
