#include "common/workers.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <mutex>
#include <set>
#include <system_error>
#include <vector>

namespace attnjit {
namespace {

constexpr int kItems = 1000;

// The shape every user of run_workers has: workers pull item indices until none is left.
struct Items {
  std::atomic<int> next{0};
  std::vector<std::atomic<int>> done = std::vector<std::atomic<int>>(kItems);
  std::mutex mutex;
  std::set<std::size_t> workers_seen;

  WorkerBody body() {
    return [this](std::size_t worker) {
      {
        const std::lock_guard lock(mutex);
        workers_seen.insert(worker);
      }
      for (int i = next++; i < kItems; i = next++) ++done[static_cast<std::size_t>(i)];
    };
  }
  bool each_done_once() const {
    for (const auto& d : done) {
      if (d.load() != 1) return false;
    }
    return true;
  }
};

// Starts `allowed` helper threads, then refuses like a process at its thread limit.
ThreadLauncher refusing_after(int allowed) {
  auto started = std::make_shared<int>(0);
  return [started, allowed](std::function<void()> helper) {
    if (*started == allowed) {
      throw std::system_error(EAGAIN, std::generic_category(), "Resource temporarily unavailable");
    }
    ++*started;
    return std::jthread(std::move(helper));
  };
}

TEST_CASE("run_workers runs the caller and count - 1 helpers over all items", "[workers]") {
  Items items;
  CHECK(run_workers(4, items.body()) == 4);
  CHECK(items.each_done_once());
  CHECK(items.workers_seen == std::set<std::size_t>{0, 1, 2, 3});
}

TEST_CASE("run_workers with one worker runs on the caller alone", "[workers]") {
  Items items;
  CHECK(run_workers(1, items.body()) == 1);
  CHECK(items.each_done_once());
  CHECK(items.workers_seen == std::set<std::size_t>{0});
}

TEST_CASE("run_workers goes on with the helpers it could start when the system refuses more",
          "[workers]") {
  Items items;
  CHECK(run_workers(8, items.body(), refusing_after(2)) == 3);
  CHECK(items.each_done_once());
  CHECK(items.workers_seen == std::set<std::size_t>{0, 1, 2});
}

TEST_CASE("run_workers does all the work on the caller when no thread can be started",
          "[workers]") {
  Items items;
  CHECK(run_workers(8, items.body(), refusing_after(0)) == 1);
  CHECK(items.each_done_once());
  CHECK(items.workers_seen == std::set<std::size_t>{0});
}

}  // namespace
}  // namespace attnjit
