#include "simt_module.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace attnjit::simt {
namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

SimtLaunch make_launch(const LaunchGrid& grid, std::span<const SimtRegion> regions,
                       bool programmatic) {
  return SimtLaunch{grid.grid_x,          grid.grid_y,    grid.threads,
                    grid.smem_bytes,      regions.data(), static_cast<int>(regions.size()),
                    programmatic ? 1 : 0, nullptr};
}

}  // namespace

SimtModule::SimtModule(const std::vector<std::string>& sources,
                       const std::filesystem::path& work_dir)
    : work_dir_(work_dir) {
  std::filesystem::create_directories(work_dir);
  // Note: each kernel's names get its index, so many variants share one shared object (one
  // compiler run); the templates' include guards make every later #include a no-op.
  std::string wrapper = "#include \"attnjit_simt/emulator.hpp\"\n";
  for (std::size_t i = 0; i < sources.size(); ++i) {
    sm90_.push_back(sources[i].find("attnjit::Sm90FwdParams") != std::string::npos);
    const std::string file = fmt::format("kernel_{}.cu", i);
    write_file(work_dir / file, sources[i]);
    wrapper += fmt::format(
        "#define AttnjitVariant AttnjitVariant_{0}\n#define attnjit_fwd attnjit_fwd_{0}\n"
        "#define attnjit_tensor_summary attnjit_tensor_summary_{0}\n"
        "#define attnjit_split_combine attnjit_split_combine_{0}\n"
        "#define attnjit_fwd_decode attnjit_fwd_decode_{0}\n#include \"{1}\"\n"
        "#undef AttnjitVariant\n#undef attnjit_fwd\n#undef attnjit_tensor_summary\n"
        "#undef attnjit_split_combine\n#undef attnjit_fwd_decode\n",
        i, file);
  }
  write_file(work_dir / "module.cpp", wrapper);
  const std::filesystem::path library = work_dir / "module.so";
  const std::filesystem::path log = work_dir / "compile.log";
  const std::string command = fmt::format(
      "'{}' -std=c++20 -O1 -fPIC -shared -w -fvisibility=hidden -fno-gnu-unique -I'{}/kernels_templates' -I'{}/tests/simt/include' "
      "-I'{}/src' -I'{}' '{}' -o '{}' > '{}' 2>&1",
      ATTNJIT_SIMT_CXX, ATTNJIT_SOURCE_DIR, ATTNJIT_SOURCE_DIR, ATTNJIT_SOURCE_DIR,
      work_dir.string(), (work_dir / "module.cpp").string(), library.string(), log.string());
  if (std::system(command.c_str()) != 0) {
    throw std::runtime_error(fmt::format("compiling the emulated kernels failed:\n{}\n{}", command,
                                         read_file(log)));
  }
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) throw std::runtime_error(fmt::format("dlopen: {}", dlerror()));
  run_forward_ = reinterpret_cast<SimtRunForward>(const_cast<void*>(symbol("attnjit_simt_run_forward")));
  run_forward_sm90_ = reinterpret_cast<SimtRunForward>(
      const_cast<void*>(symbol("attnjit_simt_run_forward_sm90")));
  run_summary_ = reinterpret_cast<SimtRunSummary>(const_cast<void*>(symbol("attnjit_simt_run_summary")));
  run_combine_ =
      reinterpret_cast<SimtRunForward>(const_cast<void*>(symbol("attnjit_simt_run_combine")));
}

SimtModule::~SimtModule() {
  if (handle_ != nullptr) dlclose(handle_);
  std::error_code ignored;
  std::filesystem::remove_all(work_dir_, ignored);
}

const void* SimtModule::symbol(const std::string& name) const {
  void* address = dlsym(handle_, name.c_str());
  if (address == nullptr) throw std::runtime_error("the emulated module has no " + name);
  return address;
}

const void* SimtModule::forward_entry(int kernel) const {
  return symbol(fmt::format("attnjit_fwd_{}", kernel));
}

const void* SimtModule::summary_entry(int kernel) const {
  return symbol(fmt::format("attnjit_tensor_summary_{}", kernel));
}

const void* SimtModule::combine_entry(int kernel) const {
  return symbol(fmt::format("attnjit_split_combine_{}", kernel));
}

const void* SimtModule::decode_entry(int kernel) const {
  return symbol(fmt::format("attnjit_fwd_decode_{}", kernel));
}

namespace {

// One launch through an entry of the shared object's C boundary; its error becomes an exception.
// Returns the most barriers one block of the grid completed (SimtLaunch::max_block_barriers).
template <typename RUN, typename ARGS>
unsigned run_or_throw(RUN run, const void* entry, const ARGS* args, const LaunchGrid& grid,
                      std::span<const SimtRegion> regions, bool programmatic) {
  SimtLaunch launch = make_launch(grid, regions, programmatic);
  unsigned barriers = 0;
  launch.max_block_barriers = &barriers;
  char error[1024] = {};
  if (run(entry, args, &launch, error, sizeof error) != 0) throw std::runtime_error(error);
  return barriers;
}

}  // namespace

unsigned SimtModule::run_forward(const void* entry, const FwdParams& params, const LaunchGrid& grid,
                                 std::span<const SimtRegion> regions, bool programmatic) const {
  return run_or_throw(run_forward_, entry, &params, grid, regions, programmatic);
}

void SimtModule::run_forward(const void* entry, const Sm90FwdParams& params, const LaunchGrid& grid,
                             std::span<const SimtRegion> regions, bool programmatic) const {
  run_or_throw(run_forward_sm90_, entry, &params, grid, regions, programmatic);
}

void SimtModule::run_summary(const void* entry, const SimtSummaryArgs& args, const LaunchGrid& grid,
                             std::span<const SimtRegion> regions, bool programmatic) const {
  run_or_throw(run_summary_, entry, &args, grid, regions, programmatic);
}

void SimtModule::run_combine(const void* entry, const SplitCombineParams& params,
                             const LaunchGrid& grid, std::span<const SimtRegion> regions,
                             bool programmatic) const {
  run_or_throw(run_combine_, entry, &params, grid, regions, programmatic);
}

void SimtModule::run_launch(int kernel, const char* function, const LaunchGrid& grid, void** params,
                            std::span<const SimtRegion> regions, bool programmatic) const {
  if (std::string_view(function) == codegen::kForwardEntry) {
    if (sm90_.at(static_cast<std::size_t>(kernel))) {
      run_forward(forward_entry(kernel), *static_cast<const Sm90FwdParams*>(params[0]), grid,
                  regions, programmatic);
    } else {
      run_forward(forward_entry(kernel), *static_cast<const FwdParams*>(params[0]), grid, regions,
                  programmatic);
    }
    return;
  }
  if (std::string_view(function) == codegen::kDecodeEntry) {
    run_forward(decode_entry(kernel), *static_cast<const FwdParams*>(params[0]), grid, regions,
                programmatic);
    return;
  }
  if (std::string_view(function) == codegen::kSplitCombineEntry) {
    run_combine(combine_entry(kernel), *static_cast<const SplitCombineParams*>(params[0]), grid,
                regions, programmatic);
    return;
  }
  if (std::string_view(function) != codegen::kSummaryEntry) {
    throw std::runtime_error(fmt::format("no emulated entry point {}", function));
  }
  // Note: the summary entry's parameter list (const int*, int, int, int, int*, int*).
  const SimtSummaryArgs args{*static_cast<const int* const*>(params[0]),
                             *static_cast<const int*>(params[1]),
                             *static_cast<const int*>(params[2]),
                             *static_cast<const int*>(params[3]),
                             *static_cast<int* const*>(params[4]),
                             *static_cast<int* const*>(params[5])};
  run_summary(summary_entry(kernel), args, grid, regions, programmatic);
}

}  // namespace attnjit::simt
