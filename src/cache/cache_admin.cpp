#include "cache/cache_admin.hpp"

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cache/cache_fs.hpp"
#include "cache/sidecar.hpp"
#include "common/error.hpp"

namespace attnjit::cache {
namespace fs = std::filesystem;
namespace {

// Listing and clearing trust nothing and check nothing: they only read names and sidecars and
// remove files, never through a symlink.
constexpr Trust kNoTrustCheck = std::nullopt;

// A v1/<arch>/cuda-<version> directory, open.
struct EntryDir {
  std::string arch, cuda_version;
  Dir dir;
};

// A symlink where the layout has a directory, with the arch and version its place names.
struct Stray {
  fs::path path;
  std::string arch, cuda_version;
};

// The directories of the layout; symlinks where directories belong are strays, never followed.
struct Layout {
  std::optional<Dir> root, v1;
  std::vector<Dir> arch_dirs;
  std::vector<EntryDir> entry_dirs;
  std::vector<Stray> strays;
};

Layout open_layout(const fs::path& root_path) {
  Layout layout;
  layout.root = open_root(root_path, /*create=*/false, kNoTrustCheck);
  if (!layout.root) return layout;
  const auto open_child = [&layout](const Dir& parent, const DirChild& child, std::string arch,
                                    std::string version) -> std::optional<Dir> {
    const Stray stray{parent.path / child.name, std::move(arch), std::move(version)};
    if (child.kind == FileKind::symlink) layout.strays.push_back(stray);
    if (child.kind != FileKind::directory) return std::nullopt;
    try {
      return open_dir(parent, child.name, /*create=*/false, kNoTrustCheck);
    } catch (const Error&) {  // replaced since it was listed
      layout.strays.push_back(stray);
      return std::nullopt;
    }
  };
  for (const DirChild& child : list_dir(*layout.root)) {
    if (child.name == kLayoutDir) layout.v1 = open_child(*layout.root, child, "", "");
  }
  if (!layout.v1) return layout;
  for (const DirChild& arch_child : list_dir(*layout.v1)) {
    auto arch_dir = open_child(*layout.v1, arch_child, arch_child.name, "");
    if (!arch_dir) continue;
    for (const DirChild& version_child : list_dir(*arch_dir)) {
      const auto version = parse_version_dir_name(version_child.name);
      if (!version) continue;
      if (auto dir = open_child(*arch_dir, version_child, arch_child.name, *version)) {
        layout.entry_dirs.push_back({arch_child.name, *version, std::move(*dir)});
      }
    }
    layout.arch_dirs.push_back(std::move(*arch_dir));
  }
  return layout;
}

std::chrono::seconds seconds_since(std::int64_t unix_time) {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return std::max(std::chrono::seconds(0), now - std::chrono::seconds(unix_time));
}

struct LoadedEntry {
  EntryInfo info;
  std::size_t dir = 0;  // index into Layout::entry_dirs
  std::string label;
};

// Reads what list needs from the sidecar; a sidecar of any shape (or none readable) still makes
// an entry, so that clear removes it and verify names it.
LoadedEntry load_entry(const EntryDir& entry_dir, const DirChild& sidecar_child,
                       const EntryStem& stem, const std::vector<DirChild>& children) {
  LoadedEntry entry;
  EntryInfo& info = entry.info;
  entry.label = stem.label;
  info.arch = entry_dir.arch;
  info.cuda_version = entry_dir.cuda_version;
  info.key = stem.key;
  info.name = sidecar_child.name.substr(0, sidecar_child.name.size() - 5);
  info.sidecar = entry_dir.dir.path / sidecar_child.name;
  info.unused = seconds_since(sidecar_child.mtime);
  info.age = info.unused;
  nlohmann::json sidecar;
  try {
    const auto file = open_file(entry_dir.dir, sidecar_child.name, kNoTrustCheck);
    sidecar = parse_sidecar(file ? read_all(*file, kMaxSidecarBytes) : std::string());
  } catch (const Error& e) {
    info.summary = fmt::format("({})", e.what());
    return entry;
  }
  if (!sidecar.is_object()) {
    info.summary = "(unreadable sidecar)";
    return entry;
  }
  const auto summary = sidecar.find("summary");
  info.summary = summary != sidecar.end() && summary->is_string() ? summary->get<std::string>()
                                                                  : "(no summary)";
  const auto format = sidecar.find("format");
  if (format != sidecar.end() && format->is_string() && is_format_name(format->get<std::string>())) {
    const EntryId id{info.arch, info.cuda_version, stem.label, stem.key, format->get<std::string>()};
    info.binary = entry_dir.dir.path / binary_file_name(id);
    for (const DirChild& child : children) {
      if (child.name == info.binary.filename().string()) info.size = child.size;
    }
  }
  const auto created = sidecar.find("created_unix");
  if (created != sidecar.end() && created->is_number_integer()) {
    // Note: the sidecar may come from anywhere; a creation time before the epoch or in the
    // future is clamped, so `now - created` cannot overflow.
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    const std::int64_t time =
        created->is_number_unsigned()
            ? static_cast<std::int64_t>(
                  std::min<std::uint64_t>(created->get<std::uint64_t>(), static_cast<std::uint64_t>(now)))
            : std::clamp<std::int64_t>(created->get<std::int64_t>(), 0, now);
    info.age = seconds_since(time);
  }
  return entry;
}

std::vector<LoadedEntry> load_entries(const Layout& layout) {
  std::vector<LoadedEntry> entries;
  for (std::size_t i = 0; i < layout.entry_dirs.size(); ++i) {
    const auto children = list_dir(layout.entry_dirs[i].dir);
    for (const DirChild& child : children) {
      const auto stem = parse_sidecar_file_name(child.name);
      if (!stem || child.kind == FileKind::directory) continue;
      entries.push_back(load_entry(layout.entry_dirs[i], child, *stem, children));
      entries.back().dir = i;
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const LoadedEntry& a, const LoadedEntry& b) {
    return std::tie(a.info.arch, a.info.cuda_version, a.info.name) <
           std::tie(b.info.arch, b.info.cuda_version, b.info.name);
  });
  return entries;
}

// Removes a file (or a symlink, or a FIFO) listed in `dir`, counting it.
void remove_child(const Dir& dir, const DirChild& child, ClearResult& result) {
  if (child.kind == FileKind::directory || !remove_file(dir, child.name)) return;
  ++result.files;
  result.bytes += child.size;
}

// Everything in v1/ that the entries did not account for: every non-directory in the entry
// directories, symlinks where directories belong, then the directories once empty.
void clear_everything_else(const Layout& layout, ClearResult& result) {
  if (!layout.root) return;  // no cache: nothing to clear
  for (const EntryDir& entry_dir : layout.entry_dirs) {
    for (const DirChild& child : list_dir(entry_dir.dir)) remove_child(entry_dir.dir, child, result);
  }
  if (!layout.v1) {
    // v1 itself may be a stray symlink: remove the link.
    for (const DirChild& child : list_dir(*layout.root)) {
      if (child.name == kLayoutDir && child.kind == FileKind::symlink) {
        remove_child(*layout.root, child, result);
      }
    }
    return;
  }
  for (const Dir& arch_dir : layout.arch_dirs) {
    for (const DirChild& child : list_dir(arch_dir)) {
      if (child.kind == FileKind::symlink) remove_child(arch_dir, child, result);
      if (child.kind == FileKind::directory) remove_dir_if_empty(arch_dir, child.name);
    }
  }
  for (const DirChild& child : list_dir(*layout.v1)) {
    if (child.kind == FileKind::symlink) remove_child(*layout.v1, child, result);
    if (child.kind == FileKind::directory) remove_dir_if_empty(*layout.v1, child.name);
  }
  remove_dir_if_empty(*layout.root, kLayoutDir);
}

}  // namespace

std::vector<EntryInfo> list_entries(const fs::path& root) {
  std::vector<EntryInfo> infos;
  for (auto& entry : load_entries(open_layout(root))) infos.push_back(std::move(entry.info));
  return infos;
}

std::vector<EntryProblem> check_entries(const fs::path& root, const StoreOptions& options) {
  const Layout layout = open_layout(root);
  std::vector<EntryProblem> checked;
  for (const Stray& stray : layout.strays) {
    EntryInfo info;
    info.sidecar = stray.path;
    info.arch = stray.arch;
    info.cuda_version = stray.cuda_version;
    checked.push_back({std::move(info), "is a symbolic link (not followed)"});
  }
  const EntryStore store(root, options);
  for (auto& entry : load_entries(layout)) {
    const EntryInfo& info = entry.info;
    std::string reason;
    try {
      // The loader's own checks, with the format the sidecar gives (empty) and no use recorded.
      const EntryId id{info.arch, info.cuda_version, entry.label, info.key, ""};
      const LoadResult loaded = store.load(id, /*record_use=*/false);
      if (!loaded.entry) reason = loaded.problem.empty() ? "sidecar vanished" : loaded.problem;
    } catch (const Error& e) {
      reason = e.what();
    }
    checked.push_back({std::move(entry.info), std::move(reason)});
  }
  return checked;
}

std::vector<EntryProblem> verify_entries(const fs::path& root, const StoreOptions& options) {
  std::vector<EntryProblem> problems = check_entries(root, options);
  std::erase_if(problems, [](const EntryProblem& checked) { return checked.reason.empty(); });
  return problems;
}

ClearResult clear_entries(const fs::path& root, const ClearFilter& filter) {
  const Layout layout = open_layout(root);
  ClearResult result;
  std::vector<LoadedEntry> selected;
  for (auto& entry : load_entries(layout)) {
    const EntryInfo& info = entry.info;
    if (filter.arch && info.arch != *filter.arch) continue;
    if (filter.older_than && info.age < *filter.older_than) continue;
    selected.push_back(std::move(entry));
  }
  if (filter.max_bytes) {
    // Least recently used first; keep the rest once they fit.
    std::stable_sort(selected.begin(), selected.end(), [](const LoadedEntry& a, const LoadedEntry& b) {
      return a.info.unused > b.info.unused;
    });
    std::uintmax_t total = 0;
    for (const LoadedEntry& entry : selected) total += entry.info.size;
    std::size_t removed = 0;
    while (removed < selected.size() && total > *filter.max_bytes) {
      total -= selected[removed++].info.size;
    }
    selected.resize(removed);
  }
  for (const LoadedEntry& entry : selected) {
    const Dir& dir = layout.entry_dirs[entry.dir].dir;
    const std::string sidecar = entry.info.sidecar.filename().string();
    const std::string prefix = entry.info.name + ".";
    const auto children = list_dir(dir);
    // Sidecar first: once it is gone the entry no longer exists, whatever happens next.
    for (const DirChild& child : children) {
      if (child.name != sidecar) continue;
      const std::size_t files = result.files;
      remove_child(dir, child, result);
      if (result.files > files) ++result.entries;
    }
    for (const DirChild& child : children) {
      if (child.name.starts_with(prefix) && child.name != sidecar &&
          child.name.find('.', prefix.size()) == std::string::npos) {
        remove_child(dir, child, result);
      }
    }
  }
  if (!filter.arch && !filter.older_than && !filter.max_bytes) clear_everything_else(layout, result);
  return result;
}

}  // namespace attnjit::cache
