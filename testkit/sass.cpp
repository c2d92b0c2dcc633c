#include "testkit/sass.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace attnjit::testkit {
namespace {

namespace fs = std::filesystem;

// The instruction classes reported, in order: tensor cores (Hopper, then mma.sync), loads by
// path (TMA, cp.async, ldmatrix, shared, global), stores, the special-function unit and the bf16
// / fp16 conversions of P, barriers (named and mbarrier), the wgmma fences, register
// reallocation, and local memory, which in attnjit kernels means spills.
constexpr const char* kClasses[] = {"HGMMA", "HMMA",      "UTMALDG",    "LDGSTS", "LDSM", "LDS",
                                    "LDG",   "STS",       "STG",        "MUFU",   "F2FP", "BAR",
                                    "SYNCS", "WARPGROUP", "USETMAXREG", "LDL",    "STL"};

// Runs argv (no shell) with `path_front` (when not empty) put before PATH, returns its exit
// status and stdout + stderr.
std::pair<int, std::string> run_capture(const std::vector<std::string>& args,
                                        const std::string& path_front = {}) {
  std::vector<std::string> environment;
  bool path_set = false;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string variable = *entry;
    if (!path_front.empty() && variable.rfind("PATH=", 0) == 0) {
      variable = "PATH=" + path_front + ":" + variable.substr(5);
      path_set = true;
    }
    environment.push_back(std::move(variable));
  }
  if (!path_front.empty() && !path_set) environment.push_back("PATH=" + path_front);
  std::vector<char*> envp;
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    throw std::runtime_error("cannot run " + args[0] + ": " + std::strerror(spawned));
  }
  std::string output;
  char buffer[65536];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    output.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

bool is_executable(const fs::path& candidate) {
  std::error_code error;
  return fs::is_regular_file(candidate, error) && ::access(candidate.c_str(), X_OK) == 0;
}

// The folder of python3's `nvidia` package (pip's CUDA wheels), or empty.
std::string pip_nvidia_root() {
  try {
    auto [status, output] =
        run_capture({"python3", "-c", "import nvidia; print(*nvidia.__path__)"});
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
    return status == 0 && output.find('\n') == std::string::npos ? output : std::string();
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace

const char* const kCuobjdumpSearch =
    "$ATTNJIT_CUOBJDUMP, PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, pip's "
    "nvidia-cuda-cuobjdump";

std::string find_cuobjdump() {
  if (const char* chosen = std::getenv("ATTNJIT_CUOBJDUMP"); chosen != nullptr && *chosen != '\0') {
    return chosen;
  }
  std::vector<fs::path> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream list(path);
    for (std::string dir; std::getline(list, dir, ':');) {
      if (!dir.empty()) dirs.emplace_back(dir);
    }
  }
  for (const char* root : {std::getenv("CUDA_HOME"), std::getenv("CUDA_PATH")}) {
    if (root != nullptr && *root != '\0') dirs.push_back(fs::path(root) / "bin");
  }
  dirs.emplace_back("/usr/local/cuda/bin");
  for (const fs::path& dir : dirs) {
    if (is_executable(dir / "cuobjdump")) return (dir / "cuobjdump").string();
  }
  // Note: last, since it starts a python3.
  if (const std::string root = pip_nvidia_root(); !root.empty()) {
    for (const char* cuda : {"cu13", "cu12", "cuda_cuobjdump"}) {
      const fs::path candidate = fs::path(root) / cuda / "bin" / "cuobjdump";
      if (is_executable(candidate)) return candidate.string();
    }
  }
  return {};
}

std::string dump_sass(const std::string& cuobjdump, const std::string& cubin_path,
                      const std::string& function) {
  std::vector<std::string> args = {cuobjdump, "--dump-sass"};
  if (!function.empty()) args.insert(args.end(), {"--function", function});
  args.push_back(cubin_path);
  // Note: cuobjdump disassembles with nvdisasm, which it looks for on PATH; the toolkit and pip
  // put the two side by side, so its own folder goes first.
  const auto [status, output] = run_capture(args, fs::path(cuobjdump).parent_path().string());
  if (status != 0) {
    throw std::runtime_error(cuobjdump + " --dump-sass failed (exit " + std::to_string(status) +
                             "): " + output);
  }
  return output;
}

SassCounts count_sass(const std::string& sass) {
  // "        /*0040*/  @!P0 LDS.U.128 R4, [R2] ;   /* 0x... */": the address, an optional
  // predicate, the mnemonic.
  static const std::regex instruction(
      R"(^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*))");
  std::map<std::string, int> by_opcode;
  SassCounts counts;
  std::stringstream lines(sass);
  std::smatch match;
  for (std::string line; std::getline(lines, line);) {
    if (!std::regex_search(line, match, instruction)) continue;
    ++counts.instructions;
    ++by_opcode[match[1].str()];
  }
  for (const char* name : kClasses) {
    const auto found = by_opcode.find(name);
    counts.classes.emplace_back(name, found == by_opcode.end() ? 0 : found->second);
  }
  return counts;
}

std::string describe(const SassCounts& counts) {
  std::string text = std::to_string(counts.instructions) + " instructions:";
  for (std::size_t i = 0; i < counts.classes.size(); ++i) {
    text += (i == 0 ? " " : ", ") + counts.classes[i].first + " " +
            std::to_string(counts.classes[i].second);
  }
  return text;
}

}  // namespace attnjit::testkit
