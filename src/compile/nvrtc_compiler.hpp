// NVRTC as explicit stages, after jitify: a program (source + in-memory headers), compiled for one
// arch, then its image and resource report. Each stage either yields a value or throws an
// Error; the compile log is read before the result is checked, so a failure carries its log.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "compile/embedded_templates.hpp"
#include "compile/resource_usage.hpp"

namespace attnjit::nvrtc {

// Name of every program we compile; line numbers in logs refer to the generated source under it.
constexpr const char* kProgramName = "attnjit_variant.cu";

// Supported real architectures, in order. "sm_90a" is its own arch, distinct from sm_90: the
// Hopper-specific instructions (wgmma, setmaxnreg) exist only there, a cubin for it runs only on
// compute capability 9.0, and its kernels have their own cache directory and keys.
std::span<const std::string_view> supported_arches();

// "sm_80" ... "sm_90a" -> itself; anything else (sm_75, "90", "sm_9x") throws
// Error(unsupported) for a well-formed arch below sm_80 and Error(invalid_argument) for a
// malformed one, naming the choices.
std::string validate_arch(std::string_view arch);
int arch_sm(std::string_view arch);  // "sm_90a" -> 90; validates first
bool arch_specific(std::string_view arch);  // "sm_90a" -> true, "sm_90" -> false; validates first
std::string supported_arches_text();  // "sm_80, sm_86, sm_89, sm_90, sm_90a"
// The arch attnjit compiles for on a device of compute capability sm / 10 . sm % 10: sm_90a for
// 9.0 (so that the Hopper kernel can be used), "sm_<sm>" otherwise.
std::string device_arch(int sm);

// "13.0", from nvrtcVersion().
const std::string& nvrtc_version();
// Whether this NVRTC takes --no-cache (12.9 and later: those use the driver's compute cache).
bool nvrtc_has_no_cache_option();

// The options passed to nvrtcCompileProgram, fixed and in a fixed order:
//   -std=c++17 --gpu-architecture=<sm_XX | compute_XX for PTX> -Xptxas=-v (cubin only)
//   --no-cache (cubin only, NVRTC 12.9 and later, never in a cache key: see the definition)
// Note: no --use_fast_math. The templates call the fast intrinsics (exp2f -> ex2.approx) where
// they want them; user expressions (exp, tanh, division) keep IEEE semantics so the GPU
// agrees with the CPU reference within the tests' error limits.
// `include_toolkit` appends --include-path=<toolkit include dir> (only when a template or the
// source includes a toolkit header). `for_key` spells that path as "<cuda-toolkit>" so a cache
// key does not depend on where the toolkit is installed.
std::vector<std::string> compile_options(std::string_view arch, bool ptx, bool include_toolkit,
                                         bool for_key = false);

// True when `text` has an angle-bracket #include (a toolkit header NVRTC must find on disk).
bool includes_system_header(std::string_view text);
bool templates_include_system_header();

// The toolkit include directory: $CUDA_HOME/include, $CUDA_PATH/include, then the build-time
// ATTNJIT_BUILD_CUDA_INCLUDE_DIR; the first that holds cuda_runtime.h. Throws Error(compile)
// naming every place searched.
std::string toolkit_include_dir();

// Resource report of one kernel from the ptxas -v log, by (extern "C") entry name.
std::map<std::string, ResourceUsage, std::less<>> parse_ptxas_report(std::string_view log);

// Error(compile) that also keeps the program's source and the NVRTC log, so a caller (or a test)
// can show the lines a log refers to. what() holds the log.
class CompileError : public Error {
 public:
  CompileError(std::string message, std::string source, std::string log)
      : Error(Status::compile, std::move(message)), source_(std::move(source)), log_(std::move(log)) {}
  const std::string& source() const { return source_; }
  const std::string& log() const { return log_; }

 private:
  std::string source_;
  std::string log_;
};

struct CompiledProgram {
  std::vector<char> image;  // cubin bytes, or PTX text without a trailing NUL
  bool is_ptx = false;
  std::string log;  // full NVRTC log, ptxas report included
  std::map<std::string, ResourceUsage, std::less<>> resources;  // empty for PTX
  std::vector<std::string> options;  // as passed to NVRTC
};

// Compiles `source` (named kProgramName) with every embedded template available as an
// in-memory header. Throws CompileError whose message holds the log and which keeps the source,
// so line numbers can be looked up in it (inspect --emit source prints the same text).
// Compiles may run side by side (Variant::prepare's kernels, prewarm's workers).
CompiledProgram compile_program(const std::string& source, std::string_view arch, bool ptx);

}  // namespace attnjit::nvrtc
