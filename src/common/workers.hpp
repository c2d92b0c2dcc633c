// Work spread over threads that pull items from a shared counter until none is left: the caller
// is worker 0 and helpers 1 .. count - 1 run on threads of their own. Used by the CPU reference
// and by prewarm.
#pragma once

#include <cstddef>
#include <functional>
#include <thread>

namespace attnjit {

// `body(worker)` must take items until none is left, so that any number of workers finishes the
// work. A helper thread the system refuses (std::thread throws std::system_error, e.g. EAGAIN at
// the process's thread limit) is logged at warn and skipped: the caller and the helpers already
// running take its share. Returns how many workers ran `body` (at least 1); every helper has
// finished when it returns. `body` must not throw.
using WorkerBody = std::function<void(std::size_t worker)>;
// How a helper thread is started; tests replace it to make the system refuse threads.
using ThreadLauncher = std::function<std::jthread(std::function<void()>)>;
int run_workers(int count, const WorkerBody& body, const ThreadLauncher& launch = {});

}  // namespace attnjit
