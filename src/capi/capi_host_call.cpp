// attnjit_variant_tile_census and attnjit_variant_reference: a forward call examined on the host
// (its tiles, its exact result) rather than run, so a tool can report and check what a kernel
// did through the same API that ran it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "capi/boundary.hpp"
#include "codegen/variant_source.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "jit/variant_compiler.hpp"
#include "reference/attention.hpp"
#include "reference/naive.hpp"
#include "reference/tile_census.hpp"

namespace {

using attnjit::capi::guarded;
using attnjit::capi::require;
using attnjit::capi::require_version;

struct Tiles {
  int q, kv;
};

// The tiles of the kernel that runs the call: the kernel chosen for `arch`, else the GPU
// kernel of a CUDA runtime, else the CPU reference's (whose tiles also classify the mask).
Tiles tiles_for(const attnjit_variant& variant, const char* arch) {
  std::string chosen = arch != nullptr ? attnjit::nvrtc::validate_arch(arch) : std::string();
  if (chosen.empty() && variant.runtime.backend() == attnjit::Backend::cuda) {
    chosen = variant.runtime.device_arch();
  }
  if (chosen.empty()) {
    const attnjit::reference::ReferenceOptions cpu;
    return {cpu.tile_q, cpu.tile_kv};
  }
  // Note: the family as the kernel request resolves it (ATTNJIT_KERNEL_FAMILY included): the sm90
  // kernel's key tiles are twice the sm80 kernel's.
  const attnjit::VariantSpec& spec = variant.impl.spec();
  const attnjit::codegen::KernelConfig config = attnjit::codegen::kernel_config_for(
      variant.impl.mask(), variant.impl.score(), spec.dtype, spec.head_dim,
      attnjit::arch_target(chosen));
  return {config.block_m, config.block_n};
}

const attnjit_forward_args& checked_args(const attnjit_forward_args* args) {
  require(args, "args");
  require_version(args->version, ATTNJIT_FORWARD_ARGS_VERSION, "attnjit_forward_args");
  return *args;
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
    const attnjit_forward_args& a = checked_args(args);
    attnjit_tile_census_options defaults;
    attnjit_tile_census_options_init(&defaults);
    const attnjit_tile_census_options& o = options != nullptr ? *options : defaults;
    require_version(o.version, ATTNJIT_TILE_CENSUS_OPTIONS_VERSION, "attnjit_tile_census_options");
    const Tiles tiles = tiles_for(*variant, o.arch);
    const attnjit::ForwardCall call = attnjit::capi::to_call(a, variant->impl.spec().head_dim);
    // Note: the same checks as a forward call on the CPU backend, so a census never reads
    // through a pointer or shape that forward would refuse.
    const attnjit::VariantArgs packed = variant->impl.pack_args(call);
    attnjit::reference::validate_variant_call(variant->impl.mask(), variant->impl.score(), packed,
                                              call.shape, call.buffers);
    const attnjit::reference::TileCensus census = attnjit::reference::count_tiles(
        variant->impl.mask(), packed, call.shape, tiles.q, tiles.kv);
    *out = attnjit_tile_census{tiles.q,        tiles.kv,    census.tiles,      census.empty,
                               census.partial, census.full, census.kept_pairs, census.total_pairs};
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
