#!/usr/bin/env bash
# The whole GPU verification on a lent machine (H100/H200, CUDA 13, driver 580, PyTorch, no
# network): GPU tests, compute-sanitizer memcheck and racecheck, `attnjit bench` and the
# FlexAttention comparison. Uses a build made elsewhere (see tools/bench/README.md).
#
#   tools/gpu-check.sh [--build-dir DIR] [--deps DIR] [--quick] OUTDIR
#
# --build-dir  the carried build tree (default: build)
# --deps       a folder whose *.so files (fmt, spdlog, xxhash...) go on LD_LIBRARY_PATH, or a
#              tree unpacked with dpkg -x (its usr/lib/x86_64-linux-gnu is used)
# --quick      small sizes for compare_flex.py and bench
# OUTDIR gets at most 8 files: nvidia-smi.txt, test-gpu.log, memcheck.log, racecheck.log,
# bench.txt, compare-flex.txt, compare-flex.json, summary.txt. The summary is printed last.
set -uo pipefail

build_dir=build
deps_dir=""
quick=0
out_dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --deps) deps_dir="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
    *) out_dir="$1"; shift ;;
  esac
done
if [[ -z "$out_dir" ]]; then
  echo "usage: tools/gpu-check.sh [--build-dir DIR] [--deps DIR] [--quick] OUTDIR" >&2
  exit 2
fi
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
build_dir=$(cd "$build_dir" && pwd) || { echo "gpu-check: no build dir" >&2; exit 2; }
repo_dir=$(cd "$(dirname "$0")/.." && pwd)

if [[ -n "$deps_dir" ]]; then
  deps_dir=$(cd "$deps_dir" && pwd)
  for lib in "$deps_dir" "$deps_dir/usr/lib/x86_64-linux-gnu" "$deps_dir/lib"; do
    [[ -d "$lib" ]] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
fi
export PATH="/usr/local/cuda/bin:$PATH"
# libnvrtc from the toolkit, whatever rpath the carried binaries have.
for cuda_lib in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d "$cuda_lib" ]] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cuda_lib"
done
export ATTNJIT_CACHE_DIR="${ATTNJIT_CACHE_DIR:-$(mktemp -d /tmp/attnjit-cache.XXXXXX)}"
export ATTNJIT_LOG_LEVEL="${ATTNJIT_LOG_LEVEL:-warn}"

summary="$out_dir/summary.txt"
: > "$summary"
status=0
record() {  # record NAME RC [note]
  local verdict=PASS
  if [[ "$2" == 77 ]]; then verdict=SKIP; elif [[ "$2" != 0 ]]; then verdict="FAIL (rc $2)"; status=1; fi
  printf '%-22s %s %s\n' "$1" "$verdict" "${3:-}" >> "$summary"
}
find_binary() {  # find_binary NAME: first match under the build dir
  find "$build_dir" -type f -name "$1" -perm -u+x 2>/dev/null | head -n 1
}

nvidia-smi > "$out_dir/nvidia-smi.txt" 2>&1
record nvidia-smi $? "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1)"

test_gpu=$(find_binary test_gpu)
if [[ -z "$test_gpu" ]]; then
  echo "test_gpu not found under $build_dir" > "$out_dir/test-gpu.log"
  record test_gpu 1 "binary missing"
else
  "$test_gpu" "[gpu]" --durations yes > "$out_dir/test-gpu.log" 2>&1
  rc=$?
  record test_gpu "$rc" "$(grep -E '^(All tests passed|test cases:)' "$out_dir/test-gpu.log" | tail -n1)"

  # Sanitizers over the reduced set: the kernels are slow under instrumentation.
  compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full \
    "$test_gpu" "[sanitize]" > "$out_dir/memcheck.log" 2>&1
  rc=$?
  record memcheck "$rc" "$(grep -E 'ERROR SUMMARY' "$out_dir/memcheck.log" | tail -n1)"
  compute-sanitizer --tool racecheck --racecheck-report analysis --error-exitcode 3 \
    "$test_gpu" "[sanitize]" > "$out_dir/racecheck.log" 2>&1
  rc=$?
  record racecheck "$rc" "$(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out_dir/racecheck.log" | tail -n1)"
fi

cli=$(find_binary attnjit)
if [[ -z "$cli" ]]; then
  echo "attnjit CLI not found under $build_dir" > "$out_dir/bench.txt"
  record bench 1 "binary missing"
else
  {
    for d in 64 128; do
      if [[ $quick == 1 ]]; then
        "$cli" bench --seq-len 2048 --batch 2 --heads 8 --head-dim "$d" --iters 10 || exit $?
      else
        for l in 4096 16384; do
          "$cli" bench --seq-len "$l" --batch $((65536 / l)) --heads 16 --head-dim "$d" || exit $?
        done
      fi
    done
  } > "$out_dir/bench.txt" 2>&1
  record bench $?
fi

lib=$(find "$build_dir" -name 'libattnjit.so*' -type f 2>/dev/null | head -n 1)
if [[ -z "$lib" ]]; then
  echo "libattnjit.so not found under $build_dir" > "$out_dir/compare-flex.txt"
  record compare_flex 1 "library missing"
else
  # The ctypes bindings against the C header and the library, before trusting any comparison.
  python3 "$repo_dir/tools/bench/attnjit_ctypes.py" --lib "$lib" > "$out_dir/compare-flex.txt" 2>&1
  record ctypes_bindings $?
  quick_flag=()
  [[ $quick == 1 ]] && quick_flag=(--quick)
  python3 "$repo_dir/tools/bench/compare_flex.py" --lib "$lib" "${quick_flag[@]}" \
    --json "$out_dir/compare-flex.json" >> "$out_dir/compare-flex.txt" 2>&1
  record compare_flex $? "$(grep -E '^(checked|mismatch)' "$out_dir/compare-flex.txt" | tail -n1)"
fi

echo "== logs in $out_dir"
cat "$summary"
exit $status
