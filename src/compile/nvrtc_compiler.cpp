#include "compile/nvrtc_compiler.hpp"

#include <nvrtc.h>

#include <array>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <utility>

#include "common/log.hpp"

namespace attnjit::nvrtc {
namespace {

constexpr std::array<std::string_view, 5> kArches = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};

[[noreturn]] void throw_nvrtc(nvrtcResult result, std::string_view what) {
  throw_error(Status::compile, "NVRTC {} failed: {}", what, nvrtcGetErrorString(result));
}

void check(nvrtcResult result, std::string_view what) {
  if (result != NVRTC_SUCCESS) throw_nvrtc(result, what);
}

// Stage 1: a program, i.e. the source plus every embedded template as an in-memory header.
class Program {
 public:
  explicit Program(const std::string& source) {
    const auto templates = embedded_templates();
    std::vector<std::string> names, contents;
    names.reserve(templates.size());
    contents.reserve(templates.size());
    for (const EmbeddedFile& file : templates) {
      names.emplace_back(file.name);
      contents.emplace_back(file.contents);  // NVRTC wants NUL-terminated strings
    }
    std::vector<const char*> name_ptrs, content_ptrs;
    for (std::size_t i = 0; i < names.size(); ++i) {
      name_ptrs.push_back(names[i].c_str());
      content_ptrs.push_back(contents[i].c_str());
    }
    check(nvrtcCreateProgram(&program_, source.c_str(), kProgramName,
                             static_cast<int>(names.size()), content_ptrs.data(),
                             name_ptrs.data()),
          "nvrtcCreateProgram");
  }
  ~Program() { nvrtcDestroyProgram(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_ = nullptr;
};

std::string program_log(nvrtcProgram program) {
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::vector<char> program_image(nvrtcProgram program, bool ptx) {
  std::size_t size = 0;
  std::vector<char> image;
  if (ptx) {
    check(nvrtcGetPTXSize(program, &size), "nvrtcGetPTXSize");
    image.resize(size);
    check(nvrtcGetPTX(program, image.data()), "nvrtcGetPTX");
    while (!image.empty() && image.back() == '\0') image.pop_back();
  } else {
    check(nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
    image.resize(size);
    check(nvrtcGetCUBIN(program, image.data()), "nvrtcGetCUBIN");
  }
  if (image.empty()) throw_error(Status::compile, "NVRTC produced an empty {}", ptx ? "PTX" : "cubin");
  return image;
}

// The integer just before `suffix` in `line` ("... 1024 bytes smem" -> 1024), if present.
std::optional<int> number_before(std::string_view line, std::string_view suffix) {
  const auto at = line.find(suffix);
  if (at == std::string_view::npos) return std::nullopt;
  auto end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  auto begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  int value = 0;
  if (begin == end || std::from_chars(line.data() + begin, line.data() + end, value).ec != std::errc{}) {
    return std::nullopt;
  }
  return value;
}

std::string_view quoted_after(std::string_view line, std::string_view prefix) {
  const auto at = line.find(prefix);
  if (at == std::string_view::npos) return {};
  const auto begin = at + prefix.size();
  const auto end = line.find('\'', begin);
  return end == std::string_view::npos ? std::string_view{} : line.substr(begin, end - begin);
}

}  // namespace

std::span<const std::string_view> supported_arches() { return kArches; }

std::string supported_arches_text() {
  std::string text;
  for (const auto arch : kArches) {
    if (!text.empty()) text += ", ";
    text += arch;
  }
  return text;
}

std::string validate_arch(std::string_view arch) {
  const auto malformed = [&]() {
    throw_error(Status::invalid_argument, "unknown arch '{}' (choices: {})",
                arch, supported_arches_text());
  };
  if (!arch.starts_with("sm_")) malformed();
  auto digits = arch.substr(3);
  const bool has_a_suffix = digits.ends_with('a');
  if (has_a_suffix) digits.remove_suffix(1);
  int sm = 0;
  if (digits.size() < 2 || digits.size() > 3 ||
      std::from_chars(digits.data(), digits.data() + digits.size(), sm).ec != std::errc{} ||
      std::to_string(sm) != digits) {
    malformed();
  }
  if (sm < 80) {
    throw_error(Status::unsupported, "arch '{}' is not supported: attnjit needs sm_80 or newer "
                "(choices: {})", arch, supported_arches_text());
  }
  bool known = false;
  for (const auto choice : kArches) known = known || choice == arch;
  if (!known) {
    throw_error(Status::unsupported, "arch '{}' is not supported (choices: {})", arch,
                supported_arches_text());
  }
  return std::string(arch);
}

int arch_sm(std::string_view arch) {
  const std::string valid = validate_arch(arch);
  return std::stoi(valid.substr(3, 2));
}

bool arch_specific(std::string_view arch) { return validate_arch(arch).ends_with('a'); }

std::string device_arch(int sm) {
  return sm == 90 ? std::string("sm_90a") : "sm_" + std::to_string(sm);
}

namespace {

std::pair<int, int> nvrtc_version_numbers() {
  static const std::pair<int, int> version = [] {
    int major = 0, minor = 0;
    check(nvrtcVersion(&major, &minor), "nvrtcVersion");
    return std::pair{major, minor};
  }();
  return version;
}

}  // namespace

const std::string& nvrtc_version() {
  static const std::string version = [] {
    const auto [major, minor] = nvrtc_version_numbers();
    return fmt::format("{}.{}", major, minor);
  }();
  return version;
}

bool nvrtc_has_no_cache_option() { return nvrtc_version_numbers() >= std::pair{12, 9}; }

bool includes_system_header(std::string_view text) {
  const auto skip_blanks = [&](std::size_t pos) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
    return pos;
  };
  std::size_t line = 0;
  while (line < text.size()) {
    std::size_t pos = skip_blanks(line);
    if (pos < text.size() && text[pos] == '#') {
      pos = skip_blanks(pos + 1);
      if (text.substr(pos, 7) == "include") {
        pos = skip_blanks(pos + 7);
        if (pos < text.size() && text[pos] == '<') return true;
      }
    }
    const auto end = text.find('\n', line);
    if (end == std::string_view::npos) break;
    line = end + 1;
  }
  return false;
}

bool templates_include_system_header() {
  static const bool any = [] {
    for (const EmbeddedFile& file : embedded_templates()) {
      if (includes_system_header(file.contents)) return true;
    }
    return false;
  }();
  return any;
}

std::string toolkit_include_dir() {
  namespace fs = std::filesystem;
  std::vector<std::string> searched;
  const auto holds_headers = [&](const std::string& dir) {
    searched.push_back(dir);
    std::error_code ec;
    return fs::exists(fs::path(dir) / "cuda_runtime.h", ec);
  };
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(var); root != nullptr && *root != '\0') {
      const std::string dir = (fs::path(root) / "include").string();
      if (holds_headers(dir)) return dir;
    }
  }
#ifdef ATTNJIT_BUILD_CUDA_INCLUDE_DIR
  // CMake may hand over a ;-separated list; the first entry is the toolkit's include dir.
  std::string build_dir = ATTNJIT_BUILD_CUDA_INCLUDE_DIR;
  build_dir = build_dir.substr(0, build_dir.find(';'));
  if (!build_dir.empty() && holds_headers(build_dir)) return build_dir;
#endif
  throw_error(Status::compile,
              "a kernel template includes a CUDA toolkit header, but no toolkit include directory "
              "holding cuda_runtime.h was found (searched $CUDA_HOME/include, $CUDA_PATH/include, "
              "build-time include dir: {}); set CUDA_HOME",
              searched.empty() ? std::string("none") : fmt::format("{}", fmt::join(searched, ", ")));
}

std::vector<std::string> compile_options(std::string_view arch, bool ptx, bool include_toolkit,
                                         bool for_key) {
  const std::string valid = validate_arch(arch);
  std::vector<std::string> options = {"-std=c++17"};
  if (ptx) {
    // A virtual arch: NVRTC stops at PTX, the driver JIT-compiles it for the device at load.
    options.push_back("--gpu-architecture=compute_" + valid.substr(3));
  } else {
    options.push_back("--gpu-architecture=" + valid);
    options.push_back("-Xptxas=-v");  // the resource report, parsed by parse_ptxas_report
    // Note: NVRTC 12.9 and later keep compiled cubins in the driver's compute cache
    // (~/.nv/ComputeCache; only where libcuda loads, so never on a machine without a GPU) and
    // on a hit skip ptxas, whose report is then missing from the log. On an H200 a kernel that
    // an earlier process had compiled with another attnjit cache was stored without its
    // report, and every later process refused the entry and compiled it again (2026-11-27).
    // attnjit's own cache stands in for the driver's, so the report always comes from ptxas.
    // Not in the key: the option changes nothing in the cubin.
    if (!for_key && nvrtc_has_no_cache_option()) options.push_back("--no-cache");
  }
  if (include_toolkit) {
    options.push_back("--include-path=" +
                      (for_key ? std::string("<cuda-toolkit>") : toolkit_include_dir()));
  }
  return options;
}

std::map<std::string, ResourceUsage, std::less<>> parse_ptxas_report(std::string_view log) {
  // ptxas info    : Compiling entry function 'attnjit_fwd' for 'sm_90'
  // ptxas info    : Function properties for attnjit_fwd
  // ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  // ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, ...
  std::map<std::string, ResourceUsage, std::less<>> report;
  std::string current;  // the entry the following lines describe
  bool in_properties = false;
  std::size_t begin = 0;
  while (begin < log.size()) {
    auto end = log.find('\n', begin);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(begin, end - begin);
    begin = end + 1;
    if (!line.starts_with("ptxas")) continue;
    if (auto name = quoted_after(line, "Compiling entry function '"); !name.empty()) {
      current = std::string(name);
      report[current];
      in_properties = false;
    } else if (const auto at = line.find("Function properties for "); at != std::string_view::npos) {
      // Properties of a non-entry function (a __device__ callee) are not the kernel's.
      in_properties = line.substr(at + 24) == current;
    } else if (!current.empty() && line.find("bytes stack frame") != std::string_view::npos) {
      if (!in_properties) continue;
      ResourceUsage& usage = report[current];
      usage.stack_frame_bytes = number_before(line, "bytes stack frame").value_or(0);
      usage.spill_store_bytes = number_before(line, "bytes spill stores").value_or(0);
      usage.spill_load_bytes = number_before(line, "bytes spill loads").value_or(0);
    } else if (!current.empty() && line.find("Used ") != std::string_view::npos) {
      ResourceUsage& usage = report[current];
      usage.registers = number_before(line, "registers").value_or(0);
      usage.shared_bytes = number_before(line, "bytes smem").value_or(0);
    }
  }
  return report;
}

CompiledProgram compile_program(const std::string& source, std::string_view arch, bool ptx) {
  const bool include_toolkit = templates_include_system_header() || includes_system_header(source);
  CompiledProgram compiled;
  compiled.is_ptx = ptx;
  compiled.options = compile_options(arch, ptx, include_toolkit);

  Program program(source);
  std::vector<const char*> option_ptrs;
  for (const auto& option : compiled.options) option_ptrs.push_back(option.c_str());
  const nvrtcResult result =
      nvrtcCompileProgram(program.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
  // Note: the log first, so that a failure always carries it.
  compiled.log = program_log(program.get());
  if (result != NVRTC_SUCCESS) {
    std::string message = fmt::format("compiling {} for {} failed ({}):\n{}", kProgramName, arch,
                                      nvrtcGetErrorString(result), compiled.log);
    throw CompileError(std::move(message), source, compiled.log);
  }
  compiled.image = program_image(program.get(), ptx);
  if (!ptx) compiled.resources = parse_ptxas_report(compiled.log);
  log().debug("compiled {} for {}: {} bytes", kProgramName, arch, compiled.image.size());
  return compiled;
}

}  // namespace attnjit::nvrtc
