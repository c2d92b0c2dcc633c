// Failure dumps: when ATTNJIT_TEST_DUMP_DIR names a directory, a kernel case whose check fails
// leaves `<dir>/<sanitized case name>.dump` with its parameters, error stats, anatomy and data,
// so that a failure seen on a lent GPU can be studied after the machine is gone
// (tools/read_failure_dump.py reads it).
//
// Format: one line of JSON (the header), then the arrays' raw little-endian bytes back to back.
// Each entry of the header's `arrays` is {name, dtype, shape, strides, offset, bytes}; `offset`
// counts from the first byte after the header's newline and `strides` are in elements, so a
// strided tensor (row padding, blhd) is its whole storage. bf16 and fp16 are stored as their
// 16-bit patterns. Arrays: q, k, v as the kernel read them, the case's int32/float32 tensors,
// out (the kernel's, dtype of q), ref_out (fp32), and with an LSE lse and ref_lse (fp32).
//
// Limits, so that a bad run cannot fill the disk or the device tool's transfer: DumpLimits. A
// dump over max_bytes drops the inputs first (the seed regenerates q, k and v; the header says
// what was dropped and why), then every array (header only).
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "kernel_case.hpp"

namespace attnjit::kernel_test {

// What PreparedCase::check knows about a failed case.
struct FailureRecord {
  const PreparedCase& prepared;
  const CaseResult& result;
  std::span<const float> lse;            // the kernel's [batch, heads_q, q_len]; empty: no LSE
  std::span<const double> expected_out;  // [batch, heads_q, q_len, head_dim]
  std::span<const double> expected_lse;  // [batch, heads_q, q_len]; empty: no LSE
};

struct DumpLimits {
  int max_dumps = 6;                        // per FailureDumper: the process's, for test runs
  std::size_t max_bytes = 2 * 1024 * 1024;  // per file, header included
};

class FailureDumper {
 public:
  explicit FailureDumper(DumpLimits limits = {}) : limits_(limits) {}

  // Writes `record` into `dir` (created if missing) and returns the file's path. Returns nothing
  // once max_dumps attempts were made (saying so once on stderr), or when writing fails: then a
  // warning line on stderr and no partial file. Never throws.
  std::optional<std::string> write(const std::string& dir, const FailureRecord& record);

 private:
  DumpLimits limits_;
  std::atomic<int> attempts_{0};
};

// The process's FailureDumper writing into $ATTNJIT_TEST_DUMP_DIR; nothing at all when the
// variable is unset or empty.
std::optional<std::string> dump_failure(const FailureRecord& record);

// `case_name` as a file name: [A-Za-z0-9._=-] kept, runs of anything else one '_', at most 160
// characters (a longer name is cut and ends with a hash of the whole name, so cut names differ).
std::string dump_file_stem(const std::string& case_name);

}  // namespace attnjit::kernel_test
