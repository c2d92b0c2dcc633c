#include "support/hopper_probes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "attnjit/copy.cuh"
#include "common/half.hpp"
#include "testkit/error_anatomy.hpp"

namespace attnjit::hopper_probe {

Matrix::Matrix(int rows_, int cols_, bool bf16_, unsigned seed)
    : rows(rows_), cols(cols_), bf16(bf16_) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (int i = 0; i < rows * cols; ++i) {
    const float x = uniform(rng);
    bits.push_back(bf16 ? float_to_bf16_bits(x) : float_to_fp16_bits(x));
    values.push_back(bf16 ? bf16_bits_to_float(bits.back()) : fp16_bits_to_float(bits.back()));
  }
}

TensorMapRequest box_map(const Matrix& matrix, int head_dim, int len, int heads, int box_rows) {
  TensorMapRequest request;
  request.address = matrix.bits.data();
  request.dtype = matrix.bf16 ? DType::bf16 : DType::fp16;
  const std::uint64_t row_bytes = 2 * static_cast<std::uint64_t>(head_dim);
  request.dims[0] = static_cast<std::uint64_t>(head_dim);
  request.dims[1] = static_cast<std::uint64_t>(len);
  request.dims[2] = static_cast<std::uint64_t>(heads);
  request.dims[3] = 1;
  request.strides[0] = row_bytes;
  request.strides[1] = row_bytes * static_cast<std::uint64_t>(len);
  request.strides[2] = request.strides[1] * static_cast<std::uint64_t>(heads);
  request.box[0] = 64;
  request.box[1] = static_cast<std::uint32_t>(box_rows);
  request.box[2] = 1;
  request.box[3] = 1;
  return request;
}

namespace {

// The fp32 sums a wgmma may return for an exact sum whose terms add up to `abs_sum` in magnitude:
// the hardware's accumulation order and rounding are not the emulator's exact sum rounded once,
// but any layout mistake is off by the size of a term.
double accumulation_tolerance(double abs_sum) { return 4e-5 * abs_sum + 1e-6; }

struct Expected {
  double sum = 0.0, abs_sum = 0.0;
  void add(double term) {
    sum += term;
    abs_sum += std::fabs(term);
  }
};

// D[64][n] of `output` against `expected(r, c)`; on failure the first wrong elements and where
// the wrong ones are (testkit's error anatomy, read as one head of 64 rows and n columns).
template <typename ExpectedAt>
void check_product(const std::string& what, const std::vector<float>& output, int n,
                   ExpectedAt expected_at) {
  std::vector<double> actual, expected;
  double tolerance = 0.0;
  int wrong = 0;
  std::string first_wrong;
  for (int r = 0; r < 64; ++r) {
    for (int c = 0; c < n; ++c) {
      const Expected e = expected_at(r, c);
      const double got = output[static_cast<std::size_t>(r) * n + c];
      actual.push_back(got);
      expected.push_back(e.sum);
      tolerance = std::max(tolerance, accumulation_tolerance(e.abs_sum));
      if (!(std::fabs(got - e.sum) <= accumulation_tolerance(e.abs_sum))) {
        if (++wrong <= 4) first_wrong += fmt::format("  D({}, {}) = {} where {} is expected\n", r, c, got, e.sum);
      }
    }
  }
  INFO(what << ": " << wrong << " of " << 64 * n << " elements wrong\n"
            << first_wrong << "where:\n"
            << (wrong == 0 ? std::string()
                           : testkit::describe_error_anatomy(testkit::AnatomyInput{
                                 1, 1, 64, n, actual, expected, {}, {}, tolerance})));
  CHECK(wrong == 0);
}

// Where the 16 bytes `chunk` are in the 64 x 128-byte box `out`, as "row R chunk C", or "nowhere".
std::string find_chunk(const unsigned char* out, const std::uint16_t (&chunk)[8]) {
  for (int offset = 0; offset < 64 * 128; offset += 16) {
    if (std::memcmp(out + offset, chunk, 16) == 0) {
      return fmt::format("row {} chunk {}", offset / 128, offset % 128 / 16);
    }
  }
  return "nowhere";
}

}  // namespace

TmaBox::TmaBox(int dst, int column_, int row_, int batch_)
    : column(column_), row(row_), batch(batch_) {
  launch.maps = {box_map(tensor, kColumns, kRows, 2, 64)};
  launch.inputs = {&tensor};
  launch.threads = 32;
  launch.smem_bytes = static_cast<unsigned>(dst) + 64 * 128;
  launch.params.q_len = 64 * 128;
  launch.params.num_heads_q = dst;
  launch.params.num_heads_kv = column;
  launch.params.kv_len = row;
  launch.params.num_splits = batch;
}

void TmaBox::check() const {
  const auto* out = reinterpret_cast<const unsigned char*>(launch.output.data());
  int wrong = 0;
  std::string first_wrong;
  for (int r = 0; r < 64; ++r) {
    for (int chunk = 0; chunk < 8; ++chunk) {
      std::uint16_t expected[8] = {};
      bool in_range = false;
      for (int i = 0; i < 8; ++i) {
        const int x = column + 8 * chunk + i, y = row + r;
        if (batch == 0 && x < kColumns && y >= 0 && y < kRows) {
          expected[i] = tensor.bits[static_cast<std::size_t>(kRows + y) * kColumns + x];
          in_range = true;
        }
      }
      const int at = SwizzledTile<64, 64>::offset(r, chunk);
      if (std::memcmp(out + at, expected, 16) != 0 && ++wrong <= 6) {
        first_wrong += fmt::format(
            "  box row {} chunk {} belongs at row {} chunk {}; {}\n", r, chunk, at / 128,
            at % 128 / 16,
            in_range ? "it is at " + find_chunk(out, expected) : "out of range: zeros expected");
      }
    }
  }
  INFO("TMA box at column " << column << ", row " << row << ", batch " << batch << ": " << wrong
                            << " of 512 16-byte chunks misplaced\n"
                            << first_wrong);
  CHECK(wrong == 0);
}

std::vector<WgmmaShape> wgmma_ss_shapes() {
  return {{"wgmma_ss_bf16_n64_k16", true, 64, 16},     {"wgmma_ss_fp16_n64_k16", false, 64, 16},
          {"wgmma_ss_bf16_n128_k16", true, 128, 16},   {"wgmma_ss_fp16_n128_k16", false, 128, 16},
          {"wgmma_ss_bf16_n64_k128", true, 64, 128},   {"wgmma_ss_fp16_n64_k128", false, 64, 128},
          {"wgmma_ss_bf16_n128_k128", true, 128, 128}, {"wgmma_ss_fp16_n128_k128", false, 128, 128}};
}

WgmmaSs::WgmmaSs(const WgmmaShape& shape_)
    : shape(shape_), a(64, shape_.k, shape_.bf16, 21), b(shape_.n, shape_.k, shape_.bf16, 22) {
  launch.maps = {box_map(a, shape.k, 64, 1, 64), box_map(b, shape.k, shape.n, 1, shape.n)};
  launch.inputs = {&a, &b};
  launch.smem_bytes = static_cast<unsigned>(1024 + (shape.k + 63) / 64 * (64 + shape.n) * 128);
}

void WgmmaSs::check() const {
  check_product(shape.kernel, launch.output, shape.n, [&](int r, int c) {
    Expected e;
    for (int k = 0; k < shape.k; ++k) e.add(a.at(r, k) * b.at(c, k));
    return e;
  });
}

PTimesV::PTimesV(bool bf16_, bool p_from_smem_)
    : bf16(bf16_), p_from_smem(p_from_smem_), p(64, 64, bf16_, 31), v(64, 128, bf16_, 32) {
  launch.inputs = {&p, &v};
  launch.maps = {box_map(v, 128, 64, 1, 64)};
  if (p_from_smem) {
    launch.maps.push_back(box_map(p, 64, 64, 1, 64));
    launch.smem_bytes = 1024 + 3 * 64 * 128;
  } else {
    launch.extra = &p;
    launch.smem_bytes = 1024 + 2 * 64 * 128;
  }
}

std::string PTimesV::kernel() const {
  return fmt::format("wgmma_{}_{}", p_from_smem ? "ss_mn" : "rs", bf16 ? "bf16" : "fp16");
}

void PTimesV::check() const {
  check_product(kernel(), launch.output, 128, [&](int r, int c) {
    Expected e;
    for (int k = 0; k < 64; ++k) e.add(p.at(r, k) * v.at(k, c));
    return e;
  });
}

Ring::Ring(int variant) {
  launch.maps = {box_map(q, 64, 64, 1, 64), box_map(keys, 64, 64 * kTiles, 1, 64)};
  launch.inputs = {&q, &keys};
  launch.threads = 160;
  launch.smem_bytes = 1024 + 3 * 64 * 128;
  launch.params.num_heads_q = kTiles;
  launch.params.batch = variant;
}

void Ring::check() const {
  check_product(kernel(), launch.output, 64, [&](int r, int c) {
    Expected e;
    for (int tile = 0; tile < kTiles; ++tile) {
      for (int k = 0; k < 64; ++k) e.add(q.at(r, k) * keys.at(64 * tile + c, k));
    }
    return e;
  });
}

void run_all_probes(const Runner& run) {
  SECTION("TMA: a box lands as a SwizzledTile block, out-of-range elements as zeros") {
    // In range; rows past the end; columns past the end and rows before the start. Then boxes
    // wholly out of range (the sm90 kernel's boxes past a packed tensor's last row are): all rows
    // past the end, all before the start, all columns past the end, a batch entry out of range
    // (a paged call's page -1); every byte zero, and the barrier's transaction count still the
    // whole box's (else the wait never completes).
    struct At {
      int column, row, batch;
    };
    for (const At& at : {At{0, 0, 0}, At{0, 64, 0}, At{64, -8, 0}, At{0, 100, 0}, At{0, 1000, 0},
                         At{0, -64, 0}, At{128, 0, 0}, At{0, 0, -1}, At{0, 0, 1}}) {
      TmaBox box(1024, at.column, at.row, at.batch);
      const std::string error = run("tma_box", box.launch);
      CHECK(error == "");
      if (error.empty()) box.check();
    }
  }
  SECTION("wgmma.ss: descriptors over TMA-loaded tiles compute A * B^T") {
    for (const WgmmaShape& shape : wgmma_ss_shapes()) {
      WgmmaSs probe(shape);
      const std::string error = run(shape.kernel, probe.launch);
      CHECK(error == "");
      if (error.empty()) probe.check();
    }
  }
  SECTION("P V: P from registers (wgmma.rs) or shared memory (wgmma.ss), V MN-major") {
    for (const bool p_from_smem : {false, true}) {
      for (const bool bf16 : {true, false}) {
        PTimesV probe(bf16, p_from_smem);
        const std::string error = run(probe.kernel(), probe.launch);
        CHECK(error == "");
        if (error.empty()) probe.check();
      }
    }
  }
  SECTION("warp specialisation: a producer warp feeds a warpgroup through a 2-stage ring") {
    Ring ring(0);
    const std::string error = run(Ring::kernel(), ring.launch);
    CHECK(error == "");
    if (error.empty()) ring.check();
  }
}

}  // namespace attnjit::hopper_probe
