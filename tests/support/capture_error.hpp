// The attnjit::Error a callable throws, or Error(Status::ok, "no error") when it throws none, so
// tests can check the status and the message together.
#pragma once

#include "common/error.hpp"

namespace attnjit::test {

template <typename F>
Error capture_error(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    return error;
  }
  return Error(Status::ok, "no error");
}

}  // namespace attnjit::test
