#include "paged_cache.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace attnjit::kernel_test {
namespace {

constexpr int kSparePages = 3;  // pages no sequence uses: NaN, so that a wrong entry shows

int pages_per_sequence(int kv_len, int page_size) { return (kv_len + page_size - 1) / page_size; }

}  // namespace

PagedCache::PagedCache(const reference::HostProblem& problem, Layout layout,
                       const PagedCacheOptions& options) {
  const AttentionShape& s = problem.shape;
  const int per_sequence = pages_per_sequence(s.kv_len, options.page_size);
  const int num_pages = s.batch * per_sequence + kSparePages;
  const int width = per_sequence + 1;  // one slot more than needed: -1, never read
  const DType dtype = problem.k.dtype();
  k_pool = reference::HostTensor(dtype, layout, num_pages, s.num_heads_kv, options.page_size,
                                 s.head_dim);
  v_pool = reference::HostTensor(dtype, layout, num_pages, s.num_heads_kv, options.page_size,
                                 s.head_dim);
  k_pool.fill_nan();
  v_pool.fill_nan();
  // Note: shuffled, so that consecutive pages of a sequence are not consecutive in the pool and a
  // kernel that ignored the table (or used the wrong row of it) would read other rows.
  std::vector<std::int32_t> order(static_cast<std::size_t>(num_pages));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 random(options.seed);
  std::shuffle(order.begin(), order.end(), random);
  table.assign(static_cast<std::size_t>(s.batch) * width, -1);
  for (int b = 0; b < s.batch; ++b) {
    for (int p = 0; p < per_sequence; ++p) {
      if (p >= per_sequence - options.unmapped_tail_pages) continue;  // stays -1
      const std::int32_t page = order[static_cast<std::size_t>(b) * per_sequence + p];
      table[static_cast<std::size_t>(b) * width + p] = page;
      for (int row = p * options.page_size; row < std::min(s.kv_len, (p + 1) * options.page_size);
           ++row) {
        for (int h = 0; h < s.num_heads_kv; ++h) {
          for (int d = 0; d < s.head_dim; ++d) {
            const int in_page = row - p * options.page_size;
            k_pool.set(page, h, in_page, d, problem.k.at(b, h, row, d));
            v_pool.set(page, h, in_page, d, problem.v.at(b, h, row, d));
          }
        }
      }
    }
  }
  pages = {table.data(), width, options.page_size, num_pages};
}

AttentionBuffers PagedCache::buffers(AttentionBuffers dense) {
  dense.k = k_pool.data();
  dense.v = v_pool.data();
  dense.k_strides = k_pool.strides();
  dense.v_strides = v_pool.strides();
  dense.kv_pages = pages;
  return dense;
}

}  // namespace attnjit::kernel_test
