#include "runtime/variant.hpp"

#include <fmt/format.h>

#include <future>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/variant_compiler.hpp"
#include "reference/attention.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/forward_plan.hpp"
#include "runtime/runtime.hpp"

namespace attnjit {
namespace {

void check_head_dim(const VariantSpec& spec, Backend backend) {
  if (spec.head_dim <= 0 || spec.head_dim > 1024) {
    throw_error(Status::invalid_argument, "head_dim must be in 1..1024; got {}", spec.head_dim);
  }
  if (backend == Backend::cuda && !codegen::is_supported_head_dim(spec.head_dim)) {
    throw_error(Status::unsupported,
                "head_dim {} is not supported by the CUDA kernels (supported: 32, 64, 96, 128, 256)",
                spec.head_dim);
  }
}

}  // namespace

Variant::Variant(Runtime& runtime, VariantSpec spec)
    : runtime_(runtime),
      spec_(std::move(spec)),
      parsed_((expr::validate_signature(spec_.signature), parse_variant(spec_))),
      hooks_use_heads_(expressions_use_heads(parsed_)),
      launch_choices_(launch_choices_from_environment()) {
  check_head_dim(spec_, runtime_.backend());
  if (runtime_.backend() == Backend::cuda && spec_.dtype == DType::fp32) {
    throw_error(Status::unsupported,
                "query, key and value must be bfloat16 or float16; got float32 (the CUDA backend "
                "has no float32 kernels; use the cpu backend)");
  }
}

std::shared_ptr<const KernelBinary> Variant::kernel() {
  std::lock_guard lock(kernel_mutex_);
  if (!kernel_) {
    tuned_ = codegen::schedule_tuning_requested();
    kernel_ = acquire_variant(spec_, parsed_, runtime_.device_arch(), runtime_.cache()).binary;
  }
  return kernel_;
}

std::shared_ptr<const KernelBinary> Variant::short_rows_kernel() {
  std::lock_guard lock(short_rows_mutex_);
  if (!short_rows_kernel_) {
    short_rows_kernel_ =
        acquire_variant(spec_, parsed_, runtime_.device_arch(), runtime_.cache(), /*ptx=*/false,
                        codegen::FamilyRequest::sm90, codegen::Schedule::short_rows)
            .binary;
  }
  return short_rows_kernel_;
}

std::shared_ptr<const KernelBinary> Variant::short_rows_kernel_or(
    std::shared_ptr<const KernelBinary> standard) {
  try {
    return short_rows_kernel();
  } catch (const Error& e) {
    // Note: the standard kernel serves these calls too, only slower; a failure to build or
    // store the short-rows kernel (a full disk, a bug) should not fail them.
    if (!short_rows_failed_.exchange(true)) {
      log().warn("the short-rows kernel is not available ({}); calls with short rows run on the "
                 "standard kernel",
                 e.what());
    }
    return standard;
  }
}

const char* Variant::short_rows_barred() const {
  if (!launch_choices_.short_rows) return "ATTNJIT_SHORT_ROWS=off";
  if (tuned_) return "ATTNJIT_TUNE sets the schedule";
  if (short_rows_failed_.load()) return "the short-rows kernel could not be built (see the warning)";
  return nullptr;
}

KernelChoice Variant::choose_kernel(const AttentionShape& shape, const AttentionBuffers& buffers,
                                    const VariantArgs& args, bool explain) {
  if (has_sequence_tables(buffers) || is_paged(buffers)) {
    return choose_paged_kernel(shape, buffers, explain);
  }
  KernelChoice choice{kernel(), KernelRole::standard, {}};
  if (explain) choice.why = fmt::format("the variant's kernel for {}", runtime_.device_arch());
  if (choice.binary->config.family != codegen::KernelFamily::sm90) return choice;
  if (const std::string why = tma_limitation(shape, buffers); !why.empty()) {
    log().debug("the sm90 kernel cannot load this call with TMA ({}); it runs on the sm80 "
                "kernel for {}",
                why, runtime_.device_arch());
    choice = {sm80_kernel(), KernelRole::tma_fallback,
              explain ? fmt::format("the sm90 kernel cannot load this call with TMA ({})", why)
                      : std::string()};
  } else if (const SmallGrid route = small_grid_route(shape, /*paged=*/false);
             route == SmallGrid::sm80_decoding) {
    // Note: a decoding call (a few query rows, many keys) is bound by reading K and V; the
    // sm80 kernel's decoding entry, with the keys split and a GQA group's heads packed into
    // one small block, keeps every SM reading, where the sm90 kernel would run a handful of
    // 128-row blocks over all of them.
    log().debug("decoding call: it runs on the sm80 kernel for {}", runtime_.device_arch());
    choice = {sm80_kernel(), KernelRole::decoding,
              explain ? std::string("a decoding call: the sm80 kernel splits its keys or packs "
                                    "its query heads")
                      : std::string()};
  } else if (route == SmallGrid::sm90_split) {
    // Note: a prefill of too few query tiles to fill the GPU (a chunk over a long cache, a few
    // heads per GPU) is still bound by the tensor cores: the sm90 kernel splits its keys.
    log().debug("small grid: the sm90 split kernel for {}", runtime_.device_arch());
    choice = {split_kernel(/*paged=*/false), KernelRole::split_kv, {}};
    if (explain) {
      const int group = sm90_pack_group(shape);
      choice.why = group > 1 ? fmt::format(
                                   "a few queries of {} query heads per key/value head: "
                                   "the sm90 split kernel packs a group's heads into its "
                                   "rows",
                                   group)
                             : "too few query tiles to fill the GPU: the sm90 kernel splits the "
                               "keys";
    }
  } else if (codegen::has_short_rows_schedule(choice.binary->config, spec_.head_dim,
                                              parsed_.mask)) {
    if (const char* barred = short_rows_barred()) {
      if (explain) choice.why += fmt::format("; not the short-rows kernel: {}", barred);
      return choice;
    }
    const ShortRowsVerdict verdict = short_rows_rule_.decide(
        parsed_.mask, args, shape, choice.binary->config, runtime_.device_multiprocessors());
    if (verdict.short_rows) {
      std::shared_ptr<const KernelBinary> standard = choice.binary;
      choice.binary = short_rows_kernel_or(standard);
      // Note: the standard kernel again when the short-rows kernel cannot be had.
      if (choice.binary != standard) choice.role = KernelRole::short_rows;
    }
    if (explain) {
      const int sms = runtime_.device_multiprocessors();
      if (choice.role == KernelRole::short_rows) {
        choice.why =
            fmt::format("{}: the variant's two-blocks-per-SM kernel", describe(verdict, sms));
      } else if (verdict.short_rows) {
        // Note: this call's request failed (short_rows_kernel_or warned), which bars later
        // calls before their rule runs: this one says what they will say.
        const char* barred_now = short_rows_barred();
        choice.why += fmt::format("; not the short-rows kernel: {}",
                                  barred_now != nullptr ? barred_now : "it could not be had");
      } else {
        choice.why = fmt::format("{}; {}", choice.why, describe(verdict, sms));
      }
    }
  }
  return choice;
}

std::shared_ptr<const KernelBinary> Variant::sm80_kernel() {
  std::lock_guard lock(sm80_mutex_);
  if (!sm80_kernel_) {
    sm80_kernel_ = acquire_variant(spec_, parsed_, runtime_.device_arch(), runtime_.cache(),
                                   /*ptx=*/false, codegen::FamilyRequest::sm80)
                       .binary;
  }
  return sm80_kernel_;
}

std::string Variant::sm90_paged_barred(const AttentionShape& shape,
                                       const AttentionBuffers& buffers) {
  if (const std::string limitation = tma_limitation(shape, buffers); !limitation.empty()) {
    return fmt::format("it cannot load the call with TMA ({})", limitation);
  }
  // Note: packed queries never take the decoding entry (its blocks are one sequence's rows), so
  // only a call of one padded query tensor counts as a decoding step here.
  if (!packs_queries(buffers) &&
      small_grid_route(shape, /*paged=*/true) == SmallGrid::sm80_decoding) {
    return "a decoding step, which the sm80 kernel splits or packs";
  }
  if (has_sequence_tables(buffers) &&
      !codegen::reads_sequence_tables(paged_kernel(codegen::FamilyRequest::sm90)->config)) {
    return "its persistent blocks (ATTNJIT_TUNE) do not read sequence tables";
  }
  return {};
}

KernelChoice Variant::choose_paged_kernel(const AttentionShape& shape,
                                          const AttentionBuffers& buffers, bool explain) {
  const std::string& arch = runtime_.device_arch();
  const bool family_sm90 = served_by_sm90();
  const std::string barred = family_sm90 ? sm90_paged_barred(shape, buffers) : std::string();
  const bool on_sm90 = family_sm90 && barred.empty();
  if (!barred.empty()) {
    log().debug("paged call: not on the sm90 kernel ({}); the sm80 kernel for {}", barred, arch);
  }
  const bool tables = has_sequence_tables(buffers);
  const bool split = on_sm90 && (packs_queries(buffers) ? splits_packed_queries(shape, buffers)
                                                        : small_grid_route(shape, /*paged=*/true) ==
                                                              SmallGrid::sm90_split);
  KernelChoice choice{
      split ? split_kernel(/*paged=*/true)
            : paged_kernel(on_sm90 ? codegen::FamilyRequest::sm90 : codegen::FamilyRequest::sm80),
      tables ? KernelRole::varlen : KernelRole::paged_kv,
      {}};
  if (!explain) return choice;
  const std::string kernel =
      fmt::format("the {} kernel{} for {}{}", on_sm90 ? "sm90" : "sm80",
                  !split ? ""
                  : !packs_queries(buffers) && sm90_pack_group(shape) > 1
                      ? " that splits keys and packs a GQA group's query heads"
                      : " that splits keys (too few query tiles to fill the GPU)",
                  arch, barred.empty() ? "" : fmt::format(" (not the sm90 kernel: {})", barred));
  if (tables) {
    choice.why = fmt::format("variable-length sequences ({}{}): {} with the sequence tables{}",
                             packs_queries(buffers) ? "packed queries" : "per-sequence key counts",
                             packs_keys(buffers) ? ", packed keys" : "", kernel,
                             is_paged(buffers) ? " and the page table" : "");
  } else {
    choice.why = fmt::format("a paged key/value cache (pages of {} rows): {} with the page table",
                             buffers.kv_pages.page_size, kernel);
  }
  return choice;
}

std::shared_ptr<const KernelBinary> Variant::paged_kernel(codegen::FamilyRequest family) {
  std::lock_guard lock(paged_mutex_);
  std::shared_ptr<const KernelBinary>& kernel =
      family == codegen::FamilyRequest::sm90 ? sm90_paged_kernel_ : paged_kernel_;
  if (!kernel) {
    kernel = acquire_variant(spec_, parsed_, runtime_.device_arch(), runtime_.cache(),
                             /*ptx=*/false, family, codegen::Schedule::paged_kv)
                 .binary;
  }
  return kernel;
}

bool Variant::served_by_sm90() {
  // Note: once, like the kernels (ATTNJIT_KERNEL_FAMILY is read when a variant's kernel is first
  // asked for), so that a paged call does not read the environment again.
  std::call_once(served_by_sm90_once_, [this] {
    served_by_sm90_ =
        codegen::choose_kernel_family(
            arch_target(runtime_.device_arch()), spec_.dtype, spec_.head_dim, parsed_.mask,
            parsed_.score, codegen::FamilyRequest::environment) == codegen::KernelFamily::sm90;
  });
  return served_by_sm90_;
}

codegen::KernelConfig Variant::sm80_config() {
  std::lock_guard lock(config_mutex_);
  if (!sm80_config_) {
    // Note: once, like the kernels (ATTNJIT_TUNE is read when a variant's kernel is first asked
    // for), so that a call does not redo the configuration's choice.
    sm80_config_ = codegen::kernel_config_for(parsed_.mask, parsed_.score, spec_.dtype,
                                              spec_.head_dim, arch_target(runtime_.device_arch()),
                                              codegen::FamilyRequest::sm80);
  }
  return *sm80_config_;
}

Variant::SmallGrid Variant::small_grid_route(const AttentionShape& shape, bool paged) {
  // Note: the SM count of the runtime's device (the one its arch is of), not a driver query.
  const int sms = runtime_.device_multiprocessors();
  if (sm90_pack_group(shape) > 1 && split_kernel_or_null(paged) != nullptr) {
    return SmallGrid::sm90_split;
  }
  const DecodingPlan plan =
      plan_decoding(shape, sm80_config(), hooks_use_heads_, sms, launch_choices_);
  if (plan.decode_entry || plan.group > 1) return SmallGrid::sm80_decoding;
  if (sm90_split_barred() == nullptr &&
      choose_num_splits(shape, sm90_split_config(), sms, launch_choices_.split_kv) > 1 &&
      split_kernel_or_null(paged) != nullptr) {
    return SmallGrid::sm90_split;
  }
  return plan.num_splits > 1 ? SmallGrid::sm80_decoding : SmallGrid::none;
}

bool Variant::splits_packed_queries(const AttentionShape& shape, const AttentionBuffers& buffers) {
  if (sm90_split_barred() != nullptr) return false;
  return choose_packed_query_splits(shape, buffers.sequences, sm90_split_config(),
                                    runtime_.device_multiprocessors(),
                                    launch_choices_.split_kv) > 1 &&
         split_kernel_or_null(/*paged=*/true) != nullptr;
}

const char* Variant::sm90_split_barred() {
  // Note: read once, like the standard kernel's tuning (kernel()), which a call may not have
  // asked for yet (a paged call).
  std::call_once(split_tuned_once_,
                 [this] { split_tuned_ = codegen::schedule_tuning_requested(); });
  if (split_tuned_) return "ATTNJIT_TUNE sets the schedule";
  if (split_failed_.load()) return "the split kernel could not be built (see the warning)";
  return nullptr;
}

int Variant::sm90_pack_group(const AttentionShape& shape) {
  if (!launch_choices_.pack_gqa || sm90_split_barred() != nullptr) return 1;
  return gqa_pack_group(shape, sm90_split_config(), hooks_use_heads_);
}

codegen::KernelConfig Variant::sm90_split_config() {
  std::lock_guard lock(config_mutex_);
  if (!sm90_split_config_) {
    sm90_split_config_ = codegen::split_kernel_config(
        parsed_.mask, parsed_.score, spec_.dtype, spec_.head_dim,
        arch_target(runtime_.device_arch()), codegen::kernel_tuning_from_environment());
  }
  return *sm90_split_config_;
}

std::shared_ptr<const KernelBinary> Variant::split_kernel(bool paged) {
  std::lock_guard lock(split_mutex_);
  std::shared_ptr<const KernelBinary>& kernel = paged ? paged_split_kernel_ : split_kernel_;
  if (!kernel) {
    kernel =
        acquire_variant(spec_, parsed_, runtime_.device_arch(), runtime_.cache(), /*ptx=*/false,
                        codegen::FamilyRequest::sm90,
                        paged ? codegen::Schedule::paged_split_kv : codegen::Schedule::split_kv)
            .binary;
  }
  return kernel;
}

std::shared_ptr<const KernelBinary> Variant::split_kernel_or_null(bool paged) {
  try {
    return split_kernel(paged);
  } catch (const Error& e) {
    // Note: the calls it would serve ran before it existed (split on the sm80 kernel, or
    // unsplit) and still can; a failure to build or store it (a full disk, a bug) should not fail
    // them.
    if (!split_failed_.exchange(true)) {
      log().warn(
          "the sm90 split kernel is not available ({}); calls of too few query tiles run "
          "split on the sm80 kernel or unsplit",
          e.what());
    }
    return nullptr;
  }
}

void Variant::prepare() {
  if (runtime_.backend() != Backend::cuda) return;
  // Note: where the variant's kernel will be the sm90 kernel, the sm80 kernel compiles beside
  // it (two NVRTC runs at once on a machine with the cores: about a second each, cold).
  // So does the split kernel (calls of too few query tiles to fill the GPU).
  const bool sm90 = served_by_sm90();
  std::future<std::shared_ptr<const KernelBinary>> sm80;
  std::future<std::shared_ptr<const KernelBinary>> split;
  if (sm90) sm80 = std::async(std::launch::async, [this] { return sm80_kernel(); });
  if (sm90 && sm90_split_barred() == nullptr) {
    split =
        std::async(std::launch::async, [this] { return split_kernel_or_null(/*paged=*/false); });
  }
  // Note: the futures are waited for before an exception leaves (their destructors wait).
  const std::shared_ptr<const KernelBinary> standard = kernel();
  std::vector<std::shared_ptr<const KernelBinary>> kernels{standard};
  if (sm80.valid()) kernels.push_back(sm80.get());
  if (split.valid()) {
    if (auto binary = split.get()) kernels.push_back(std::move(binary));
  }
  if (standard->config.family == codegen::KernelFamily::sm90 &&
      codegen::has_short_rows_schedule(standard->config, spec_.head_dim, parsed_.mask) &&
      short_rows_barred() == nullptr) {
    if (auto short_rows = short_rows_kernel_or(standard); short_rows != standard) {
      kernels.push_back(std::move(short_rows));
    }
  }
  for (const auto& binary : kernels) cuda::load(*binary);
}

void Variant::prepare_paged() {
  if (runtime_.backend() != Backend::cuda) return;
  cuda::load(*paged_kernel(codegen::FamilyRequest::sm80));
  if (served_by_sm90()) {
    cuda::load(*paged_kernel(codegen::FamilyRequest::sm90));
    if (sm90_split_barred() == nullptr) {
      if (const auto binary = split_kernel_or_null(/*paged=*/true)) cuda::load(*binary);
    }
  }
}

VariantArgs Variant::pack_args(const ForwardCall& call) const {
  const auto& sig = spec_.signature;
  if (call.scalars.size() != sig.params.size()) {
    throw_error(Status::invalid_argument, "the variant declares {} parameter(s); got {} value(s)",
                sig.params.size(), call.scalars.size());
  }
  if (call.tensors.size() != sig.tensors.size()) {
    throw_error(Status::invalid_argument, "the variant declares {} tensor(s); got {}",
                sig.tensors.size(), call.tensors.size());
  }
  VariantArgs args{};
  for (std::size_t i = 0; i < call.scalars.size(); ++i) args.scalars[i] = call.scalars[i];
  for (std::size_t i = 0; i < call.tensors.size(); ++i) {
    const auto& decl = sig.tensors[i];
    const auto& value = call.tensors[i];
    if (value.data == nullptr) {
      throw_error(Status::invalid_argument, "tensor '{}' has no data", decl.name);
    }
    const std::int64_t dim1 = decl.rank == 2 ? value.dims[1] : 1;
    constexpr std::int64_t max_dim = std::numeric_limits<int>::max();
    if (value.dims[0] <= 0 || dim1 <= 0 || value.dims[0] > max_dim || dim1 > max_dim ||
        value.dims[0] * dim1 > max_dim) {
      throw_error(Status::invalid_argument,
                  "tensor '{}' has dims [{}, {}]; each must be in 1..{} and the total too",
                  decl.name, value.dims[0], dim1, max_dim);
    }
    TensorArg& arg = args.tensors[i];
    arg.data = value.data;
    arg.dims[0] = static_cast<int>(value.dims[0]);
    arg.dims[1] = static_cast<int>(dim1);
    arg.rank = decl.rank;
    arg.elem = decl.elem == expr::TensorElemType::int32 ? kTensorInt32 : kTensorFloat32;
  }
  return args;
}

std::pair<AttentionShape, VariantArgs> Variant::checked_call(const ForwardCall& call) const {
  AttentionShape shape = call.shape;
  shape.head_dim = spec_.head_dim;
  validate_problem(shape, call.buffers);
  if (call.buffers.q_dtype != spec_.dtype) {
    throw_error(Status::invalid_argument,
                "the variant was declared for {} inputs; got query, key and value of {}",
                dtype_name(spec_.dtype), dtype_name(call.buffers.q_dtype));
  }
  return {shape, pack_args(call)};
}

void Variant::forward(const ForwardCall& call) {
  const auto [shape, args] = checked_call(call);
  if (runtime_.backend() == Backend::cpu) {
    reference::attention_forward(parsed_.mask, parsed_.score, args, shape, call.buffers);
    return;
  }
  const KernelChoice choice = choose_kernel(shape, call.buffers, args, /*explain=*/false);
  cuda::forward(*choice.binary, parsed_.mask, args, shape, call.buffers, hooks_use_heads_,
                launch_choices_, call.stream);
}

CallPlan Variant::launch_plan(const ForwardCall& call) {
  const auto [shape, args] = checked_call(call);
  CallPlan plan;
  plan.backend = runtime_.backend();
  if (plan.backend == Backend::cpu) return plan;
  plan.kernel = choose_kernel(shape, call.buffers, args, /*explain=*/true);
  // Note: as cuda::forward plans it, with the SM count the runtime recorded (forward asks the
  // current context's device, the same one unless the caller switched devices).
  plan.launch =
      plan_forward_launch(shape, call.buffers, plan.kernel.binary->config, hooks_use_heads_,
                          parsed_.mask, expr::summary_requests(parsed_.mask), args,
                          runtime_.device_multiprocessors(), launch_choices_);
  const ForwardLaunch& launch = plan.launch;
  if (launch.decoding.decode_entry) {
    plan.kernel.why += fmt::format("; the decoding entry ({}-row blocks)",
                                   launch.decoding.config.block_m);
  }
  if (launch.decoding.group > 1 && shape.q_len > 1) {
    plan.kernel.why += fmt::format(
        "; {} query heads x {} queries packed into the rows of {} block(s) per key/value head",
        launch.decoding.group, shape.q_len, launch.grid.grid_x);
  } else if (launch.decoding.group > 1) {
    plan.kernel.why += fmt::format("; {} query heads packed into each block's rows",
                                   launch.decoding.group);
  }
  if (launch.split.num_splits > 1) {
    plan.kernel.why += fmt::format("; the keys split in {}", describe_split(launch.split));
  }
  return plan;
}

const char* kernel_role_name(KernelRole role) {
  switch (role) {
    case KernelRole::standard: return "standard";
    case KernelRole::tma_fallback: return "tma_fallback";
    case KernelRole::decoding: return "decoding";
    case KernelRole::split_kv:
      return "split_kv";
    case KernelRole::short_rows: return "short_rows";
    case KernelRole::paged_kv:
      return "paged_kv";
    case KernelRole::varlen:
      return "varlen";
  }
  return "unknown";
}

}  // namespace attnjit
