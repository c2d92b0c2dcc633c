#include "failure_dump.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "failure_dump_header.hpp"

namespace attnjit::kernel_test {
namespace {

// Note: arrays are written from memory as they are; the format says little-endian.
static_assert(std::endian::native == std::endian::little, "failure dumps assume little-endian");

using nlohmann::json;

struct DumpArray {
  std::string name;
  std::string dtype;  // "bf16", "fp16", "fp32", "int32"
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // elements
  std::span<const std::byte> bytes;
  bool input = false;  // regenerated from the case: dropped first when the dump is too large
};

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

DumpArray tensor_array(const char* name, const reference::HostTensor& tensor,
                       const AttentionShape& shape, int heads, int len) {
  const Strides& s = tensor.strides();
  return {name,
          std::string(dtype_short_name(tensor.dtype())),
          {shape.batch, heads, len, shape.head_dim},
          {s.batch, s.head, s.row, 1},
          {static_cast<const std::byte*>(tensor.data()), tensor.storage_bytes()},
          true};
}

DumpArray contiguous_array(std::string name, std::string dtype, std::vector<std::int64_t> shape,
                           std::span<const std::byte> bytes, bool input) {
  std::vector<std::int64_t> strides = contiguous_strides(shape);
  return {std::move(name), std::move(dtype), std::move(shape), std::move(strides), bytes, input};
}

// The header line for `arrays` (offsets assigned in order), newline included.
std::string header_line(json header, const std::vector<DumpArray>& arrays) {
  json list = json::array();
  std::size_t offset = 0;
  for (const DumpArray& array : arrays) {
    list.push_back({{"name", array.name},
                    {"dtype", array.dtype},
                    {"shape", array.shape},
                    {"strides", array.strides},
                    {"offset", offset},
                    {"bytes", array.bytes.size()}});
    offset += array.bytes.size();
  }
  header["arrays"] = std::move(list);
  // Note: replacement, not an exception, for invalid UTF-8 in a case's expressions or anatomy.
  return header.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::size_t file_bytes(const std::string& header, const std::vector<DumpArray>& arrays) {
  std::size_t total = header.size();
  for (const DumpArray& array : arrays) total += array.bytes.size();
  return total;
}

// Opens `<dir>/<stem>.dump`, or `<stem>-2.dump`, ... when it exists (the same case failing in
// two runs that share the directory keeps both).
std::FILE* open_new_file(const std::filesystem::path& dir, const std::string& stem,
                         std::filesystem::path& path) {
  for (int n = 1; n <= 100; ++n) {
    path = dir / (n == 1 ? stem + ".dump" : fmt::format("{}-{}.dump", stem, n));
    if (std::FILE* file = std::fopen(path.c_str(), "wbx")) return file;
    if (errno != EEXIST) break;
  }
  throw std::runtime_error(
      fmt::format("cannot create {}: {}", path.string(), std::strerror(errno)));
}

void write_file(const std::filesystem::path& dir, const std::string& stem,
                const std::string& header, const std::vector<DumpArray>& arrays,
                std::filesystem::path& path) {
  std::filesystem::create_directories(dir);
  std::FILE* file = open_new_file(dir, stem, path);
  bool ok = std::fwrite(header.data(), 1, header.size(), file) == header.size();
  for (const DumpArray& array : arrays) {
    ok = ok && std::fwrite(array.bytes.data(), 1, array.bytes.size(), file) == array.bytes.size();
  }
  const int write_errno = errno;
  ok = (std::fclose(file) == 0) && ok;
  if (!ok) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    throw std::runtime_error(
        fmt::format("cannot write {}: {}", path.string(), std::strerror(write_errno)));
  }
}

// The arrays in file order; ref_out and ref_lse are the reference's values as fp32.
std::vector<DumpArray> case_arrays(const FailureRecord& record, const std::vector<float>& ref_out,
                                   const std::vector<float>& ref_lse) {
  const PreparedCase& prepared = record.prepared;
  const KernelCase& c = prepared.test_case;
  const AttentionShape& shape = prepared.shape;
  const reference::HostProblem& problem = prepared.problem;
  const std::int64_t b = shape.batch, hq = shape.num_heads_q, lq = shape.q_len;

  std::vector<DumpArray> arrays;
  arrays.push_back(tensor_array("q", problem.q, shape, shape.num_heads_q, shape.q_len));
  arrays.push_back(tensor_array("k", problem.k, shape, shape.num_heads_kv, shape.kv_len));
  arrays.push_back(tensor_array("v", problem.v, shape, shape.num_heads_kv, shape.kv_len));
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorInput& input = c.tensors[i];
    const bool is_int = prepared.spec.signature.tensors[i].elem == expr::TensorElemType::int32;
    const std::span<const std::byte> bytes =
        is_int ? std::as_bytes(std::span(input.ints)) : std::as_bytes(std::span(input.floats));
    arrays.push_back(contiguous_array("tensor:" + prepared.spec.signature.tensors[i].name,
                                      is_int ? "int32" : "fp32",
                                      {static_cast<std::int64_t>(bytes.size() / 4)}, bytes, true));
  }
  arrays.push_back(tensor_array("out", problem.out, shape, shape.num_heads_q, shape.q_len));
  arrays.back().input = false;
  arrays.push_back(contiguous_array("ref_out", "fp32", {b, hq, lq, shape.head_dim},
                                    std::as_bytes(std::span(ref_out)), false));
  if (!record.lse.empty()) {
    arrays.push_back(
        contiguous_array("lse", "fp32", {b, hq, lq}, std::as_bytes(record.lse), false));
    arrays.push_back(
        contiguous_array("ref_lse", "fp32", {b, hq, lq}, std::as_bytes(std::span(ref_lse)), false));
  }
  return arrays;
}

// The header line for the arrays that fit in `max_bytes` with it: all of them, else all but
// the inputs, else none; `arrays` keeps those written and the header names the dropped ones.
std::string fit_to_limit(json header, std::vector<DumpArray>& arrays, std::size_t max_bytes) {
  std::string line = header_line(header, arrays);
  if (file_bytes(line, arrays) <= max_bytes) return line;
  json dropped = json::array();
  std::vector<DumpArray> outputs;
  for (DumpArray& array : arrays) {
    if (array.input) {
      dropped.push_back(array.name);
    } else {
      outputs.push_back(std::move(array));
    }
  }
  arrays = std::move(outputs);
  header["dropped"] = {{"arrays", dropped},
                       {"reason", fmt::format("the dump would exceed {} bytes; the case's seed "
                                              "and parameters regenerate the inputs",
                                              max_bytes)}};
  line = header_line(header, arrays);
  if (file_bytes(line, arrays) <= max_bytes) return line;
  for (const DumpArray& array : arrays) header["dropped"]["arrays"].push_back(array.name);
  header["dropped"]["reason"] =
      fmt::format("the outputs alone exceed {} bytes: header only", max_bytes);
  arrays.clear();
  return header_line(header, arrays);
}

// Note: fputs, not fmt::print, which can throw: a warning must not turn into an exception.
void warn(const std::string& message) {
  std::fputs(("warning: " + message + "\n").c_str(), stderr);
}

}  // namespace

std::string dump_file_stem(const std::string& case_name) {
  constexpr std::size_t kMaxStem = 160;
  std::string stem;
  for (const char ch : case_name) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '=' || ch == '-';
    if (keep) {
      stem += ch;
    } else if (stem.empty() || stem.back() != '_') {
      stem += '_';
    }
  }
  // Note: no hidden file, and never "." or "..".
  if (stem.empty() || stem.front() == '.') stem.insert(0, "case");
  if (stem.size() > kMaxStem) {
    stem = fmt::format("{}-{:016x}", stem.substr(0, kMaxStem - 17),
                       XXH3_64bits(case_name.data(), case_name.size()));
  }
  return stem;
}

std::optional<std::string> FailureDumper::write(const std::string& dir,
                                                const FailureRecord& record) {
  const int attempt = ++attempts_;
  if (attempt > limits_.max_dumps) {
    if (attempt == limits_.max_dumps + 1) {
      warn(
          fmt::format("failure dumps: the limit of {} per process is reached, later failures "
                      "are not dumped",
                      limits_.max_dumps));
    }
    return std::nullopt;
  }
  // Note: a dump only adds to a failure's log; nothing here may end the test run or mask it.
  try {
    const std::vector<float> ref_out(record.expected_out.begin(), record.expected_out.end());
    const std::vector<float> ref_lse(record.expected_lse.begin(), record.expected_lse.end());
    std::vector<DumpArray> arrays = case_arrays(record, ref_out, ref_lse);
    const std::string line = fit_to_limit(failure_dump_header(record), arrays, limits_.max_bytes);
    std::filesystem::path path;
    write_file(dir, dump_file_stem(record.prepared.test_case.name()), line, arrays, path);
    return path.string();
  } catch (const std::exception& error) {
    warn(std::string("failure dump not written: ") + error.what());
  } catch (...) {
    warn("failure dump not written: unknown error");
  }
  return std::nullopt;
}

std::optional<std::string> dump_failure(const FailureRecord& record) {
  const char* dir = std::getenv("ATTNJIT_TEST_DUMP_DIR");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  static FailureDumper dumper;
  return dumper.write(dir, record);
}

}  // namespace attnjit::kernel_test
