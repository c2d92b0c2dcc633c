// Helper process for the multi-process cache tests. Usage:
//   cache_worker ROOT VARIANT OUT        looks one test kernel up, writes "compiled" or "disk"
//   cache_worker ROOT VARIANT OUT hang   starts compiling it, writes "compiling" to OUT while it
//                                        holds the key's lock, then never returns (to be killed)
#include <fstream>
#include <iostream>
#include <thread>

#include "cache_test_support.hpp"

int main(int argc, char** argv) {
  if (argc != 4 && !(argc == 5 && std::string(argv[4]) == "hang")) {
    std::cerr << "usage: cache_worker ROOT VARIANT OUT [hang]\n";
    return 2;
  }
  try {
    attnjit::KernelCache cache(argv[1]);
    const std::string source = attnjit::test::test_source(std::stoi(argv[2]));
    if (argc == 5) {
      cache.get_or_compile(attnjit::test::test_key(source, "sm_90"), "sm_90", false,
                           [&]() -> attnjit::CompiledKernel {
                             std::ofstream(argv[3]) << "compiling";
                             for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
                           });
      return 3;  // unreachable
    }
    const auto found = attnjit::test::lookup(cache, source);
    std::ofstream(argv[3]) << (found.result.origin == attnjit::KernelOrigin::compiled ? "compiled"
                                                                                      : "disk");
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "cache_worker: " << e.what() << "\n";
    return 1;
  }
}
