#!/bin/sh
# prewarm must fail, and say why, when the cache cannot keep what it compiled: a cache directory
# that cannot be created (nothing is compiled then), and one kernel whose file cannot be written
# (a directory stands where its .cubin goes; the other kernel is stored).
# Note: tests run as root, which file permissions do not stop; a file where a directory belongs
# fails for root too.
# Usage: prewarm_not_stored.sh ATTNJIT_BINARY MANIFEST SCRATCH_DIR
set -u
bin=$1 manifest=$2 dir=$3
fail() { echo "FAILED: $*" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/blocked"
echo "not a directory" > "$dir/blocked/v1"

if "$bin" prewarm --manifest "$manifest" --arch sm_90 --cache-dir "$dir/blocked" \
    >"$dir/blocked.out" 2>&1; then
  fail "prewarm into an unusable cache exited 0: $(cat "$dir/blocked.out")"
fi
grep -q "cannot store kernels in $dir/blocked/v1/sm_90/cuda-.*: $dir/blocked/v1 is not a directory; nothing was compiled" \
  "$dir/blocked.out" || fail "no reason given: $(cat "$dir/blocked.out")"

cache="$dir/partial"
cubin=$("$bin" inspect --mask 'q_idx >= kv_idx' --arch sm_90 --head-dim 64 --emit key \
          --cache-dir "$cache" | sed -n 's/^path *\([^ ]*\).*/\1/p')
[ -n "$cubin" ] || fail "inspect gave no path"
mkdir -p "$cubin"
if "$bin" prewarm --manifest "$manifest" --arch sm_90 --cache-dir "$cache" >"$dir/partial.out" 2>&1; then
  fail "prewarm exited 0 with a kernel not stored: $(cat "$dir/partial.out")"
fi
out=$(cat "$dir/partial.out")
echo "$out" | grep -q "FAILED causal bf16 d64 sm_90: compiled, but the cache could not store it" ||
  fail "the kernel not stored is not named: $out"
echo "$out" | grep -q "1 compiled, 0 already cached, 1 failed" || fail "summary: $out"
echo "$out" | grep -q "1 of 2 kernels failed (1 compiled but not stored)" || fail "count: $out"
echo PASS
