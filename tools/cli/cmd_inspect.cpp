// attnjit inspect: what attnjit makes of one variant — the generated source, the PTX, the
// resource report of the compiled kernel, its SASS, or its cache key and path — through the
// public API (attnjit_variant_inspect; the SASS by cuobjdump from the cached cubin).
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "commands.hpp"
#include "failure.hpp"
#include "option_checks.hpp"
#include "public_variant.hpp"
#include "testkit/sass.hpp"
#include "variant_options.hpp"

namespace attnjit::cli {
namespace {

struct InspectOptions {
  VariantOptions variant;
  std::string arch;
  std::string emit = "source";
  std::string entry = "forward";  // --emit sass: which entry point's listing
  std::string cache_dir;
  bool paged = false;  // the kernel of paged calls (a paged key/value cache)
  bool split = false;  // the sm90 kernel of calls of too few query tiles (split keys)
};

// The module's entry point an --entry value names ("" for all of them: the whole cubin), or a
// failure when this variant's module has no such entry on the arch: the decoding entry is the
// sm80 kernel's at head dims 64 and up, the split-KV merge the sm80 kernel's and the sm90 split
// kernel's; every module has the forward entry and the tensor-summary kernel.
std::string entry_function(const std::string& entry, const attnjit_variant_info& info) {
  if (entry == "all") return "";
  const bool sm80 = std::string_view(info.kernel_family) == "sm80";
  // Note: on sm_90a decoding steps run on the sm80 kernel, a module of its own, and longer split
  // calls on the sm90 split kernel, another.
  const char* elsewhere = sm80 ? ""
                               : "; decoding steps run on the sm80 kernel, which "
                                 "ATTNJIT_KERNEL_FAMILY=sm80 inspects, and split prefills on the "
                                 "split kernel, which --split inspects";
  if (entry == "decode") {
    if (info.has_decode_entry == 0) {
      fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
           "--entry decode: the {} kernel for {} has no decoding entry (the sm80 kernel has one "
           "at head dims 64 and up){}",
           info.kernel_family, info.arch, elsewhere);
    }
    return "attnjit_fwd_decode";
  }
  if (entry == "merge") {
    if (info.has_merge_entry == 0) {
      fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
           "--entry merge: the {} kernel for {} has no split-KV merge{}", info.kernel_family,
           info.arch, elsewhere);
    }
    return "attnjit_split_combine";
  }
  if (entry == "summary") return "attnjit_tensor_summary";
  return info.kernel;
}

const char* origin_name(attnjit_kernel_origin origin) {
  switch (origin) {
    case ATTNJIT_ORIGIN_MEMORY:
      return "memory";
    case ATTNJIT_ORIGIN_DISK:
      return "disk cache";
    case ATTNJIT_ORIGIN_COMPILED:
      return "compiled now";
  }
  return "?";
}

// The blocks one SM of `arch` holds, with a warning when fewer than the kernel was built for.
void print_residency(std::string_view label, int resident, int built_for, const char* arch) {
  fmt::print("{} {} block{} per SM of {}{}\n", label, resident, resident == 1 ? "" : "s", arch,
             resident < built_for ? fmt::format("  (warning: built for {})", built_for)
                                  : std::string());
}

// A secondary entry's line: its ptxas report, and a warning where it spills.
void print_entry(std::string_view label, std::string_view entry, int registers, int spill_store,
                 int spill_load, int stack_frame) {
  fmt::print("{} {}: {} registers, spills {} / {} bytes, stack {} bytes{}\n", label, entry,
             registers, spill_store, spill_load, stack_frame,
             spill_store + spill_load > 0 ? "  (warning: spills)" : "");
}

void print_resources(const attnjit_variant_info& info) {
  fmt::print("kernel        {} for {}\n", info.kernel, info.arch);
  // Note: on sm_90a the family depends on ATTNJIT_KERNEL_FAMILY and, for a call, on what it is
  // (a decoding step, a layout TMA cannot load), so say which one this report is about.
  fmt::print(
      "family        {}{}\n",
      std::string_view(info.kernel_family) == "sm90" ? "sm90 (wgmma, TMA, warp-specialised)"
                                                     : "sm80 (mma.sync, cp.async)",
      fmt::format("{}{}", info.paged_kv ? ", paged caches and variable-length sequences" : "",
                  info.split_kv ? ", split keys (calls of too few query tiles)" : ""));
  fmt::print("registers     {}\n", info.registers);
  fmt::print("static smem   {} bytes\n", info.static_smem_bytes);
  fmt::print("dynamic smem  {} bytes\n", info.dynamic_smem_bytes);
  fmt::print("stack frame   {} bytes\n", info.stack_frame_bytes);
  fmt::print("spills        {} bytes stored, {} bytes loaded{}\n", info.spill_store_bytes,
             info.spill_load_bytes,
             info.spill_store_bytes + info.spill_load_bytes > 0 ? "  (warning: spills)" : "");
  fmt::print("config        block_m={} block_n={} num_warps={} num_stages={} blocks_per_sm={}\n",
             info.block_m, info.block_n, info.num_warps, info.num_stages, info.blocks_per_sm);
  print_residency("residency    ", info.resident_blocks_per_sm, info.blocks_per_sm, info.arch);
  if (info.wide_spill_bytes > 0) {
    fmt::print(
        "              a masked variant's tiles: at the default {} x {} this score's kernel "
        "spills {} bytes\n",
        info.wide_block_m, info.wide_block_n, info.wide_spill_bytes);
  }
  if (std::string_view(info.kernel_family) == "sm90") {
    fmt::print("schedule      intra-warpgroup overlap {}, persistent grid {}, P from {}\n",
               info.sm90_overlap ? "on" : "off", info.sm90_persistent ? "on" : "off",
               info.sm90_p_smem ? "shared memory" : "registers");
    fmt::print("              tile handoff {}, exponentials on the FMA pipe {}/8, scale fold in "
               "192-row blocks {}\n",
               info.sm90_handoff ? "on" : "off", info.sm90_poly_exp2,
               info.sm90_fold_m192 ? "on" : "off");
    if (info.has_short_rows_kernel) {
      fmt::print("short rows    calls keeping at most {} key tiles of {} per query tile run a "
                 "second kernel: two blocks per SM,\n"
                 "              tile handoff on (ATTNJIT_TUNE=sm90_blocks_per_sm=2,sm90_handoff=1 "
                 "shows it)\n",
                 info.short_rows_max_tiles, info.block_n);
    }
    // Note: a line of its own, and only when on, since such a kernel is for hang hunting only.
    if (info.sm90_watchdog_ms > 0) {
      fmt::print(
          "watchdog      an mbarrier wait over {} ms records its label and faults the "
          "kernel\n",
          info.sm90_watchdog_ms);
    }
  }
  if (info.has_decode_entry) {
    fmt::print("decode entry  attnjit_fwd_decode (launches of at most {} query rows): {} "
               "registers, spills {} / {} bytes, stack {} bytes\n",
               info.decode_block_m, info.decode_registers, info.decode_spill_store_bytes,
               info.decode_spill_load_bytes, info.decode_stack_frame_bytes);
    fmt::print("decode config block_m={} block_n={} num_warps={} num_stages={} blocks_per_sm={} "
               "dynamic smem {} bytes\n",
               info.decode_block_m, info.decode_block_n, info.decode_num_warps,
               info.decode_num_stages, info.decode_blocks_per_sm, info.decode_dynamic_smem_bytes);
    print_residency("decode resid.", info.decode_resident_blocks_per_sm,
                    info.decode_blocks_per_sm, info.arch);
  }
  print_entry("summary entry", "attnjit_tensor_summary", info.summary_registers,
              info.summary_spill_store_bytes, info.summary_spill_load_bytes,
              info.summary_stack_frame_bytes);
  if (info.has_merge_entry) {
    print_entry("merge entry  ", "attnjit_split_combine", info.merge_registers,
                info.merge_spill_store_bytes, info.merge_spill_load_bytes,
                info.merge_stack_frame_bytes);
  }
  fmt::print("mask          {}\n", info.canonical_mask);
  fmt::print("index-only    {}\n", info.mask_reads_tensors
                                       ? "no (reads tensors: block summaries are computed per call)"
                                       : "yes (tiles are classified from indices alone)");
  fmt::print("cubin         {} bytes, {} ({})\n", info.cubin_bytes,
             info.cached ? info.cache_path : "not stored", origin_name(info.origin));
}

// An entry's SASS (--entry; the forward kernel's by default, the whole module's with all), then
// its instruction counts as `#` lines. cuobjdump reads the cubin from the cache, where the
// inspect call has just stored it.
void print_sass(const attnjit_variant_info& info, const std::string& entry) {
  const std::string function = entry_function(entry, info);
  const std::string cuobjdump = testkit::find_cuobjdump();
  if (cuobjdump.empty()) {
    fail(ATTNJIT_ERROR_UNSUPPORTED,
         "--emit sass needs cuobjdump, which was not found ({}); it comes with the CUDA toolkit, "
         "or `pip install nvidia-cuda-cuobjdump`",
         testkit::kCuobjdumpSearch);
  }
  if (!info.cached) {
    fail(ATTNJIT_ERROR_CACHE,
         "--emit sass reads the cubin from the kernel cache, but it was not stored ({}); see the "
         "warnings above, or pass a usable --cache-dir",
         info.cache_path);
  }
  std::string sass;
  try {
    sass = testkit::dump_sass(cuobjdump, info.cache_path, function);
  } catch (const std::exception& error) {
    fail(ATTNJIT_ERROR_IO, "{}", error.what());
  }
  fmt::print("{}", sass);
  fmt::print("# {} {} for {} ({} family)\n# {}\n", function.empty() ? "every entry" : function,
             info.cache_path, info.arch, info.kernel_family,
             testkit::describe(testkit::count_sass(sass)));
}

unsigned parts_for(const std::string& emit) {
  if (emit == "source") return ATTNJIT_INSPECT_SOURCE;
  if (emit == "ptx") return ATTNJIT_INSPECT_PTX;
  if (emit == "resources" || emit == "sass") return ATTNJIT_INSPECT_RESOURCES;
  return 0;  // key: the configuration, key and path only
}

void run_inspect(const InspectOptions& options) {
  if (options.entry != "forward" && options.emit != "sass") {
    fail(ATTNJIT_ERROR_INVALID_ARGUMENT,
         "--entry {} applies to --emit sass (resources reports every entry)", options.entry);
  }
  const c::SignaturePtr signature = options.variant.signature();
  // Note: inspecting compiles with NVRTC and needs no GPU: the CPU runtime never probes one,
  // and the arch (the local GPU's by default) is given explicitly.
  const c::RuntimePtr runtime = create_runtime(ATTNJIT_BACKEND_CPU, options.cache_dir);
  const c::VariantPtr variant = create_variant(runtime.get(), options.variant.desc(*signature));
  const std::string arch = options.arch.empty() ? local_gpu_arch().value_or("sm_90") : options.arch;
  attnjit_inspect_options inspect_options;
  attnjit_inspect_options_init(&inspect_options);
  inspect_options.arch = arch.c_str();
  inspect_options.parts = parts_for(options.emit);
  inspect_options.paged_kv = options.paged ? 1 : 0;
  inspect_options.split_kv = options.split ? 1 : 0;
  attnjit_variant_info* raw_info = nullptr;
  c::check(attnjit_variant_inspect(&raw_info, variant.get(), &inspect_options));
  const c::VariantInfoPtr info(raw_info);
  if (options.emit == "source") {
    fmt::print("{}", info->source);
  } else if (options.emit == "ptx") {
    fmt::print("{}", info->ptx);
  } else if (options.emit == "resources") {
    print_resources(*info);
  } else if (options.emit == "sass") {
    print_sass(*info, options.entry);
  } else {  // key
    fmt::print("key   {}\npath  {}{}\n", info->cache_key, info->cache_path,
               info->cached ? "" : "  (not cached)");
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* command = app.add_subcommand(
      "inspect",
      "Show the generated source, PTX, resource report, SASS (cuobjdump) or cache key of a "
      "variant");
  options->variant.add_to(*command);
  command->add_option("--arch", options->arch,
                      "target arch: sm_80, sm_86, sm_89, sm_90, sm_90a (default: the local GPU's, "
                      "else sm_90)");
  command->add_option("--emit", options->emit, "what to print")
      ->check(CLI::IsMember({"source", "ptx", "resources", "sass", "key"}))
      ->capture_default_str();
  command
      ->add_option("--entry", options->entry,
                   "with --emit sass, the entry point: forward, decode (the decoding entry), "
                   "merge (the split-KV merge), summary (the tensor summaries) or all")
      ->check(CLI::IsMember({"forward", "decode", "merge", "summary", "all"}))
      ->capture_default_str();
  command->add_flag(
      "--paged", options->paged,
      "the kernel of the variant's calls over a paged key/value cache and with "
      "variable-length sequences: on sm_90a the sm90 kernel's, which prefills and packed "
      "sequences run (decoding steps without packed queries and pages not a multiple of 8 rows "
      "run the sm80 family's: ATTNJIT_KERNEL_FAMILY=sm80 shows it)");
  command->add_flag(
      "--split", options->split,
      "the sm90 kernel (sm_90a) that splits the keys of calls whose query tiles cannot fill the "
      "GPU (a prefill chunk over a long cache), its module with the split-KV merge; with --paged "
      "the one of such paged calls");
  add_cache_dir_option(*command, options->cache_dir);
  command->callback([options] { run_inspect(*options); });
}

}  // namespace attnjit::cli
