// Random decoding steps: a few queries at the end of a key/value cache, with the masks serving
// programs use there (causal, windows, attention sinks, evicted prefixes, documents, random
// ones, per-sequence cache lengths as a mask or as key counts), GQA groups, split counts forced
// or left to the heuristic, and dense or paged caches. They reach the decoding
// paths that fixed tables reach one case at a time: packed query heads, the decoding entry, a
// masked call's slices of its kept keys (the first kept window, empty stretches before and
// between spans), the merge of slices that keep nothing, and fully masked rows.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "case_tables.hpp"
#include "expression_generator.hpp"
#include "kernel_case.hpp"

namespace attnjit::kernel_test {

// Query i of a step sits at cache position kv_len - q_len + i (negative: before the cache,
// a row that keeps nothing under the causal masks).
inline constexpr const char* kCachePosition = "(q_idx + kv_len - q_len)";

// A case of seed `seed`: everything about it follows from the seed (the case's name and the
// seed reproduce a failure). The product batch * heads * q_len * kv_len * head_dim is kept
// under `max_work` (about the emulator's cost) by shortening the cache.
inline KernelCase random_decoding_case(std::uint64_t seed, long long max_work = 6'000'000) {
  ExpressionGenerator gen(seed);
  KernelCase c;
  c.seed = seed;
  c.dtype = gen.pick(2) == 0 ? DType::bf16 : DType::fp16;
  c.layout = gen.pick(2) == 0 ? Layout::bhld : Layout::blhd;
  static const int head_dims[] = {64, 64, 128, 128, 96, 256};
  c.head_dim = head_dims[gen.pick(6)];
  c.shape.batch = 1 + gen.pick(2);
  c.shape.num_heads_kv = 1 + gen.pick(2);
  c.shape.num_heads_q = c.shape.num_heads_kv * (1 << gen.pick(4));  // groups of 1, 2, 4, 8
  const int q_kind = gen.pick(20);
  c.shape.q_len = q_kind < 12 ? 1 : q_kind < 17 ? 2 + gen.pick(7) : 9 + gen.pick(25);
  const int kv_kind = gen.pick(5);
  c.shape.kv_len = kv_kind == 0  ? 1 + gen.pick(64)
                   : kv_kind < 3 ? 65 + gen.pick(640)
                                 : 705 + gen.pick(1400);
  const long long per_key =
      static_cast<long long>(c.shape.batch) * c.shape.num_heads_q * c.shape.q_len * c.head_dim;
  c.shape.kv_len = static_cast<int>(
      std::max<long long>(1, std::min<long long>(c.shape.kv_len, max_work / per_key)));
  const int kv_len = c.shape.kv_len;

  const std::string pos = kCachePosition;
  const std::string causal = fmt::format("kv_idx <= {}", pos);
  switch (gen.pick(9)) {
    case 0:
      c.mask = "true";
      break;
    case 1:
      c.mask = causal;
      break;
    case 2:  // a sliding window, from one key to more than the cache
      c.mask = fmt::format("{} && {} - kv_idx < W", causal, pos);
      c.params = {"W:int"};
      c.scalars = {1 + gen.pick(kv_len + 8)};
      break;
    case 3:  // attention sinks and a window: two kept spans with empty tiles between
      c.mask = fmt::format("kv_idx < S || ({} && {} - kv_idx < W)", causal, pos);
      c.params = {"S:int", "W:int"};
      c.scalars = {1 + gen.pick(8), 1 + gen.pick(std::max(1, kv_len / 4))};
      break;
    case 4:  // an evicted prefix: nothing kept before key S
      c.mask = fmt::format("kv_idx >= S && {}", causal);
      c.params = {"S:int"};
      c.scalars = {gen.pick(kv_len + 1)};
      break;
    case 5: {  // documents: the queries carry the ids of the cache's last positions
      c.mask = "qdoc[q_idx] == kdoc[kv_idx]";
      TensorInput keys = document_ids(kv_len, 1 + gen.pick(6), gen.pick(3) != 0, seed);
      keys.decl = "kdoc:int32[1]";
      TensorInput queries;
      queries.decl = "qdoc:int32[1]";
      queries.dims[0] = c.shape.q_len;
      for (int i = 0; i < c.shape.q_len; ++i) {
        const int position = kv_len - c.shape.q_len + i;
        queries.ints.push_back(position >= 0 ? keys.ints[position] : -1);
      }
      c.tensors = {queries, keys};
      break;
    }
    case 6:  // uses h: the query heads are not packed
      c.mask = fmt::format("{} && (kv_idx + h) % 3 != 0", causal);
      break;
    default:
      c.mask = gen.boolean(2);
      break;
  }
  switch (gen.pick(5)) {
    case 0:
      c.score = "score";
      break;
    case 1:  // ALiBi (uses h)
      c.score = fmt::format(
          "score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - {})", pos);
      break;
    case 2:  // a distance penalty without h: a row shift on packed heads
      c.score = fmt::format("score - 0.03 * float({} - kv_idx)", pos);
      break;
    case 3:
      c.score = "30.0 * tanh(score / 30.0)";
      break;
    default:
      c.score = gen.score();
      break;
  }
  if (gen.pick(5) < 3) c.split_kv = 1 + gen.pick(48);
  c.with_lse = gen.pick(4) != 0;
  c.tolerance_factor = 2.0;
  c.row_padding = gen.pick(4) == 0 ? 8 : 0;  // explicit strides, the padding poisoned
  // Last, so that the draws above stay what they were: a quarter of the steps are a batch of
  // caches of different fill padded to the longest (each sequence's length `len[b]`, from empty
  // to past the padded cache), whose keys past each length classify empty in the kernels.
  if (gen.pick(4) == 0) {
    c.mask = fmt::format("kv_idx < len[b] && ({})", c.mask);
    TensorInput lengths;
    lengths.decl = "len:int32[1]";
    lengths.dims[0] = c.shape.batch;
    for (int i = 0; i < c.shape.batch; ++i) lengths.ints.push_back(gen.pick(kv_len + 9));
    c.tensors.push_back(lengths);
  }
  // Last again: a third of the steps read their keys and values from a paged cache (the paged
  // kernel), in pages of one key to more than a key tile, powers of two or not (12; 100, where
  // some key tiles cross a page's end).
  if (gen.pick(3) == 0) {
    static const int page_sizes[] = {1, 16, 12, 32, 64, 100, 256};
    c.page_size = page_sizes[gen.pick(7)];
  }
  // Last again: a quarter of the steps give each sequence a key count of its own (kv_seq_lens;
  // over a dense cache also packed keys, kv_seq_starts), from none to the whole cache: the kernel
  // with the sequence tables, whose split slices are sized to each sequence's keys where the mask
  // keeps them (balance_split).
  if (gen.pick(4) == 0) {
    SequenceOptions sequences;
    sequences.q_lens.assign(static_cast<std::size_t>(c.shape.batch), c.shape.q_len);
    for (int i = 0; i < c.shape.batch; ++i) sequences.kv_lens.push_back(gen.pick(kv_len + 1));
    sequences.pack_queries = false;
    sequences.pack_keys = c.page_size == 0 && gen.pick(2) == 0;
    c.sequences = sequences;
  }
  return c;
}

}  // namespace attnjit::kernel_test
