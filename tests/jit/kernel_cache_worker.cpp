// Helper process for the multi-process kernel cache tests. Usage:
//   kernel_cache_worker ROOT VARIANT OUT        looks one test kernel up, writes "compiled" or
//                                               "disk" to OUT
//   kernel_cache_worker ROOT VARIANT OUT hang   starts compiling it, writes "compiling" to OUT
//                                               while it holds the key's lock, then never
//                                               returns (to be stopped or killed)
#include <fstream>
#include <iostream>
#include <thread>

#include "kernel_cache_support.hpp"

int main(int argc, char** argv) {
  if (argc != 4 && !(argc == 5 && std::string(argv[4]) == "hang")) {
    std::cerr << "usage: kernel_cache_worker ROOT VARIANT OUT [hang]\n";
    return 2;
  }
  try {
    attnjit::KernelCache cache(argv[1]);
    const std::string source = attnjit::test::test_source(std::stoi(argv[2]));
    if (argc == 5) {
      cache.get_or_compile(attnjit::test::test_request(source),
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
    std::cerr << "kernel_cache_worker: " << e.what() << "\n";
    return 1;
  }
}
