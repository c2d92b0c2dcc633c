// The kernel cache from C: its path, its entries (listed or verified), clearing. Works on a
// cache directory alone, without a runtime, as `attnjit cache` does.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cache/cache_admin.hpp"
#include "capi/boundary.hpp"
#include "compile/nvrtc_compiler.hpp"

// The entries the caller reads, and the strings they point into.
struct attnjit_cache_list {
  struct Strings {
    std::string binary, sidecar;
  };
  std::vector<attnjit::cache::EntryProblem> checked;  // reason empty when sound or not checked
  std::vector<Strings> paths;
  std::vector<attnjit_cache_entry> entries;
};

namespace {

using attnjit::capi::guarded;
using attnjit::capi::optional_text;
using attnjit::capi::require;
using attnjit::capi::require_version;
namespace fs = std::filesystem;

fs::path cache_root(const char* cache_dir) {
  const std::string dir = optional_text(cache_dir);
  return dir.empty() ? attnjit::cache::default_cache_dir() : fs::path(dir);
}

const attnjit_cache_list_options& list_options(const attnjit_cache_list_options* options,
                                               attnjit_cache_list_options& defaults) {
  attnjit_cache_list_options_init(&defaults);
  const attnjit_cache_list_options& o = options != nullptr ? *options : defaults;
  require_version(o.version, ATTNJIT_CACHE_LIST_OPTIONS_VERSION, "attnjit_cache_list_options");
  return o;
}

// Keeps the entries of `arch` (all when NULL) and points the C view into them.
std::unique_ptr<attnjit_cache_list> make_list(std::vector<attnjit::cache::EntryProblem> checked,
                                              const char* arch, bool verified) {
  auto list = std::make_unique<attnjit_cache_list>();
  if (arch != nullptr) {
    const std::string wanted = attnjit::nvrtc::validate_arch(arch);
    std::erase_if(checked, [&](const auto& c) { return c.entry.arch != wanted; });
  }
  list->checked = std::move(checked);
  list->paths.reserve(list->checked.size());
  for (const auto& [info, reason] : list->checked) {
    list->paths.push_back({info.binary.string(), info.sidecar.string()});
    const auto& paths = list->paths.back();
    attnjit_cache_entry entry{};
    entry.arch = info.arch.c_str();
    entry.cuda_version = info.cuda_version.c_str();
    entry.name = info.name.c_str();
    entry.key = info.key.c_str();
    entry.binary_path = paths.binary.c_str();
    entry.sidecar_path = paths.sidecar.c_str();
    entry.summary = info.summary.c_str();
    entry.size_bytes = info.size;
    entry.age_seconds = info.age.count();
    entry.unused_seconds = info.unused.count();
    entry.problem = verified && !reason.empty() ? reason.c_str() : nullptr;
    list->entries.push_back(entry);
  }
  return list;
}

}  // namespace

extern "C" {

attnjit_status attnjit_cache_path(char* buffer, size_t capacity, size_t* length,
                                  const char* cache_dir) {
  return guarded([&] {
    require(length, "length");
    const std::string path = cache_root(cache_dir).string();
    *length = path.size();
    if (capacity <= path.size()) {
      attnjit::throw_error(attnjit::Status::invalid_argument,
                           "the cache path needs {} bytes with its NUL; the buffer has {}",
                           path.size() + 1, capacity);
    }
    require(buffer, "buffer");
    std::memcpy(buffer, path.c_str(), path.size() + 1);
  });
}

void attnjit_cache_list_options_init(attnjit_cache_list_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->version = ATTNJIT_CACHE_LIST_OPTIONS_VERSION;
}

attnjit_status attnjit_cache_list_create(attnjit_cache_list** out,
                                         const attnjit_cache_list_options* options) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    attnjit_cache_list_options defaults;
    const attnjit_cache_list_options& o = list_options(options, defaults);
    std::vector<attnjit::cache::EntryProblem> listed;
    for (auto& info : attnjit::cache::list_entries(cache_root(o.cache_dir))) {
      listed.push_back({std::move(info), {}});
    }
    *out = make_list(std::move(listed), o.arch, /*verified=*/false).release();
  });
}

attnjit_status attnjit_cache_verify(attnjit_cache_list** out, size_t* num_bad,
                                    const attnjit_cache_list_options* options) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    if (num_bad != nullptr) *num_bad = 0;
    attnjit_cache_list_options defaults;
    const attnjit_cache_list_options& o = list_options(options, defaults);
    auto list = make_list(attnjit::cache::check_entries(cache_root(o.cache_dir)), o.arch,
                          /*verified=*/true);
    if (num_bad != nullptr) {
      for (const auto& entry : list->entries) *num_bad += entry.problem != nullptr ? 1 : 0;
    }
    *out = list.release();
  });
}

size_t attnjit_cache_list_count(const attnjit_cache_list* list) {
  return list != nullptr ? list->entries.size() : 0;
}

const attnjit_cache_entry* attnjit_cache_list_entry(const attnjit_cache_list* list, size_t index) {
  if (list == nullptr || index >= list->entries.size()) return nullptr;
  return &list->entries[index];
}

void attnjit_cache_list_destroy(attnjit_cache_list* list) { delete list; }

void attnjit_cache_clear_options_init(attnjit_cache_clear_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->version = ATTNJIT_CACHE_CLEAR_OPTIONS_VERSION;
  options->older_than_seconds = -1;
  options->max_bytes = -1;
}

attnjit_status attnjit_cache_clear(attnjit_cache_clear_result* out,
                                   const attnjit_cache_clear_options* options) {
  return guarded([&] {
    if (out != nullptr) *out = attnjit_cache_clear_result{};
    attnjit_cache_clear_options defaults;
    attnjit_cache_clear_options_init(&defaults);
    const attnjit_cache_clear_options& o = options != nullptr ? *options : defaults;
    require_version(o.version, ATTNJIT_CACHE_CLEAR_OPTIONS_VERSION, "attnjit_cache_clear_options");
    attnjit::cache::ClearFilter filter;
    if (o.arch != nullptr) filter.arch = attnjit::nvrtc::validate_arch(o.arch);
    if (o.older_than_seconds >= 0) filter.older_than = std::chrono::seconds(o.older_than_seconds);
    if (o.max_bytes >= 0) filter.max_bytes = static_cast<std::uintmax_t>(o.max_bytes);
    const attnjit::cache::ClearResult result =
        attnjit::cache::clear_entries(cache_root(o.cache_dir), filter);
    if (out != nullptr) *out = {result.entries, result.files, result.bytes};
  });
}

}  // extern "C"
