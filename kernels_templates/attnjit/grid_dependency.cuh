// Programmatic dependent launch (sm_90 and later): a call's second and later kernels (the forward
// kernel after the tensor summaries, the split-KV merge after the forward kernel) are launched
// with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (runtime/cuda_backend.cpp), so
// their blocks may be scheduled, and run up to their first read of the kernel before's results,
// while that kernel's last blocks still run: the launch's latency (a few microseconds between
// two dependent kernels) hides under the kernel before instead of following it.
//
// The contract (PTX ISA, "griddepcontrol"):
//   - launch_dependent_grids(): this block no longer holds back the launch of the next kernel
//     (which launches once every block of this one has called it or exited). It says nothing
//     about this kernel's results: the next kernel waits for those itself.
//   - wait_for_prerequisite_grids(): returns once the kernel before has completed and its memory
//     operations are visible. Every kernel we launch programmatically calls it in every block
//     that does work, before reading anything an earlier kernel of the call wrote (the summaries,
//     the partials), and before it exits: so a kernel's completion implies the completion of
//     every kernel before it in the call, whatever the chain's length.
// On a kernel launched without the attribute (the call's first; sm_80 and sm_86, where the host
// never sets it) both are no-ops. Compiled out below sm_90, where the instructions do not exist.
//
// note_prerequisite_read(what) marks such a read: nothing on the device; under the SIMT emulator
// a read before the thread's wait in a programmatic launch is an error naming `what`, which is
// how CPU tests catch a wait placed too late (on the hardware it would be a race).
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

#if ATTNJIT_DEVICE_COMPILE

ATTNJIT_DEVICE void launch_dependent_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

ATTNJIT_DEVICE void wait_for_prerequisite_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

ATTNJIT_DEVICE void note_prerequisite_read(const char*) {}

#endif  // ATTNJIT_DEVICE_COMPILE

}  // namespace attnjit
