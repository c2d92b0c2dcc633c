// host_overhead: the host time of one attnjit_forward call per standard variant (bf16, a small
// problem, so that the kernels never keep the host waiting): attnjit's argument and pointer
// checks, the tensor summaries' plan and launches, the sm90 kernel's tensor-map encoding and the
// forward launch. An inference server calling attention once per layer and token pays it every
// time, on top of the kernel.
//   On a GPU the figure includes the driver's share (cuPointerGetAttributes per buffer,
//   cuTensorMapEncodeTiled, cuLaunchKernel); the kernels run, and every 64 calls the host waits
//   for them outside the timing, so the launch queue never fills.
//   On the fake device (ATTNJIT_CUDA_DRIVER=.../libattnjit_fake_device.so) launches are not run
//   at all: the figure is attnjit's own share, measurable without a GPU.
// ATTNJIT_KERNEL_FAMILY picks the kernel family as for any call. --q-len Q (default: the key
// length L) times a decoding step's call instead: with ATTNJIT_SPLIT_KV=N it includes split-KV's
// plan, its scratch and the merge's launch.
// Usage: attnjit_host_overhead [--iters N] [--seq-len L] [--q-len Q] [--head-dim D]
//                              [--variant NAME]...
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnjit/attnjit.hpp"
#include "testkit/device_memory.hpp"
#include "testkit/example_inputs.hpp"

namespace {

using attnjit::testkit::DeviceBuffer;
constexpr int kCallsBetweenWaits = 64;

struct Options {
  int iterations = 2000;
  int seq_len = 256;
  int q_len = 0;  // 0: seq_len
  int head_dim = 128;
  int heads = 8;
  std::vector<std::string> variants;  // empty: all
};

int int_value(int& i, int argc, char** argv) {
  if (i + 1 >= argc) throw std::runtime_error(fmt::format("{} needs a value", argv[i]));
  const int value = std::atoi(argv[++i]);
  if (value <= 0) throw std::runtime_error(fmt::format("{} must be positive", argv[i - 1]));
  return value;
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--iters") {
      options.iterations = int_value(i, argc, argv);
    } else if (arg == "--seq-len") {
      options.seq_len = int_value(i, argc, argv);
    } else if (arg == "--q-len") {
      options.q_len = int_value(i, argc, argv);
    } else if (arg == "--head-dim") {
      options.head_dim = int_value(i, argc, argv);
    } else if (arg == "--variant" && i + 1 < argc) {
      options.variants.emplace_back(argv[++i]);
    } else if (arg == "--help" || arg == "-h") {
      std::puts(
          "usage: attnjit_host_overhead [--iters N] [--seq-len L] [--q-len Q] [--head-dim D] "
          "[--variant NAME]...");
      std::exit(0);
    } else {
      throw std::runtime_error(fmt::format("unknown argument '{}'", arg));
    }
  }
  if (options.q_len == 0) options.q_len = options.seq_len;
  if (options.q_len > options.seq_len) throw std::runtime_error("--q-len must not exceed --seq-len");
  return options;
}

// On the fake device: its launches skipped (ATTNJIT_FAKE_CUDA_LAUNCHES=skip, read at the first
// launch, so set here, before any), so only the host's work is timed. Returns whether the loaded
// driver is the fake one.
bool skip_fake_launches() {
  const char* path = std::getenv("ATTNJIT_CUDA_DRIVER");
  if (path == nullptr || *path == '\0') return false;
  // Note: RTLD_NOLOAD finds the copy the library already opened (the runtime exists by now).
  void* library = ::dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr || ::dlsym(library, "attnjit_fake_cuda_launch_count") == nullptr) {
    return false;
  }
  ::setenv("ATTNJIT_FAKE_CUDA_LAUNCHES", "skip", 1);
  return true;
}

double percentile(std::vector<double> values, double fraction) {
  const auto index = static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<long>(index), values.end());
  return values[index];
}

struct Problem {
  DeviceBuffer q, k, v, out, lse;
};

void measure(attnjit_runtime* runtime, const attnjit_manifest_variant& mv, const Options& options,
             Problem& problem) {
  const attnjit_variant_desc desc =
      attnjit::testkit::manifest_variant_desc(mv, ATTNJIT_DTYPE_BF16, options.head_dim);
  attnjit_variant* raw = nullptr;
  attnjit::c::check(attnjit_variant_create(&raw, runtime, &desc));
  const attnjit::c::VariantPtr variant(raw);
  attnjit::c::check(attnjit_variant_prepare(variant.get()));

  const attnjit::testkit::ExampleInputs inputs =
      attnjit::testkit::example_inputs(mv, options.seq_len, options.heads);
  const attnjit::testkit::DeviceTensors tensors = attnjit::testkit::upload_tensors(inputs);
  attnjit_forward_args call;
  attnjit_forward_args_init(&call);
  call.q = problem.q.get();
  call.k = problem.k.get();
  call.v = problem.v.get();
  call.out = problem.out.get();
  call.lse = static_cast<float*>(problem.lse.get());
  call.q_dtype = call.k_dtype = call.v_dtype = ATTNJIT_DTYPE_BF16;
  call.batch = 1;
  call.num_heads_q = call.num_heads_kv = options.heads;
  call.q_len = options.q_len;
  call.kv_len = options.seq_len;
  call.params = inputs.params.data();
  call.num_params = static_cast<int>(inputs.params.size());
  call.tensors = tensors.args.data();
  call.num_tensors = static_cast<int>(tensors.args.size());

  for (int i = 0; i < 20; ++i) attnjit::c::check(attnjit_forward(variant.get(), &call));
  attnjit::testkit::synchronize_device();
  std::vector<double> micros;
  micros.reserve(static_cast<std::size_t>(options.iterations));
  for (int i = 0; i < options.iterations; ++i) {
    if (i % kCallsBetweenWaits == 0) attnjit::testkit::synchronize_device();
    const auto start = std::chrono::steady_clock::now();
    attnjit::c::check(attnjit_forward(variant.get(), &call));
    micros.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  attnjit::testkit::synchronize_device();
  fmt::print("{:<18} {:>9.2f} {:>9.2f} {:>9.2f}\n", mv.name, percentile(micros, 0.5),
             percentile(micros, 0.1), percentile(micros, 0.9));
}

int run(const Options& options) {
  attnjit_runtime_options runtime_options;
  attnjit_runtime_options_init(&runtime_options);
  runtime_options.backend = ATTNJIT_BACKEND_CUDA;
  attnjit_runtime* raw_runtime = nullptr;
  attnjit::c::check(attnjit_runtime_create(&raw_runtime, &runtime_options));
  const attnjit::c::RuntimePtr runtime(raw_runtime);
  const bool fake = skip_fake_launches();

  attnjit_manifest* raw_manifest = nullptr;
  attnjit::c::check(attnjit_manifest_load(&raw_manifest, nullptr));
  const attnjit::c::ManifestPtr manifest(raw_manifest);

  const std::size_t elements =
      static_cast<std::size_t>(options.heads) * options.seq_len * options.head_dim;
  Problem problem{DeviceBuffer(2 * elements), DeviceBuffer(2 * elements),
                  DeviceBuffer(2 * elements), DeviceBuffer(2 * elements),
                  DeviceBuffer(sizeof(float) * options.heads * options.seq_len)};
  std::vector<std::uint16_t> ones(elements, 0x3f80);  // bf16 1.0: finite inputs on a GPU
  for (DeviceBuffer* buffer : {&problem.q, &problem.k, &problem.v}) {
    buffer->upload(ones.data(), 2 * elements);
  }
  const char* family = std::getenv("ATTNJIT_KERNEL_FAMILY");
  const char* split_kv = std::getenv("ATTNJIT_SPLIT_KV");
  fmt::print("{} ({}), kernel family {}, split-KV {}; B=1 H={} Lq={} Lkv={} D={} bf16, {} calls "
             "per variant\n",
             attnjit_runtime_device_arch(runtime.get()),
             fake ? "fake device: launches not run, attnjit's own host time"
                  : "GPU: attnjit's and the driver's host time, kernels queued",
             family != nullptr && *family != '\0' ? family : "auto",
             split_kv != nullptr && *split_kv != '\0' ? split_kv : "auto", options.heads,
             options.q_len, options.seq_len, options.head_dim, options.iterations);
  fmt::print("{:<18} {:>9} {:>9} {:>9}\n", "variant", "median us", "p10 us", "p90 us");
  int measured = 0;
  for (std::size_t v = 0; v < attnjit_manifest_count(manifest.get()); ++v) {
    const attnjit_manifest_variant& mv = *attnjit_manifest_variant_at(manifest.get(), v);
    if (!options.variants.empty() && std::find(options.variants.begin(), options.variants.end(),
                                               mv.name) == options.variants.end()) {
      continue;
    }
    measure(runtime.get(), mv, options, problem);
    ++measured;
  }
  if (measured == 0) throw std::runtime_error("no standard variant matches --variant");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_options(argc, argv));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "attnjit_host_overhead: %s\n", error.what());
    return 1;
  }
}
