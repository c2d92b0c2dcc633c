#!/bin/bash
# tools/read_failure_dump.py on a dump from the real writer: test_support's hidden example case
# (a sliding window, blhd with row padding, whose "kernel" wrote 0.125 * ((row + col) % 7)).
# Exits 77 (skipped) without python3 and numpy. Usage: read_failure_dump_test.sh TEST_SUPPORT READER
set -u
test_support=$1
reader=$2
# Note: the first python3 on PATH may be a virtualenv's or pyenv's without numpy, while the
# system's has it (tools/setup.sh installs python3-numpy): take the first that imports it.
python=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import numpy' 2>/dev/null; then python=$candidate; break; fi
done
if [[ -z "$python" ]]; then
  echo "skipped: no python3 with numpy (tried python3 and /usr/bin/python3)"
  exit 77
fi
scratch=$(mktemp -d /tmp/attnjit-read-dump-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
failures=0
check() {  # check OUTPUT PATTERN WHAT: PATTERN (grep -E) must match a line of OUTPUT
  if ! grep -qE -- "$2" <<< "$1"; then
    echo "FAIL: $3 (no line matches: $2)"
    failures=$((failures + 1))
  fi
}

ATTNJIT_TEST_DUMP_DIR="$scratch/dumps" "$test_support" "an example dump for the reader's test" \
  > "$scratch/writer.log" 2>&1 || { cat "$scratch/writer.log"; echo "FAIL: the writer"; exit 1; }
dump=$(ls "$scratch"/dumps/*.dump)
out=$("$python" -B "$reader" "$dump" --worst 3 --npz "$scratch/case.npz" 2>&1)
rc=$?
echo "$out"
(( rc == 0 )) || { echo "FAIL: the reader exited $rc"; exit 1; }
check "$out" "^case: mask='q_idx >= kv_idx && q_idx - kv_idx < W'" "the case name"
check "$out" '^  param W:int = 5$' "the parameter"
check "$out" '^  bf16 blhd D=32 B=1 Hq=2 Hkv=1 Lq=24 Lkv=40 pad=8 seed=17 ' "the shape line"
check "$out" '^where the output is wrong:$' "the anatomy"
check "$out" '^worst 3 elements \(b, h, row, col\)' "the worst elements"
check "$out" '^  b0 h1 rows      0: [.xN]{24}$' "one character per row"
check "$out" '^lse differs in [0-9]+ of 48 rows' "the LSE verdict"
check "$out" '^saved k, lse, out, q, ref_lse, ref_out, v and header to ' "--npz"

# The arrays as numpy sees them: strides applied (q's NaN row padding left out), bf16 decoded.
"$python" -B - "$scratch/case.npz" <<'PY' || failures=$((failures + 1))
import json, sys
import numpy as np
z = np.load(sys.argv[1])
header = json.loads(str(z["header"]))
assert z["q"].shape == (1, 2, 24, 32) and np.isfinite(z["q"]).all(), "q: strides"
assert z["k"].shape == (1, 1, 40, 32) and np.isfinite(z["k"]).all(), "k: strides"
row, col = np.meshgrid(np.arange(24), np.arange(32), indexing="ij")
assert (z["out"] == 0.125 * ((row + col) % 7)).all(), "out: what the kernel wrote"
assert (z["lse"] == 0.5).all(), "lse: what the kernel wrote"
assert np.isfinite(z["ref_out"]).all() and z["ref_lse"].shape == (1, 2, 24), "the reference"
assert header["errors"]["out"]["max_abs_error"] > 0.03, "the header"
PY

# A truncated dump is an error, not a summary of garbage.
head -c 2000 "$dump" > "$scratch/truncated.dump"
if "$python" -B "$reader" "$scratch/truncated.dump" > /dev/null 2>&1; then
  echo "FAIL: a truncated dump was read"
  failures=$((failures + 1))
fi

if (( failures > 0 )); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "read_failure_dump: all checks passed"
