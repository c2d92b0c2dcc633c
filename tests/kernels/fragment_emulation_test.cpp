// Host emulation of one warp's path through the forward kernel, from the kernel's own (host-
// callable) addressing: ForwardLayout (attention_fwd.cuh), TileLoadPlan and SwizzledTile
// (copy.cuh). The hardware side -- what ldmatrix(.trans) delivers to each lane and how
// mma.m16n8k16 reads and writes its fragments -- is written here independently, from the PTX ISA
// ("Warp-level matrix load instruction: ldmatrix", "Matrix fragments for mma.m16n8k16"), and
// never calls the kernel's fragment maps. Values are small integers, so every product and sum is
// exact and the checks compare for equality.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "attnjit/attention_fwd.cuh"
#include "attnjit/sm90_wgmma.cuh"
#include "codegen/variant_source.hpp"

namespace codegen = attnjit::codegen;

namespace {

// ---- The PTX ISA side. lane = 4 * group + tig ("groupID", "threadID_in_group").
namespace spec {

int group(int lane) { return lane >> 2; }
int tig(int lane) { return lane & 3; }

// mma.m16n8k16 .bf16/.f16, A (16 x 16, row): register r (of 4) holds halves h = 0 (low), 1
// (high) = a_{2r+h}; row groupID for a0,a1,a4,a5 and groupID + 8 for a2,a3,a6,a7; col
// tig * 2 + (i & 1), + 8 for a4..a7.
int a_row(int lane, int reg) { return group(lane) + ((reg & 1) ? 8 : 0); }
int a_col(int lane, int reg, int half) { return tig(lane) * 2 + half + ((reg & 2) ? 8 : 0); }
// B (16 x 8, col): register r holds b_{2r+h}: row (k) tig * 2 + (i & 1), + 8 for b2, b3;
// col (n) groupID.
int b_row(int lane, int reg, int half) { return tig(lane) * 2 + half + 8 * reg; }
int b_col(int lane) { return group(lane); }
// C/D (16 x 8, f32): c0, c1 at row groupID, c2, c3 at groupID + 8; col tig * 2 + (i & 1).
int c_row(int lane, int e) { return group(lane) + ((e >= 2) ? 8 : 0); }
int c_col(int lane, int e) { return tig(lane) * 2 + (e & 1); }

float decode_bf16(std::uint16_t bits) {
  const std::uint32_t word = static_cast<std::uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

// Round to nearest even, as cvt.rn.bf16x2.f32 (no NaN here).
std::uint16_t encode_bf16(float value) {
  std::uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  word += 0x7fffu + ((word >> 16) & 1u);
  return static_cast<std::uint16_t>(word >> 16);
}

// Two 16-bit elements in a .b32 register: the lower index in the lower half.
std::uint32_t pack(std::uint16_t lo, std::uint16_t hi) {
  return static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
}
std::uint16_t half_of(std::uint32_t reg, int half) {
  return static_cast<std::uint16_t>(half ? reg >> 16 : reg & 0xffffu);
}

using Regs4 = std::uint32_t[32][4];

// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lanes 8i .. 8i+7 give the addresses of rows
// 0..7 of matrix i (16 contiguous bytes each); register i of every lane receives matrix i: lane l
// gets the elements (row l/4, cols 2(l%4), 2(l%4)+1), or with .trans (rows 2(l%4), 2(l%4)+1;
// col l/4). Also checks alignment, bounds and that each matrix's 8 rows fall in 8 distinct
// 16-byte bank groups (one shared-memory wavefront).
void ldmatrix_x4(const std::vector<std::uint16_t>& smem, const int (&address)[32], bool trans,
                 Regs4& out) {
  for (int m = 0; m < 4; ++m) {
    std::set<int> bank_groups;
    std::uint16_t matrix[8][8];
    for (int r = 0; r < 8; ++r) {
      const int addr = address[8 * m + r];
      REQUIRE(addr % 16 == 0);
      REQUIRE(addr >= 0);
      REQUIRE(static_cast<std::size_t>(addr / 2 + 8) <= smem.size());
      bank_groups.insert((addr / 16) % 8);
      for (int c = 0; c < 8; ++c) matrix[r][c] = smem[addr / 2 + c];
    }
    CHECK(bank_groups.size() == 8);  // conflict-free
    for (int lane = 0; lane < 32; ++lane) {
      const int a = lane / 4, b = 2 * (lane % 4);
      out[lane][m] =
          trans ? pack(matrix[b][a], matrix[b + 1][a]) : pack(matrix[a][b], matrix[a][b + 1]);
    }
  }
}

// d = a * b + d for one m16n8k16 tile, from each lane's fragments as the ISA lays them out.
void mma_m16n8k16(float (&d)[32][4], const std::uint32_t (&a)[32][4],
                  const std::uint32_t (&b)[32][2]) {
  float am[16][16], bm[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      for (int h = 0; h < 2; ++h) {
        am[a_row(lane, reg)][a_col(lane, reg, h)] = decode_bf16(half_of(a[lane][reg], h));
      }
    }
    for (int reg = 0; reg < 2; ++reg) {
      for (int h = 0; h < 2; ++h) {
        bm[b_row(lane, reg, h)][b_col(lane)] = decode_bf16(half_of(b[lane][reg], h));
      }
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    for (int e = 0; e < 4; ++e) {
      float sum = 0.0f;
      for (int k = 0; k < 16; ++k) sum += am[c_row(lane, e)][k] * bm[k][c_col(lane, e)];
      d[lane][e] += sum;
    }
  }
}

// The two n8 tiles an ldmatrix.x4 of B feeds: registers 0-1 are the first tile's B fragment,
// 2-3 the second's (how the kernels pair their mma.sync calls).
void mma_two_n8_tiles(float (&d_first)[32][4], float (&d_second)[32][4],
                      const std::uint32_t (&a)[32][4], const std::uint32_t (&b)[32][4]) {
  std::uint32_t b_first[32][2], b_second[32][2];
  for (int lane = 0; lane < 32; ++lane) {
    b_first[lane][0] = b[lane][0];
    b_first[lane][1] = b[lane][1];
    b_second[lane][0] = b[lane][2];
    b_second[lane][1] = b[lane][3];
  }
  mma_m16n8k16(d_first, a, b_first);
  mma_m16n8k16(d_second, a, b_second);
}

}  // namespace spec

// A [rows][stride] matrix of bf16 small integers in "global memory"; stride > head dim so that
// a row-stride mistake reads other values.
struct Global {
  int rows, cols, stride;
  std::vector<std::uint16_t> data;
  Global(int r, int c, int lo, int hi, std::mt19937& rng) : rows(r), cols(c), stride(c + 24) {
    data.assign(static_cast<std::size_t>(rows) * stride, spec::encode_bf16(99.0f));
    std::uniform_int_distribution<int> dist(lo, hi);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < cols; ++j) at(i, j) = spec::encode_bf16(static_cast<float>(dist(rng)));
    }
  }
  std::uint16_t& at(int r, int c) { return data[static_cast<std::size_t>(r) * stride + c]; }
  float value(int r, int c) const {
    return spec::decode_bf16(data[static_cast<std::size_t>(r) * stride + c]);
  }
};

// The cp.async walk of load_tile_async over all threads: rows [row0, row0 + ROWS) of `g` into a
// tile image; rows at or past num_rows are zero-filled. Checks that every 16-byte unit is written
// exactly once, at the swizzled address of the (row, chunk) it copies, and that each 8 consecutive
// threads of an iteration write 8 distinct bank groups.
template <int ROWS, int HEAD_DIM, int NUM_THREADS>
std::vector<std::uint16_t> load_tile(const Global& g, int row0, int num_rows) {
  using Plan = attnjit::TileLoadPlan<ROWS, HEAD_DIM, NUM_THREADS>;
  using Tile = attnjit::SwizzledTile<ROWS, HEAD_DIM>;
  std::vector<std::uint16_t> image(Tile::kBytes / 2, 0xdeadu & 0xffffu);
  std::vector<int> writes(Tile::kUnits, 0);
  for (int i = 0; i < Plan::kIters; ++i) {
    for (int t0 = 0; t0 < NUM_THREADS; t0 += 8) {
      std::set<int> bank_groups;
      int active = 0;
      for (int thread = t0; thread < t0 + 8; ++thread) {
        if (!Plan::active(thread, i)) continue;
        ++active;
        const int row = Plan::row(thread, i);
        const int chunk = Plan::chunk(thread, i);
        const int dst = Plan::dst_base(thread) + Plan::dst_advance(i);
        REQUIRE(row >= 0);
        REQUIRE(row < ROWS);
        REQUIRE(chunk >= 0);
        REQUIRE(chunk < Tile::kChunks);
        REQUIRE(dst == Tile::offset(row, chunk));
        REQUIRE(dst % 16 == 0);
        REQUIRE(dst >= 0);
        REQUIRE(dst < Tile::kBytes);
        ++writes[dst / 16];
        bank_groups.insert((dst / 16) % 8);
        const bool valid = row < num_rows - row0;
        for (int e = 0; e < 8; ++e) {
          image[dst / 2 + e] =
              valid ? g.data[static_cast<std::size_t>(row0 + row) * g.stride + chunk * 8 + e] : 0;
        }
      }
      CHECK(static_cast<int>(bank_groups.size()) == active);
    }
  }
  for (int unit = 0; unit < Tile::kUnits; ++unit) {
    INFO("unit " << unit);
    REQUIRE(writes[unit] == 1);
  }
  return image;
}

float global_or_zero(const Global& g, int row, int limit, int col) {
  return row < limit ? g.value(row, col) : 0.0f;
}

// One configuration: every warp of a block, S = Q K^T, then O = P V, then the output staging and
// 16-byte stores, for a ragged or a full (q tile, kv tile).
template <int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_WARPS>
void emulate_block(bool ragged, std::uint32_t seed) {
  using Layout = attnjit::ForwardLayout<HEAD_DIM, BLOCK_M, BLOCK_N, NUM_WARPS>;
  using QTile = typename Layout::QTile;
  constexpr int kThreads = NUM_WARPS * 32;
  constexpr int kMTiles = Layout::kMTiles;
  constexpr int kNTiles = BLOCK_N / 8;
  constexpr int kDTiles = HEAD_DIM / 8;
  constexpr int kKSteps = HEAD_DIM / 16;

  std::mt19937 rng(seed);
  // Second q tile and second kv tile of the sequences; ragged: both end inside them.
  const int q0 = BLOCK_M, k0 = BLOCK_N;
  const int q_len = ragged ? q0 + BLOCK_M - 5 : 2 * BLOCK_M;
  const int kv_len = ragged ? k0 + BLOCK_N - 3 : 2 * BLOCK_N;
  const Global q(q_len, HEAD_DIM, -3, 3, rng);
  const Global k(kv_len, HEAD_DIM, -3, 3, rng);
  const Global v(kv_len, HEAD_DIM, -3, 3, rng);
  // P in {0, 1}: every O element is an integer of magnitude <= 3 * BLOCK_N, exact in bf16.
  std::vector<float> p(static_cast<std::size_t>(BLOCK_M) * BLOCK_N);
  std::uniform_int_distribution<int> bit(0, 1);
  for (float& x : p) x = static_cast<float>(bit(rng));
  auto p_at = [&](int row, int col) { return p[static_cast<std::size_t>(row) * BLOCK_N + col]; };

  std::vector<std::uint16_t> q_image = load_tile<BLOCK_M, HEAD_DIM, kThreads>(q, q0, q_len);
  const std::vector<std::uint16_t> k_image = load_tile<BLOCK_N, HEAD_DIM, kThreads>(k, k0, kv_len);
  const std::vector<std::uint16_t> v_image = load_tile<BLOCK_N, HEAD_DIM, kThreads>(v, k0, kv_len);

  // Output: [q_len][stride] with a sentinel, so stores past q_len or into the padding show.
  const std::uint16_t sentinel = spec::encode_bf16(-77.0f);
  std::vector<std::uint16_t> out(static_cast<std::size_t>(q_len) * (HEAD_DIM + 24), sentinel);
  const int out_stride = HEAD_DIM + 24;
  // Which warp staged each 16-bit element of the Q space.
  std::vector<int> staged_by(QTile::kBytes / 2, -1);
  std::vector<std::uint16_t> stage = q_image;

  for (int warp = 0; warp < NUM_WARPS; ++warp) {
    INFO("warp " << warp);
    // ---- S = Q K^T, in the order compute_tile issues it.
    static float acc_s[kMTiles][kNTiles][32][4];
    for (auto& m : acc_s) {
      for (auto& n : m) {
        for (auto& l : n) {
          for (float& x : l) x = 0.0f;
        }
      }
    }
    for (int kk = 0; kk < kKSteps; ++kk) {
      spec::Regs4 a[kMTiles];
      for (int mt = 0; mt < kMTiles; ++mt) {
        int address[32];
        for (int lane = 0; lane < 32; ++lane) {
          address[lane] =
              Layout::q_warp_offset(warp) + Layout::q_fragment(Layout::q_lane(lane), mt, kk);
        }
        spec::ldmatrix_x4(q_image, address, false, a[mt]);
      }
      for (int pp = 0; pp < kNTiles / 2; ++pp) {
        int address[32];
        for (int lane = 0; lane < 32; ++lane) {
          address[lane] = Layout::k_fragment(Layout::k_lane(lane), pp, kk);
        }
        spec::Regs4 b;
        spec::ldmatrix_x4(k_image, address, false, b);
        for (int mt = 0; mt < kMTiles; ++mt) {
          spec::mma_two_n8_tiles(acc_s[mt][2 * pp], acc_s[mt][2 * pp + 1], a[mt], b);
        }
      }
    }
    // The kernel reads accumulator element (mt, j, lane, e) as (acc_row, acc_col).
    for (int mt = 0; mt < kMTiles; ++mt) {
      for (int j = 0; j < kNTiles; ++j) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int e = 0; e < 4; ++e) {
            const int row = Layout::acc_row(warp, lane, mt, e);
            const int col = Layout::acc_col(lane, j, e);
            REQUIRE(row == Layout::warp_row0(warp) + 16 * mt + spec::c_row(lane, e));
            REQUIRE(col == 8 * j + spec::c_col(lane, e));
            float expected = 0.0f;
            for (int d = 0; d < HEAD_DIM; ++d) {
              expected +=
                  global_or_zero(q, q0 + row, q_len, d) * global_or_zero(k, k0 + col, kv_len, d);
            }
            INFO("S mt " << mt << " n-tile " << j << " lane " << lane << " e " << e);
            REQUIRE(acc_s[mt][j][lane][e] == expected);
          }
        }
      }
    }

    // ---- O = P V. P arrives in the S accumulators (ISA C layout); the kernel packs them into
    // A fragments with p_tile / p_elem.
    for (int mt = 0; mt < kMTiles; ++mt) {
      for (int j = 0; j < kNTiles; ++j) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int e = 0; e < 4; ++e) {
            acc_s[mt][j][lane][e] = p_at(Layout::warp_row0(warp) + 16 * mt + spec::c_row(lane, e),
                                         8 * j + spec::c_col(lane, e));
          }
        }
      }
    }
    static float acc_o[kMTiles][kDTiles][32][4];
    for (auto& m : acc_o) {
      for (auto& n : m) {
        for (auto& l : n) {
          for (float& x : l) x = 0.0f;
        }
      }
    }
    for (int kk = 0; kk < kNTiles / 2; ++kk) {
      spec::Regs4 a[kMTiles];
      for (int mt = 0; mt < kMTiles; ++mt) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int reg = 0; reg < 4; ++reg) {
            const float(&s)[4] = acc_s[mt][Layout::p_tile(kk, reg)][lane];
            a[mt][lane][reg] = spec::pack(spec::encode_bf16(s[Layout::p_elem(reg, 0)]),
                                          spec::encode_bf16(s[Layout::p_elem(reg, 1)]));
          }
        }
      }
      for (int pp = 0; pp < kDTiles / 2; ++pp) {
        int address[32];
        for (int lane = 0; lane < 32; ++lane) {
          address[lane] = Layout::v_fragment(Layout::v_lane(lane), kk, pp);
        }
        spec::Regs4 b;
        spec::ldmatrix_x4(v_image, address, true, b);
        for (int mt = 0; mt < kMTiles; ++mt) {
          spec::mma_two_n8_tiles(acc_o[mt][2 * pp], acc_o[mt][2 * pp + 1], a[mt], b);
        }
      }
    }
    auto o_expected = [&](int row, int col) {
      float sum = 0.0f;
      for (int key = 0; key < BLOCK_N; ++key) {
        sum += p_at(row, key) * global_or_zero(v, k0 + key, kv_len, col);
      }
      return sum;
    };
    for (int mt = 0; mt < kMTiles; ++mt) {
      for (int j = 0; j < kDTiles; ++j) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int e = 0; e < 4; ++e) {
            INFO("O mt " << mt << " d-tile " << j << " lane " << lane << " e " << e);
            REQUIRE(acc_o[mt][j][lane][e] ==
                    o_expected(Layout::acc_row(warp, lane, mt, e), Layout::acc_col(lane, j, e)));
          }
        }
      }
    }

    // ---- Output staging (32-bit stores into the warp's rows of the Q space), then 16-byte
    // reads and global stores of rows < q_len.
    for (int mt = 0; mt < kMTiles; ++mt) {
      for (int r = 0; r < 2; ++r) {
        for (int j = 0; j < kDTiles; ++j) {
          std::set<int> banks;  // one 32-bit store per lane: 32 distinct banks
          for (int lane = 0; lane < 32; ++lane) {
            const int addr =
                Layout::q_warp_offset(warp) + Layout::o_stage(Layout::o_lane(lane, r), mt, j);
            REQUIRE(addr % 4 == 0);
            REQUIRE(addr >= 0);
            REQUIRE(addr < QTile::kBytes);
            banks.insert((addr / 4) % 32);
            for (int h = 0; h < 2; ++h) {
              REQUIRE(staged_by[addr / 2 + h] == -1);
              staged_by[addr / 2 + h] = warp;
              stage[addr / 2 + h] = spec::encode_bf16(acc_o[mt][j][lane][2 * r + h]);
            }
          }
          CHECK(banks.size() == 32);
        }
      }
    }
    for (int i = 0; i < Layout::kOutputPasses; ++i) {
      for (int lane = 0; lane < 32; ++lane) {
        const int row = Layout::o_read_row(lane, i);
        const int chunk = Layout::o_read_chunk(lane, i);
        REQUIRE(row >= 0);
        REQUIRE(row < Layout::kWarpRows);
        const int addr = Layout::q_warp_offset(warp) + Layout::o_read(lane, i);
        REQUIRE(addr % 16 == 0);
        const int q_idx = q0 + Layout::warp_row0(warp) + row;
        if (q_idx >= q_len) continue;
        for (int e = 0; e < 8; ++e) {
          // The read must see this warp's own staging (a __syncwarp orders it).
          REQUIRE(staged_by[addr / 2 + e] == warp);
          std::uint16_t& dst = out[static_cast<std::size_t>(q_idx) * out_stride + chunk * 8 + e];
          REQUIRE(dst == sentinel);  // each element written once
          dst = stage[addr / 2 + e];
        }
      }
    }
  }

  // Every element of the Q space was staged once; every valid output element is P V.
  for (int i = 0; i < QTile::kBytes / 2; ++i) REQUIRE(staged_by[i] >= 0);
  for (int row = 0; row < q_len; ++row) {
    for (int col = 0; col < out_stride; ++col) {
      const std::uint16_t got = out[static_cast<std::size_t>(row) * out_stride + col];
      INFO("output row " << row << " col " << col);
      if (row < q0 || col >= HEAD_DIM) {
        REQUIRE(got == sentinel);
      } else {
        float expected = 0.0f;
        for (int key = 0; key < BLOCK_N; ++key) {
          expected += p_at(row - q0, key) * global_or_zero(v, k0 + key, kv_len, col);
        }
        REQUIRE(spec::decode_bf16(got) == expected);
      }
    }
  }
}

template <int HEAD_DIM, int BLOCK_M, int BLOCK_N, int NUM_WARPS>
void emulate_config() {
  SECTION("full tiles") { emulate_block<HEAD_DIM, BLOCK_M, BLOCK_N, NUM_WARPS>(false, 7u); }
  SECTION("ragged q and kv tails") {
    emulate_block<HEAD_DIM, BLOCK_M, BLOCK_N, NUM_WARPS>(true, 11u);
  }
}

struct Shape {
  int head_dim, block_m, block_n, num_warps;
  void (*emulate)();
};

// Every shape choose_kernel_config can return, plus two with 2 m-tiles per warp (the template
// supports them; see docs/KERNELS.md).
const Shape kShapes[] = {
    {32, 128, 64, 8, &emulate_config<32, 128, 64, 8>},
    {64, 128, 64, 8, &emulate_config<64, 128, 64, 8>},
    {96, 128, 64, 8, &emulate_config<96, 128, 64, 8>},
    {128, 128, 64, 8, &emulate_config<128, 128, 64, 8>},
    {256, 64, 64, 4, &emulate_config<256, 64, 64, 4>},
    {256, 64, 32, 4, &emulate_config<256, 64, 32, 4>},
    {64, 128, 64, 4, &emulate_config<64, 128, 64, 4>},
    {96, 128, 32, 4, &emulate_config<96, 128, 32, 4>},
};

const Shape* find_shape(const codegen::KernelConfig& config, int head_dim) {
  for (const Shape& shape : kShapes) {
    if (shape.head_dim == head_dim && shape.block_m == config.block_m &&
        shape.block_n == config.block_n && shape.num_warps == config.num_warps) {
      return &shape;
    }
  }
  return nullptr;
}

// Swizzle properties of one tile type: a bijection onto the tile's 16-byte units that keeps each
// (8-row group, swizzle block) in its own 8 * CPB units, and the ldmatrix address split identity.
template <int ROWS, int HEAD_DIM>
void check_swizzle() {
  using Tile = attnjit::SwizzledTile<ROWS, HEAD_DIM>;
  constexpr int kCpb = Tile::kChunksPerBlock;
  INFO("rows " << ROWS << " head dim " << HEAD_DIM);
  std::vector<int> hits(Tile::kUnits, 0);
  for (int row = 0; row < ROWS; ++row) {
    for (int chunk = 0; chunk < Tile::kChunks; ++chunk) {
      const int offset = Tile::offset(row, chunk);
      REQUIRE(offset % 16 == 0);
      REQUIRE(offset >= 0);
      REQUIRE(offset < Tile::kBytes);
      ++hits[offset / 16];
      const int base = ((chunk / kCpb) * ROWS + (row / 8) * 8) * kCpb;
      CHECK(offset / 16 >= base);
      CHECK(offset / 16 < base + 8 * kCpb);
    }
  }
  for (int unit = 0; unit < Tile::kUnits; ++unit) REQUIRE(hits[unit] == 1);
  // ldmatrix phases: 8 rows r0..r0+7 (r0 % 8 == 0) of one chunk hit 8 distinct bank groups.
  for (int r0 = 0; r0 < ROWS; r0 += 8) {
    for (int chunk = 0; chunk < Tile::kChunks; ++chunk) {
      std::set<int> groups;
      for (int r = r0; r < r0 + 8; ++r) groups.insert((Tile::offset(r, chunk) / 16) % 8);
      CHECK(groups.size() == 8);
    }
  }
  // offset(R + lane_row, C + lane_chunk) == fixed_offset(R, C) + (lane_offset ^ xor_offset(C))
  // for R % 8 == 0, lane_row < 16, and (C even, lane_chunk in {0, 1}) or lane_chunk == 0.
  for (int r0 = 0; r0 + 16 <= ROWS; r0 += 8) {
    for (int c0 = 0; c0 < Tile::kChunks; ++c0) {
      for (int lane_row = 0; lane_row < 16; ++lane_row) {
        for (int lane_chunk = 0; lane_chunk < ((c0 % 2 == 0) ? 2 : 1); ++lane_chunk) {
          REQUIRE(Tile::offset(r0 + lane_row, c0 + lane_chunk) ==
                  Tile::fixed_offset(r0, c0) +
                      (Tile::lane_offset(lane_row, lane_chunk) ^ Tile::xor_offset(c0)));
        }
      }
    }
  }
}

template <int HEAD_DIM>
void check_swizzle_rows() {
  check_swizzle<16, HEAD_DIM>();
  check_swizzle<32, HEAD_DIM>();
  check_swizzle<64, HEAD_DIM>();
  check_swizzle<128, HEAD_DIM>();
}

// The loader's thread -> chunk map alone: every unit of the tile exactly once, at its swizzled
// address (load_tile REQUIREs it), for every (rows, head dim, threads) the configurations use.
template <int ROWS, int HEAD_DIM, int NUM_THREADS>
void check_loader() {
  INFO("loader rows " << ROWS << " head dim " << HEAD_DIM << " threads " << NUM_THREADS);
  std::mt19937 rng(3);
  const Global g(3 * ROWS, HEAD_DIM, -8, 8, rng);
  for (int row0 : {0, ROWS}) {
    for (int num_rows : {row0 + ROWS, row0 + ROWS - 1, row0 + 1}) {
      const auto image = load_tile<ROWS, HEAD_DIM, NUM_THREADS>(g, row0, num_rows);
      using Tile = attnjit::SwizzledTile<ROWS, HEAD_DIM>;
      for (int row = 0; row < ROWS; ++row) {
        for (int col = 0; col < HEAD_DIM; ++col) {
          const int offset = Tile::offset(row, col / 8) / 2 + col % 8;
          const float expected = row0 + row < num_rows ? g.value(row0 + row, col) : 0.0f;
          REQUIRE(spec::decode_bf16(image[offset]) == expected);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("swizzle is a bijection with conflict-free ldmatrix phases", "[kernels][emulation]") {
  check_swizzle_rows<32>();
  check_swizzle_rows<64>();
  check_swizzle_rows<96>();
  check_swizzle_rows<128>();
  check_swizzle_rows<256>();
}

TEST_CASE("tile loader covers every 16-byte chunk exactly once", "[kernels][emulation]") {
  check_loader<128, 32, 256>();
  check_loader<64, 32, 256>();
  check_loader<128, 64, 256>();
  check_loader<64, 64, 256>();
  check_loader<128, 96, 256>();
  check_loader<64, 96, 256>();
  check_loader<128, 128, 256>();
  check_loader<64, 128, 256>();
  check_loader<64, 256, 128>();
  check_loader<32, 256, 128>();
  check_loader<128, 64, 128>();
  check_loader<32, 96, 128>();
}

TEST_CASE("every chosen configuration has an emulated shape", "[kernels][emulation]") {
  for (int sm : {80, 86, 89, 90}) {
    for (int head_dim : {32, 64, 96, 128, 256}) {
      const auto config = codegen::choose_kernel_config(sm, attnjit::DType::bf16, head_dim);
      INFO("sm_" << sm << " head dim " << head_dim << ": " << config.block_m << " x "
                 << config.block_n << ", " << config.num_warps << " warps");
      CHECK(find_shape(config, head_dim) != nullptr);
    }
  }
}

TEST_CASE("warp fragments reproduce Q K^T, P V and the output rows", "[kernels][emulation]") {
  const Shape& shape = kShapes[GENERATE(range(0, static_cast<int>(std::size(kShapes))))];
  INFO("head dim " << shape.head_dim << ", " << shape.block_m << " x " << shape.block_n << ", "
                   << shape.num_warps << " warps");
  shape.emulate();
}

// The sm90 kernel advances a GEMM's descriptors by each k-step's byte offset
// (wgmma_desc_advance): the same descriptor as one built from the offset address, for every
// 16-byte-aligned address and offset inside the 256 KB the start-address field spans (the
// shared-memory window is 228 KB), K-major and MN-major. Also what issue_scores relies on for
// Q's descriptor, whose high word is the same for every address.
TEST_CASE("a wgmma descriptor advanced by an offset is the offset address's descriptor",
          "[kernels][emulation]") {
  constexpr unsigned kWindow = 1u << 18;
  const unsigned offsets[] = {32, 64, 96, 1024, 2048, 8192 + 96, 16 * 2048, 65536};
  std::size_t checked = 0;
  for (unsigned address = 0; address < kWindow; address += 16 * 37) {
    for (const unsigned offset : offsets) {
      if (address + offset >= kWindow) continue;
      CHECK(attnjit::wgmma_desc_advance(attnjit::wgmma_desc_k_major(address), offset) ==
            attnjit::wgmma_desc_k_major(address + offset));
      CHECK(attnjit::wgmma_desc_advance(attnjit::wgmma_desc_mn_major(address, 8192), offset) ==
            attnjit::wgmma_desc_mn_major(address + offset, 8192));
      ++checked;
    }
    CHECK(attnjit::wgmma_desc_k_major(address) >> 32 == attnjit::wgmma_desc_k_major(0u) >> 32);
  }
  CHECK(checked > 3000);
}
