// Variable-length sequences made from a case's padded dense problem, as a serving program holds
// them (AttentionBuffers::sequences): each sequence's queries (and, where asked, keys and values)
// packed one after another into tensors of their total rows, with unused rows before the first
// and after the last (poisoned in the output), and the tables the kernels read. The rows of the
// padded problem past each sequence's counts are poisoned with NaN, so that a kernel that reads
// past a count shows it. Executors hand the packed tensors and the tables to the kernel; the check
// unpacks what it wrote and compares it with the naive reference run on the padded tensors with the
// same counts, so the two paths share no addressing code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/attention_problem.hpp"
#include "testkit/internal/random_inputs.hpp"

namespace attnjit::kernel_test {

struct SequenceOptions {
  std::vector<int> q_lens;   // one per batch entry, each at most the shape's q_len
  std::vector<int> kv_lens;  // one per batch entry, each at most the shape's kv_len
  bool pack_queries = true;  // q_seq_starts (else every q_lens[b] must be the shape's q_len)
  bool pack_keys = false;    // kv_seq_starts (dense keys only); else kv_seq_lens
  int gap_rows = 0;          // unused rows before the first packed sequence and after the last
};

struct PackedSequences {
  SequenceOptions options;
  std::vector<std::int32_t> q_starts, kv_starts, kv_lens;  // the tables (host memory)
  reference::HostTensor q, out, k, v;   // packed: [1, heads, total rows, head_dim]
  std::vector<float> lse;               // [num_heads_q, q_total] with packed queries, NaN first
  std::vector<std::byte> poisoned_out;  // out's bytes before the call
  int q_total = 0, kv_total = 0;        // the packed tensors' rows (0: not packed)
  int num_heads_q = 0, head_dim = 0;

  // Poisons `problem`'s rows past each sequence's counts, then packs what the options ask for.
  PackedSequences(reference::HostProblem& problem, Layout layout, const SequenceOptions& options);
  PackedSequences(const PackedSequences&) = delete;
  PackedSequences& operator=(const PackedSequences&) = delete;

  // `call` (the problem's buffers, or its paged cache's) with the packed tensors and the tables.
  AttentionBuffers buffers(AttentionBuffers call);
  // Writes the kernel's output rows into `problem`'s out (zeros past each count, as the reference
  // leaves them) and returns its lse in `problem`'s [batch, heads, q_len] order (-inf past each
  // count); `written_lse` is what the executor read back from the call's lse buffer.
  std::vector<float> unpack(reference::HostProblem& problem,
                            const std::vector<float>& written_lse) const;
  // Output elements outside every sequence's rows (the unused rows, padding) that the kernel
  // changed.
  std::int64_t gap_writes() const;
};

}  // namespace attnjit::kernel_test
