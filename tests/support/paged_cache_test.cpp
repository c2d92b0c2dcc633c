// The paged caches the kernel tests read (paged_cache.hpp) hold each sequence's rows where their
// table says, and both CPU references read a paged call as its dense twin: so a kernel case with
// pages tests the kernel's paged reads, not the fixture.
#include "support/paged_cache.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "common/error.hpp"
#include "reference/attention.hpp"
#include "reference/naive.hpp"
#include "support/case_tables.hpp"

using namespace attnjit;
using namespace attnjit::kernel_test;

namespace {

// Both references on the paged buffers against the naive reference on the dense ones, exactly
// (the same fp32 and double arithmetic on the same values).
void check_paged_matches_dense(const KernelCase& c) {
  PreparedCase prepared(c);
  const AttentionBuffers dense = prepared.problem.buffers();
  const AttentionBuffers paged = prepared.call_buffers();
  REQUIRE(is_paged(paged));
  std::vector<double> dense_out, dense_lse, paged_out, paged_lse;
  reference::naive_attention(prepared.mask, prepared.score, prepared.host_args, prepared.shape,
                             dense, dense_out, dense_lse);
  reference::naive_attention(prepared.mask, prepared.score, prepared.host_args, prepared.shape,
                             paged, paged_out, paged_lse);
  CHECK(paged_out == dense_out);
  CHECK(paged_lse == dense_lse);
  // The tiled reference (the CPU backend) writes the problem's output: compare it to the naive.
  reference::attention_forward(prepared.mask, prepared.score, prepared.host_args, prepared.shape,
                               paged);
  const CaseResult result = prepared.check(prepared.problem.lse);
  INFO(result.describe());
  CHECK(result.passed());
}

}  // namespace

TEST_CASE("paged caches read as their dense keys and values", "[paged]") {
  for (const KernelCase& c : paged_kv_cases()) {
    INFO(c.name());
    check_paged_matches_dense(c);
  }
}

TEST_CASE("a paged cache's table points at shuffled pages and leaves the rest -1", "[paged]") {
  KernelCase c;
  c.shape = shape(2, 2, 1, 1, 40);
  c.head_dim = 32;
  c.page_size = 16;
  c.unmapped_tail_pages = 1;
  PreparedCase prepared(c);
  const PagedCache& cache = *prepared.paged;
  REQUIRE(cache.pages.table_width == 4);  // 3 pages of 16 for 40 keys, and a spare slot
  REQUIRE(cache.pages.num_pages == 2 * 3 + 3);
  std::vector<int> uses(static_cast<std::size_t>(cache.pages.num_pages), 0);
  for (int b = 0; b < 2; ++b) {
    for (int p = 0; p < 4; ++p) {
      const int entry = cache.table[static_cast<std::size_t>(b) * 4 + p];
      if (p >= 2) {
        CHECK(entry == -1);  // the unmapped last page and the spare slot
        continue;
      }
      REQUIRE(entry >= 0);
      REQUIRE(entry < cache.pages.num_pages);
      ++uses[static_cast<std::size_t>(entry)];
      CHECK(cache.k_pool.at(entry, 0, 3, 5) == prepared.problem.k.at(b, 0, 16 * p + 3, 5));
      CHECK(cache.v_pool.at(entry, 0, 15, 31) == prepared.problem.v.at(b, 0, 16 * p + 15, 31));
    }
  }
  for (const int n : uses) CHECK(n <= 1);
  // Unused pages stay NaN, so that a read through a wrong entry shows in the output.
  for (int page = 0; page < cache.pages.num_pages; ++page) {
    if (uses[static_cast<std::size_t>(page)] == 0)
      CHECK(std::isnan(cache.k_pool.at(page, 0, 0, 0)));
  }
}

TEST_CASE("paged calls are checked: page size, table width, pool", "[paged]") {
  KernelCase c;
  c.shape = shape(2, 2, 1, 1, 40);
  c.head_dim = 32;
  c.page_size = 16;
  PreparedCase prepared(c);
  AttentionBuffers buffers = prepared.call_buffers();
  const auto message_of = [&](const AttentionBuffers& b) {
    try {
      validate_problem(prepared.shape, b);
    } catch (const Error& e) {
      CHECK(e.status() == Status::invalid_argument);
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message_of(buffers).empty());
  AttentionBuffers bad = buffers;
  for (const int size : {0, -16}) {
    bad.kv_pages.page_size = size;
    CHECK_THAT(message_of(bad), Catch::Contains("kv_page_size must be positive"));
  }
  // Pages of any size: 24 rows (3 of them hold kv_len 40), 40, 1000.
  for (const int size : {24, 40, 1000}) {
    bad.kv_pages.page_size = size;
    CHECK(message_of(bad).empty());
  }
  bad = buffers;
  bad.kv_pages.table_width = 2;
  CHECK_THAT(message_of(bad), Catch::Contains("too narrow"));
  bad = buffers;
  bad.kv_pages.num_pages = 0;
  CHECK_THAT(message_of(bad), Catch::Contains("kv_num_pages must be positive"));
  bad = buffers;
  bad.kv_pages.table_width = 1 << 30;
  CHECK_THAT(message_of(bad), Catch::Contains("too large"));
  // The pools' extent is checked as a view of num_pages pages: a page stride that wraps.
  bad = buffers;
  bad.k_strides.batch = std::int64_t{1} << 62;
  CHECK_THAT(message_of(bad), Catch::Contains("address space"));
}
