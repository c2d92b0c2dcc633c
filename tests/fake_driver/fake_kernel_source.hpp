// What the fake knows of a loaded image: its size and symbols, the kernel source the cache's
// sidecar regenerates, and the emulated run of a launch from that source.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

#include "fake_state.hpp"
#include "runtime/forward_plan.hpp"

namespace attnjit::fake_cuda {

// Bytes of a 64-bit ELF image (a cubin), from its header: the section header table ends it.
std::size_t elf_size(const unsigned char* image);

// Whether the image (a cubin or NUL-terminated PTX) contains `text`, e.g. a symbol's name.
bool image_contains(const char* image, const char* text);

// The kernel source of a cubin that the cache under $ATTNJIT_CACHE_DIR holds: its sidecar's
// variant, parsed and generated again (generation is deterministic). Empty when not found.
std::string find_source(const unsigned char* image);

// Runs a launch of a module whose source was found, building it for the host first.
CUresult emulate(Function& function, const attnjit::LaunchGrid& grid, void** params,
                 bool programmatic);

}  // namespace attnjit::fake_cuda
