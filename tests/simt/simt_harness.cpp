#include "simt_harness.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>

#include "codegen/variant_source.hpp"
#include "expr/block_analysis.hpp"
#include "attnjit_simt/fake_tensor_map.hpp"
#include "runtime/forward_plan.hpp"
#include "runtime/tensor_map_encoding.hpp"
#include "simt_module.hpp"

namespace attnjit::simt {
namespace {

using kernel_test::KernelCase;
using kernel_test::PreparedCase;

std::filesystem::path fresh_work_dir() {
  static std::atomic<int> counter{0};
  return std::filesystem::temp_directory_path() /
         fmt::format("attnjit-simt-{}-{}", static_cast<long>(::getpid()), counter++);
}

SimtRegion region(const void* data, std::size_t bytes, bool writable) {
  return SimtRegion{data, bytes, writable ? 1 : 0};
}

// The sm90 kernel's parameter block, as the CUDA backend builds it (cuda_backend.cpp).
Sm90FwdParams sm90_params(const FwdParams& base, const PreparedCase& prepared,
                          const AttentionBuffers& buffers, const codegen::KernelConfig& config) {
  if (const std::string why = tma_limitation(prepared.shape, buffers); !why.empty()) {
    throw std::runtime_error("the sm90 kernel cannot run this case: " + why);
  }
  Sm90FwdParams params{};
  params.base = base;
  encode_sm90_tensor_maps(prepared.shape, buffers, config, /*group=*/1, params,
                          [](const TensorMapRequest& request, TensorMap& map) {
                            encode_tensor_map(encode_fake, request, &map);
                          });
  return params;
}

// The CUDA backend's forward() with the emulator in place of the driver. Records how it launched
// in `outcome` (grid, slices, packing, entry, barriers), not its result.
void run_emulated(const SimtModule& module, int kernel, const codegen::KernelConfig& config,
                  const SimtLaunchOptions& options, PreparedCase& prepared, SimtOutcome& outcome) {
  const int multiprocessors = options.multiprocessors;
  reference::HostProblem& problem = prepared.problem;
  const AttentionBuffers buffers = prepared.call_buffers();
  // Note: a paged case's dense keys and values are not the kernel's to read: only the pools;
  // nor are a case's padded tensors where it packs them: only the packed ones and the tables.
  const kernel_test::PackedSequences* packed = prepared.packed.get();
  const bool packed_queries = packed != nullptr && packed->options.pack_queries;
  const bool packed_keys = packed != nullptr && packed->options.pack_keys;
  std::vector<SimtRegion> regions;
  if (!packed_queries) {
    regions.push_back(region(problem.q.data(), problem.q.storage_bytes(), false));
    regions.push_back(region(problem.out.data(), problem.out.storage_bytes(), true));
  }
  if (!prepared.paged && !packed_keys) {
    regions.push_back(region(problem.k.data(), problem.k.storage_bytes(), false));
    regions.push_back(region(problem.v.data(), problem.v.storage_bytes(), false));
  }
  if (packed_queries) {
    regions.push_back(region(packed->q.data(), packed->q.storage_bytes(), false));
    regions.push_back(region(packed->out.data(), packed->out.storage_bytes(), true));
    regions.push_back(
        region(packed->q_starts.data(), packed->q_starts.size() * sizeof(std::int32_t), false));
    if (!packed->lse.empty()) {
      regions.push_back(region(packed->lse.data(), packed->lse.size() * sizeof(float), true));
    }
  }
  if (packed_keys) {
    regions.push_back(region(packed->k.data(), packed->k.storage_bytes(), false));
    regions.push_back(region(packed->v.data(), packed->v.storage_bytes(), false));
    regions.push_back(
        region(packed->kv_starts.data(), packed->kv_starts.size() * sizeof(std::int32_t), false));
  } else if (packed != nullptr) {
    regions.push_back(
        region(packed->kv_lens.data(), packed->kv_lens.size() * sizeof(std::int32_t), false));
  }
  if (const kernel_test::PagedCache* paged = prepared.paged.get()) {
    regions.push_back(region(paged->k_pool.data(), paged->k_pool.storage_bytes(), false));
    regions.push_back(region(paged->v_pool.data(), paged->v_pool.storage_bytes(), false));
    regions.push_back(
        region(paged->table.data(), paged->table.size() * sizeof(std::int32_t), false));
  }
  if (!problem.lse.empty() && !packed_queries) {
    regions.push_back(region(problem.lse.data(), problem.lse.size() * sizeof(float), true));
  }

  VariantArgs args = prepared.host_args;
  LaunchChoices choices;
  choices.split_kv = prepared.test_case.split_kv ? prepared.test_case.split_kv : options.split_kv;
  choices.decode_entry = options.decode_entry;
  choices.balance_split = options.balance_split;
  const ForwardLaunch plan = plan_forward_launch(
      prepared.shape, buffers, config, expressions_use_heads({prepared.mask, prepared.score}),
      prepared.mask, expr::summary_requests(prepared.mask), args, multiprocessors, choices);
  outcome.packed_group = plan.decoding.group;
  outcome.num_splits = plan.split.num_splits;
  outcome.balanced_split = plan.split.balanced;
  outcome.decode_entry = plan.decoding.decode_entry;
  outcome.grid = plan.grid;
  // Note: ints, so the summaries' part is aligned; the partials start at split.offset bytes.
  std::vector<int> scratch((plan.scratch_bytes + sizeof(int) - 1) / sizeof(int));
  if (plan.split.num_splits > 1) regions.push_back(region(scratch.data(), plan.scratch_bytes, true));
  // The call's later launches overlap the one before as the backend's do on sm_90
  // (overlap_launches), here on every arch: the emulator then checks that each kernel reads what
  // the one before wrote only after its griddepcontrol.wait, whichever GPU it is built for.
  const bool overlap = choices.overlap_launches;
  for (const SummaryLaunch& launch : plan.summaries.launches) {
    const TensorArg& tensor = args.tensors[launch.request.tensor];
    int* min = scratch.data() + launch.offset;
    const SimtSummaryArgs summary_args{static_cast<const int*>(tensor.data), launch.len,
                                       launch.index_len, launch.granularity, min,
                                       min + launch.num_blocks};
    module.run_summary(module.summary_entry(kernel), summary_args, launch.grid, regions,
                       overlap && &launch != &plan.summaries.launches.front());
    attach_summary(launch, scratch.data(), args);
  }
  FwdParams params = make_forward_params(plan.shape, plan.buffers, args);
  attach_packing(plan.decoding, prepared.shape, buffers, params);
  const LaunchGrid& grid = plan.grid;
  const bool overlap_forward = overlap && !plan.summaries.launches.empty();
  if (config.family == codegen::KernelFamily::sm90) {
    module.run_forward(module.forward_entry(kernel), sm90_params(params, prepared, buffers, config),
                       grid, regions, overlap_forward);
    return;
  }
  SplitCombineParams combine{};
  if (plan.split.num_splits > 1) {
    combine = attach_split(plan.split, prepared.shape, buffers, scratch.data(), params);
  }
  outcome.block_barriers = module.run_forward(
      plan.decoding.decode_entry ? module.decode_entry(kernel) : module.forward_entry(kernel),
      params, grid, regions, overlap_forward);
  if (plan.split.num_splits > 1) {
    module.run_combine(module.combine_entry(kernel), combine, plan.split.combine, regions, overlap);
  }
}

}  // namespace

CUresult encode_fake(CUtensorMap* map, CUtensorMapDataType data_type, cuuint32_t rank,
                     void* address, const cuuint64_t* dims, const cuuint64_t* strides,
                     const cuuint32_t* box, const cuuint32_t* element_strides,
                     CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                     CUtensorMapL2promotion l2_promotion, CUtensorMapFloatOOBfill oob_fill) {
  const std::string why =
      encode_fake_tensor_map(map, data_type, rank, address, dims, strides, box, element_strides,
                             interleave, swizzle, l2_promotion, oob_fill);
  if (!why.empty()) throw std::runtime_error("cuTensorMapEncodeTiled: " + why);
  return CUDA_SUCCESS;
}

std::vector<SimtOutcome> run_simt_cases(const std::vector<KernelCase>& cases,
                                        codegen::Target target, codegen::FamilyRequest family,
                                        const SimtLaunchOptions& options) {
  std::vector<std::unique_ptr<PreparedCase>> prepared;
  std::vector<std::string> sources;
  std::map<std::string, int> kernel_of_source;
  std::vector<int> kernel_of_case;
  std::vector<codegen::KernelConfig> configs;
  for (const KernelCase& c : cases) {
    prepared.push_back(std::make_unique<PreparedCase>(c));
    const PreparedCase& p = *prepared.back();
    // Note: a paged case runs on the variant's paged kernel, as the CUDA backend's calls do, and
    // so does a case with sequence tables (Variant::choose_paged_kernel).
    const codegen::GeneratedKernel generated =
        c.page_size > 0 || c.sequences
            ? codegen::generate_paged_kernel_source(
                  p.mask, p.score, c.dtype, c.head_dim, target, family,
                  options.tuning ? *options.tuning : codegen::kernel_tuning_from_environment())
        : options.tuning
            ? codegen::generate_kernel_source(p.mask, p.score, c.dtype, c.head_dim, target, family,
                                              *options.tuning)
            : codegen::generate_kernel_source(p.mask, p.score, c.dtype, c.head_dim, target, family);
    const auto [it, inserted] =
        kernel_of_source.emplace(generated.source, static_cast<int>(sources.size()));
    if (inserted) sources.push_back(generated.source);
    kernel_of_case.push_back(it->second);
    configs.push_back(generated.config);
  }
  const SimtModule module(sources, fresh_work_dir());

  std::vector<SimtOutcome> outcomes;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SimtOutcome outcome;
    outcome.config = configs[i];
    outcome.name = fmt::format("{} sm_{}{} {}", cases[i].name(), target.sm,
                               target.arch_specific ? "a" : "",
                               codegen::kernel_family_name(configs[i].family));
    try {
      run_emulated(module, kernel_of_case[i], configs[i], options, *prepared[i], outcome);
      const kernel_test::PackedSequences* packed = prepared[i]->packed.get();
      outcome.result = prepared[i]->check(packed != nullptr && packed->options.pack_queries
                                              ? packed->lse
                                              : prepared[i]->problem.lse);
    } catch (const std::exception& error) {
      outcome.error = error.what();
    }
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

}  // namespace attnjit::simt
