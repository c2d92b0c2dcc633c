#include "packed_sequences.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace attnjit::kernel_test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Each sequence's first packed row after `gap` unused rows, then one after another (back() is
// where the last ends; the tensors hold `gap` unused rows more after it).
std::vector<std::int32_t> packed_starts(const std::vector<int>& lens, int gap) {
  std::vector<std::int32_t> starts{gap};
  for (const int len : lens) starts.push_back(starts.back() + len);
  return starts;
}

// The first `len` rows of batch entry b of `from` into `to`'s one, from row `to_row` on.
void copy_rows(const reference::HostTensor& from, int b, int heads, int len, int head_dim,
               reference::HostTensor& to, int to_row) {
  for (int h = 0; h < heads; ++h) {
    for (int row = 0; row < len; ++row) {
      for (int d = 0; d < head_dim; ++d) to.set(0, h, to_row + row, d, from.at(b, h, row, d));
    }
  }
}

void poison_rows_from(reference::HostTensor& tensor, int b, int heads, int first, int len,
                      int head_dim) {
  for (int h = 0; h < heads; ++h) {
    for (int row = first; row < len; ++row) {
      for (int d = 0; d < head_dim; ++d) tensor.set(b, h, row, d, kNaN);
    }
  }
}

}  // namespace

PackedSequences::PackedSequences(reference::HostProblem& problem, Layout layout,
                                 const SequenceOptions& opts)
    : options(opts) {
  const AttentionShape& s = problem.shape;
  num_heads_q = s.num_heads_q;
  head_dim = s.head_dim;
  const auto batch = static_cast<std::size_t>(s.batch);
  if (options.q_lens.size() != batch || options.kv_lens.size() != batch) {
    throw std::invalid_argument("a sequence case needs one query and one key count per sequence");
  }
  for (int b = 0; b < s.batch; ++b) {
    const int q_len = options.q_lens[static_cast<std::size_t>(b)];
    const int kv_len = options.kv_lens[static_cast<std::size_t>(b)];
    if (q_len < 0 || q_len > s.q_len || kv_len < 0 || kv_len > s.kv_len ||
        (!options.pack_queries && q_len != s.q_len)) {
      throw std::invalid_argument("a sequence's counts exceed the case's shape");
    }
    poison_rows_from(problem.q, b, s.num_heads_q, q_len, s.q_len, s.head_dim);
    poison_rows_from(problem.k, b, s.num_heads_kv, kv_len, s.kv_len, s.head_dim);
    poison_rows_from(problem.v, b, s.num_heads_kv, kv_len, s.kv_len, s.head_dim);
  }
  const DType dtype = problem.q.dtype();
  // `from`'s sequences packed into a tensor of their rows and the unused ones around them: NaN
  // with an unused_seed of 0, else random finite values of that seed.
  const auto pack = [&](const reference::HostTensor& from, int heads, const std::vector<int>& lens,
                        const std::vector<std::int32_t>& starts, int total,
                        std::uint64_t unused_seed) {
    reference::HostTensor packed(dtype, layout, 1, heads, total, s.head_dim);
    if (unused_seed == 0) {
      packed.fill_nan();
    } else {
      packed.fill_random(unused_seed);
    }
    for (int b = 0; b < s.batch; ++b) {
      copy_rows(from, b, heads, lens[static_cast<std::size_t>(b)], s.head_dim, packed,
                starts[static_cast<std::size_t>(b)]);
    }
    return packed;
  };
  if (options.pack_queries) {
    q_starts = packed_starts(options.q_lens, options.gap_rows);
    q_total = q_starts.back() + options.gap_rows;
    q = pack(problem.q, s.num_heads_q, options.q_lens, q_starts, q_total, 0);
    out = reference::HostTensor(dtype, layout, 1, s.num_heads_q, q_total, s.head_dim);
    out.fill_nan();
    if (!problem.lse.empty()) {
      lse.assign(static_cast<std::size_t>(s.num_heads_q) * static_cast<std::size_t>(q_total), kNaN);
    }
    const auto* bytes = static_cast<const std::byte*>(out.data());
    poisoned_out.assign(bytes, bytes + out.storage_bytes());
  }
  if (options.pack_keys) {
    kv_starts = packed_starts(options.kv_lens, options.gap_rows);
    kv_total = kv_starts.back() + options.gap_rows;
    // Note: K's unused rows hold finite values, as other sequences' keys do: a kernel that read
    // past a count would take them into the softmax and be caught by the values, not by NaN.
    // V's are NaN: a key past the count has P = 0, and 0 x NaN catches a kernel that multiplies
    // such a row of V instead of zeros (another sequence's values may be Inf or NaN too).
    k = pack(problem.k, s.num_heads_kv, options.kv_lens, kv_starts, kv_total, 97);
    v = pack(problem.v, s.num_heads_kv, options.kv_lens, kv_starts, kv_total, 0);
  } else {
    kv_lens.assign(options.kv_lens.begin(), options.kv_lens.end());
  }
}

AttentionBuffers PackedSequences::buffers(AttentionBuffers call) {
  if (options.pack_queries) {
    call.q = q.data();
    call.out = out.data();
    call.q_strides = q.strides();
    call.out_strides = out.strides();
    call.lse = lse.empty() ? nullptr : lse.data();
    call.sequences.q_starts = q_starts.data();
    call.sequences.q_total = q_total;
  }
  if (options.pack_keys) {
    call.k = k.data();
    call.v = v.data();
    call.k_strides = k.strides();
    call.v_strides = v.strides();
    call.sequences.kv_starts = kv_starts.data();
    call.sequences.kv_total = kv_total;
  } else {
    call.sequences.kv_lens = kv_lens.data();
  }
  return call;
}

std::vector<float> PackedSequences::unpack(reference::HostProblem& problem,
                                           const std::vector<float>& written_lse) const {
  if (!options.pack_queries) return written_lse;
  const AttentionShape& s = problem.shape;
  const int total = q_total;
  std::vector<float> padded_lse(problem.lse.size(), -std::numeric_limits<float>::infinity());
  for (int b = 0; b < s.batch; ++b) {
    const int len = options.q_lens[static_cast<std::size_t>(b)];
    const int first = q_starts[static_cast<std::size_t>(b)];
    for (int h = 0; h < s.num_heads_q; ++h) {
      for (int row = 0; row < s.q_len; ++row) {
        for (int d = 0; d < s.head_dim; ++d) {
          problem.out.set(b, h, row, d, row < len ? out.at(0, h, first + row, d) : 0.0f);
        }
        if (!padded_lse.empty() && row < len) {
          padded_lse[(static_cast<std::size_t>(b) * s.num_heads_q + h) * s.q_len + row] =
              written_lse[static_cast<std::size_t>(h) * total + first + row];
        }
      }
    }
  }
  return padded_lse;
}

std::int64_t PackedSequences::gap_writes() const {
  if (!options.pack_queries) return 0;
  std::vector<bool> in_sequence(static_cast<std::size_t>(q_total), false);
  for (std::size_t b = 0; b + 1 < q_starts.size(); ++b) {
    for (int row = q_starts[b]; row < q_starts[b] + options.q_lens[b]; ++row) {
      in_sequence[static_cast<std::size_t>(row)] = true;
    }
  }
  // Note: every element of the storage outside the sequences' rows, padding and gaps alike.
  std::vector<bool> inside(static_cast<std::size_t>(out.storage_elements()), false);
  const Strides st = out.strides();
  for (int h = 0; h < num_heads_q; ++h) {
    for (int row = 0; row < q_total; ++row) {
      if (!in_sequence[static_cast<std::size_t>(row)]) continue;
      for (int d = 0; d < head_dim; ++d) {
        inside[static_cast<std::size_t>(h * st.head + row * st.row + d)] = true;
      }
    }
  }
  const std::size_t element = dtype_size(out.dtype());
  const auto* after = static_cast<const std::byte*>(out.data());
  std::int64_t changed = 0;
  for (std::size_t i = 0; i < inside.size(); ++i) {
    if (!inside[i] &&
        std::memcmp(after + i * element, poisoned_out.data() + i * element, element) != 0) {
      ++changed;
    }
  }
  return changed;
}

}  // namespace attnjit::kernel_test
