#include "cache/cache_admin.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include <nlohmann/json.hpp>

#include "cache/file_io.hpp"
#include "cache/sidecar.hpp"
#include "common/error.hpp"

namespace attnjit::cache {
namespace fs = std::filesystem;
namespace {

std::vector<fs::path> sorted_children(const fs::path& dir, bool directories) {
  std::vector<fs::path> children;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec) == directories) children.push_back(it->path());
  }
  std::sort(children.begin(), children.end());
  return children;
}

// v1/<arch>/cuda-<version> directories.
struct EntryDir {
  std::string arch, cuda_version;
  fs::path path;
};

std::vector<EntryDir> entry_dirs(const fs::path& root) {
  std::vector<EntryDir> dirs;
  for (const fs::path& arch_dir : sorted_children(root / "v1", true)) {
    for (const fs::path& version_dir : sorted_children(arch_dir, true)) {
      const std::string name = version_dir.filename().string();
      if (!name.starts_with("cuda-")) continue;
      dirs.push_back({arch_dir.filename().string(), name.substr(5), version_dir});
    }
  }
  return dirs;
}

std::chrono::seconds file_age(const fs::path& path) {
  std::error_code ec;
  const auto mtime = fs::last_write_time(path, ec);
  if (ec) return std::chrono::seconds(0);
  const auto age = fs::file_time_type::clock::now() - mtime;
  return std::max(std::chrono::seconds(0), std::chrono::duration_cast<std::chrono::seconds>(age));
}

struct LoadedEntry {
  EntryInfo info;
  nlohmann::json sidecar;  // discarded when unreadable
  std::string problem;     // why the sidecar is unreadable
};

LoadedEntry load_entry(const EntryDir& dir, const fs::path& sidecar_file) {
  LoadedEntry entry;
  EntryInfo& info = entry.info;
  info.arch = dir.arch;
  info.cuda_version = dir.cuda_version;
  info.key = sidecar_file.stem().string();
  info.sidecar = sidecar_file;
  info.age = file_age(sidecar_file);
  info.unused = info.age;
  try {
    const auto text = read_file(sidecar_file);
    entry.sidecar = parse_sidecar(text.value_or(""));
  } catch (const Error& e) {
    entry.problem = e.what();
  }
  if (entry.sidecar.is_discarded() || !entry.sidecar.is_object()) {
    if (entry.problem.empty()) entry.problem = "unreadable sidecar";
    info.summary = "(" + entry.problem + ")";
    entry.sidecar = nlohmann::json();
    // Still name the binary so clear removes it.
    for (const char* ext : {".cubin", ".ptx"}) {
      std::error_code ec;
      if (fs::exists(dir.path / (info.key + ext), ec)) info.binary = dir.path / (info.key + ext);
    }
    return entry;
  }
  info.summary = variant_summary(entry.sidecar);
  // Note: only a plain file name in this directory is trusted as the entry's binary; "file"
  // comes from disk and may be of any type or name a directory ("..").
  const auto file_it = entry.sidecar.find("file");
  const std::string file =
      file_it != entry.sidecar.end() && file_it->is_string() ? file_it->get<std::string>() : "";
  if (!file.empty() && file != "." && file != ".." && file.find('/') == std::string::npos) {
    info.binary = dir.path / file;
  }
  if (!info.binary.empty()) {
    std::error_code ec;
    const auto size = fs::file_size(info.binary, ec);
    info.size = ec ? 0 : size;
  }
  if (entry.sidecar.contains("created_unix") && entry.sidecar["created_unix"].is_number_integer()) {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::system_clock::now().time_since_epoch());
    // Note: the sidecar is untrusted; a creation time before the epoch or in the future is
    // clamped, so `now - created` cannot overflow.
    const auto& created_json = entry.sidecar["created_unix"];
    const std::int64_t created_raw =
        created_json.is_number_unsigned()
            ? static_cast<std::int64_t>(std::min<std::uint64_t>(created_json.get<std::uint64_t>(),
                                                                static_cast<std::uint64_t>(now.count())))
            : std::clamp<std::int64_t>(created_json.get<std::int64_t>(), 0, now.count());
    info.age = now - std::chrono::seconds(created_raw);
  }
  return entry;
}

// A root that does not exist is an empty cache; one that is not a directory is a mistake.
void check_root(const fs::path& root) {
  std::error_code ec;
  const auto status = fs::status(root, ec);
  if (fs::exists(status) && !fs::is_directory(status)) {
    throw_error(Status::io, "cache root {} is not a directory", root.string());
  }
}

std::vector<LoadedEntry> load_entries(const fs::path& root) {
  check_root(root);
  std::vector<LoadedEntry> entries;
  for (const EntryDir& dir : entry_dirs(root)) {
    for (const fs::path& file : sorted_children(dir.path, false)) {
      const std::string name = file.filename().string();
      if (file.extension() != ".json" || is_temp_file_name(name)) continue;
      entries.push_back(load_entry(dir, file));
    }
  }
  return entries;
}

bool remove_file(const fs::path& path, ClearResult& result) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!fs::remove(path, ec)) {
    if (ec) throw_error(Status::io, "cannot remove {}: {}", path.string(), ec.message());
    return false;
  }
  ++result.files;
  result.bytes += size == static_cast<std::uintmax_t>(-1) ? 0 : size;
  return true;
}

}  // namespace

std::vector<EntryInfo> list_entries(const fs::path& root) {
  std::vector<EntryInfo> infos;
  for (auto& entry : load_entries(root)) infos.push_back(std::move(entry.info));
  return infos;
}

std::vector<EntryProblem> verify_entries(const fs::path& root) {
  std::vector<EntryProblem> problems;
  for (auto& entry : load_entries(root)) {
    std::string reason = entry.problem;
    if (reason.empty()) {
      if (entry.info.binary.empty()) {
        reason = "sidecar names no binary";
      } else {
        try {
          const auto image = read_file(entry.info.binary);
          reason = image ? check_binary(entry.sidecar, *image) : "binary missing";
        } catch (const Error& e) {
          reason = e.what();
        }
      }
    }
    if (!reason.empty()) problems.push_back({std::move(entry.info), std::move(reason)});
  }
  return problems;
}

ClearResult clear_entries(const fs::path& root, const ClearFilter& filter) {
  ClearResult result;
  std::vector<EntryInfo> selected;
  for (const auto& entry : load_entries(root)) {
    const EntryInfo& info = entry.info;
    if (filter.arch && info.arch != *filter.arch) continue;
    if (filter.older_than && info.age < *filter.older_than) continue;
    selected.push_back(info);
  }
  if (filter.max_bytes) {
    // Least recently used first; keep the rest once they fit.
    std::stable_sort(selected.begin(), selected.end(), [](const EntryInfo& a, const EntryInfo& b) {
      return a.unused > b.unused;
    });
    std::uintmax_t total = 0;
    for (const EntryInfo& info : selected) total += info.size;
    std::size_t removed = 0;
    while (removed < selected.size() && total > *filter.max_bytes) {
      total -= selected[removed++].size;
    }
    selected.resize(removed);
  }
  for (const EntryInfo& info : selected) {
    // Sidecar first: once it is gone the entry no longer exists, whatever happens next.
    if (remove_file(info.sidecar, result)) ++result.entries;
    if (!info.binary.empty()) remove_file(info.binary, result);
    remove_file(info.sidecar.parent_path() / (info.key + ".lock"), result);
  }
  if (filter.arch || filter.older_than || filter.max_bytes) return result;
  // Everything else we may have left: temporaries of killed writers, locks, orphan binaries.
  for (const EntryDir& dir : entry_dirs(root)) {
    for (const fs::path& file : sorted_children(dir.path, false)) {
      const std::string name = file.filename().string();
      const auto ext = file.extension();
      if (is_temp_file_name(name) || ext == ".lock" || ext == ".cubin" || ext == ".ptx") {
        remove_file(file, result);
      }
    }
    std::error_code ec;
    fs::remove(dir.path, ec);  // only when empty
    fs::remove(dir.path.parent_path(), ec);
  }
  std::error_code ec;
  fs::remove(root / "v1", ec);
  return result;
}

std::uintmax_t parse_size(const std::string& text) {
  std::uintmax_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  std::string unit(ptr, end);
  if (error != std::errc{} || ptr == text.data()) {
    throw_error(Status::invalid_argument,
                "invalid size '{}' (expected a number of bytes, optionally with K, M, G or T: "
                "512M, 2G)",
                text);
  }
  if (unit.ends_with("iB")) {
    unit.resize(unit.size() - 2);
  } else if (unit.size() > 1 && unit.ends_with("B")) {
    unit.resize(unit.size() - 1);
  }
  int shift = 0;
  if (unit == "K" || unit == "k") {
    shift = 10;
  } else if (unit == "M") {
    shift = 20;
  } else if (unit == "G") {
    shift = 30;
  } else if (unit == "T") {
    shift = 40;
  } else if (!unit.empty() && unit != "B") {
    throw_error(Status::invalid_argument,
                "invalid size '{}': unknown unit '{}' (expected K, M, G or T)", text, unit);
  }
  if (shift > 0 && value > (std::numeric_limits<std::uintmax_t>::max() >> shift)) {
    throw_error(Status::invalid_argument, "invalid size '{}': too large", text);
  }
  return value << shift;
}

std::chrono::seconds parse_age(const std::string& text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc{} || ptr == text.data() || ptr + 1 != end || value < 0) {
    throw_error(Status::invalid_argument,
                "invalid age '{}' (expected a number and a unit: 45s, 30m, 12h, 7d, 2w)", text);
  }
  long long unit = 0;
  switch (*ptr) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    case 'w': unit = 7 * 86400; break;
    default:
      throw_error(Status::invalid_argument,
                  "invalid age '{}': unknown unit '{}' (expected s, m, h, d or w)", text, *ptr);
  }
  if (value > std::numeric_limits<long long>::max() / unit) {
    throw_error(Status::invalid_argument, "invalid age '{}': too large", text);
  }
  return std::chrono::seconds(value * unit);
}

std::string format_age(std::chrono::seconds age) {
  const auto s = age.count();
  if (s >= 86400) return fmt::format("{}d", s / 86400);
  if (s >= 3600) return fmt::format("{}h", s / 3600);
  if (s >= 60) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

}  // namespace attnjit::cache
