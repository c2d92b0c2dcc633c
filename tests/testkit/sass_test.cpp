// The SASS helpers (testkit/sass.hpp): counting a listing's instructions by class, choosing
// cuobjdump, and running it, with a stand-in script where a real cuobjdump may be missing.
#include "testkit/sass.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "support/scoped_env.hpp"

namespace {

namespace fs = std::filesystem;
using attnjit::test::ScopedEnv;

// Lines as cuobjdump prints them: instructions with and without predicates, the second half of
// each encoding on its own line, headers and labels that are not instructions.
constexpr const char* kListing = R"(
	code for sm_90a
		Function : attnjit_fwd
	.headerflags	@"EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */
                                                                          /* 0x000ff00000000800 */
        /*0010*/              @!P0 LDS.U.128 R4, [R2] ;                   /* 0x0000000002047984 */
        /*0020*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ; /* 0x */
        /*0030*/               @P1 HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;     /* 0x */
        /*0040*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3 ;     /* 0x */
        /*0050*/              @UP0 UTMALDG.4D [UR8], [UR4] ;              /* 0x */
.L_x_12:
        /*0060*/                   STL [R1+0x8], R5 ;                     /* 0x */
        /*0070*/                   EXIT ;                                 /* 0x */
)";

int count_of(const attnjit::testkit::SassCounts& counts, const std::string& name) {
  for (const auto& [class_name, count] : counts.classes) {
    if (class_name == name) return count;
  }
  FAIL("no class " << name);
  return -1;
}

// The folder of this process's scripts, removed when the process ends.
struct ScriptDir {
  fs::path path = fs::temp_directory_path() / ("attnjit-sass-test-" + std::to_string(getpid()));
  ScriptDir() { fs::create_directories(path); }
  ~ScriptDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// An executable shell script in this process's folder.
fs::path script(const std::string& name, const std::string& body) {
  static const ScriptDir dir;
  const fs::path path = dir.path / name;
  std::ofstream(path) << "#!/bin/sh\n" << body;
  ::chmod(path.c_str(), 0755);
  return path;
}

}  // namespace

TEST_CASE("count_sass counts instructions by mnemonic, predicates and encodings aside",
          "[testkit][sass]") {
  const attnjit::testkit::SassCounts counts = attnjit::testkit::count_sass(kListing);
  CHECK(counts.instructions == 8);
  CHECK(count_of(counts, "HGMMA") == 2);
  CHECK(count_of(counts, "LDS") == 1);
  CHECK(count_of(counts, "SYNCS") == 1);
  CHECK(count_of(counts, "UTMALDG") == 1);
  CHECK(count_of(counts, "STL") == 1);
  CHECK(count_of(counts, "HMMA") == 0);
  const std::string line = attnjit::testkit::describe(counts);
  CHECK(line.rfind("8 instructions: HGMMA 2, HMMA 0, UTMALDG 1, ", 0) == 0);
  CHECK(line.find(", LDL 0, STL 1") != std::string::npos);
  CHECK(attnjit::testkit::count_sass("no listing here\n").instructions == 0);
}

TEST_CASE("find_cuobjdump takes ATTNJIT_CUOBJDUMP as it is", "[testkit][sass]") {
  const ScopedEnv chosen("ATTNJIT_CUOBJDUMP", "/nowhere/cuobjdump");
  CHECK(attnjit::testkit::find_cuobjdump() == "/nowhere/cuobjdump");
}

TEST_CASE("dump_sass runs cuobjdump with nvdisasm's folder first on PATH and reports failures",
          "[testkit][sass]") {
  SECTION("the listing of the function asked for") {
    // The stand-in prints its arguments and the first PATH entry, where nvdisasm would be found.
    const fs::path fake = script("cuobjdump", "echo \"args: $*\"; echo \"path: ${PATH%%:*}\"\n");
    const std::string out =
        attnjit::testkit::dump_sass(fake.string(), "/tmp/k.cubin", "attnjit_fwd");
    CHECK(out.find("args: --dump-sass --function attnjit_fwd /tmp/k.cubin") != std::string::npos);
    CHECK(out.find("path: " + fake.parent_path().string() + "\n") != std::string::npos);
  }
  SECTION("a failing cuobjdump: its exit status and output") {
    const fs::path fake = script("failing-cuobjdump", "echo 'cannot read the cubin' >&2; exit 3\n");
    try {
      attnjit::testkit::dump_sass(fake.string(), "/tmp/k.cubin");
      FAIL("no exception");
    } catch (const std::runtime_error& error) {
      const std::string what = error.what();
      CHECK(what.find("failed (exit 3)") != std::string::npos);
      CHECK(what.find("cannot read the cubin") != std::string::npos);
    }
  }
  SECTION("a cuobjdump that is not there") {
    CHECK_THROWS_WITH(attnjit::testkit::dump_sass("/nowhere/cuobjdump", "/tmp/k.cubin"),
                      Catch::Contains("/nowhere/cuobjdump"));
  }
}
