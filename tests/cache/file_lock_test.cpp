#include "cache/file_lock.hpp"

#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_test_entries.hpp"

using namespace attnjit;
using namespace attnjit::test;
using Clock = std::chrono::steady_clock;

TEST_CASE("a lock held by a stopped process is waited for at most the timeout, with a message",
          "[cache][lock][process]") {
  TempDir dir;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    // A second process takes the entry's lock, says so, and stops (SIGSTOP) holding it.
    const auto attempt = cache::EntryStore(dir.path()).lock(test_id(1));
    const char held = attempt.outcome == cache::LockOutcome::held ? 'y' : 'n';
    (void)!::write(ready[1], &held, 1);
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  char held = 0;
  REQUIRE(::read(ready[0], &held, 1) == 1);
  REQUIRE(held == 'y');

  cache::StoreOptions options;
  options.lock_timeout = std::chrono::milliseconds(400);
  const cache::EntryStore store(dir.path(), options);
  {
    LogCapture capture(spdlog::level::info);
    const auto start = Clock::now();
    const auto attempt = store.lock(test_id(1));
    const auto waited = Clock::now() - start;
    CHECK(attempt.outcome == cache::LockOutcome::timed_out);
    CHECK_FALSE(attempt.lock);
    CHECK_THAT(attempt.problem, Catch::Contains("another process held"));
    CHECK(waited >= std::chrono::milliseconds(400));
    CHECK(waited < std::chrono::seconds(10));
    CHECK(capture.count("waiting for") == 1);
    // Another entry's lock is free meanwhile.
    CHECK(store.lock(test_id(2)).outcome == cache::LockOutcome::held);
  }
  ::kill(holder, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(holder, &status, 0) == holder);
  ::close(ready[0]);
  ::close(ready[1]);
  // The kernel released the dead holder's lock.
  CHECK(store.lock(test_id(1)).outcome == cache::LockOutcome::held);
}

TEST_CASE("ATTNJIT_CACHE_LOCK_TIMEOUT sets the wait in seconds", "[cache][lock]") {
  using std::chrono::milliseconds;
  {
    const ScopedEnv unset("ATTNJIT_CACHE_LOCK_TIMEOUT", nullptr);
    CHECK(cache::lock_timeout_from_env() == milliseconds(60000));
  }
  const std::pair<const char*, milliseconds> cases[] = {
      {"2.5", milliseconds(2500)}, {"0", milliseconds(0)},     {"600", milliseconds(600000)},
      {"abc", milliseconds(60000)}, {"-1", milliseconds(60000)}, {"1e9", milliseconds(60000)},
      {"nan", milliseconds(60000)}, {"5s", milliseconds(60000)}};
  LogCapture capture;
  for (const auto& [text, expected] : cases) {
    INFO(text);
    const ScopedEnv value("ATTNJIT_CACHE_LOCK_TIMEOUT", text);
    CHECK(cache::lock_timeout_from_env() == expected);
  }
  CHECK(capture.count("ATTNJIT_CACHE_LOCK_TIMEOUT=") == 1);  // warned once
}

TEST_CASE("a zero timeout does not wait", "[cache][lock]") {
  TempDir dir;
  cache::StoreOptions options;
  options.lock_timeout = std::chrono::milliseconds(0);
  const cache::EntryStore store(dir.path(), options);
  const auto first = store.lock(test_id(1));
  REQUIRE(first.outcome == cache::LockOutcome::held);
  // flock is per open file description: a second open in this process conflicts like another
  // process would.
  CHECK(store.lock(test_id(1)).outcome == cache::LockOutcome::timed_out);
}
