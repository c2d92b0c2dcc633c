// The forward-kernel case tables shared by the GPU tests and the SIMT emulator tests.
#pragma once

#include <cstdint>
#include <vector>

#include "kernel_case.hpp"

namespace attnjit::kernel_test {

AttentionShape shape(int batch, int hq, int hkv, int lq, int lkv);
KernelCase with(KernelCase c, DType dtype, Layout layout, int head_dim);

// Document ids over `len` positions in `documents` runs, sorted or shuffled.
TensorInput document_ids(int len, int documents, bool sorted, std::uint64_t seed);

// The standard variants at one shape: no mask, causal, sliding window, prefix-LM, document mask
// (sorted and shuffled ids), ALiBi, soft-cap, a relative bias from a 2-D tensor.
std::vector<KernelCase> mask_families(const AttentionShape& s);

}  // namespace attnjit::kernel_test
