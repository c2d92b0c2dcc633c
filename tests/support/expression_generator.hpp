// Random masks and scores over the expression language, for tests that run them through the
// kernels: integer arithmetic on the indices, comparisons, boolean connectives, float scores.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <random>
#include <string>

#include "kernel_case.hpp"

namespace attnjit::kernel_test {

class ExpressionGenerator {
 public:
  explicit ExpressionGenerator(std::uint64_t seed) : rng_(seed) {}

  // integer := atom | integer op integer | abs(integer) | min/max(integer, integer)
  std::string integer(int depth) {
    const int choice = pick(depth <= 0 ? 2 : 6);
    switch (choice) {
      case 0: {
        static const char* atoms[] = {"q_idx", "kv_idx", "h", "b", "q_len", "kv_len"};
        return atoms[pick(6)];
      }
      case 1:
        return std::to_string(pick(40) - 8);
      case 2: {
        static const char* ops[] = {"+", "-", "*", "/", "%"};
        return fmt::format("({} {} {})", integer(depth - 1), ops[pick(5)], integer(depth - 1));
      }
      case 3:
        return fmt::format("abs({})", integer(depth - 1));
      case 4:
        return fmt::format("{}({}, {})", pick(2) == 0 ? "min" : "max", integer(depth - 1),
                           integer(depth - 1));
      default:
        return fmt::format("(q_idx - kv_idx) {} {}", pick(2) == 0 ? "/" : "%", pick(9) + 1);
    }
  }

  // boolean := integer cmp integer | boolean && boolean | boolean || boolean | !boolean
  std::string boolean(int depth) {
    static const char* comparisons[] = {"<", "<=", ">", ">=", "==", "!="};
    const int choice = pick(depth <= 0 ? 1 : 4);
    switch (choice) {
      case 0:
        return fmt::format("{} {} {}", integer(2), comparisons[pick(6)], integer(2));
      case 1:
        return fmt::format("({}) && ({})", boolean(depth - 1), boolean(depth - 1));
      case 2:
        return fmt::format("({}) || ({})", boolean(depth - 1), boolean(depth - 1));
      default:
        return fmt::format("!({})", boolean(depth - 1));
    }
  }

  std::string score() {
    switch (pick(4)) {
      case 0:
        return "score";
      case 1:
        return fmt::format("score + 0.01 * float({})", integer(2));
      case 2:
        return fmt::format("where({}, score * 0.5, score)", boolean(1));
      default:
        return fmt::format("4.0 * tanh(score / 4.0) - 0.001 * float(abs({}))", integer(1));
    }
  }

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

 private:
  std::mt19937_64 rng_;
};

// A case with a random mask and score, dtype, layout, head dim 64 or 128, up to `max_batch`
// batches, `max_heads_kv` kv heads with up to two query heads each, lengths up to `max_len`.
inline KernelCase random_expression_case(std::uint64_t seed, int max_len, int max_batch,
                                         int max_heads_kv) {
  ExpressionGenerator generator(seed);
  KernelCase c;
  c.mask = generator.boolean(2);
  c.score = generator.score();
  c.seed = seed;
  c.dtype = generator.pick(2) == 0 ? DType::bf16 : DType::fp16;
  c.layout = generator.pick(2) == 0 ? Layout::bhld : Layout::blhd;
  c.head_dim = generator.pick(2) == 0 ? 64 : 128;
  c.shape.batch = 1 + generator.pick(max_batch);
  c.shape.num_heads_kv = 1 + generator.pick(max_heads_kv);
  c.shape.num_heads_q = c.shape.num_heads_kv * (1 + generator.pick(2));
  c.shape.q_len = 1 + generator.pick(max_len);
  c.shape.kv_len = 1 + generator.pick(max_len);
  c.tolerance_factor = 2.0;
  // Last, so that the draws above stay what they were: a quarter of the cases have rows padded
  // (explicit strides; the padding is poisoned, so a read or a write there shows).
  c.row_padding = generator.pick(4) == 0 ? 8 : 0;
  // Last again: a quarter read their keys and values from a paged cache (the pools shuffled, the
  // rows no sequence holds NaN): on the sm90 family in boxes of pages of a multiple of 8 rows
  // (24: boxes of 8), pages of 4 and 100 on the sm80 family's paged kernel (100: some key tiles
  // cross a page's end).
  if (generator.pick(4) == 0) {
    static const int page_sizes[] = {4, 8, 16, 24, 64, 100, 256};
    c.page_size = page_sizes[generator.pick(7)];
  }
  // Last again: an eighth have variable-length sequences (on a kernel with the tables: the sm90
  // family's where it serves the variant and can load the call, else the sm80 family's): each
  // sequence's counts drawn up to the lengths (zero too),
  // queries packed in three of four, keys packed in half of the dense ones, else key counts.
  if (generator.pick(8) == 0) {
    SequenceOptions sequences;
    sequences.pack_queries = generator.pick(4) != 0;
    sequences.pack_keys = c.page_size == 0 && generator.pick(2) == 0;
    sequences.gap_rows = generator.pick(3);
    for (int b = 0; b < c.shape.batch; ++b) {
      sequences.q_lens.push_back(sequences.pack_queries ? generator.pick(c.shape.q_len + 1)
                                                        : c.shape.q_len);
      sequences.kv_lens.push_back(generator.pick(c.shape.kv_len + 1));
    }
    c.sequences = std::move(sequences);
  }
  return c;
}

}  // namespace attnjit::kernel_test
