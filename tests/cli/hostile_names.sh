#!/bin/sh
# Names read from a manifest or a cache sidecar reach the terminal escaped: an escape sequence or
# a carriage return in a variant name shows as \x1b or \x0d, never as the raw byte.
# Usage: hostile_names.sh ATTNJIT_BINARY SCRATCH_DIR
set -u
bin=$1 dir=$2
fail() { echo "FAILED: $*" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
esc=$(printf '\033')
cr=$(printf '\r')
raw() { grep -q "[$esc$cr]" "$1"; }

cat > "$dir/evil.json" <<'JSON'
{"version": 1, "dtypes": ["bf16"], "head_dims": [64],
 "variants": [{"name": "evil\u001b[2J\r", "mask": "q_idx >= kv_idx"}]}
JSON
"$bin" prewarm --manifest "$dir/evil.json" --arch sm_90 --cache-dir "$dir/cache" \
  >"$dir/prewarm.out" 2>&1 || fail "prewarm: $(cat "$dir/prewarm.out")"
raw "$dir/prewarm.out" && fail "prewarm printed a raw control character"

"$bin" cache list --cache-dir "$dir/cache" >"$dir/list.out" 2>&1 || fail "list failed"
raw "$dir/list.out" && fail "cache list printed a raw control character"
grep -q 'evil\\x1b\[2J\\x0d: mask=' "$dir/list.out" || fail "list: $(cat "$dir/list.out")"

# An error message quoting a name: a duplicate variant.
cat > "$dir/duplicate.json" <<'JSON'
{"version": 1, "variants": [{"name": "x\u001b]0;pwned\u0007"}, {"name": "x\u001b]0;pwned\u0007"}]}
JSON
if "$bin" prewarm --manifest "$dir/duplicate.json" --arch sm_90 --cache-dir "$dir/cache" \
    >"$dir/duplicate.out" 2>&1; then
  fail "a duplicate name was accepted"
fi
raw "$dir/duplicate.out" && fail "the error printed a raw control character"
grep -q "duplicate variant name 'x\\\\x1b\]0;pwned\\\\x07'" "$dir/duplicate.out" ||
  fail "duplicate: $(cat "$dir/duplicate.out")"
echo PASS
