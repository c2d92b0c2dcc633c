// Entries for the store tests: made-up binaries under made-up keys (the store does not care what
// a binary is), stored and addressed by number.
#pragma once

#include <fmt/format.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cache/entry_store.hpp"
#include "cache/sidecar.hpp"
#include "cache_test_support.hpp"

namespace attnjit::test {

inline cache::EntryId test_id(int n, const std::string& arch = "sm_90",
                              const std::string& format = "cubin") {
  return {arch, "13.0", "bf16-d64", fmt::format("{:032x}", 0xabc000 + n), format};
}

// A binary of a size that differs per entry, so that sizes tell entries apart.
inline std::string test_binary(int n) {
  return fmt::format("binary {} ", n) + std::string(static_cast<std::size_t>(100 * (n + 1)), 'x');
}

inline nlohmann::json test_fields(int n) {
  return {{"summary", fmt::format("test: mask='true' score='score' bf16 d64 #{}", n)},
          {"variant", {{"mask", "true"}, {"dtype", "bf16"}, {"head_dim", 64}}}};
}

inline std::filesystem::path store_test_entry(const cache::EntryStore& store, int n,
                                              const std::string& arch = "sm_90") {
  return store.store(test_id(n, arch), test_binary(n), test_fields(n));
}

// Rewrites a sidecar on disk after `edit`, sealed again so that only the edit is wrong.
template <typename Edit>
void edit_sidecar(const std::filesystem::path& sidecar, Edit edit, bool reseal = true) {
  nlohmann::json json = nlohmann::json::parse(slurp(sidecar));
  edit(json);
  if (reseal) cache::seal_sidecar(json);
  overwrite(sidecar, cache::serialize_sidecar(json));
}

}  // namespace attnjit::test
