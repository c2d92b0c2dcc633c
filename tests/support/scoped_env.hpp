// Sets (or, with nullptr, unsets) an environment variable for the life of the object and restores
// what was there before. For the switches the library reads per call (ATTNJIT_KERNEL_FAMILY,
// ATTNJIT_TUNE, ATTNJIT_CACHE_DIR, ...).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace attnjit::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace attnjit::test
