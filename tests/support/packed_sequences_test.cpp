// Variable-length sequences on the CPU: the tiled reference (the CPU backend) on the packed
// tensors and tables against the naive reference on the padded ones with the same counts, and the
// clamping rule both the kernels and the reference follow for malformed tables.
#include "support/packed_sequences.hpp"

#include <catch2/catch.hpp>
#include <vector>

#include "attnjit/sequences.cuh"
#include "common/error.hpp"
#include "reference/attention.hpp"
#include "support/case_tables.hpp"

using namespace attnjit;
using namespace attnjit::kernel_test;

TEST_CASE("the CPU backend runs variable-length sequences as the naive reference does",
          "[sequences]") {
  for (const KernelCase& c : varlen_cases()) {
    INFO(c.name());
    PreparedCase prepared(c);
    const AttentionBuffers call = prepared.call_buffers();
    REQUIRE(has_sequence_tables(call));
    reference::attention_forward(prepared.mask, prepared.score, prepared.host_args, prepared.shape,
                                 call);
    const PackedSequences& packed = *prepared.packed;
    const CaseResult result =
        prepared.check(packed.options.pack_queries ? packed.lse : prepared.problem.lse);
    INFO(result.describe());
    CHECK(result.passed());
  }
}

TEST_CASE("a sequence's extent is clamped into the packed tensors and the call's lengths",
          "[sequences]") {
  const std::vector<int> starts = {-4, 10, 6, 40, 55};
  const std::vector<int> lens = {-1, 7, 900, 30};
  SequenceTables tables{starts.data(), nullptr, lens.data(), 50, 0};
  // [0, 10) of 50 rows, at most q_len = 8 of them; a negative count is none.
  SequenceExtent e = sequence_extent(tables, 0, 8, 100);
  CHECK(e.q_row0 == 0);
  CHECK(e.q_len == 8);
  CHECK(e.kv_len == 0);
  // A start past the next one: no rows.
  e = sequence_extent(tables, 1, 8, 100);
  CHECK(e.q_row0 == 10);
  CHECK(e.q_len == 0);
  CHECK(e.kv_len == 7);
  // An end past the tensor's 50 rows: cut there; a count past kv_len: kv_len.
  e = sequence_extent(tables, 3, 64, 100);
  CHECK(e.q_row0 == 40);
  CHECK(e.q_len == 10);
  CHECK(e.kv_len == 30);
  e = sequence_extent(tables, 2, 64, 100);
  CHECK(e.q_len == 34);
  CHECK(e.kv_len == 100);
  // Packed keys take their counts from their starts.
  const std::vector<int> kv_starts = {0, 5, 5};
  tables = {nullptr, kv_starts.data(), nullptr, 0, 5};
  e = sequence_extent(tables, 0, 3, 100);
  CHECK(e.q_row0 == 0);
  CHECK(e.q_len == 3);
  CHECK(e.kv_row0 == 0);
  CHECK(e.kv_len == 5);
  e = sequence_extent(tables, 1, 3, 100);
  CHECK(e.kv_row0 == 5);
  CHECK(e.kv_len == 0);
}

TEST_CASE("calls with sequence tables are checked before anything is read", "[sequences]") {
  KernelCase c = varlen_cases()[0];
  PreparedCase prepared(c);
  const AttentionBuffers good = prepared.call_buffers();
  const auto refused = [&](AttentionBuffers buffers, const char* words) {
    try {
      validate_problem(prepared.shape, buffers);
      FAIL("accepted");
    } catch (const Error& error) {
      CHECK(error.status() == Status::invalid_argument);
      CHECK_THAT(error.what(), Catch::Contains(words));
    }
  };
  AttentionBuffers no_total = good;
  no_total.sequences.q_total = 0;
  refused(no_total, "q_total must be positive");
  AttentionBuffers both = good;
  both.sequences.kv_lens = prepared.packed->kv_starts.data();
  refused(both, "kv_seq_starts and kv_seq_lens both given");
  AttentionBuffers paged = good;
  const std::vector<std::int32_t> table(4, 0);
  paged.kv_pages = {table.data(), 1, 512, 1};
  refused(paged, "kv_seq_starts with a page table");
  // Dense keys are read as one page of 2^30 rows per sequence (kDensePageRows).
  AttentionBuffers huge = good;
  huge.sequences.kv_total = kDensePageRows;
  refused(huge, "fewer than 2^30 key rows");
  huge.sequences.kv_total = (kDensePageRows)-1;
  CHECK_NOTHROW(validate_problem(prepared.shape, huge));
  CHECK_NOTHROW(validate_problem(prepared.shape, good));
}
