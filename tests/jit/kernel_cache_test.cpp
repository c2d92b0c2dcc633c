#include "jit/kernel_cache.hpp"

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
#include "../cache/store_test_entries.hpp"
#include "cache/sidecar.hpp"
#include "kernel_cache_support.hpp"

extern char** environ;

using namespace attnjit;
using namespace attnjit::test;
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

fs::path sidecar_of(const KernelCache& cache, const std::string& source,
                    const std::string& arch = "sm_90") {
  return cache.store().sidecar_path(cache.entry_id(test_request(source, arch)));
}

fs::path binary_of(const KernelCache& cache, const std::string& source,
                   const std::string& arch = "sm_90") {
  return cache.store().binary_path(cache.entry_id(test_request(source, arch)));
}

pid_t spawn_worker(const std::vector<std::string>& args) {
  const std::string worker = ATTNJIT_CACHE_WORKER;
  std::vector<char*> argv = {const_cast<char*>(worker.c_str())};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, worker.c_str(), nullptr, nullptr, argv.data(), environ) == 0);
  return pid;
}

// Starts a worker that holds the lock of test_source(variant) while it "compiles" forever.
pid_t spawn_lock_holder(const TempDir& dir, int variant) {
  const fs::path marker = dir.path() / ("marker" + std::to_string(variant));
  const pid_t pid = spawn_worker({dir.path().string(), std::to_string(variant), marker.string(), "hang"});
  // The worker writes the marker from inside its compile callback, i.e. holding the lock.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (slurp(marker) != "compiling" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(slurp(marker) == "compiling");
  return pid;
}

void kill_and_reap(pid_t pid) {
  REQUIRE(kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
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
    CHECK(binary.forward_resources().registers > 0);
    CHECK(binary.forward_resources().shared_bytes == 512);
    // Readable names: what the kernel is, then its key.
    const fs::path expected = dir.path() / "v1" / "sm_90" / ("cuda-" + nvrtc::nvrtc_version()) /
                              ("bf16-d64-" + binary.key + ".cubin");
    CHECK(binary.path == expected.string());
    CHECK(fs::exists(expected));
    CHECK(fs::exists(sidecar_of(cache, source)));

    auto second = lookup(cache, source);
    CHECK(second.compiles == 0);
    CHECK(second.result.origin == KernelOrigin::memory);
    CHECK(second.result.binary == first.result.binary);
  }
  KernelCache fresh(dir.path());
  auto from_disk = lookup(fresh, source);
  CHECK(from_disk.compiles == 0);
  CHECK(from_disk.result.origin == KernelOrigin::disk);
  CHECK(from_disk.result.binary->forward_resources().shared_bytes == 512);
  CHECK(from_disk.result.binary->config.block_m == 64);
  CHECK(from_disk.result.binary->image.size() > 0);
  // Every entry's report comes back from the sidecar, as compiled.
  const auto& entries = from_disk.result.binary->entry_resources;
  REQUIRE(entries.count("attnjit_fwd") == 1);
  CHECK(entries.at("attnjit_fwd").shared_bytes == 512);
  CHECK(entries.at("attnjit_fwd").registers ==
        from_disk.result.binary->forward_resources().registers);
}

TEST_CASE("the sidecar describes the entry for an operator", "[cache]") {
  TempDir dir;
  KernelCache cache(dir.path());
  const auto found = lookup(cache, test_source(2)).result;
  const auto sidecar = nlohmann::json::parse(slurp(sidecar_of(cache, test_source(2))));
  CHECK(sidecar["key"] == found.binary->key);
  CHECK(sidecar["arch"] == "sm_90");
  CHECK(sidecar["cuda_version"] == nvrtc::nvrtc_version());
  CHECK(sidecar["format"] == "cubin");
  CHECK(sidecar["size"] == found.binary->image.size());
  CHECK(sidecar["checksum"] == cache::checksum(found.binary->image));
  CHECK(sidecar["variant"]["mask"] == "true");
  CHECK(sidecar["summary"] == "test: mask='true' score='score' bf16 d64");
  CHECK(sidecar["config"]["block_m"] == 64);
  CHECK(sidecar["resources"]["attnjit_fwd"]["shared_bytes"] == 512);
  CHECK_FALSE(sidecar.contains("forward_resources"));  // one record of each report
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
  const KeyInputs base = current_key_inputs(source, "sm_90", false);
  const std::string key = compute_key(base);
  CHECK(key.size() == 32);
  CHECK(compute_key(current_key_inputs(source, "sm_90", false)) == key);

  SECTION("source") {
    auto inputs = base;
    const std::string other = source + " ";
    inputs.source = other;
    CHECK(compute_key(inputs) != key);
  }
  SECTION("template content") {
    std::vector<EmbeddedFile> templates(base.templates.begin(), base.templates.end());
    REQUIRE_FALSE(templates.empty());
    const std::string changed = std::string(templates[0].contents) + "// changed\n";
    templates[0].contents = changed;
    auto inputs = base;
    inputs.templates = templates;
    CHECK(compute_key(inputs) != key);
  }
  SECTION("template name") {
    std::vector<EmbeddedFile> templates(base.templates.begin(), base.templates.end());
    templates[0].name = "attnjit/renamed.cuh";
    auto inputs = base;
    inputs.templates = templates;
    CHECK(compute_key(inputs) != key);
  }
  SECTION("options") {
    auto inputs = base;
    inputs.options.push_back("-lineinfo");
    CHECK(compute_key(inputs) != key);
  }
  SECTION("NVRTC version") {
    auto inputs = base;
    inputs.nvrtc_version = "13.1";
    CHECK(compute_key(inputs) != key);
  }
  SECTION("arch") {
    CHECK(compute_key(current_key_inputs(source, "sm_89", false)) != key);
    CHECK(compute_key(current_key_inputs(source, "sm_90a", false)) != key);
  }
  SECTION("PTX") {
    auto inputs = base;
    inputs.ptx = true;
    CHECK(compute_key(inputs) != key);
  }
  SECTION("field boundaries") {
    // "ab" + "c" and "a" + "bc" must not collide.
    auto first = base, second = base;
    first.options = {"ab", "c"};
    second.options = {"a", "bc"};
    CHECK(compute_key(first) != compute_key(second));
  }
}

TEST_CASE("concurrent processes compile a key once and leave one valid entry", "[cache][process]") {
  TempDir dir;
  constexpr int kProcesses = 4;
  const fs::path outputs = dir.path() / "outputs";
  fs::create_directories(outputs);
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcesses; ++i) {
    pids.push_back(spawn_worker({dir.path().string(), "5", (outputs / std::to_string(i)).string()}));
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
  kill_and_reap(spawn_lock_holder(dir, 8));
  // The kernel released the dead process's lock: this process compiles and stores the entry.
  KernelCache cache(dir.path());
  const auto start = std::chrono::steady_clock::now();
  const auto found = lookup(cache, test_source(8));
  CHECK(found.compiles == 1);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  CHECK(cache::list_entries(dir.path()).size() == 1);
  CHECK(cache::verify_entries(dir.path()).empty());
}

TEST_CASE("a lock held by a stopped process costs the timeout, then a compile in memory",
          "[cache][process][lock]") {
  TempDir dir;
  const pid_t holder = spawn_lock_holder(dir, 12);
  REQUIRE(kill(holder, SIGSTOP) == 0);
  {
    const ScopedEnv timeout("ATTNJIT_CACHE_LOCK_TIMEOUT", "1");
    LogCapture capture;
    KernelCache cache(dir.path());
    const auto start = std::chrono::steady_clock::now();
    const auto found = lookup(cache, test_source(12));
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK(found.compiles == 1);
    CHECK(found.result.binary->path.empty());  // not stored: the holder may still write it
    CHECK(found.result.binary->image.size() > 0);
    CHECK(waited >= std::chrono::seconds(1));
    CHECK(waited < std::chrono::seconds(30));
    CHECK(capture.count("another process held") == 1);
    CHECK(capture.count("in memory without storing") == 1);
    CHECK(cache::list_entries(dir.path()).empty());
  }
  kill_and_reap(holder);
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
  KernelCache cache(dir.path());
  const fs::path binary = binary_of(cache, source);
  const fs::path entry_dir = binary.parent_path();
  fs::create_directories(entry_dir);

  SECTION("stale temporaries and truncated binary, no sidecar") {
    const pid_t dead = 999999999;  // above any pid_max: no such process
    const fs::path stale_binary = entry_dir / cache::temp_file_name(binary.filename().string(), dead, 0);
    const fs::path stale_sidecar =
        entry_dir / cache::temp_file_name(sidecar_of(cache, source).filename().string(), dead, 1);
    overwrite(stale_binary, "partial");
    overwrite(stale_sidecar, "{\"key\":");
    overwrite(binary, "\x7f" "EL");
    CHECK(cache::list_entries(dir.path()).empty());
    const auto found = lookup(cache, source);
    CHECK(found.compiles == 1);
    CHECK(found.result.binary->image.size() > 3);
    CHECK(fs::file_size(binary) == found.result.binary->image.size());
    CHECK(cache::list_entries(dir.path()).size() == 1);
    CHECK(cache::verify_entries(dir.path()).empty());
    // The next writer of the key removed what its dead writer left.
    CHECK_FALSE(fs::exists(stale_binary));
    CHECK_FALSE(fs::exists(stale_sidecar));
  }
  SECTION("binary truncated after the sidecar was written") {
    { KernelCache writer(dir.path()); lookup(writer, source); }
    const auto size = fs::file_size(binary);
    fs::resize_file(binary, size / 2);
    REQUIRE(cache::verify_entries(dir.path()).size() == 1);
    LogCapture capture;
    const auto found = lookup(cache, source);
    CHECK(found.compiles == 1);
    CHECK(fs::file_size(binary) == size);
    CHECK(capture.count("refusing entry") == 1);
    CHECK(cache::verify_entries(dir.path()).empty());
  }
}

TEST_CASE("a corrupted entry warns once, is recompiled and replaced", "[cache]") {
  TempDir dir;
  const std::string source = test_source(8);
  { KernelCache writer(dir.path()); lookup(writer, source); }
  KernelCache probe(dir.path());
  const fs::path binary = binary_of(probe, source);
  const fs::path sidecar = sidecar_of(probe, source);
  const std::string original = slurp(binary);

  LogCapture capture;
  SECTION("flipped byte in the binary") {
    std::string bytes = original;
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x40);
    overwrite(binary, bytes);
    KernelCache cache(dir.path());
    const auto found = lookup(cache, source);
    CHECK(found.compiles == 1);
    CHECK(found.result.origin == KernelOrigin::compiled);
    CHECK(slurp(binary) == original);
    CHECK(capture.count("refusing entry") == 1);
    CHECK(capture.count("checksum mismatch") == 1);
    // Replaced: the next process finds a good entry, with no further warning.
    KernelCache next(dir.path());
    CHECK(lookup(next, source).result.origin == KernelOrigin::disk);
    CHECK(capture.count("refusing entry") == 1);
  }
  SECTION("unreadable sidecar") {
    overwrite(sidecar, "{\"key\": \"trunc");
    KernelCache cache(dir.path());
    const auto found = lookup(cache, source);
    CHECK(found.compiles == 1);
    CHECK(capture.count("unreadable sidecar") == 1);
    CHECK(nlohmann::json::parse(slurp(sidecar))["key"] == found.result.binary->key);
  }
  SECTION("sidecar config out of int range") {
    edit_sidecar(sidecar, [](nlohmann::json& json) { json["config"]["smem_bytes"] = 1e300; });
    KernelCache cache(dir.path());
    CHECK(lookup(cache, source).compiles == 1);
    CHECK(capture.count("'smem_bytes' is not an int") == 1);
    CHECK(nlohmann::json::parse(slurp(sidecar))["config"]["smem_bytes"].is_number_integer());
  }
  SECTION("sidecar nested without end") {
    // Deep enough to overflow the stack if it were kept and copied; dropped while parsing.
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    std::string text = slurp(sidecar);
    text.insert(text.rfind('}'), ", \"junk\": " + deep);
    overwrite(sidecar, text);
    KernelCache cache(dir.path());
    CHECK(lookup(cache, source).compiles == 1);
    CHECK(capture.count("refusing entry") == 1);
  }
}

TEST_CASE("an entry copied under another key's names is refused, recompiled and replaced",
          "[cache]") {
  TempDir dir;
  const std::string a = test_source(13), b = test_source(14);
  {
    KernelCache writer(dir.path());
    lookup(writer, a);
    lookup(writer, b);
  }
  KernelCache probe(dir.path());
  fs::copy_file(binary_of(probe, b), binary_of(probe, a), fs::copy_options::overwrite_existing);
  fs::copy_file(sidecar_of(probe, b), sidecar_of(probe, a), fs::copy_options::overwrite_existing);
  REQUIRE(cache::verify_entries(dir.path()).size() == 1);

  LogCapture capture;
  KernelCache cache(dir.path());
  const auto found = lookup(cache, a);
  CHECK(found.compiles == 1);
  CHECK(found.result.binary->key == test_key(a, "sm_90"));
  CHECK(capture.count("records key") == 1);
  CHECK(cache::verify_entries(dir.path()).empty());
}

TEST_CASE("a stored kernel whose variant or configuration is not the request's is refused",
          "[cache]") {
  TempDir dir;
  const std::string source = test_source(15);
  { KernelCache writer(dir.path()); lookup(writer, source); }
  const fs::path sidecar = sidecar_of(KernelCache(dir.path()), source);
  std::string reason;
  SECTION("another variant under the same key") {
    edit_sidecar(sidecar, [](nlohmann::json& json) { json["variant"]["mask_canonical"] = "false"; });
    reason = "records variant mask_canonical";
  }
  SECTION("another head dim") {
    edit_sidecar(sidecar, [](nlohmann::json& json) { json["variant"]["head_dim"] = 128; });
    reason = "records variant head_dim";
  }
  SECTION("a launch configuration that is not the variant's") {
    edit_sidecar(sidecar, [](nlohmann::json& json) { json["config"]["num_warps"] = 1; });
    reason = "is not the variant's";
  }
  SECTION("negative resources") {
    edit_sidecar(sidecar,
                 [](nlohmann::json& json) { json["resources"]["attnjit_fwd"]["registers"] = -1; });
    reason = "'registers' is not an int >= 0";
  }
  SECTION("an entry's resources that are not a report") {
    edit_sidecar(sidecar, [](nlohmann::json& json) { json["resources"]["attnjit_fwd"] = "many"; });
    reason = "sidecar lacks 'registers'";
  }
  SECTION("resources that are not an object") {
    edit_sidecar(sidecar, [](nlohmann::json& json) { json["resources"] = 3; });
    reason = "'resources' is not an object";
  }
  SECTION("an edit that was not resealed") {
    edit_sidecar(sidecar, [](nlohmann::json& json) { json["variant"]["name"] = "renamed"; },
                 /*reseal=*/false);
    reason = "integrity check failed";
  }
  LogCapture capture;
  KernelCache cache(dir.path());
  const auto found = lookup(cache, source);
  CHECK(found.compiles == 1);
  CHECK(capture.count(reason) == 1);
  CHECK(found.result.binary->config.block_m == 64);
  CHECK(found.result.binary->config.num_warps == 0);  // the request's, never the sidecar's
  KernelCache next(dir.path());
  CHECK(lookup(next, source).result.origin == KernelOrigin::disk);
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
  CHECK(capture.count("refusing entry") == 0);
}

TEST_CASE("a cache root that other users can write is refused: compiled in memory, not stored",
          "[cache][permissions]") {
  TempDir dir;
  const fs::path root = dir.path() / "cache";
  { KernelCache writer(root); lookup(writer, test_source(16)); }
  fs::permissions(root, fs::perms(0777));
  LogCapture capture;
  KernelCache cache(root);
  const auto found = lookup(cache, test_source(16));
  CHECK(found.compiles == 1);  // the entry there is not trusted either
  CHECK(found.result.binary->path.empty());
  CHECK(lookup(cache, test_source(17)).result.binary->path.empty());
  CHECK(capture.count("writable by all users") == 1);
  CHECK(cache::list_entries(root).size() == 1);
}

TEST_CASE("the kernel cache creates nothing that others can write, whatever the umask",
          "[cache][permissions]") {
  TempDir dir;
  const fs::path root = dir.path() / "cache";
  {
    const ScopedUmask umask(0);
    KernelCache cache(root);
    lookup(cache, test_source(18));
  }
  const fs::path binary = binary_of(KernelCache(root), test_source(18));
  for (fs::path path = binary.parent_path(); path != dir.path(); path = path.parent_path()) {
    INFO(path);
    CHECK(file_mode(path) == 0700);
  }
  for (const char* extension : {".cubin", ".json", ".lock"}) {
    const fs::path path = fs::path(binary).replace_extension(extension);
    INFO(path);
    CHECK(file_mode(path) == 0600);
  }
}

TEST_CASE("a lock file planted as a symlink is not followed", "[cache][symlink]") {
  TempDir dir, outside;
  const std::string source = test_source(19);
  KernelCache cache(dir.path());
  const fs::path lock = fs::path(binary_of(cache, source)).replace_extension(".lock");
  fs::create_directories(lock.parent_path());
  fs::create_symlink(outside.path() / "created-through-the-link", lock);
  LogCapture capture;
  const auto found = lookup(cache, source);
  CHECK(found.compiles == 1);
  CHECK_FALSE(found.result.binary->path.empty());  // stored all the same: writes are atomic
  CHECK_FALSE(fs::exists(outside.path() / "created-through-the-link"));
  CHECK(capture.count("symbolic link") == 1);
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

TEST_CASE("the kernel cache's root is the one given, else the default", "[cache]") {
  const ScopedEnv dir("ATTNJIT_CACHE_DIR", "/a/b");
  CHECK(KernelCache().root() == fs::path("/a/b"));
  CHECK(KernelCache("/elsewhere").root() == fs::path("/elsewhere"));
}
