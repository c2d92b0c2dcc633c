#include "codegen/kernel_tuning.hpp"

#include <fmt/ranges.h>

#include <charconv>
#include <cstdlib>
#include <string>

#include "common/error.hpp"

namespace attnjit::codegen {
namespace {

// A value of each kind of the table's KIND column (codegen/kernel_tuning_keys.def), or an
// error naming the item and the reason.
int integer_value(std::string_view key, std::string_view value, int low, int high) {
  int parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (error != std::errc() || end != value.data() + value.size() || parsed < low || parsed > high) {
    throw_error(Status::invalid_argument, "ATTNJIT_TUNE: {}={} is not an integer in [{}, {}]", key,
                value, low, high);
  }
  return parsed;
}

int multiple_of_16_value(std::string_view key, std::string_view value, int low, int high) {
  const int parsed = integer_value(key, value, low, high);
  if (parsed % 16 != 0) {
    throw_error(Status::invalid_argument, "ATTNJIT_TUNE: {}={} is not a multiple of 16", key,
                value);
  }
  return parsed;
}

bool flag_value(std::string_view key, std::string_view value, int low, int high) {
  return integer_value(key, value, low, high) == 1;
}

int block_m_value(std::string_view key, std::string_view value, int low, int high) {
  const int block_m = integer_value(key, value, low, high);
  if (block_m != 64 && block_m != 128 && block_m != 192) {
    throw_error(Status::invalid_argument, "ATTNJIT_TUNE: {}={} is not 64, 128 or 192", key, value);
  }
  return block_m;
}

constexpr std::string_view kKeyNames[] = {
#define ATTNJIT_TUNING_KEY(NAME, TYPE, KIND, LOW, HIGH, SCHEDULE) #NAME,
#include "codegen/kernel_tuning_keys.def"
};

}  // namespace

std::span<const std::string_view> tuning_key_names() { return kKeyNames; }

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
    bool known = false;
#define ATTNJIT_TUNING_KEY(NAME, TYPE, KIND, LOW, HIGH, SCHEDULE) \
  if (!known && key == #NAME) {                                   \
    tuning.NAME = KIND##_value(key, value, LOW, HIGH);            \
    known = true;                                                 \
  }
#include "codegen/kernel_tuning_keys.def"
    if (!known) {
      throw_error(Status::invalid_argument, "ATTNJIT_TUNE: unknown key '{}'; keys: {}", key,
                  fmt::join(kKeyNames, ", "));
    }
  }
  return tuning;
}

bool changes_schedule(const KernelTuning& t) {
  bool changes = false;
#define ATTNJIT_TUNING_KEY(NAME, TYPE, KIND, LOW, HIGH, SCHEDULE) \
  changes = changes || (SCHEDULE && t.NAME.has_value());
#include "codegen/kernel_tuning_keys.def"
  return changes;
}

bool schedule_tuning_requested() { return changes_schedule(kernel_tuning_from_environment()); }

KernelTuning kernel_tuning_from_environment() {
  const char* value = std::getenv("ATTNJIT_TUNE");
  return parse_kernel_tuning(value == nullptr ? std::string_view() : std::string_view(value));
}

}  // namespace attnjit::codegen
