// A custom attention variant through attnjit's C API with the C++ companion header: each query
// sees the last W keys (a sliding window) and every score is soft-capped (cap * tanh(score /
// cap)); W and cap are values of each call, so the second call below, with another window, reuses
// the compiled kernel. Runs on the GPU, with device memory from the CUDA Driver API, when there
// is one; else on the CPU backend with host memory.
//
// Every query and key is the same vector, so every kept pair has the same score s, and row j of
// the values holds j: output row i is the mean of the positions in its window, and its
// log-sum-exp is cap * tanh(s / cap) + log(window size).
//
// Build: see CMakeLists.txt (find_package) or Makefile (pkg-config).
#include <dlfcn.h>

#include <algorithm>
#include <attnjit/attnjit.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kHeads = 4, kLen = 96, kDim = 128;
using Bf16 = std::uint16_t;

void check(attnjit_status status, const char* what) {
  if (status != ATTNJIT_OK) {
    throw std::runtime_error(std::string(what) + ": " + attnjit_status_string(status) + ": " +
                             attnjit_last_error());
  }
}

Bf16 to_bf16(float f) {  // round to nearest even
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<Bf16>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
float from_bf16(Bf16 h) {
  const std::uint32_t bits = std::uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The few Driver API functions used here, from the driver attnjit loads ($ATTNJIT_CUDA_DRIVER,
// else libcuda.so.1), so the program also starts where there is no driver. The _v2 names are the
// ABI that cuda.h selects.
class CudaDriver {
 public:
  using DevicePtr = unsigned long long;  // CUdeviceptr

  CudaDriver() {
    const char* path = std::getenv("ATTNJIT_CUDA_DRIVER");
    lib_ = dlopen(path != nullptr && *path != '\0' ? path : "libcuda.so.1", RTLD_NOW);
    if (lib_ == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    call<int(unsigned)>("cuInit", 0u);
    call<int(int*, int)>("cuDeviceGet", &device_, 0);
    void* context = nullptr;
    call<int(void**, int)>("cuDevicePrimaryCtxRetain", &context, device_);
    call<int(void*)>("cuCtxSetCurrent", context);  // attnjit works in the current context
  }
  ~CudaDriver() {
    try {
      call<int(int)>("cuDevicePrimaryCtxRelease_v2", device_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  // Device memory that frees itself (a deleter must not throw: a failure is printed).
  struct Free {
    CudaDriver* driver;
    void operator()(void* p) const {
      try {
        driver->call<int(DevicePtr)>("cuMemFree_v2", reinterpret_cast<DevicePtr>(p));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
      }
    }
  };
  using Buffer = std::unique_ptr<void, Free>;

  template <typename T>
  Buffer upload(const std::vector<T>& host) {
    DevicePtr p = 0;
    call<int(DevicePtr*, std::size_t)>("cuMemAlloc_v2", &p, host.size() * sizeof(T));
    Buffer buffer(reinterpret_cast<void*>(p), Free{this});
    call<int(DevicePtr, const void*, std::size_t)>("cuMemcpyHtoD_v2", p, host.data(),
                                                   host.size() * sizeof(T));
    return buffer;
  }
  template <typename T>
  void download(std::vector<T>& host, const Buffer& device) {  // waits for the default stream
    call<int(void*, DevicePtr, std::size_t)>("cuMemcpyDtoH_v2", host.data(),
                                             reinterpret_cast<DevicePtr>(device.get()),
                                             host.size() * sizeof(T));
  }

 private:
  template <typename Signature, typename... Args>
  void call(const char* name, Args... args) {
    void* symbol = dlsym(lib_, name);
    if (symbol == nullptr) throw std::runtime_error(std::string("the CUDA driver lacks ") + name);
    Signature* function;
    std::memcpy(&function, &symbol, sizeof symbol);
    if (const int result = function(args...); result != 0) {
      throw std::runtime_error(std::string(name) + " failed: CUDA error " + std::to_string(result));
    }
  }

  void* lib_ = nullptr;
  int device_ = 0;
};

// Runs the variant with window `window` and cap `cap`, on device memory when `cuda` is given, else
// on host memory; returns how many rows differ from the expected answer.
int run(CudaDriver* cuda, attnjit_variant* variant, int window, float cap) {
  const std::size_t elements = std::size_t{kHeads} * kLen * kDim;
  std::vector<Bf16> q(elements, to_bf16(1.0f)), k = q, v(elements), out(elements);
  std::vector<float> lse(std::size_t{kHeads} * kLen);
  for (std::size_t at = 0; at < elements; ++at) {
    v[at] = to_bf16(static_cast<float>(at / kDim % kLen));  // layout BHLD: row j holds j
  }

  attnjit_scalar values[2];
  values[0].i = window;
  values[1].f = cap;
  attnjit_forward_args args;
  attnjit_forward_args_init(&args);
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_BF16;
  args.batch = 1;
  args.num_heads_q = args.num_heads_kv = kHeads;
  args.q_len = args.kv_len = kLen;
  args.layout = ATTNJIT_LAYOUT_BHLD;
  args.params = values;
  args.num_params = 2;
  if (cuda != nullptr) {
    auto dq = cuda->upload(q), dk = cuda->upload(k), dv = cuda->upload(v);
    auto dout = cuda->upload(out), dlse = cuda->upload(lse);
    args.q = dq.get(), args.k = dk.get(), args.v = dv.get(), args.out = dout.get();
    args.lse = static_cast<float*>(dlse.get());
    check(attnjit_forward(variant, &args), "attnjit_forward");  // async, default stream
    cuda->download(out, dout);
    cuda->download(lse, dlse);
  } else {
    args.q = q.data(), args.k = k.data(), args.v = v.data(), args.out = out.data();
    args.lse = lse.data();
    check(attnjit_forward(variant, &args), "attnjit_forward");
  }

  // The default scale 1/sqrt(d) times the dot product of two all-ones vectors, d: sqrt(d).
  const float score = cap * std::tanh(std::sqrt(static_cast<float>(kDim)) / cap);
  int bad = 0;
  for (int h = 0; h < kHeads; ++h) {
    for (int i = 0; i < kLen; ++i) {
      const int first = std::max(0, i - window + 1);
      const float want_out = 0.5f * static_cast<float>(first + i);
      const float want_lse = score + std::log(static_cast<float>(i - first + 1));
      const Bf16* row = &out[static_cast<std::size_t>(h * kLen + i) * kDim];
      const bool ok = std::abs(lse[h * kLen + i] - want_lse) < 0.01f &&
                      std::all_of(row, row + kDim, [&](Bf16 x) {
                        return std::abs(from_bf16(x) - want_out) < 0.05f;
                      });
      bad += ok ? 0 : 1;
    }
  }
  std::printf("W=%-3d cap=%.1f: %s\n", window, cap,
              bad == 0 ? "every row matches" : (std::to_string(bad) + " rows differ").c_str());
  return bad;
}

}  // namespace

int main() try {
  attnjit_runtime_options options;
  attnjit_runtime_options_init(&options);  // backend AUTO: the GPU if usable, else the CPU
  attnjit_runtime* raw_runtime = nullptr;
  check(attnjit_runtime_create(&raw_runtime, &options), "attnjit_runtime_create");
  const attnjit::c::RuntimePtr runtime(raw_runtime);

  const attnjit_param_decl params[] = {{"W", ATTNJIT_PARAM_INT}, {"cap", ATTNJIT_PARAM_FLOAT}};
  attnjit_variant_desc desc;
  attnjit_variant_desc_init(&desc);
  desc.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  desc.score = "cap * tanh(score / cap)";
  desc.params = params;
  desc.num_params = 2;
  desc.dtype = ATTNJIT_DTYPE_BF16;
  desc.head_dim = kDim;
  attnjit_variant* raw_variant = nullptr;
  check(attnjit_variant_create(&raw_variant, runtime.get(), &desc), "attnjit_variant_create");
  const attnjit::c::VariantPtr variant(raw_variant);  // destroyed before the runtime
  check(attnjit_variant_prepare(variant.get()), "attnjit_variant_prepare");

  const bool on_gpu = attnjit_runtime_backend(runtime.get()) == ATTNJIT_BACKEND_CUDA;
  std::printf("attnjit %s, backend %s\n", attnjit_version(), on_gpu ? "cuda" : "cpu");
  std::unique_ptr<CudaDriver> cuda = on_gpu ? std::make_unique<CudaDriver>() : nullptr;
  const int bad =
      run(cuda.get(), variant.get(), 8, 3.0f) + run(cuda.get(), variant.get(), 40, 3.0f);
  return bad == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
