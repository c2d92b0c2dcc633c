// A paged key/value cache through the public C API on the CPU backend: the same output as the
// dense keys and values it holds, whatever the page size; version-1 argument structs (without the
// paged fields) still accepted; bad page tables refused with the field's name.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "attnjit/attnjit.hpp"
#include "cpu_variant.hpp"

namespace {

constexpr int kHeadDim = 16;
constexpr int kBatch = 2;
constexpr int kKvLen = 37;
constexpr int kQLen = 3;

using attnjit_test::CpuVariant;

float value_at(int which, std::size_t i) {  // deterministic, varied, never zero
  return std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(which)) + 0.05f;
}

// Dense [B, L, H=1, D] inputs (BLHD), and the same keys and values in a pool of pages of
// `rows_per_page` rows, [pages, rows_per_page, 1, D], in reverse order, with `unmapped` table
// entries of each sequence (from the end) -1.
struct Inputs {
  Inputs(int rows_per_page, int unmapped)
      : q(static_cast<std::size_t>(kBatch) * kQLen * kHeadDim),
        k(static_cast<std::size_t>(kBatch) * kKvLen * kHeadDim),
        v(k.size()),
        out(q.size(), -7.0f),
        lse(static_cast<std::size_t>(kBatch) * kQLen, -7.0f) {
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = value_at(0, i);
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = value_at(1, i), v[i] = value_at(2, i);
    per_sequence = (kKvLen + rows_per_page - 1) / rows_per_page;
    num_pages = kBatch * per_sequence;
    width = per_sequence + 2;
    k_pool.assign(static_cast<std::size_t>(num_pages) * rows_per_page * kHeadDim, NAN);
    v_pool.assign(k_pool.size(), NAN);
    table.assign(static_cast<std::size_t>(kBatch) * width, -1);
    for (int b = 0; b < kBatch; ++b) {
      for (int p = 0; p < per_sequence - unmapped; ++p) {
        const int page = num_pages - 1 - (b * per_sequence + p);
        table[static_cast<std::size_t>(b) * width + p] = page;
        for (int r = 0; r < rows_per_page && p * rows_per_page + r < kKvLen; ++r) {
          for (int d = 0; d < kHeadDim; ++d) {
            const std::size_t from =
                (static_cast<std::size_t>(b) * kKvLen + p * rows_per_page + r) * kHeadDim + d;
            const std::size_t to =
                (static_cast<std::size_t>(page) * rows_per_page + r) * kHeadDim + d;
            k_pool[to] = k[from];
            v_pool[to] = v[from];
          }
        }
      }
    }
    page_size = rows_per_page;
  }

  attnjit_forward_args dense_args() {
    attnjit_forward_args args;
    attnjit_forward_args_init(&args);
    args.q = q.data();
    args.k = k.data();
    args.v = v.data();
    args.out = out.data();
    args.lse = lse.data();
    args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_FP32;
    args.batch = kBatch;
    args.q_len = kQLen;
    args.kv_len = kKvLen;
    args.layout = ATTNJIT_LAYOUT_BLHD;
    return args;
  }
  attnjit_forward_args paged_args() {
    attnjit_forward_args args = dense_args();
    args.k = k_pool.data();
    args.v = v_pool.data();
    args.kv_page_table = table.data();
    args.kv_page_table_width = width;
    args.kv_page_size = page_size;
    args.kv_num_pages = num_pages;
    return args;
  }

  std::vector<float> q, k, v, out, lse, k_pool, v_pool;
  std::vector<std::int32_t> table;
  int per_sequence = 0, num_pages = 0, width = 0, page_size = 0;
};

}  // namespace

TEST_CASE("a paged cache gives the output of its dense keys and values") {
  const int page_size = GENERATE(1, 4, 8, 12, 24, 64);  // any size: 12 and 24 not powers of two
  INFO("pages of " << page_size);
  // The mask keeps keys below 30: with pages of 8, the fifth page (rows 32..36) is unmapped.
  CpuVariant v(kHeadDim, "kv_idx < 30 && kv_idx <= q_idx + kv_len - q_len");
  Inputs inputs(page_size, page_size == 8 ? 1 : 0);
  attnjit_forward_args dense = inputs.dense_args();
  REQUIRE(attnjit_forward(v.variant.get(), &dense) == ATTNJIT_OK);
  const std::vector<float> dense_out = inputs.out, dense_lse = inputs.lse;
  std::fill(inputs.out.begin(), inputs.out.end(), -7.0f);
  attnjit_forward_args paged = inputs.paged_args();
  INFO(attnjit_last_error());
  REQUIRE(attnjit_forward(v.variant.get(), &paged) == ATTNJIT_OK);
  CHECK(inputs.out == dense_out);
  CHECK(inputs.lse == dense_lse);
}

TEST_CASE("a version-1 argument struct is read without the paged fields") {
  CpuVariant v(kHeadDim, "true");
  Inputs inputs(8, 0);
  attnjit_forward_args args = inputs.dense_args();
  REQUIRE(attnjit_forward(v.variant.get(), &args) == ATTNJIT_OK);
  const std::vector<float> expected = inputs.out;
  args.version = 1;
  args.kv_page_table = reinterpret_cast<const std::int32_t*>(&args);  // never read
  args.kv_page_size = 3;
  std::fill(inputs.out.begin(), inputs.out.end(), -7.0f);
  INFO(attnjit_last_error());
  REQUIRE(attnjit_forward(v.variant.get(), &args) == ATTNJIT_OK);
  CHECK(inputs.out == expected);
  args.version = 2;  // the garbage page table is read now
  CHECK(attnjit_forward(v.variant.get(), &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
  args.version = ATTNJIT_FORWARD_ARGS_VERSION + 1;  // a later library's struct
  CHECK(attnjit_forward(v.variant.get(), &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("bad page tables are refused with the field's name") {
  CpuVariant v(kHeadDim, "true");
  Inputs inputs(8, 0);
  const auto refused = [&](attnjit_forward_args args, const char* text) {
    CHECK(attnjit_forward(v.variant.get(), &args) == ATTNJIT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(attnjit_last_error(), Catch::Contains(text));
  };
  attnjit_forward_args args = inputs.paged_args();
  args.kv_page_table = nullptr;
  refused(args, "kv_page_table is NULL");
  args = inputs.paged_args();
  args.kv_page_size = -8;
  refused(args, "kv_page_size must be positive");
  args = inputs.paged_args();
  args.kv_page_size = 0;
  refused(args, "kv_page_size must be positive");
  args = inputs.paged_args();
  args.kv_page_table_width = 4;  // 37 keys in pages of 8 need 5
  refused(args, "kv_page_table_width (4) is too narrow");
  args = inputs.paged_args();
  args.kv_num_pages = -1;
  refused(args, "kv_num_pages must be positive");
  CHECK(std::all_of(inputs.out.begin(), inputs.out.end(), [](float x) { return x == -7.0f; }));
}
