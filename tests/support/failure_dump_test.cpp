// Failure dumps (failure_dump.hpp) through the path every executor takes: a PreparedCase whose
// output a "kernel" left wrong, then check(). The process's dumper allows 6 dumps and this file
// makes 4 through it (round trip, unwritable directory, the two size limits), so the cases pass
// however the binary is run; the count limit is tested on a dumper of its own.
#include "support/failure_dump.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/naive.hpp"
#include "support/case_tables.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;
using namespace attnjit::kernel_test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "attnjit-dump-test.XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }
  std::vector<fs::path> files() const {
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(path_)) found.push_back(entry.path());
    return found;
  }

 private:
  fs::path path_;
};

// What the process writes to stderr (fd 2) while the object lives.
class CaptureStderr {
 public:
  CaptureStderr() : file_(std::tmpfile()), saved_(::dup(2)) {
    std::fflush(stderr);
    ::dup2(::fileno(file_), 2);
  }
  ~CaptureStderr() {
    restore();
    std::fclose(file_);
  }
  std::string text() {
    restore();
    std::string out;
    std::rewind(file_);
    for (int ch; (ch = std::fgetc(file_)) != EOF;) out += static_cast<char>(ch);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Dump {
  json header;
  std::string data;  // everything after the header line
  std::size_t file_size = 0;
  const json* array(const std::string& name) const {
    for (const json& entry : header["arrays"]) {
      if (entry["name"] == name) return &entry;
    }
    return nullptr;
  }
  std::string bytes(const std::string& name) const {
    const json* entry = array(name);
    REQUIRE(entry != nullptr);
    return data.substr((*entry)["offset"].get<std::size_t>(), (*entry)["bytes"].get<std::size_t>());
  }
};

Dump read_dump(const fs::path& path) {
  const std::string text = read_file(path);
  const std::size_t newline = text.find('\n');
  REQUIRE(newline != std::string::npos);
  Dump dump;
  dump.header = json::parse(text.substr(0, newline));
  dump.data = text.substr(newline + 1);
  dump.file_size = text.size();
  return dump;
}

std::string bytes_of(const void* data, std::size_t size) {
  return {static_cast<const char*>(data), size};
}

// A "kernel" that got every output wrong in a recognisable way, and an LSE off by 0.5.
std::vector<float> run_wrong_kernel(PreparedCase& prepared) {
  const AttentionShape& s = prepared.shape;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.num_heads_q; ++h)
      for (int row = 0; row < s.q_len; ++row)
        for (int d = 0; d < s.head_dim; ++d)
          prepared.problem.out.set(b, h, row, d, 0.125f * static_cast<float>((row + d) % 7));
  std::vector<float> lse(prepared.problem.lse.size(), 0.5f);
  return lse;
}

// The reference's output and LSE for `prepared`, as check() computes them.
void reference_of(PreparedCase& prepared, std::vector<double>& out, std::vector<double>& lse) {
  reference::naive_attention(prepared.mask, prepared.score, prepared.host_args, prepared.shape,
                             prepared.problem.buffers(), out, lse);
}

KernelCase sliding_window_case() {
  KernelCase c;
  c.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
  c.params = {"W:int"};
  c.scalars = {5};
  c.layout = Layout::blhd;
  c.row_padding = 8;
  c.head_dim = 32;
  c.shape = shape(1, 2, 1, 24, 40);
  c.seed = 17;
  return c;
}

}  // namespace

TEST_CASE("a failing case leaves a dump whose header and arrays round-trip", "[support]") {
  TempDir dir;
  const test::ScopedEnv env("ATTNJIT_TEST_DUMP_DIR", dir.path().c_str());
  const KernelCase c = sliding_window_case();
  PreparedCase prepared(c);
  const std::vector<float> lse = run_wrong_kernel(prepared);
  const CaseResult result = prepared.check(lse);
  REQUIRE_FALSE(result.passed());

  REQUIRE(dir.files().size() == 1);
  const fs::path path = dir.files()[0];
  CHECK(result.dump_path == path.string());
  CHECK(path.filename().string() == dump_file_stem(c.name()) + ".dump");
  CHECK(result.describe().find("\ndump: " + path.string()) != std::string::npos);

  const Dump dump = read_dump(path);
  const json& h = dump.header;
  CHECK(h["case"] == c.name());
  CHECK(h["mask"] == c.mask);
  CHECK(h["params"][0]["decl"] == "W:int");
  CHECK(h["params"][0]["value"] == "5");
  CHECK(h["layout"] == "blhd");
  CHECK(h["shape"]["q_len"] == 24);
  CHECK(h["shape"]["row_padding"] == 8);
  CHECK(h["seed"] == 17);
  CHECK(h["errors"]["out"]["max_abs_error"] == result.out.max_abs_error);
  CHECK(h["errors"]["lse"]["max_abs_error"] == result.lse.max_abs_error);
  CHECK(h["errors"]["out_limit"]["max_abs_error"] == result.out_limit.max_abs_error);
  CHECK(h["anatomy"] == result.anatomy);
  CHECK_FALSE(h.contains("dropped"));

  // Arrays back to back after the header line, exactly filling the file.
  std::size_t offset = 0;
  std::vector<std::string> names;
  for (const json& entry : h["arrays"]) {
    names.push_back(entry["name"]);
    CHECK(entry["offset"] == offset);
    offset += entry["bytes"].get<std::size_t>();
  }
  CHECK(names == std::vector<std::string>{"q", "k", "v", "out", "ref_out", "lse", "ref_lse"});
  CHECK(offset == dump.data.size());

  const reference::HostProblem& p = prepared.problem;
  CHECK(dump.bytes("q") == bytes_of(p.q.data(), p.q.storage_bytes()));
  CHECK(dump.bytes("k") == bytes_of(p.k.data(), p.k.storage_bytes()));
  CHECK(dump.bytes("out") == bytes_of(p.out.data(), p.out.storage_bytes()));
  CHECK(dump.bytes("lse") == bytes_of(lse.data(), lse.size() * sizeof(float)));
  const json& q = *dump.array("q");
  CHECK(q["dtype"] == "bf16");
  CHECK(q["shape"] == json({1, 2, 24, 32}));
  CHECK(q["strides"] == json({p.q.strides().batch, p.q.strides().head, p.q.strides().row, 1}));

  std::vector<double> expected_out, expected_lse;
  reference_of(prepared, expected_out, expected_lse);
  const std::vector<float> ref_out(expected_out.begin(), expected_out.end());
  const std::vector<float> ref_lse(expected_lse.begin(), expected_lse.end());
  CHECK(dump.bytes("ref_out") == bytes_of(ref_out.data(), ref_out.size() * sizeof(float)));
  CHECK(dump.bytes("ref_lse") == bytes_of(ref_lse.data(), ref_lse.size() * sizeof(float)));
}

TEST_CASE("without ATTNJIT_TEST_DUMP_DIR, or for a passing case, nothing is written", "[support]") {
  TempDir dir;  // stays empty
  const KernelCase c = sliding_window_case();
  SECTION("a failing case, the variable unset") {
    const test::ScopedEnv env("ATTNJIT_TEST_DUMP_DIR", nullptr);
    PreparedCase prepared(c);
    const CaseResult result = prepared.check(run_wrong_kernel(prepared));
    CHECK_FALSE(result.passed());
    CHECK(result.dump_path.empty());
    CHECK(result.describe().find("dump:") == std::string::npos);
  }
  SECTION("a passing case, the variable set") {
    const test::ScopedEnv env("ATTNJIT_TEST_DUMP_DIR", dir.path().c_str());
    PreparedCase prepared(c);
    std::vector<double> expected_out, expected_lse;
    reference_of(prepared, expected_out, expected_lse);
    const AttentionShape& s = prepared.shape;
    std::size_t i = 0;
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < s.num_heads_q; ++h)
        for (int row = 0; row < s.q_len; ++row)
          for (int d = 0; d < s.head_dim; ++d)
            prepared.problem.out.set(b, h, row, d, static_cast<float>(expected_out[i++]));
    const CaseResult result =
        prepared.check(std::vector<float>(expected_lse.begin(), expected_lse.end()));
    CHECK(result.passed());
    CHECK(result.dump_path.empty());
  }
  CHECK(dir.files().empty());
}

TEST_CASE("a dump that cannot be written is a warning and leaves the result as it was",
          "[support]") {
  TempDir dir;
  // Note: a regular file where the directory should be fails even for root, unlike a mode.
  const fs::path not_a_dir = dir.path() / "file";
  std::ofstream(not_a_dir) << "x";
  const KernelCase c = sliding_window_case();

  std::string expected;
  {
    const test::ScopedEnv unset("ATTNJIT_TEST_DUMP_DIR", nullptr);
    PreparedCase plain(c);
    expected = plain.check(run_wrong_kernel(plain)).describe();
  }

  const test::ScopedEnv env("ATTNJIT_TEST_DUMP_DIR", not_a_dir.c_str());
  PreparedCase prepared(c);
  const std::vector<float> lse = run_wrong_kernel(prepared);
  CaptureStderr captured;
  const CaseResult result = prepared.check(lse);
  const std::string warning = captured.text();
  CHECK(warning.find("warning: failure dump not written: ") != std::string::npos);
  CHECK(warning.find(not_a_dir.string()) != std::string::npos);
  CHECK_FALSE(result.passed());
  CHECK(result.dump_path.empty());
  CHECK(result.describe() == expected);
  CHECK(dir.files() == std::vector<fs::path>{not_a_dir});
}

TEST_CASE("a dump over 2 MiB drops q, k and v, then every array", "[support]") {
  TempDir dir;
  const test::ScopedEnv env("ATTNJIT_TEST_DUMP_DIR", dir.path().c_str());
  KernelCase c;
  c.head_dim = 64;
  c.seed = 3;
  std::vector<std::string> expected_arrays;
  SECTION("long keys: k and v are 2 MiB each, the outputs small") {
    c.shape = shape(1, 1, 1, 16, 16384);
    expected_arrays = {"out", "ref_out", "lse", "ref_lse"};
  }
  SECTION("long queries: the outputs alone are 6 MiB") {
    c.shape = shape(1, 2, 1, 8192, 16);
    expected_arrays = {};
  }
  PreparedCase prepared(c);
  const CaseResult result = prepared.check(run_wrong_kernel(prepared));
  REQUIRE_FALSE(result.passed());
  REQUIRE(!result.dump_path.empty());

  const Dump dump = read_dump(result.dump_path);
  CHECK(dump.file_size <= 2u * 1024 * 1024);
  std::vector<std::string> names;
  std::size_t total = 0;
  for (const json& entry : dump.header["arrays"]) {
    names.push_back(entry["name"]);
    total += entry["bytes"].get<std::size_t>();
  }
  CHECK(names == expected_arrays);
  CHECK(total == dump.data.size());
  const json& dropped = dump.header["dropped"];
  CHECK(dropped["arrays"][0] == "q");
  CHECK(dropped["arrays"][2] == "v");
  CHECK(dropped["arrays"].size() == 7 - expected_arrays.size());
  CHECK(dropped["reason"].get<std::string>().find("2097152 bytes") != std::string::npos);
  if (!expected_arrays.empty()) {
    const reference::HostProblem& p = prepared.problem;
    CHECK(dump.bytes("out") == bytes_of(p.out.data(), p.out.storage_bytes()));
  }
}

TEST_CASE("a dumper writes at most 6 files and says once when it stops", "[support]") {
  TempDir dir;
  const KernelCase c = sliding_window_case();
  PreparedCase prepared(c);
  CaseResult result;
  const std::vector<double> out(static_cast<std::size_t>(2 * 24 * 32), 1.0);
  const FailureRecord record{prepared, result, {}, out, {}};
  FailureDumper dumper;
  CaptureStderr captured;
  std::vector<std::string> paths;
  for (int i = 0; i < 8; ++i) {
    if (std::optional<std::string> path = dumper.write(dir.path().string(), record)) {
      paths.push_back(*path);
    }
  }
  const std::string warnings = captured.text();
  CHECK(paths.size() == 6);
  CHECK(dir.files().size() == 6);
  // The same case six times: the name, then -2 ... -6, none overwritten.
  CHECK(fs::path(paths[0]).filename() == dump_file_stem(c.name()) + ".dump");
  CHECK(fs::path(paths[5]).filename() == dump_file_stem(c.name()) + "-6.dump");
  const std::string limit_line = "the limit of 6 per process is reached";
  const std::size_t first = warnings.find(limit_line);
  CHECK(first != std::string::npos);
  CHECK(warnings.find(limit_line, first + 1) == std::string::npos);
}

TEST_CASE("dump file names keep safe characters and stay short and distinct", "[support]") {
  CHECK(dump_file_stem("mask='q_idx >= kv_idx' bf16 D=64") == "mask=_q_idx_=_kv_idx_bf16_D=64");
  CHECK(dump_file_stem("../etc/passwd") == "case.._etc_passwd");
  CHECK(dump_file_stem("") == "case");
  const std::string long_a(300, 'a');
  const std::string long_b = long_a + "b";
  CHECK(dump_file_stem(long_a).size() <= 160);
  CHECK(dump_file_stem(long_a) != dump_file_stem(long_b));
}

// Hidden ([.]): tests/tools/read_failure_dump_test.sh runs it by name to get a dump from the real
// writer, then checks what tools/read_failure_dump.py reads in it against run_wrong_kernel.
TEST_CASE("an example dump for the reader's test", "[.][dump_example]") {
  REQUIRE(std::getenv("ATTNJIT_TEST_DUMP_DIR") != nullptr);
  const KernelCase c = sliding_window_case();  // PreparedCase keeps a reference to it
  PreparedCase prepared(c);
  const CaseResult result = prepared.check(run_wrong_kernel(prepared));
  REQUIRE(!result.dump_path.empty());
}
