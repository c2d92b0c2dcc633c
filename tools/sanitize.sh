#!/usr/bin/env bash
# Builds attnjit and its tests with AddressSanitizer and UndefinedBehaviorSanitizer into
# ${ATTNJIT_BUILD_DIR:-build-sanitize} and runs them: memory errors, leaks and undefined
# behaviour in the host code (the library, the CLI, the fake driver, the emulator's harness). The
# emulated kernels are compiled at run time without the sanitizers, and NVRTC is not
# instrumented. Not part of tools/test.sh (CI): on 2 cores the build takes about 15 minutes, the
# kernel resource tests 10 and the emulated ones about twice their usual time (21 minutes for the
# simt, dispatch and fake-device groups). Arguments go to ctest:
# `tools/sanitize.sh -R '^(capi|cli|runtime)'` for a quick pass.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export ATTNJIT_BUILD_DIR=${ATTNJIT_BUILD_DIR:-$ROOT/build-sanitize}
sanitizers="-fsanitize=address,undefined"
compile_flags="$sanitizers -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# Note: the libFuzzer target has its own sanitized clang build (tests/fuzz); not twice.
CMAKE_EXTRA_ARGS=(-DATTNJIT_BUILD_FUZZERS=OFF "-DCMAKE_CXX_FLAGS=$compile_flags"
                  "-DCMAKE_C_FLAGS=$compile_flags" "-DCMAKE_EXE_LINKER_FLAGS=$sanitizers"
                  "-DCMAKE_SHARED_LINKER_FLAGS=$sanitizers")
source "$ROOT/tools/setup.sh"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# Note: these load the library into Python through ctypes, where the ASan runtime is not the
# first library of the process (ASan refuses to start); the installed-package test builds the
# examples with flags of its own.
excluded='^bench: (sweep_schedules --prewarm|kernels that prepare stores)|^install: '
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --timeout 1800 -E "$excluded" "$@"
