#include "jit/variant_compiler.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/log.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "expr/ast.hpp"
#include "expr/expression.hpp"
#include "jit/cache_key.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/kernel_sidecar.hpp"
#include "jit/spill_policy.hpp"

namespace attnjit {
namespace {

// Everything that decides the kernel within one process (templates, options and NVRTC are
// fixed there), as one string: the first-level in-process key.
std::string request_id(const VariantSpec& spec, const std::string& arch, bool ptx,
                       codegen::FamilyRequest family, codegen::Schedule schedule) {
  std::string id;
  id.reserve(spec.mask.size() + spec.score.size() + 64);
  constexpr char kSep = '\x1f';
  id += spec.mask;
  id += kSep;
  id += spec.score;
  id += kSep;
  for (const auto& param : spec.signature.params) {
    id += param.name;
    id += param.type == expr::ValueType::integer ? ":i," : ":f,";
  }
  id += kSep;
  for (const auto& tensor : spec.signature.tensors) {
    id += tensor.name;
    id += tensor.elem == expr::TensorElemType::int32 ? ":i" : ":f";
    id += static_cast<char>('0' + tensor.rank);
    id += ',';
  }
  id += kSep;
  id += dtype_short_name(spec.dtype);
  id += kSep;
  id += std::to_string(spec.head_dim);
  id += kSep;
  id += arch;
  id += ptx ? "/ptx" : "/cubin";
  // Note: resolved here, so that a change of ATTNJIT_KERNEL_FAMILY within the process is a new
  // request, not the kernel an earlier setting produced.
  if (family == codegen::FamilyRequest::environment) {
    family = codegen::family_request_from_environment();
  }
  id += '/';
  id += static_cast<char>('0' + static_cast<int>(family));
  // Note: ATTNJIT_TUNE too, for the same reason: a benchmark times two tunings in one process.
  // The short-rows kernel's tuning is fixed but for the watchdog, which it takes from there.
  id += '/';
  if (schedule == codegen::Schedule::short_rows) id += "short-rows/";
  if (schedule == codegen::Schedule::paged_kv) id += "paged-kv/";
  if (schedule == codegen::Schedule::split_kv) id += "split-kv/";
  if (schedule == codegen::Schedule::paged_split_kv) id += "paged-split-kv/";
  if (const char* tuning = std::getenv("ATTNJIT_TUNE"); tuning != nullptr) id += tuning;
  return id;
}

nlohmann::json describe(const VariantSpec& spec, const codegen::GeneratedKernel& generated,
                        const expr::Expression& mask, const expr::Expression& score) {
  nlohmann::json params = nlohmann::json::array(), tensors = nlohmann::json::array();
  for (const auto& param : spec.signature.params) params.push_back(expr::to_string(param));
  for (const auto& tensor : spec.signature.tensors) tensors.push_back(expr::to_string(tensor));
  nlohmann::json details = {{"mask", mask.source()},
          {"score", score.source()},
          {"mask_canonical", mask.canonical()},
          {"score_canonical", score.canonical()},
          {"mask_index_only", !mask.reads_tensors()},
          {"params", params},
          {"tensors", tensors},
          {"dtype", dtype_short_name(spec.dtype)},
          {"head_dim", spec.head_dim},
          {"source_bytes", generated.source.size()}};
  if (!spec.name.empty()) details["name"] = spec.name;
  return details;
}

// What the cache is asked for: the key of the generated source, and what a stored kernel must
// agree with (the variant, the configuration derived from it).
KernelRequest make_request(const VariantSpec& spec, const ParsedVariant& parsed,
                           const codegen::GeneratedKernel& generated, const std::string& arch,
                           bool ptx) {
  KernelRequest request;
  request.key = compute_key(current_key_inputs(generated.source, arch, ptx));
  request.arch = arch;
  request.ptx = ptx;
  request.label = fmt::format("{}-d{}", dtype_short_name(spec.dtype), spec.head_dim);
  request.config = generated.config;
  request.variant = describe(spec, generated, parsed.mask, parsed.score);
  return request;
}

// A kernel's own source, from the disk cache or NVRTC (stored then).
VariantKernel fetch(const VariantSpec& spec, const ParsedVariant& parsed,
                    const codegen::GeneratedKernel& generated, const std::string& arch,
                    KernelCache& cache, bool ptx) {
  const KernelRequest request = make_request(spec, parsed, generated, arch, ptx);
  const std::string& key = request.key;
  const CacheLookup found = cache.get_or_compile(request, [&] {
    log().info("compiling kernel {} for {} (mask '{}', score '{}')", key, arch, spec.mask,
               spec.score);
    nvrtc::CompiledProgram program = nvrtc::compile_program(generated.source, arch, ptx);
    // Note: a report without an entry the module has would make every later process refuse
    // the stored entry (kernel_sidecar) and compile it again. NVRTC's use of the driver's
    // compute cache did that on an H200 (nvrtc::compile_options' --no-cache now prevents it);
    // anything else that does it should be seen, not silently paid for in each process.
    if (const std::string missing =
            ptx ? std::string() : missing_report_entry(program.resources, generated.config);
        !missing.empty()) {
      log().warn(
          "kernel {} for {}: NVRTC's report ({} bytes of log) does not describe {}; stored "
          "without it, the cache will compile it again in each process",
          key, arch, program.log.size(), missing);
    }
    CompiledKernel compiled;
    compiled.binary.image = std::move(program.image);
    compiled.binary.entry_resources = program.resources;
    compiled.details = {{"options", program.options}, {"nvrtc_version", nvrtc::nvrtc_version()}};
    return compiled;
  });
  return {found.binary, found.origin};
}

// The source a request is served from, and the kernel where choosing it fetched that already.
// The standard schedule's default tiles are wider without a mask (codegen::sm90_base_tiles_
// tuning), measured faster for the standard scores, but a score heavier than those can make
// their kernel spill heavily (hundreds of bytes at head dims 64 and 128: a division by an
// exponential, tanh times sigmoid, an exponential of the distance); then the base tiles, which
// those scores fit (tests/jit), serve it. The cubins' reports decide, for a PTX request too, so
// that both name the same kernel; the wide one stays in the cache, where a later process reads
// its report to decide again without compiling.
struct ServedSource {
  ServedVariantSource source;
  std::optional<VariantKernel> fetched;
};

ServedSource choose_source(const VariantSpec& spec, const ParsedVariant& parsed,
                           const std::string& arch, KernelCache& cache, bool ptx,
                           codegen::FamilyRequest family, codegen::Schedule schedule) {
  const codegen::KernelTuning tuning = codegen::kernel_tuning_from_environment();
  // Note: the paged kernel of a family is its standard kernel reading through the page table,
  // chosen the same way (the base tiles where the wide ones spill), so that a prefill over a
  // paged cache runs what a dense one does.
  // The split kernels likewise: the standard (or paged) kernel's tiles with the split features.
  const bool paged =
      schedule == codegen::Schedule::paged_kv || schedule == codegen::Schedule::paged_split_kv;
  const bool split =
      schedule == codegen::Schedule::split_kv || schedule == codegen::Schedule::paged_split_kv;
  const auto generate = [&](const codegen::KernelTuning& with) {
    if (split) {
      return codegen::generate_split_kernel_source(parsed.mask, parsed.score, spec.dtype,
                                                   spec.head_dim, arch_target(arch), paged, with);
    }
    return paged ? codegen::generate_paged_kernel_source(parsed.mask, parsed.score, spec.dtype,
                                                         spec.head_dim, arch_target(arch), family,
                                                         with)
                 : codegen::generate_kernel_source(parsed.mask, parsed.score, spec.dtype,
                                                   spec.head_dim, arch_target(arch), family, with);
  };
  if (schedule == codegen::Schedule::short_rows) {
    ServedSource served;
    served.source.generated = codegen::generate_kernel_source(
        parsed.mask, parsed.score, spec.dtype, spec.head_dim, arch_target(arch),
        codegen::FamilyRequest::sm90, codegen::short_rows_tuning(tuning));
    return served;
  }
  ServedSource served;
  ServedVariantSource& source = served.source;
  source.generated = generate(tuning);
  const std::optional<codegen::KernelTuning> narrower =
      codegen::sm90_base_tiles_tuning(source.generated.config, spec.head_dim, tuning);
  if (!narrower) return served;
  VariantKernel wide = fetch(spec, parsed, source.generated, arch, cache, /*ptx=*/false);
  const int wide_spills = spilled_bytes(wide.binary->forward_resources());
  if (!spills_heavily(wide_spills)) {
    if (!ptx) served.fetched = std::move(wide);
    return served;
  }
  codegen::GeneratedKernel base = generate(*narrower);
  VariantKernel narrow = fetch(spec, parsed, base, arch, cache, /*ptx=*/false);
  if (!prefer_base_tiles(wide_spills, spilled_bytes(narrow.binary->forward_resources()))) {
    if (!ptx) served.fetched = std::move(wide);
    return served;
  }
  source.wide_block_m = source.generated.config.block_m;
  source.wide_block_n = source.generated.config.block_n;
  source.wide_spill_bytes = wide_spills;
  source.generated = std::move(base);
  if (!ptx) served.fetched = std::move(narrow);
  return served;
}

// The kernel of a request that missed the in-process map: from the disk cache or NVRTC.
VariantKernel load_or_compile(const VariantSpec& spec, const ParsedVariant& parsed,
                              const std::string& arch, KernelCache& cache, bool ptx,
                              codegen::FamilyRequest family, codegen::Schedule schedule,
                              std::string request_text) {
  ServedSource served = choose_source(spec, parsed, arch, cache, ptx, family, schedule);
  const ServedVariantSource& source = served.source;
  const codegen::GeneratedKernel& generated = source.generated;
  const bool sm90_forced =
      family == codegen::FamilyRequest::sm90 ||
      (family == codegen::FamilyRequest::environment &&
       codegen::family_request_from_environment() == codegen::FamilyRequest::sm90);
  if (sm90_forced && generated.config.family != codegen::KernelFamily::sm90) {
    log().debug(
        "kernel family sm90 requested for {} ({}-d{}), but the sm90 kernel needs sm_90a "
        "and does not implement this variant there yet: using the sm80 kernel",
        arch, dtype_short_name(spec.dtype), spec.head_dim);
  }
  if (source.wide_spill_bytes > 0) {
    log().info(
        "the kernel for {} at {} x {} tiles spills {} bytes (mask '{}', score '{}'): "
        "serving {} x {} tiles",
        arch, source.wide_block_m, source.wide_block_n, source.wide_spill_bytes, spec.mask,
        spec.score, generated.config.block_m, generated.config.block_n);
  }
  VariantKernel kernel = served.fetched ? std::move(*served.fetched)
                                        : fetch(spec, parsed, generated, arch, cache, ptx);
  if (kernel.origin == KernelOrigin::compiled) {
    // Every entry, the summary and the merge too: each runs on some call.
    for (const auto& [entry, usage] : kernel.binary->entry_resources) {
      if (usage.spill_store_bytes > 0 || usage.spill_load_bytes > 0) {
        // Note: a spilling kernel is still correct; the user should know why it is slow.
        log().warn(
            "kernel {} ({}) for {} spills ({} bytes stored, {} loaded, {} registers): "
            "expect lower speed; a simpler score expression or a smaller head dim avoids "
            "it",
            kernel.binary->key, entry, arch, usage.spill_store_bytes, usage.spill_load_bytes,
            usage.registers);
      }
    }
  }
  cache.remember_request(std::move(request_text), kernel.binary);
  return kernel;
}

}  // namespace

const ResourceUsage& KernelBinary::resources_of(std::string_view entry) const {
  static const ResourceUsage kNone;
  const auto found = entry_resources.find(entry);
  return found == entry_resources.end() ? kNone : found->second;
}

ParsedVariant parse_variant(const VariantSpec& spec) {
  return {expr::parse_expression(expr::ExprKind::mask, spec.mask, spec.signature),
          expr::parse_expression(expr::ExprKind::score, spec.score, spec.signature)};
}

bool expressions_use_heads(const ParsedVariant& parsed) {
  for (const expr::Expression* e : {&parsed.mask, &parsed.score}) {
    if (e->uses(expr::Builtin::h) || e->uses(expr::Builtin::num_heads)) return true;
  }
  return false;
}

codegen::Target arch_target(const std::string& arch) {
  return {nvrtc::arch_sm(arch), nvrtc::arch_specific(arch)};
}

codegen::GeneratedKernel generate_variant_source(const VariantSpec& spec, const std::string& arch) {
  const ParsedVariant parsed = parse_variant(spec);
  return codegen::generate_kernel_source(parsed.mask, parsed.score, spec.dtype, spec.head_dim,
                                         arch_target(arch));
}

std::string variant_cache_key(const VariantSpec& spec, const std::string& arch, bool ptx) {
  const auto generated = generate_variant_source(spec, arch);
  return compute_key(current_key_inputs(generated.source, arch, ptx));
}

VariantCacheEntry variant_cache_entry(const VariantSpec& spec, const std::string& arch,
                                      const KernelCache& cache, bool ptx) {
  return variant_cache_entry(spec, generate_variant_source(spec, arch), arch, cache, ptx);
}

VariantCacheEntry variant_cache_entry(const VariantSpec& spec,
                                      const codegen::GeneratedKernel& generated,
                                      const std::string& arch, const KernelCache& cache, bool ptx) {
  const KernelRequest request = make_request(spec, parse_variant(spec), generated, arch, ptx);
  return {request.key, cache.store().binary_path(cache.entry_id(request))};
}

ServedVariantSource served_variant_source(const VariantSpec& spec, const std::string& arch,
                                          KernelCache& cache, codegen::Schedule schedule) {
  return choose_source(spec, parse_variant(spec), arch, cache, /*ptx=*/false,
                       codegen::FamilyRequest::environment, schedule)
      .source;
}

VariantKernel acquire_variant(const VariantSpec& spec, const std::string& arch, KernelCache& cache,
                              bool ptx) {
  constexpr auto family = codegen::FamilyRequest::environment;
  constexpr auto schedule = codegen::Schedule::standard;
  std::string request = request_id(spec, arch, ptx, family, schedule);
  if (auto binary = cache.find_request(request)) return {std::move(binary), KernelOrigin::memory};
  return load_or_compile(spec, parse_variant(spec), arch, cache, ptx, family, schedule,
                         std::move(request));
}

VariantKernel acquire_variant(const VariantSpec& spec, const ParsedVariant& parsed,
                              const std::string& arch, KernelCache& cache, bool ptx,
                              codegen::FamilyRequest family, codegen::Schedule schedule) {
  std::string request = request_id(spec, arch, ptx, family, schedule);
  if (auto binary = cache.find_request(request)) return {std::move(binary), KernelOrigin::memory};
  return load_or_compile(spec, parsed, arch, cache, ptx, family, schedule, std::move(request));
}

KernelBinary compile_variant(const VariantSpec& spec, const std::string& arch, KernelCache& cache,
                             bool ptx) {
  VariantKernel kernel = acquire_variant(spec, arch, cache, ptx);
  KernelBinary binary = *kernel.binary;
  binary.origin = kernel.origin;
  return binary;
}

}  // namespace attnjit
