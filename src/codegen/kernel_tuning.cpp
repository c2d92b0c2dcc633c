#include "codegen/kernel_tuning.hpp"

#include <charconv>
#include <cstdlib>
#include <string>

#include "common/error.hpp"

namespace attnjit::codegen {
namespace {

int int_value(std::string_view key, std::string_view value, int low, int high) {
  int parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (error != std::errc() || end != value.data() + value.size() || parsed < low || parsed > high) {
    throw_error(Status::invalid_argument, "ATTNJIT_TUNE: {}={} is not an integer in [{}, {}]", key,
                value, low, high);
  }
  return parsed;
}

int multiple_of_16(std::string_view key, std::string_view value, int low, int high = 256) {
  const int parsed = int_value(key, value, low, high);
  if (parsed % 16 != 0) {
    throw_error(Status::invalid_argument, "ATTNJIT_TUNE: {}={} is not a multiple of 16", key,
                value);
  }
  return parsed;
}

bool bool_value(std::string_view key, std::string_view value) {
  return int_value(key, value, 0, 1) == 1;
}

}  // namespace

KernelTuning parse_kernel_tuning(std::string_view text) {
  KernelTuning tuning;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      throw_error(Status::invalid_argument, "ATTNJIT_TUNE: '{}' is not key=value", item);
    }
    const std::string_view key = item.substr(0, equals);
    const std::string_view value = item.substr(equals + 1);
    if (key == "sm80_block_m") {
      tuning.sm80_block_m = multiple_of_16(key, value, 16);
    } else if (key == "sm80_block_n") {
      tuning.sm80_block_n = multiple_of_16(key, value, 16);
    } else if (key == "sm80_warps") {
      tuning.sm80_warps = int_value(key, value, 1, 16);
    } else if (key == "sm80_stages") {
      tuning.sm80_stages = int_value(key, value, 2, 4);
    } else if (key == "sm80_blocks_per_sm") {
      tuning.sm80_blocks_per_sm = int_value(key, value, 1, 4);
    } else if (key == "sm80_safe_sources") {
      tuning.sm80_safe_sources = bool_value(key, value);
    } else if (key == "decode_block_n") {
      tuning.decode_block_n = multiple_of_16(key, value, 16, 128);
    } else if (key == "decode_stages") {
      tuning.decode_stages = int_value(key, value, 2, 4);
    } else if (key == "sm90_block_n") {
      // Note: FlashAttention-3's own tiles include 80 (head dim 256) and 176 (128).
      tuning.sm90_block_n = multiple_of_16(key, value, 64);
    } else if (key == "sm90_stages") {
      tuning.sm90_stages = int_value(key, value, 2, 8);
    } else if (key == "sm90_block_m") {
      const int block_m = int_value(key, value, 64, 192);
      if (block_m != 64 && block_m != 128 && block_m != 192) {
        throw_error(Status::invalid_argument,
                    "ATTNJIT_TUNE: sm90_block_m={} is not 64, 128 or 192", value);
      }
      tuning.sm90_block_m = block_m;
    } else if (key == "sm90_overlap") {
      tuning.sm90_overlap = bool_value(key, value);
    } else if (key == "sm90_persistent") {
      tuning.sm90_persistent = bool_value(key, value);
    } else if (key == "sm90_p_smem") {
      tuning.sm90_p_smem = bool_value(key, value);
    } else if (key == "sm90_handoff") {
      tuning.sm90_handoff = bool_value(key, value);
    } else if (key == "sm90_poly_exp2") {
      tuning.sm90_poly_exp2 = int_value(key, value, 0, 8);
    } else if (key == "sm90_fold_m192") {
      tuning.sm90_fold_m192 = bool_value(key, value);
    } else if (key == "sm90_blocks_per_sm") {
      tuning.sm90_blocks_per_sm = int_value(key, value, 1, 2);
    } else if (key == "sm90_watchdog_ms") {
      // Note: ten minutes is the longest a kernel could usefully wait (a device call's limit).
      tuning.sm90_watchdog_ms = int_value(key, value, 0, 600000);
    } else if (key == "sm90_timeline") {
      tuning.sm90_timeline = bool_value(key, value);
    } else if (key == "score_row_shift") {
      tuning.score_row_shift = bool_value(key, value);
    } else {
      throw_error(Status::invalid_argument,
                  "ATTNJIT_TUNE: unknown key '{}'; keys: sm80_block_m, sm80_block_n, sm80_warps, "
                  "sm80_stages, sm80_blocks_per_sm, sm80_safe_sources, decode_block_n, "
                  "decode_stages, sm90_block_m, sm90_block_n, sm90_stages, sm90_overlap, "
                  "sm90_persistent, sm90_p_smem, sm90_handoff, sm90_poly_exp2, sm90_fold_m192, "
                  "sm90_blocks_per_sm, sm90_watchdog_ms, sm90_timeline, score_row_shift",
                  key);
    }
  }
  return tuning;
}

bool changes_schedule(const KernelTuning& t) {
  return t.sm80_block_m || t.sm80_block_n || t.sm80_warps || t.sm80_stages ||
         t.sm80_blocks_per_sm || t.sm80_safe_sources || t.decode_block_n || t.decode_stages ||
         t.sm90_block_m ||
         t.sm90_block_n || t.sm90_stages || t.sm90_overlap || t.sm90_persistent ||
         t.sm90_p_smem || t.sm90_handoff || t.sm90_poly_exp2 || t.sm90_fold_m192 ||
         t.sm90_blocks_per_sm || t.score_row_shift;
}

bool schedule_tuning_requested() { return changes_schedule(kernel_tuning_from_environment()); }

KernelTuning kernel_tuning_from_environment() {
  const char* value = std::getenv("ATTNJIT_TUNE");
  return parse_kernel_tuning(value == nullptr ? std::string_view() : std::string_view(value));
}

}  // namespace attnjit::codegen
