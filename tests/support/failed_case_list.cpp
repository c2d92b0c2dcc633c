// A Catch2 listener that appends the name of every test case with a failed assertion to the file
// $ATTNJIT_TEST_FAILED_LIST (nothing at all when it is unset or empty), one name a line, written
// so that the file can be handed back to the binary with `--input-file` and runs exactly those
// cases again. tools/gpu-check.sh uses it to rerun a failing GPU case under each of the switches
// that turn off a default (ATTNJIT_PDL=off, ATTNJIT_TUNE=score_row_shift=0, ...) in the same
// device call, instead of learning which change broke it in the next one.
//
// Note: linked as an object library: its only reference is the static registrar below, which a
// static library would drop.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// `name` as one line of a Catch2 v2 --input-file: each line becomes a quoted test spec in which
// a comma still separates specs, a backslash escapes and a double quote ends the name, so those
// three are escaped; a line break (never in our names) would split it and becomes a space.
std::string input_file_line(const std::string& name) {
  std::string line;
  line.reserve(name.size() + 8);
  for (const char c : name) {
    if (c == ',' || c == '\\' || c == '"') line += '\\';
    line += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return line;
}

class FailedCaseList : public Catch::TestEventListenerBase {
 public:
  using Catch::TestEventListenerBase::TestEventListenerBase;

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    if (stats.totals.assertions.failed == 0 && stats.totals.testCases.failed == 0) return;
    const char* path = std::getenv("ATTNJIT_TEST_FAILED_LIST");
    if (path == nullptr || *path == '\0') return;
    // Note: opened per failing case and flushed by the close, so a run killed by its timeout
    // still leaves the cases that failed before it.
    std::FILE* file = std::fopen(path, "a");
    if (file == nullptr) {
      std::fprintf(stderr, "warning: cannot append to ATTNJIT_TEST_FAILED_LIST=%s\n", path);
      return;
    }
    std::fprintf(file, "%s\n", input_file_line(stats.testInfo.name).c_str());
    std::fclose(file);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(FailedCaseList)
