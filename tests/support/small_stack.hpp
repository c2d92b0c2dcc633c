// Runs a function on a thread with a small stack, as a library caller's thread may have (musl
// gives 128 KiB, many thread pools 512 KiB): tests of code that must not recurse without bound.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <exception>
#include <stdexcept>

namespace attnjit::test {

// AddressSanitizer puts redzones around every local, so a sanitized build's frames are several
// times a release build's: the stack a test asks for is the release build's bound, scaled here.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr std::size_t kStackScale = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr std::size_t kStackScale = 4;
#else
inline constexpr std::size_t kStackScale = 1;
#endif
#else
inline constexpr std::size_t kStackScale = 1;
#endif

// Calls fn() on a new thread whose stack is `bytes` (times kStackScale) and waits for it; an
// exception fn throws is rethrown here. Note: Catch2 assertions are not thread-safe; compute inside
// fn, check outside.
template <class Fn>
void run_on_stack(std::size_t bytes, Fn&& fn) {
  struct Context {
    Fn* fn;
    std::exception_ptr error;
  } context{&fn, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes * kStackScale);
  pthread_t thread;
  const int created = pthread_create(
      &thread, &attr,
      [](void* arg) -> void* {
        auto* running = static_cast<Context*>(arg);
        try {
          (*running->fn)();
        } catch (...) {
          running->error = std::current_exception();
        }
        return nullptr;
      },
      &context);
  pthread_attr_destroy(&attr);
  if (created != 0) throw std::runtime_error("run_on_stack: pthread_create failed");
  pthread_join(thread, nullptr);
  if (context.error) std::rethrow_exception(context.error);
}

}  // namespace attnjit::test
