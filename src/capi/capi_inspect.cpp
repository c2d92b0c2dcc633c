// attnjit_variant_inspect: what attnjit makes of a variant for one arch (the configuration, the
// cache entry, the source, the cubin's resources, the PTX), as `attnjit inspect` shows it.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "capi/boundary.hpp"
#include "codegen/residency.hpp"
#include "codegen/short_rows.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/kernel_cache.hpp"
#include "runtime/short_rows.hpp"

// The C struct the caller reads, and the strings it points into.
struct InspectedVariant : attnjit_variant_info {
  InspectedVariant() : attnjit_variant_info{} {}
  std::string arch, canonical_mask, key, path;
  std::optional<std::string> source, ptx;
};

namespace {

using attnjit::capi::guarded;
using attnjit::capi::require;
using attnjit::capi::require_version;

std::string resolve_arch(const char* requested, const attnjit::Runtime& runtime) {
  if (requested != nullptr) return attnjit::nvrtc::validate_arch(requested);
  return runtime.device_arch().empty() ? "sm_90" : runtime.device_arch();
}

// One entry's ptxas report into the info's fields of that entry.
struct EntryFields {
  int* registers;
  int* stack_frame_bytes;
  int* spill_store_bytes;
  int* spill_load_bytes;
};

void copy_usage(const attnjit::ResourceUsage& usage, const EntryFields& fields) {
  *fields.registers = usage.registers;
  *fields.stack_frame_bytes = usage.stack_frame_bytes;
  *fields.spill_store_bytes = usage.spill_store_bytes;
  *fields.spill_load_bytes = usage.spill_load_bytes;
}

// `sm`: the inspected arch's, for the resident blocks (the configuration fields are set).
void fill_resources(attnjit_variant_info& info, const attnjit::KernelBinary& cubin, int sm) {
  info.has_resources = 1;
  copy_usage(cubin.forward_resources(), {&info.registers, &info.stack_frame_bytes,
                                         &info.spill_store_bytes, &info.spill_load_bytes});
  info.static_smem_bytes = cubin.forward_resources().shared_bytes;
  info.cubin_bytes = cubin.image.size();
  info.resident_blocks_per_sm =
      attnjit::codegen::resident_blocks(sm, 32 * info.num_warps, info.registers,
                                        info.dynamic_smem_bytes + info.static_smem_bytes)
          .blocks;
  if (info.has_decode_entry) {
    copy_usage(cubin.decode_resources(),
               {&info.decode_registers, &info.decode_stack_frame_bytes,
                &info.decode_spill_store_bytes, &info.decode_spill_load_bytes});
    info.decode_resident_blocks_per_sm =
        attnjit::codegen::resident_blocks(
            sm, 32 * info.decode_num_warps, info.decode_registers,
            info.decode_dynamic_smem_bytes + cubin.decode_resources().shared_bytes)
            .blocks;
  }
  const auto copy_entry = [&](const char* entry, const EntryFields& fields) {
    const auto found = cubin.entry_resources.find(entry);
    if (found != cubin.entry_resources.end()) copy_usage(found->second, fields);
  };
  copy_entry(attnjit::codegen::kSummaryEntry,
             {&info.summary_registers, &info.summary_stack_frame_bytes,
              &info.summary_spill_store_bytes, &info.summary_spill_load_bytes});
  if (info.has_merge_entry) {
    copy_entry(attnjit::codegen::kSplitCombineEntry,
               {&info.merge_registers, &info.merge_stack_frame_bytes, &info.merge_spill_store_bytes,
                &info.merge_spill_load_bytes});
  }
  info.origin = attnjit::capi::to_c_origin(cubin.origin);
}

// The kernel of `schedule` (not the standard one) on `arch`, compiled or loaded: for paged_kv the
// kernel of the variant's paged prefills, the sm90 kernel's on sm_90a where it serves the
// variant, else the sm80 kernel's (which decoding steps over paged caches run on every arch);
// for split_kv and paged_split_kv the sm90 split kernel.
attnjit::KernelBinary schedule_binary(attnjit_variant& variant, const std::string& arch, bool ptx,
                                      attnjit::codegen::Schedule schedule) {
  const bool split = schedule == attnjit::codegen::Schedule::split_kv ||
                     schedule == attnjit::codegen::Schedule::paged_split_kv;
  return *attnjit::acquire_variant(variant.impl.spec(), attnjit::parse_variant(variant.impl.spec()),
                                   arch, variant.runtime.cache(), ptx,
                                   split ? attnjit::codegen::FamilyRequest::sm90
                                         : attnjit::codegen::FamilyRequest::environment,
                                   schedule)
              .binary;
}

// The split kernel is the sm90 kernel's: Error(invalid_argument) where that does not serve the
// variant on `arch`.
void require_split_kernel(const attnjit::VariantSpec& spec, const attnjit::ParsedVariant& parsed,
                          const std::string& arch) {
  const attnjit::codegen::KernelFamily family = attnjit::codegen::choose_kernel_family(
      attnjit::arch_target(arch), spec.dtype, spec.head_dim, parsed.mask, parsed.score,
      attnjit::codegen::FamilyRequest::environment);
  if (family != attnjit::codegen::KernelFamily::sm90) {
    attnjit::throw_error(attnjit::Status::invalid_argument,
                         "split_kv: the split kernel is the sm90 kernel's, which does not serve "
                         "this variant on {} (it gets the sm80 kernel, which splits in its own "
                         "module)",
                         arch);
  }
  if (attnjit::codegen::schedule_tuning_requested() &&
      attnjit::codegen::kernel_tuning_from_environment().sm90_persistent.value_or(false)) {
    attnjit::throw_error(attnjit::Status::invalid_argument,
                         "split_kv: the split kernel has plain blocks; ATTNJIT_TUNE asks for "
                         "persistent ones");
  }
}

std::unique_ptr<InspectedVariant> inspect(attnjit_variant& variant, unsigned parts,
                                          const std::string& arch, bool paged, bool split) {
  const attnjit::VariantSpec& spec = variant.impl.spec();
  attnjit::KernelCache& cache = variant.runtime.cache();
  auto result = std::make_unique<InspectedVariant>();
  attnjit_variant_info& info = *result;
  result->arch = arch;
  const attnjit::ParsedVariant parsed = attnjit::parse_variant(spec);
  if (split) require_split_kernel(spec, parsed, arch);
  using attnjit::codegen::Schedule;
  const Schedule schedule = split   ? (paged ? Schedule::paged_split_kv : Schedule::split_kv)
                            : paged ? Schedule::paged_kv
                                    : Schedule::standard;
  // Note: the source a call is served from, which for an sm90 kernel of wide default tiles
  // takes that kernel's compile (or cache entry) to know (served_variant_source); with `paged`
  // or `split`, that schedule's kernel's (schedule_binary).
  const attnjit::ServedVariantSource served =
      attnjit::served_variant_source(spec, arch, cache, schedule);
  info.paged_kv = paged ? 1 : 0;
  info.split_kv = split ? 1 : 0;
  const attnjit::codegen::GeneratedKernel& generated = served.generated;
  info.wide_block_m = served.wide_block_m;
  info.wide_block_n = served.wide_block_n;
  info.wide_spill_bytes = served.wide_spill_bytes;
  result->canonical_mask = parsed.mask.canonical();
  info.mask_reads_tensors = parsed.mask.reads_tensors() ? 1 : 0;
  const attnjit::codegen::KernelConfig& config = generated.config;
  info.block_m = config.block_m;
  info.block_n = config.block_n;
  info.num_warps = config.num_warps;
  info.num_stages = config.num_stages;
  info.dynamic_smem_bytes = config.smem_bytes;
  info.blocks_per_sm = config.blocks_per_sm;
  info.sm90_overlap = config.overlap ? 1 : 0;
  info.sm90_persistent = config.persistent ? 1 : 0;
  info.sm90_p_smem = config.p_in_smem ? 1 : 0;
  info.sm90_handoff = config.tile_handoff ? 1 : 0;
  info.sm90_poly_exp2 = config.poly_exp2;
  info.sm90_fold_m192 = config.fold_m192 ? 1 : 0;
  info.sm90_watchdog_ms = config.watchdog_ms;
  if (!paged && !split && !attnjit::codegen::schedule_tuning_requested() &&
      attnjit::codegen::has_short_rows_schedule(config, spec.head_dim, parsed.mask)) {
    info.has_short_rows_kernel = 1;
    info.short_rows_max_tiles = attnjit::kShortRowMaxTiles;
  }
  if (config.decode_block_n > 0) {
    const attnjit::codegen::KernelConfig decode = attnjit::codegen::decode_config(config);
    info.has_decode_entry = 1;
    info.decode_block_m = decode.block_m;
    info.decode_block_n = decode.block_n;
    info.decode_num_warps = decode.num_warps;
    info.decode_num_stages = decode.num_stages;
    info.decode_dynamic_smem_bytes = decode.smem_bytes;
    info.decode_blocks_per_sm = decode.blocks_per_sm;
  }
  // The merge is in the sm80 kernel's module and the sm90 split kernel's (variant_source.cpp).
  info.has_merge_entry = attnjit::codegen::has_split_combine(config) ? 1 : 0;
  if ((parts & ATTNJIT_INSPECT_SOURCE) != 0) result->source = generated.source;
  if ((parts & ATTNJIT_INSPECT_RESOURCES) != 0) {
    fill_resources(info,
                   schedule != Schedule::standard
                       ? schedule_binary(variant, arch, /*ptx=*/false, schedule)
                       : attnjit::compile_variant(spec, arch, cache),
                   attnjit::nvrtc::arch_sm(arch));
  }
  if ((parts & ATTNJIT_INSPECT_PTX) != 0) {
    const attnjit::KernelBinary ptx =
        schedule != Schedule::standard ? schedule_binary(variant, arch, /*ptx=*/true, schedule)
                                       : attnjit::compile_variant(spec, arch, cache, /*ptx=*/true);
    result->ptx.emplace(ptx.image.data(), ptx.image.size());
  }
  // After the compiles, so that `cached` says whether the cubin is on disk now.
  const attnjit::VariantCacheEntry entry =
      attnjit::variant_cache_entry(spec, generated, arch, cache);
  result->key = entry.key;
  result->path = entry.binary.string();
  std::error_code ec;
  info.cached = std::filesystem::exists(entry.binary, ec) ? 1 : 0;

  info.arch = result->arch.c_str();
  info.kernel = attnjit::codegen::kForwardEntry;
  info.kernel_family = attnjit::codegen::kernel_family_name(config.family);
  info.canonical_mask = result->canonical_mask.c_str();
  info.cache_key = result->key.c_str();
  info.cache_path = result->path.c_str();
  info.source = result->source ? result->source->c_str() : nullptr;
  info.ptx = result->ptx ? result->ptx->c_str() : nullptr;
  return result;
}

}  // namespace

extern "C" {

const char* attnjit_supported_arches(void) {
  static const std::string arches = attnjit::nvrtc::supported_arches_text();
  return arches.c_str();
}

void attnjit_inspect_options_init(attnjit_inspect_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->version = ATTNJIT_INSPECT_OPTIONS_VERSION;
  options->parts = ATTNJIT_INSPECT_ALL;
}

attnjit_status attnjit_variant_inspect(attnjit_variant_info** out, attnjit_variant* variant,
                                       const attnjit_inspect_options* options) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(variant, "variant");
    attnjit_inspect_options defaults;
    attnjit_inspect_options_init(&defaults);
    const attnjit_inspect_options& o = options != nullptr ? *options : defaults;
    // Note: version 1 (before paged_kv) is read without it, 2 without split_kv.
    if (o.version != 1 && o.version != 2) {
      require_version(o.version, ATTNJIT_INSPECT_OPTIONS_VERSION, "attnjit_inspect_options");
    }
    const bool paged = o.version >= 2 && o.paged_kv != 0;
    const bool split = o.version >= 3 && o.split_kv != 0;
    if ((o.parts & ~ATTNJIT_INSPECT_ALL) != 0) {
      attnjit::throw_error(attnjit::Status::invalid_argument,
                           "attnjit_inspect_options.parts has unknown bits {:#x}",
                           o.parts & ~ATTNJIT_INSPECT_ALL);
    }
    *out =
        inspect(*variant, o.parts, resolve_arch(o.arch, variant->runtime), paged, split).release();
  });
}

// Note: every attnjit_variant_info handed out is the base of an InspectedVariant.
void attnjit_variant_info_destroy(attnjit_variant_info* info) {
  delete static_cast<InspectedVariant*>(info);
}

}  // extern "C"
