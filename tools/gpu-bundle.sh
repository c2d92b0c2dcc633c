#!/usr/bin/env bash
# Prepares, on a machine without a GPU, what tools/gpu-check.sh needs on a lent GPU machine that
# has no network and none of fmt/spdlog/xxhash: a stripped Release build of the GPU tests, the
# CLI and libattnjit.so, plus the shared libraries they need, in one folder small enough to carry
# (the device tool carries at most 64 MiB), and the host-overhead benchmark.
#
#   tools/gpu-bundle.sh [--no-prewarm] [--sweep 'ARGS']... [OUTDIR]
#                                                   (default OUTDIR: .gpu-bundle, ignored by git)
#
# Also, unless --no-prewarm: OUTDIR/cache, the kernel cache gpu-check's test and sanitize stages
# would otherwise fill with NVRTC on the GPU machine (about 0.4 s per kernel, some 200 kernels:
# a minute or two of a 10-minute device call). test_gpu runs here on the fake device with its
# launches skipped (ATTNJIT_FAKE_CUDA_LAUNCHES=skip: every case fails, every kernel it would run
# is compiled), once per kernel family and stage, with the ATTNJIT_TUNE gpu-check gives that
# stage by default (the watchdog is part of the kernel text, so other --tune or --watchdog-ms
# values miss and compile there as before). The cache key is the source, the options, the arch
# and NVRTC's version, so the GPU machine's NVRTC 13.0 finds these. A few minutes here.
# --sweep 'ARGS' (repeatable) also prewarms the kernels of a planned `gpu-check.sh --only sweep
# --sweep-args 'ARGS'` (tools/bench/sweep_schedules.py --prewarm, with gpu-check's default
# watchdog): NVRTC takes about a second a kernel there, 40% of a sweep's time when it compiled
# everything (twelfth session). The cache goes as OUTDIR/cache.tar.xz (cubins shrink about 13x),
# which gpu-check unpacks.
#
# Run tools/test.sh once first (it installs the build dependencies).
# Then, on the GPU machine: tools/gpu-check.sh --build-dir .gpu-bundle --deps .gpu-bundle/lib OUT
set -euo pipefail
ROOT_DIR=$(cd "$(dirname "$0")/.." && pwd)
prewarm=1
sweeps=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-prewarm) prewarm=0; shift ;;
    --sweep) sweeps+=("$2"); shift 2 ;;
    -*) echo "usage: tools/gpu-bundle.sh [--no-prewarm] [--sweep 'ARGS']... [OUTDIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
if ((!prewarm && ${#sweeps[@]})); then
  echo "gpu-bundle: --sweep prewarms, so it cannot go with --no-prewarm" >&2
  exit 2
fi
OUT=${1:-$ROOT_DIR/.gpu-bundle}
BUILD=${ATTNJIT_GPU_BUILD_DIR:-$ROOT_DIR/build-gpu}
# gpu-check.sh's defaults: --watchdog-ms 5000 for the test stage, at least 60000 under the
# sanitizers (keep in step with it).
TEST_TUNE=sm90_watchdog_ms=5000
SANITIZE_TUNE=sm90_watchdog_ms=60000
SWEEP_WATCHDOG_MS=5000

targets=(test_gpu attnjit_cli attnjit attnjit_host_overhead)
((prewarm)) && targets+=(attnjit_fake_device)
cmake -S "$ROOT_DIR" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
build_args=()
for target in "${targets[@]}"; do build_args+=(--target "$target"); done
cmake --build "$BUILD" -j"$(nproc)" "${build_args[@]}"

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
cp "$BUILD/tests/gpu/test_gpu" "$BUILD/tools/cli/attnjit" "$BUILD/tools/bench/attnjit_host_overhead" \
  "$OUT/bin/"
cp -P "$BUILD"/src/capi/libattnjit.so* "$OUT/lib/"
# Every shared library the binaries need that is not part of the toolkit or the C runtime.
for binary in "$OUT"/bin/* "$OUT"/lib/libattnjit.so.*.*; do
  ldd "$binary" | awk '/=> \//{print $3}'
done | sort -u | grep -E 'libfmt|libspdlog|libxxhash' | while read -r lib; do
  cp -L "$lib" "$OUT/lib/"
done
strip --strip-unneeded "$OUT"/bin/* "$OUT"/lib/*.so* 2>/dev/null || true

if ((prewarm)); then
  # prewarm_stage FAMILY TUNE FILTER: test_gpu's kernels for one family and stage into OUT/cache.
  prewarm_stage() {
    echo "prewarm: test_gpu \"$3\" for the $1 family (ATTNJIT_TUNE=$2)"
    # Note: the cases fail by design (nothing runs); only a crash would be worth a look.
    env ATTNJIT_CUDA_DRIVER="$BUILD/tests/fake_driver/libattnjit_fake_device.so" \
      ATTNJIT_FAKE_CUDA_SM=90 ATTNJIT_FAKE_CUDA_LAUNCHES=skip ATTNJIT_CACHE_DIR="$OUT/cache" \
      ATTNJIT_LOG_LEVEL=off ATTNJIT_KERNEL_FAMILY="$1" ATTNJIT_TUNE="$2" \
      "$BUILD/tests/gpu/test_gpu" "$3" > "$BUILD/prewarm-$1.log" 2>&1 || true
    if grep -qE 'SIGSEGV|SIGABRT|fatal error condition' "$BUILD/prewarm-$1.log"; then
      echo "gpu-bundle: test_gpu crashed while prewarming ($BUILD/prewarm-$1.log)" >&2
      exit 1
    fi
  }
  for family in sm80 sm90; do
    prewarm_stage "$family" "$TEST_TUNE" "[gpu]~[sm90_probe]"
    prewarm_stage "$family" "$SANITIZE_TUNE" "[sanitize]"
  done
  for sweep in "${sweeps[@]}"; do
    echo "prewarm: sweep_schedules.py $sweep"
    read -r -a sweep_args <<< "$sweep"
    python3 -B "$ROOT_DIR/tools/bench/sweep_schedules.py" --prewarm --cli "$BUILD/tools/cli/attnjit" \
      --cache-dir "$OUT/cache" --watchdog-ms "$SWEEP_WATCHDOG_MS" "${sweep_args[@]}"
  done
  # Lock files are per machine; gpu-check unpacks the rest into its own cache directory.
  find "$OUT/cache" -name '*.lock' -delete
  echo "prewarm: $(find "$OUT/cache" -name '*.cubin' | wc -l) kernels, $(du -sh "$OUT/cache" | cut -f1)"
  tar -C "$OUT/cache" -cJf "$OUT/cache.tar.xz" .
  rm -rf "$OUT/cache"
  echo "prewarm: packed into $(du -h "$OUT/cache.tar.xz" | cut -f1) (cache.tar.xz)"
fi
du -sh "$OUT"
echo "carry: $(realpath --relative-to="$ROOT_DIR" "$OUT")  (then: tools/gpu-check.sh --build-dir $(realpath --relative-to="$ROOT_DIR" "$OUT") --deps $(realpath --relative-to="$ROOT_DIR" "$OUT")/lib OUTDIR)"
