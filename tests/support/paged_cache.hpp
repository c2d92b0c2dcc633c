// A paged key/value cache made from a case's dense keys and values, as a serving program holds
// one (AttentionBuffers::kv_pages): each sequence's rows copied into pages of the pools in a
// shuffled order, the pages no sequence uses poisoned with NaN (a read through a wrong entry
// shows), and table slots past a sequence's pages -1. Executors hand the pools and the table to
// the kernel; the reference reads the dense tensors, so the two paths share no addressing code.
#pragma once

#include <cstdint>
#include <vector>

#include "common/attention_problem.hpp"
#include "testkit/internal/random_inputs.hpp"

namespace attnjit::kernel_test {

struct PagedCacheOptions {
  int page_size = 16;
  // The last this-many pages of each sequence's kv_len rows get -1 in the table (rows that read
  // as zeros): only for cases whose mask drops those keys, which then match the dense reference.
  int unmapped_tail_pages = 0;
  std::uint64_t seed = 1;
};

struct PagedCache {
  reference::HostTensor k_pool, v_pool;  // [pages, heads, page_size, head_dim] in the case's layout
  std::vector<std::int32_t> table;       // [batch, table_width]
  KvPages pages;                         // table pointer into `table`: do not copy or move

  PagedCache(const reference::HostProblem& problem, Layout layout,
             const PagedCacheOptions& options);
  PagedCache(const PagedCache&) = delete;
  PagedCache& operator=(const PagedCache&) = delete;

  // `dense` with its keys and values replaced by the pools and the table (host memory).
  AttentionBuffers buffers(AttentionBuffers dense);
};

}  // namespace attnjit::kernel_test
