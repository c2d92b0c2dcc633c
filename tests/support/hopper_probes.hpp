// The Hopper primitives on one block each (hopper_probe_kernels.hpp), as backend-neutral launches
// with their expectations: a TMA box lands in the SwizzledTile layout with zeros past the
// tensor's end, wgmma.ss and wgmma.rs compute a CPU matrix product through their descriptors, and
// a warp-specialised producer/consumer ring over mbarriers adds up the right tiles.
//
// Why two backends: the sm90 kernel was written against the emulator's model of these encodings
// (tests/simt/include/attnjit_simt/hopper_*.hpp, from the PTX ISA). The SIMT tests run the probes
// under the emulator, the GPU tests on an H100; a probe that passes in one and fails in the other
// names the encoding the model gets wrong, where a failing attention case only says that
// something is.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attnjit/fwd_params.cuh"
#include "runtime/forward_plan.hpp"

namespace attnjit::hopper_probe {

// A row-major matrix of 16-bit elements with uniform random values, and the values it holds.
struct Matrix {
  int rows, cols;
  bool bf16;
  std::vector<std::uint16_t> bits;
  std::vector<double> values;

  Matrix(int rows, int cols, bool bf16, unsigned seed);
  double at(int r, int c) const { return values[static_cast<std::size_t>(r) * cols + c]; }
};

// A tensor map over `matrix` seen as [1][heads][len][head_dim]: boxes of {64 columns, box_rows},
// 128-byte swizzle, zeros out of bounds (the sm90 kernel's maps, tensor_map_encoding.hpp).
TensorMapRequest box_map(const Matrix& matrix, int head_dim, int len, int heads, int box_rows);

// One block of a probe kernel. A runner copies `inputs` where the kernel can read them, encodes
// `maps` with its driver (their addresses are those of inputs' bits), points p.q at the encoded
// maps, p.k at `extra` and p.o at `output`, launches kernel `name` and copies `output` back.
struct Launch {
  std::vector<TensorMapRequest> maps;
  std::vector<const Matrix*> inputs;
  const Matrix* extra = nullptr;  // p.k, one of inputs
  std::vector<float> output = std::vector<float>(64 * 128, 0.0f);
  unsigned threads = 128;
  unsigned smem_bytes = 1024;  // from a 1024-byte boundary
  FwdParams params{};          // the int fields carry the kernel's knobs
};

// Runs kernel `name` of kProbeKernels; returns the launch's error, empty when none.
using Runner = std::function<std::string(const std::string& name, Launch& launch)>;

// tma_box over bf16 [1][2 heads][100 rows][96]: the box of 64 rows x 64 columns from (column, row)
// of head 1 of batch entry `batch` (0, or out of range as a paged call's page -1 is) into shared
// byte `dst`, copied out byte for byte.
struct TmaBox {
  static constexpr int kRows = 100, kColumns = 96;
  int column, row, batch;
  Matrix tensor{2 * kRows, kColumns, true, 11};
  Launch launch;

  TmaBox(int dst, int column, int row, int batch = 0);
  TmaBox(const TmaBox&) = delete;  // launch points into tensor
  void check() const;  // each 16-byte chunk where SwizzledTile<64, 64> puts it, zeros outside
};

struct WgmmaShape {
  const char* kernel;
  bool bf16;
  int n, k;
};
std::vector<WgmmaShape> wgmma_ss_shapes();  // every wgmma_ss_* kernel

// D[64][n] = A[64][k] * B[n][k]^T with wgmma.ss over TMA-loaded tiles.
struct WgmmaSs {
  WgmmaShape shape;
  Matrix a, b;
  Launch launch;

  explicit WgmmaSs(const WgmmaShape& shape);
  WgmmaSs(const WgmmaSs&) = delete;
  void check() const;
};

// O[64][128] = P[64][64] * V[64][128] with V MN-major from two boxes, and P from registers
// (wgmma.rs, the default P V) or TMA-loaded into shared memory (wgmma.ss, sm90_p_smem).
struct PTimesV {
  bool bf16, p_from_smem;
  Matrix p, v;
  Launch launch;

  PTimesV(bool bf16, bool p_from_smem);
  PTimesV(const PTimesV&) = delete;
  std::string kernel() const;
  void check() const;
};

// D = sum over kTiles key tiles of Q K_i^T, a producer warp feeding a warpgroup through a
// 2-stage ring. `variant` 1 and 2 release a stage too early (races the emulator must report).
struct Ring {
  static constexpr int kTiles = 5;
  Matrix q{64, 64, true, 41};
  Matrix keys{64 * kTiles, 64, true, 42};
  Launch launch;

  explicit Ring(int variant);
  Ring(const Ring&) = delete;
  static const char* kernel() { return "producer_consumer_ring"; }
  void check() const;
};

// Every probe a GPU and the emulator must agree on, run through `run` and checked (Catch2
// sections, one per probe kernel).
void run_all_probes(const Runner& run);

}  // namespace attnjit::hopper_probe
