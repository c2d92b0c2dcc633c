#include "cache/kernel_cache.hpp"

#include <catch2/catch.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cache/cache_admin.hpp"
#include "cache/file_io.hpp"
#include "cache_test_support.hpp"

extern char** environ;

using namespace attnjit;
using attnjit::test::LogCapture;
using attnjit::test::lookup;
using attnjit::test::TempDir;
using attnjit::test::test_key;
using attnjit::test::test_source;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> files_in(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == extension) files.push_back(it->path());
  }
  return files;
}

std::string slurp(const fs::path& path) { return cache::read_file(path).value_or(""); }

void overwrite(const fs::path& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

}  // namespace

TEST_CASE("a miss compiles and stores, then memory and disk hits", "[cache]") {
  TempDir dir;
  const std::string source = test_source(1);
  {
    KernelCache cache(dir.path());
    auto first = lookup(cache, source);
    CHECK(first.compiles == 1);
    CHECK(first.result.origin == KernelOrigin::compiled);
    const KernelBinary& binary = *first.result.binary;
    CHECK(binary.key == test_key(source, "sm_90"));
    CHECK(binary.forward_resources.registers > 0);
    CHECK(binary.forward_resources.shared_bytes == 512);
    const fs::path expected =
        dir.path() / "v1" / "sm_90" / ("cuda-" + nvrtc::nvrtc_version()) / (binary.key + ".cubin");
    CHECK(binary.path == expected.string());
    CHECK(fs::exists(expected));
    CHECK(fs::exists(cache.sidecar_path("sm_90", nvrtc::nvrtc_version(), binary.key)));

    auto second = lookup(cache, source);
    CHECK(second.compiles == 0);
    CHECK(second.result.origin == KernelOrigin::memory);
    CHECK(second.result.binary == first.result.binary);
  }
  KernelCache fresh(dir.path());
  auto from_disk = lookup(fresh, source);
  CHECK(from_disk.compiles == 0);
  CHECK(from_disk.result.origin == KernelOrigin::disk);
  CHECK(from_disk.result.binary->forward_resources.shared_bytes == 512);
  CHECK(from_disk.result.binary->config.block_m == 64);
  CHECK(from_disk.result.binary->image.size() > 0);
}

TEST_CASE("the sidecar describes the entry for an operator", "[cache]") {
  TempDir dir;
  KernelCache cache(dir.path());
  const auto found = lookup(cache, test_source(2)).result;
  const auto sidecar = nlohmann::json::parse(
      slurp(cache.sidecar_path("sm_90", nvrtc::nvrtc_version(), found.binary->key)));
  CHECK(sidecar["key"] == found.binary->key);
  CHECK(sidecar["arch"] == "sm_90");
  CHECK(sidecar["cuda_version"] == nvrtc::nvrtc_version());
  CHECK(sidecar["format"] == "cubin");
  CHECK(sidecar["size"] == found.binary->image.size());
  CHECK(sidecar["checksum"] == cache::checksum(found.binary->image));
  CHECK(sidecar["variant"]["mask"] == "true");
  CHECK(sidecar["config"]["block_m"] == 64);
  CHECK(sidecar["forward_resources"]["shared_bytes"] == 512);
  CHECK(sidecar["options"].is_array());
  CHECK(sidecar.contains("created"));
  CHECK(sidecar["attnjit_version"] == ATTNJIT_VERSION_STRING);
}

TEST_CASE("PTX entries are stored as .ptx and are distinct from cubins", "[cache]") {
  TempDir dir;
  KernelCache cache(dir.path());
  const auto ptx = lookup(cache, test_source(3), "sm_80", true).result;
  const auto cubin = lookup(cache, test_source(3), "sm_80", false).result;
  CHECK(ptx.binary->is_ptx);
  CHECK(ptx.binary->key != cubin.binary->key);
  CHECK(ptx.binary->path.ends_with(".ptx"));
  CHECK(cubin.binary->path.ends_with(".cubin"));
  KernelCache fresh(dir.path());
  const auto again = lookup(fresh, test_source(3), "sm_80", true);
  CHECK(again.result.origin == KernelOrigin::disk);
  CHECK(again.result.binary->is_ptx);
}

TEST_CASE("the cache key changes with each of its inputs", "[cache][key]") {
  const std::string source = test_source(4);
  const cache::KeyInputs base = cache::current_key_inputs(source, "sm_90", false);
  const std::string key = cache::compute_key(base);
  CHECK(key.size() == 32);
  CHECK(cache::compute_key(cache::current_key_inputs(source, "sm_90", false)) == key);

  SECTION("source") {
    auto inputs = base;
    const std::string other = source + " ";
    inputs.source = other;
    CHECK(cache::compute_key(inputs) != key);
  }
  SECTION("template content") {
    std::vector<EmbeddedFile> templates(base.templates.begin(), base.templates.end());
    REQUIRE_FALSE(templates.empty());
    const std::string changed = std::string(templates[0].contents) + "// changed\n";
    templates[0].contents = changed;
    auto inputs = base;
    inputs.templates = templates;
    CHECK(cache::compute_key(inputs) != key);
  }
  SECTION("template name") {
    std::vector<EmbeddedFile> templates(base.templates.begin(), base.templates.end());
    templates[0].name = "attnjit/renamed.cuh";
    auto inputs = base;
    inputs.templates = templates;
    CHECK(cache::compute_key(inputs) != key);
  }
  SECTION("options") {
    auto inputs = base;
    inputs.options.push_back("-lineinfo");
    CHECK(cache::compute_key(inputs) != key);
  }
  SECTION("NVRTC version") {
    auto inputs = base;
    inputs.nvrtc_version = "13.1";
    CHECK(cache::compute_key(inputs) != key);
  }
  SECTION("arch") {
    CHECK(cache::compute_key(cache::current_key_inputs(source, "sm_89", false)) != key);
    CHECK(cache::compute_key(cache::current_key_inputs(source, "sm_90a", false)) != key);
  }
  SECTION("PTX") {
    auto inputs = base;
    inputs.ptx = true;
    CHECK(cache::compute_key(inputs) != key);
  }
  SECTION("field boundaries") {
    // "ab" + "c" and "a" + "bc" must not collide.
    auto first = base, second = base;
    first.options = {"ab", "c"};
    second.options = {"a", "bc"};
    CHECK(cache::compute_key(first) != cache::compute_key(second));
  }
}

TEST_CASE("concurrent processes compile a key once and leave one valid entry", "[cache][process]") {
  TempDir dir;
  constexpr int kProcesses = 4;
  std::vector<pid_t> pids;
  const std::string worker = ATTNJIT_CACHE_WORKER;
  const std::string root = dir.path().string();
  const fs::path outputs = dir.path() / "outputs";
  fs::create_directories(outputs);
  for (int i = 0; i < kProcesses; ++i) {
    const std::string out = (outputs / std::to_string(i)).string();
    std::vector<char*> argv = {const_cast<char*>(worker.c_str()), const_cast<char*>(root.c_str()),
                               const_cast<char*>("5"), const_cast<char*>(out.c_str()), nullptr};
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, worker.c_str(), nullptr, nullptr, argv.data(), environ) == 0);
    pids.push_back(pid);
  }
  for (const pid_t pid : pids) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  int compiled = 0;
  for (int i = 0; i < kProcesses; ++i) {
    const std::string origin = slurp(outputs / std::to_string(i));
    CHECK((origin == "compiled" || origin == "disk"));
    compiled += origin == "compiled";
  }
  CHECK(compiled == 1);
  const fs::path entry_dir = dir.path() / "v1" / "sm_90" / ("cuda-" + nvrtc::nvrtc_version());
  CHECK(files_in(entry_dir, ".json").size() == 1);
  CHECK(files_in(entry_dir, ".cubin").size() == 1);
  CHECK(cache::list_entries(dir.path()).size() == 1);
  CHECK(cache::verify_entries(dir.path()).empty());
}

TEST_CASE("a process killed while it compiles under the key's lock blocks nobody",
          "[cache][process]") {
  TempDir dir;
  const std::string worker = ATTNJIT_CACHE_WORKER;
  const std::string root = dir.path().string();
  const std::string marker = (dir.path() / "marker").string();
  std::vector<char*> argv = {const_cast<char*>(worker.c_str()), const_cast<char*>(root.c_str()),
                             const_cast<char*>("8"), const_cast<char*>(marker.c_str()),
                             const_cast<char*>("hang"), nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, worker.c_str(), nullptr, nullptr, argv.data(), environ) == 0);
  // The worker writes the marker from inside its compile callback, i.e. holding the lock.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (slurp(marker) != "compiling" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(slurp(marker) == "compiling");
  REQUIRE(kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));

  // The kernel released the dead process's lock: this process compiles and stores the entry.
  KernelCache cache(dir.path());
  const auto start = std::chrono::steady_clock::now();
  const auto found = lookup(cache, test_source(8));
  CHECK(found.compiles == 1);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  CHECK(cache::list_entries(dir.path()).size() == 1);
  CHECK(cache::verify_entries(dir.path()).empty());
}

TEST_CASE("threads of one process share one compile", "[cache]") {
  TempDir dir;
  KernelCache cache(dir.path());
  std::atomic<int> compiles{0};
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const KernelBinary>> results(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto found = lookup(cache, test_source(6));
      compiles += found.compiles;
      results[i] = found.result.binary;
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(compiles == 1);
  for (const auto& binary : results) CHECK(binary == results[0]);
}

TEST_CASE("a write killed midway is recompiled and its temporaries are not entries", "[cache]") {
  TempDir dir;
  const std::string source = test_source(7);
  const std::string key = test_key(source, "sm_90");
  KernelCache cache(dir.path());
  const fs::path entry_dir = cache.directory("sm_90", nvrtc::nvrtc_version());
  fs::create_directories(entry_dir);

  SECTION("stale temporary and truncated binary, no sidecar") {
    overwrite(entry_dir / ("." + key + ".cubin.tmp.12345.0"), "partial");
    overwrite(entry_dir / ("." + key + ".json.tmp.12345.1"), "{\"key\":");
    overwrite(entry_dir / (key + ".cubin"), "\x7f" "EL");
    CHECK(cache::list_entries(dir.path()).empty());
    const auto found = lookup(cache, source);
    CHECK(found.compiles == 1);
    CHECK(found.result.binary->image.size() > 3);
    CHECK(fs::file_size(entry_dir / (key + ".cubin")) == found.result.binary->image.size());
    CHECK(cache::list_entries(dir.path()).size() == 1);
    CHECK(cache::verify_entries(dir.path()).empty());
  }
  SECTION("binary truncated after the sidecar was written") {
    { KernelCache writer(dir.path()); lookup(writer, source); }
    const fs::path binary = entry_dir / (key + ".cubin");
    const auto size = fs::file_size(binary);
    fs::resize_file(binary, size / 2);
    REQUIRE(cache::verify_entries(dir.path()).size() == 1);
    LogCapture capture;
    const auto found = lookup(cache, source);
    CHECK(found.compiles == 1);
    CHECK(fs::file_size(binary) == size);
    CHECK(capture.count("damaged entry") == 1);
    CHECK(cache::verify_entries(dir.path()).empty());
  }
}

TEST_CASE("a corrupted entry warns once, is recompiled and replaced", "[cache]") {
  TempDir dir;
  const std::string source = test_source(8);
  { KernelCache writer(dir.path()); lookup(writer, source); }
  const std::string key = test_key(source, "sm_90");
  KernelCache probe(dir.path());
  const fs::path binary = probe.binary_path("sm_90", nvrtc::nvrtc_version(), key, false);
  std::string bytes = slurp(binary);
  const std::string original = bytes;
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x40);
  overwrite(binary, bytes);

  LogCapture capture;
  SECTION("flipped byte in the binary") {
    KernelCache cache(dir.path());
    const auto found = lookup(cache, source);
    CHECK(found.compiles == 1);
    CHECK(found.result.origin == KernelOrigin::compiled);
    CHECK(slurp(binary) == original);
    CHECK(capture.count("damaged entry") == 1);
    CHECK(capture.count("checksum mismatch") == 1);
    // Replaced: the next process finds a good entry, with no further warning.
    KernelCache next(dir.path());
    CHECK(lookup(next, source).result.origin == KernelOrigin::disk);
    CHECK(capture.count("damaged entry") == 1);
  }
  SECTION("unreadable sidecar") {
    overwrite(binary, original);
    const fs::path sidecar = probe.sidecar_path("sm_90", nvrtc::nvrtc_version(), key);
    overwrite(sidecar, "{\"key\": \"trunc");
    KernelCache cache(dir.path());
    const auto found = lookup(cache, source);
    CHECK(found.compiles == 1);
    CHECK(capture.count("unreadable sidecar") == 1);
    CHECK(nlohmann::json::parse(slurp(sidecar))["key"] == key);
  }
  SECTION("sidecar config out of int range, or nested without end") {
    overwrite(binary, original);
    const fs::path sidecar = probe.sidecar_path("sm_90", nvrtc::nvrtc_version(), key);
    auto json = nlohmann::json::parse(slurp(sidecar));
    json["config"]["smem_bytes"] = 1e300;
    // Deep enough to overflow the stack if it were kept and copied; dropped while parsing.
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    std::string text = json.dump();
    text.insert(text.size() - 1, ", \"junk\": " + deep);
    overwrite(sidecar, text);
    KernelCache cache(dir.path());
    const auto found = lookup(cache, source);
    CHECK(found.compiles == 1);
    CHECK(capture.count("'smem_bytes' is not an int") == 1);
    CHECK(nlohmann::json::parse(slurp(sidecar))["config"]["smem_bytes"].is_number_integer());
  }
}

// Note: tests run as root, which chmod 0555 does not stop. A cache root whose parent is a
// regular file fails every write with ENOTDIR, for root too.
TEST_CASE("an unwritable cache directory compiles in memory and warns", "[cache]") {
  TempDir dir;
  const fs::path file = dir.path() / "not-a-directory";
  overwrite(file, "x");
  LogCapture capture;
  KernelCache cache(file / "cache");
  const auto first = lookup(cache, test_source(9));
  CHECK(first.compiles == 1);
  CHECK(first.result.binary->path.empty());
  CHECK(first.result.binary->image.size() > 0);
  CHECK(capture.count("not stored") == 1);
  const auto second = lookup(cache, test_source(9));
  CHECK(second.result.origin == KernelOrigin::memory);
  const auto third = lookup(cache, test_source(10));
  CHECK(third.compiles == 1);
  CHECK(capture.count("not stored") == 1);  // once per reason, not per kernel
  CHECK(capture.count("damaged") == 0);
}

TEST_CASE("the request map answers repeated requests without a key", "[cache]") {
  TempDir dir;
  KernelCache cache(dir.path());
  CHECK(cache.find_request("causal/bf16/128/sm_90") == nullptr);
  const auto found = lookup(cache, test_source(11)).result;
  cache.remember_request("causal/bf16/128/sm_90", found.binary);
  CHECK(cache.find_request("causal/bf16/128/sm_90") == found.binary);
  cache.clear_memory();
  CHECK(cache.find_request("causal/bf16/128/sm_90") == nullptr);
}

TEST_CASE("the cache root comes from ATTNJIT_CACHE_DIR, XDG_CACHE_HOME, then HOME", "[cache]") {
  const auto saved = [](const char* name) {
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  const auto attnjit_dir = saved("ATTNJIT_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"),
             home = saved("HOME");
  ::setenv("ATTNJIT_CACHE_DIR", "/a/b", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  CHECK(default_cache_dir() == fs::path("/a/b"));
  ::unsetenv("ATTNJIT_CACHE_DIR");
  CHECK(default_cache_dir() == fs::path("/x/attnjit"));
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(default_cache_dir() == fs::path("/h/.cache/attnjit"));
  CHECK(KernelCache().root() == fs::path("/h/.cache/attnjit"));
  CHECK(KernelCache("/elsewhere").root() == fs::path("/elsewhere"));
  const auto restore = [](const char* name, const std::optional<std::string>& value) {
    if (value) ::setenv(name, value->c_str(), 1); else ::unsetenv(name);
  };
  restore("ATTNJIT_CACHE_DIR", attnjit_dir);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}
