// The SASS of a cubin through cuobjdump, NVIDIA's disassembler: where to find it (it is not part
// of NVRTC, so it is optional), the listing, and a count of the instructions a kernel engineer
// checks first: the tensor-core MMAs, TMA and cp.async loads, barriers, transcendental units and
// local memory (spills). Used by `attnjit inspect --emit sass` and the kernel tests. Part of the
// test kit (testkit/CMakeLists.txt).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace attnjit::testkit {

// $ATTNJIT_CUOBJDUMP when set (as it is, even when nothing is there: the run then fails naming
// it), else the first cuobjdump on PATH, in $CUDA_HOME/bin or $CUDA_PATH/bin, /usr/local/cuda/bin,
// or pip's nvidia-cuda-cuobjdump (under python3's `nvidia` package). Empty when there is none.
std::string find_cuobjdump();

// What find_cuobjdump looks for, for error messages.
extern const char* const kCuobjdumpSearch;

// `cuobjdump --dump-sass [--function FUNCTION] CUBIN`'s output. Runs it without a shell; throws
// std::runtime_error with its output when it cannot start or exits non-zero.
std::string dump_sass(const std::string& cuobjdump, const std::string& cubin_path,
                      const std::string& function = {});

struct SassCounts {
  int instructions = 0;  // every instruction of the listing (NOPs included)
  // The classes below in this order, each with its count (0 included), e.g. {"HGMMA", 16}.
  std::vector<std::pair<std::string, int>> classes;
};

// Counts by opcode (the mnemonic before its first '.', predicates ignored).
SassCounts count_sass(const std::string& sass);

// "2064 instructions: HGMMA 16, HMMA 0, UTMALDG 6, ..." on one line.
std::string describe(const SassCounts& counts);

}  // namespace attnjit::testkit
