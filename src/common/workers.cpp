#include "common/workers.hpp"

#include <system_error>
#include <vector>

#include "common/log.hpp"

namespace attnjit {

int run_workers(int count, const WorkerBody& body, const ThreadLauncher& launch) {
  std::vector<std::jthread> helpers;
  if (count > 1) helpers.reserve(static_cast<std::size_t>(count - 1));
  for (int w = 1; w < count; ++w) {
    std::function<void()> helper = [&body, worker = static_cast<std::size_t>(w)] { body(worker); };
    try {
      helpers.push_back(launch ? launch(std::move(helper)) : std::jthread(std::move(helper)));
    } catch (const std::system_error& e) {
      // Note: no retry; a process at its thread limit stays there for a while, and fewer workers
      // only make the work slower.
      log().warn("could not start worker thread {} of {} ({}); going on with {}", w + 1, count,
                 e.what(), w);
      break;
    }
  }
  body(0);
  return static_cast<int>(helpers.size()) + 1;
}  // the jthreads join here

}  // namespace attnjit
