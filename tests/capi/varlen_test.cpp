// Variable-length sequences through the public C API on the CPU backend: each sequence of a
// packed batch gets the output and log-sum-exp of the same sequence called alone (batch 1, its
// own lengths), with packed keys or per-sequence key counts over padded ones; rows outside every
// sequence are left alone; version-2 argument structs (without the fields) still accepted; bad
// combinations refused with the fields' names.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "attnjit/attnjit.hpp"
#include "cpu_variant.hpp"

namespace {

constexpr int kHeadDim = 8;
constexpr int kHeads = 2;
constexpr int kBatch = 3;
constexpr int kUnused = 2;  // rows before the first packed sequence and after the last
const std::vector<int> kQLens = {3, 0, 5};
const std::vector<int> kKvLens = {7, 4, 11};
constexpr int kMaxQ = 5;
constexpr int kMaxKv = 11;
constexpr float kUntouched = -7.0f;

float value_at(int which, std::size_t i) {  // deterministic, varied, never zero
  return std::sin(0.41f * static_cast<float>(i) + 1.7f * static_cast<float>(which)) + 0.05f;
}

std::vector<std::int32_t> starts_of(const std::vector<int>& lens) {
  std::vector<std::int32_t> starts{kUnused};
  for (const int len : lens) starts.push_back(starts.back() + len);
  return starts;
}

// Packed BLHD tensors: [rows, heads, head_dim].
std::vector<float> packed(int which, int rows) {
  std::vector<float> data(static_cast<std::size_t>(rows) * kHeads * kHeadDim);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = value_at(which, i);
  return data;
}

attnjit_forward_args base_args() {
  attnjit_forward_args args;
  attnjit_forward_args_init(&args);
  args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_FP32;
  args.num_heads_q = args.num_heads_kv = kHeads;
  args.layout = ATTNJIT_LAYOUT_BLHD;
  return args;
}

// Sequence b alone: rows [q_row0, q_row0 + q_len) of `q` against rows [kv_row0, kv_row0 + kv_len)
// of `k` and `v`, into (out, lse) of its own.
void call_alone(attnjit_variant* variant, const std::vector<float>& q, int q_row0, int q_len,
                const std::vector<float>& k, const std::vector<float>& v, int kv_row0, int kv_len,
                std::vector<float>& out, std::vector<float>& lse) {
  const std::size_t row = kHeads * kHeadDim;
  out.assign(static_cast<std::size_t>(q_len) * row, 0.0f);
  lse.assign(static_cast<std::size_t>(kHeads) * q_len, 0.0f);
  attnjit_forward_args args = base_args();
  args.q = q.data() + q_row0 * row;
  args.k = k.data() + kv_row0 * row;
  args.v = v.data() + kv_row0 * row;
  args.out = out.data();
  args.lse = lse.data();
  args.q_len = q_len;
  args.kv_len = kv_len;
  INFO(attnjit_last_error());
  REQUIRE(attnjit_forward(variant, &args) == ATTNJIT_OK);
}

// The packed call's rows of each sequence against the sequence alone; rows of no sequence keep
// kUntouched. lse is [heads, q_total].
void check_against_alone(attnjit_variant* variant, const std::vector<float>& q,
                         const std::vector<float>& out, const std::vector<float>& lse,
                         const std::vector<float>& k, const std::vector<float>& v,
                         const std::vector<int>& kv_row0s) {
  const std::vector<std::int32_t> q_starts = starts_of(kQLens);
  const int q_total = q_starts.back() + kUnused;
  const std::size_t row = kHeads * kHeadDim;
  std::vector<bool> covered(static_cast<std::size_t>(q_total), false);
  for (int b = 0; b < kBatch; ++b) {
    const int q_len = kQLens[static_cast<std::size_t>(b)];
    if (q_len == 0) continue;
    std::vector<float> alone_out, alone_lse;
    call_alone(variant, q, q_starts[static_cast<std::size_t>(b)], q_len, k, v,
               kv_row0s[static_cast<std::size_t>(b)], kKvLens[static_cast<std::size_t>(b)],
               alone_out, alone_lse);
    for (int i = 0; i < q_len; ++i) {
      const int packed_row = q_starts[static_cast<std::size_t>(b)] + i;
      covered[static_cast<std::size_t>(packed_row)] = true;
      for (std::size_t e = 0; e < row; ++e) {
        INFO("sequence " << b << " row " << i << " element " << e);
        CHECK(out[packed_row * row + e] == alone_out[i * row + e]);
      }
      for (int h = 0; h < kHeads; ++h) {
        CHECK(lse[static_cast<std::size_t>(h) * q_total + packed_row] ==
              alone_lse[static_cast<std::size_t>(h) * q_len + i]);
      }
    }
  }
  for (int r = 0; r < q_total; ++r) {
    if (covered[static_cast<std::size_t>(r)]) continue;
    for (std::size_t e = 0; e < row; ++e) CHECK(out[r * row + e] == kUntouched);
    for (int h = 0; h < kHeads; ++h)
      CHECK(lse[static_cast<std::size_t>(h) * q_total + r] == kUntouched);
  }
}

}  // namespace

TEST_CASE("packed sequences give each sequence's output alone") {
  // Aligned to each sequence's last key: q_len and kv_len are the sequence's own.
  attnjit_test::CpuVariant v(kHeadDim, "kv_idx <= q_idx + kv_len - q_len");
  const std::vector<std::int32_t> q_starts = starts_of(kQLens);
  const int q_total = q_starts.back() + kUnused;
  const std::vector<float> q = packed(0, q_total);
  std::vector<float> out(q.size(), kUntouched);
  std::vector<float> lse(static_cast<std::size_t>(kHeads) * q_total, kUntouched);
  attnjit_forward_args args = base_args();
  args.batch = kBatch;
  args.q = q.data();
  args.out = out.data();
  args.lse = lse.data();
  args.q_len = kMaxQ;
  args.kv_len = kMaxKv;
  args.q_seq_starts = q_starts.data();
  args.q_total = q_total;

  SECTION("packed keys") {
    const std::vector<std::int32_t> kv_starts = starts_of(kKvLens);
    const int kv_total = kv_starts.back() + kUnused;
    const std::vector<float> k = packed(1, kv_total), vv = packed(2, kv_total);
    args.k = k.data();
    args.v = vv.data();
    args.kv_seq_starts = kv_starts.data();
    args.kv_total = kv_total;
    INFO(attnjit_last_error());
    REQUIRE(attnjit_forward(v.variant.get(), &args) == ATTNJIT_OK);
    check_against_alone(v.variant.get(), q, out, lse, k, vv,
                        {kv_starts[0], kv_starts[1], kv_starts[2]});
  }
  SECTION("per-sequence key counts over padded keys") {
    // [batch, kMaxKv, heads, head_dim]: sequence b's keys are rows b * kMaxKv ...
    const std::vector<float> k = packed(1, kBatch * kMaxKv), vv = packed(2, kBatch * kMaxKv);
    const std::vector<std::int32_t> kv_lens(kKvLens.begin(), kKvLens.end());
    args.k = k.data();
    args.v = vv.data();
    args.kv_seq_lens = kv_lens.data();
    INFO(attnjit_last_error());
    REQUIRE(attnjit_forward(v.variant.get(), &args) == ATTNJIT_OK);
    check_against_alone(v.variant.get(), q, out, lse, k, vv, {0, kMaxKv, 2 * kMaxKv});
  }
}

TEST_CASE("bad sequence tables are refused with the fields' names") {
  attnjit_test::CpuVariant v(kHeadDim, "true");
  const std::vector<std::int32_t> starts = starts_of(kQLens);
  const std::vector<float> q = packed(0, 64), k = packed(1, 64), vv = packed(2, 64);
  std::vector<float> out(q.size(), kUntouched);
  attnjit_forward_args good = base_args();
  good.batch = kBatch;
  good.q = q.data();
  good.k = k.data();
  good.v = vv.data();
  good.out = out.data();
  good.q_len = kMaxQ;
  good.kv_len = kMaxKv;
  good.q_seq_starts = starts.data();
  good.q_total = 12;
  good.kv_seq_starts = starts.data();
  good.kv_total = 20;
  const auto refused = [&](attnjit_forward_args args, const char* text) {
    CHECK(attnjit_forward(v.variant.get(), &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(attnjit_last_error(), Catch::Contains(text));
  };
  attnjit_forward_args args = good;
  args.q_total = 0;
  refused(args, "q_total must be positive");
  args = good;
  args.q_seq_starts = nullptr;
  refused(args, "q_total or kv_total is set but its q_seq_starts or kv_seq_starts is NULL");
  args = good;
  args.kv_seq_lens = starts.data();
  refused(args, "kv_seq_starts and kv_seq_lens both given");
  args = good;
  const std::vector<std::int32_t> table(8, 0);
  args.kv_page_table = table.data();
  args.kv_page_table_width = 8;
  args.kv_page_size = 16;
  args.kv_num_pages = 1;
  refused(args, "kv_seq_starts with a page table");
  CHECK(std::all_of(out.begin(), out.end(), [](float x) { return x == kUntouched; }));
  // The host's examinations of a call take one sequence at a time.
  attnjit_tile_census census{};
  CHECK(attnjit_variant_tile_census(&census, v.variant.get(), &good, nullptr) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(attnjit_last_error(), Catch::Contains("examine each as a call of its own"));
  std::vector<double> reference(q.size());
  CHECK(attnjit_variant_reference(v.variant.get(), &good, reference.data(), nullptr) ==
        ATTNJIT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(attnjit_last_error(), Catch::Contains("check each sequence as a call of its own"));
  // A version-2 struct has no sequence fields: the garbage there is never read.
  args = good;
  args.version = 2;
  args.q_total = -5;
  args.q_seq_starts = reinterpret_cast<const std::int32_t*>(&args);
  args.kv_seq_starts = nullptr;
  args.kv_total = 0;
  args.q_len = 4;
  args.kv_len = 4;
  args.batch = 1;
  INFO(attnjit_last_error());
  CHECK(attnjit_forward(v.variant.get(), &args) == ATTNJIT_OK);
}
