// One error mechanism for the whole library: attnjit::Error carries a Status and a message.
// The C boundary (src/capi) catches it and turns it into an attnjit_status.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace attnjit {

// Note: values mirror attnjit_status in include/attnjit/attnjit.h and never change.
enum class Status : int {
  ok = 0,
  invalid_argument = 1,
  parse = 2,
  unsupported = 3,
  no_device = 4,
  compile = 5,
  cache = 6,
  cuda = 7,
  out_of_memory = 8,
  io = 9,
  internal = 10,
};

const char* status_name(Status status);

class Error : public std::runtime_error {
 public:
  Error(Status status, std::string message)
      : std::runtime_error(std::move(message)), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

// throw_error(Status::parse, "mask: col {}: unknown name '{}'", col, name)
template <typename... Args>
[[noreturn]] void throw_error(Status status, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace attnjit
