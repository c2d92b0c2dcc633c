// The JSON sidecar next to each binary: whatever its writer records about the binary (for
// operators and for the writer's own checks), the entry it belongs to, the binary's size and
// checksum, and last an integrity checksum over all of the rest.
// Note: the checksums catch damage and mix-ups (a flipped byte, a truncated write, a pair of
// files copied under another entry's names), not an attacker: whoever can write the cache can
// recompute them. Keeping writers out is the job of the ownership and mode checks (cache_fs).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cache/entry_name.hpp"

namespace attnjit::cache {

constexpr int kSidecarVersion = 2;
constexpr std::uintmax_t kMaxSidecarBytes = std::uintmax_t{1} << 20;
// Far above any kernel image, far below what reading would exhaust memory with.
constexpr std::uintmax_t kMaxBinaryBytes = std::uintmax_t{256} << 20;

// Checksum of bytes as a sidecar spells it: "xxh3-64:<16 hex digits>".
std::string checksum(std::span<const char> bytes);

// The sidecar of `binary` stored as `id`: `fields` plus sidecar_version, key, arch,
// cuda_version, format, file, size, checksum, created, created_unix, attnjit_version, then
// integrity (seal_sidecar).
nlohmann::json make_sidecar(const EntryId& id, std::span<const char> binary,
                            const nlohmann::json& fields);

// Sets "integrity" to the checksum of the sidecar without it, as serialised by
// serialize_sidecar (sorted keys, so the same on every reader).
void seal_sidecar(nlohmann::json& sidecar);
// The text written to disk.
std::string serialize_sidecar(const nlohmann::json& sidecar);

// Parses a sidecar read from disk: a discarded value when it is not JSON. Note: values nested
// deeper than a sidecar ever is are dropped while parsing, because nlohmann::json copies and
// compares recursively and a damaged or hostile file must not overflow the stack.
nlohmann::json parse_sidecar(std::string_view text);

// Why a sidecar read back does not describe the entry `id` asked for, or "": it must be an
// object of this sidecar version whose integrity checksum holds, recording this key, arch, CUDA
// version and format (any format when id.format is empty), binary_file_name as its file, and
// a size no larger than kMaxBinaryBytes.
std::string check_sidecar(const nlohmann::json& sidecar, const EntryId& id);

// Checks a binary's bytes against its (checked) sidecar: "" when they agree, otherwise why not
// ("binary has 1200 bytes, sidecar records 4096", "checksum mismatch").
std::string check_binary(const nlohmann::json& sidecar, std::span<const char> image);

}  // namespace attnjit::cache
