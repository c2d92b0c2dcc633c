// Helper process for the concurrency test: looks one test kernel up in a cache root and writes
// where it came from ("compiled" or "disk") to a file. Usage: cache_worker ROOT VARIANT OUT
#include <fstream>
#include <iostream>

#include "cache_test_support.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: cache_worker ROOT VARIANT OUT\n";
    return 2;
  }
  try {
    attnjit::KernelCache cache(argv[1]);
    const auto found = attnjit::test::lookup(cache, attnjit::test::test_source(std::stoi(argv[2])));
    std::ofstream(argv[3]) << (found.result.origin == attnjit::KernelOrigin::compiled ? "compiled"
                                                                                      : "disk");
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "cache_worker: " << e.what() << "\n";
    return 1;
  }
}
