#!/usr/bin/env bash
# Prepares, on a machine without a GPU, what tools/gpu-check.sh needs on a lent GPU machine that
# has no network and none of fmt/spdlog/xxhash: a stripped Release build of the GPU tests, the
# CLI and libattnjit.so, plus the shared libraries they need, in one folder small enough to carry
# (the device tool carries at most 64 MiB), and the host-overhead benchmark.
#
#   tools/gpu-bundle.sh [OUTDIR]      (default: .gpu-bundle, ignored by git)
#
# Run tools/test.sh once first (it installs the build dependencies).
# Then, on the GPU machine: tools/gpu-check.sh --build-dir .gpu-bundle --deps .gpu-bundle/lib OUT
set -euo pipefail
ROOT_DIR=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT_DIR/.gpu-bundle}
BUILD=${ATTNJIT_GPU_BUILD_DIR:-$ROOT_DIR/build-gpu}

cmake -S "$ROOT_DIR" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target test_gpu attnjit_cli attnjit attnjit_host_overhead

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
du -sh "$OUT"
echo "carry: $(realpath --relative-to="$ROOT_DIR" "$OUT")  (then: tools/gpu-check.sh --build-dir $(realpath --relative-to="$ROOT_DIR" "$OUT") --deps $(realpath --relative-to="$ROOT_DIR" "$OUT")/lib OUTDIR)"
