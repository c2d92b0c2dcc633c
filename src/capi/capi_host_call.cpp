// attnjit_variant_tile_census, attnjit_variant_tile_map and attnjit_variant_reference: a forward
// call examined on the host (its tiles, its exact result) rather than run, so a tool can report and check what a kernel
// did through the same API that ran it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "capi/boundary.hpp"
#include "codegen/kernel_tuning.hpp"
#include "codegen/variant_source.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/variant_compiler.hpp"
#include "reference/attention.hpp"
#include "reference/naive.hpp"
#include "reference/tile_census.hpp"
#include "runtime/forward_plan.hpp"

namespace {

using attnjit::capi::guarded;
using attnjit::capi::require;
using attnjit::capi::require_forward_args_version;
using attnjit::capi::require_version;

struct Tiles {
  int q, kv;
};

// The query tile of a launch of `config`'s blocks with `group` query heads packed into their rows
// (1: none): a packed block holds block_m / group whole queries of each of the group's heads
// (exactly on the sm90 split kernel, whose blocks are whole queries; on the sm80 decoding entry
// where the group divides its 32 rows), so a census of each head's tiles classifies what the block
// classifies.
Tiles launch_tiles(const attnjit::codegen::KernelConfig& config, int group) {
  return {group > 1 ? std::max(1, config.block_m / group) : config.block_m, config.block_n};
}

// The tiles of the kernel that runs the call: the kernel chosen for `arch`, else the one the
// launch plan of a CUDA runtime's call picks, else the CPU reference's (whose tiles also
// classify the mask). A call the decoding entry runs (at most kDecodeBlockM rows after packing,
// or a packed step of several queries; on sm_90a through the sm80 module) has that entry's
// tiles; a few queries of a GQA group that sm_90a packs into its split kernel have that
// kernel's. For an arch, a call that would split its keys on the sm90 split kernel for want of
// query tiles (which depends on the GPU's SMs) is given the standard kernel's tiles.
Tiles tiles_for(attnjit_variant& variant, const char* arch, const attnjit::ForwardCall& call) {
  if (arch == nullptr && variant.runtime.backend() == attnjit::Backend::cuda) {
    const attnjit::CallPlan plan = variant.impl.launch_plan(call);
    return launch_tiles(plan.launch.decoding.config, plan.launch.decoding.group);
  }
  if (arch == nullptr) {
    const attnjit::reference::ReferenceOptions cpu;
    return {cpu.tile_q, cpu.tile_kv};
  }
  const std::string chosen = attnjit::nvrtc::validate_arch(arch);
  // Note: the family as the kernel request resolves it (ATTNJIT_KERNEL_FAMILY included): the sm90
  // kernel's key tiles are twice the sm80 kernel's.
  const attnjit::VariantSpec& spec = variant.impl.spec();
  const attnjit::codegen::Target target = attnjit::arch_target(chosen);
  const attnjit::codegen::KernelConfig config = attnjit::codegen::kernel_config_for(
      variant.impl.mask(), variant.impl.score(), spec.dtype, spec.head_dim, target);
  const bool uses_heads =
      attnjit::expressions_use_heads({variant.impl.mask(), variant.impl.score()});
  const attnjit::LaunchChoices& choices = variant.impl.launch_choices();
  if (config.family == attnjit::codegen::KernelFamily::sm90 && choices.pack_gqa &&
      !attnjit::codegen::schedule_tuning_requested()) {
    // Note: as Variant::sm90_pack_group decides, first (a schedule tuning bars the split kernel).
    const attnjit::codegen::KernelConfig split = attnjit::codegen::split_kernel_config(
        variant.impl.mask(), variant.impl.score(), spec.dtype, spec.head_dim, target,
        attnjit::codegen::kernel_tuning_from_environment());
    const int group = attnjit::gqa_pack_group(call.shape, split, uses_heads);
    if (group > 1) return launch_tiles(split, group);
  }
  const attnjit::codegen::KernelConfig sm80 =
      config.family == attnjit::codegen::KernelFamily::sm80
          ? config
          : attnjit::codegen::kernel_config_for(variant.impl.mask(), variant.impl.score(),
                                                spec.dtype, spec.head_dim, target,
                                                attnjit::codegen::FamilyRequest::sm80);
  // Note: one SM, since the slice count does not change the tiles.
  const attnjit::DecodingPlan decoding =
      attnjit::plan_decoding(call.shape, sm80, uses_heads, 1, choices);
  if (decoding.decode_entry) return launch_tiles(decoding.config, decoding.group);
  return {config.block_m, config.block_n};
}

const attnjit_forward_args& checked_args(const attnjit_forward_args* args) {
  require(args, "args");
  require_forward_args_version(args->version);
  return *args;
}

static_assert(int{ATTNJIT_TILE_EMPTY} == int{attnjit::kTileEmpty} &&
                  int{ATTNJIT_TILE_FULL} == int{attnjit::kTileFull} &&
                  int{ATTNJIT_TILE_PARTIAL} == int{attnjit::kTilePartial},
              "attnjit_tile_class is the kernels' TileClass");

// A call examined on the host: the tiles of the kernel that runs it (the options' arch), its
// shape and packed arguments, checked as a forward call on the CPU backend would be, so that
// neither a census nor a map reads through a pointer or shape that forward would refuse.
struct HostCall {
  Tiles tiles;
  attnjit::ForwardCall call;
  attnjit::VariantArgs packed;
};

HostCall examine_call(attnjit_variant& variant, const attnjit_forward_args* args,
                      const attnjit_tile_census_options* options) {
  const attnjit_forward_args& a = checked_args(args);
  attnjit_tile_census_options defaults;
  attnjit_tile_census_options_init(&defaults);
  const attnjit_tile_census_options& o = options != nullptr ? *options : defaults;
  require_version(o.version, ATTNJIT_TILE_CENSUS_OPTIONS_VERSION, "attnjit_tile_census_options");
  HostCall host{{}, attnjit::capi::to_call(a, variant.impl.spec().head_dim), {}};
  if (attnjit::has_sequence_tables(host.call.buffers)) {
    attnjit::throw_error(attnjit::Status::invalid_argument,
                         "the tiles of a call with variable-length sequences are each "
                         "sequence's: examine each as a call of its own (batch 1, its lengths)");
  }
  host.packed = variant.impl.pack_args(host.call);
  attnjit::reference::validate_variant_call(variant.impl.mask(), variant.impl.score(),
                                            host.packed, host.call.shape, host.call.buffers);
  host.tiles = tiles_for(variant, o.arch, host.call);
  return host;
}

}  // namespace

extern "C" {

void attnjit_tile_census_options_init(attnjit_tile_census_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->version = ATTNJIT_TILE_CENSUS_OPTIONS_VERSION;
}

attnjit_status attnjit_variant_tile_census(attnjit_tile_census* out, attnjit_variant* variant,
                                           const attnjit_forward_args* args,
                                           const attnjit_tile_census_options* options) {
  return guarded([&] {
    require(out, "out");
    require(variant, "variant");
    const HostCall host = examine_call(*variant, args, options);
    const attnjit::reference::TileCensus census = attnjit::reference::count_tiles(
        variant->impl.mask(), host.packed, host.call.shape, host.tiles.q, host.tiles.kv);
    *out = attnjit_tile_census{host.tiles.q,   host.tiles.kv, census.tiles,      census.empty,
                               census.partial, census.full,   census.kept_pairs, census.total_pairs};
  });
}

attnjit_status attnjit_variant_tile_map(unsigned char* map, size_t capacity, int* rows, int* cols,
                                        int* tile_q, int* tile_kv, attnjit_variant* variant,
                                        const attnjit_forward_args* args, int batch, int head,
                                        const attnjit_tile_census_options* options) {
  return guarded([&] {
    require(rows, "rows");
    require(cols, "cols");
    require(variant, "variant");
    const HostCall host = examine_call(*variant, args, options);
    const attnjit::AttentionShape& shape = host.call.shape;
    const std::int64_t q_tiles = (std::int64_t{shape.q_len} + host.tiles.q - 1) / host.tiles.q;
    const std::int64_t kv_tiles = (std::int64_t{shape.kv_len} + host.tiles.kv - 1) / host.tiles.kv;
    *rows = static_cast<int>(q_tiles);
    *cols = static_cast<int>(kv_tiles);
    if (tile_q != nullptr) *tile_q = host.tiles.q;
    if (tile_kv != nullptr) *tile_kv = host.tiles.kv;
    if (map == nullptr) return;
    const std::uint64_t needed = static_cast<std::uint64_t>(q_tiles * kv_tiles);
    if (capacity < needed) {
      attnjit::throw_error(attnjit::Status::invalid_argument,
                           "map holds {} bytes; the tile map of this call needs {} ({} x {} tiles)",
                           capacity, needed, q_tiles, kv_tiles);
    }
    const std::vector<attnjit::TileClass> classes = attnjit::reference::tile_map(
        variant->impl.mask(), host.packed, shape, host.tiles.q, host.tiles.kv, batch, head);
    std::transform(classes.begin(), classes.end(), map,
                   [](attnjit::TileClass c) { return static_cast<unsigned char>(c); });
  });
}

attnjit_status attnjit_variant_reference(attnjit_variant* variant, const attnjit_forward_args* args,
                                         double* out, double* lse) {
  return guarded([&] {
    require(variant, "variant");
    const attnjit_forward_args& a = checked_args(args);
    require(out, "out");
    const attnjit::ForwardCall call = attnjit::capi::to_call(a, variant->impl.spec().head_dim);
    std::vector<double> expected_out, expected_lse;
    attnjit::reference::naive_attention(variant->impl.mask(), variant->impl.score(),
                                        variant->impl.pack_args(call), call.shape, call.buffers,
                                        expected_out, expected_lse);
    std::copy(expected_out.begin(), expected_out.end(), out);
    if (lse != nullptr) std::copy(expected_lse.begin(), expected_lse.end(), lse);
  });
}

}  // extern "C"
