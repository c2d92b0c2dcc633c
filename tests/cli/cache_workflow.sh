#!/bin/sh
# The kernel cache as an operator uses it: prewarm, list, verify, corrupt, verify, clear.
# Usage: cache_workflow.sh ATTNJIT_BINARY MANIFEST SCRATCH_DIR
set -eu
bin=$1 manifest=$2 dir=$3
fail() { echo "FAILED: $*" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
cache="$dir/cache"

# Under umask 000 too, the cache is private: directories 0700, files 0600.
out=$(umask 000 && "$bin" prewarm --manifest "$manifest" --arch sm_80,sm_90 --jobs 2 --cache-dir "$cache")
echo "$out" | grep -q "4 compiled, 0 already cached, 0 failed" || fail "first prewarm: $out"
[ "$(find "$cache" -type d ! -perm 700 | wc -l)" = 0 ] || fail "modes: $(ls -laR "$cache")"
[ "$(find "$cache" -type f ! -perm 600 | wc -l)" = 0 ] || fail "modes: $(ls -laR "$cache")"
out=$("$bin" prewarm --manifest "$manifest" --arch sm_80,sm_90 --cache-dir "$cache")
echo "$out" | grep -q "0 compiled, 4 already cached, 0 failed" || fail "second prewarm: $out"

[ "$("$bin" cache path --cache-dir "$cache")" = "$cache" ] || fail "cache path"
out=$(ATTNJIT_CACHE_DIR="$cache" "$bin" cache path)
[ "$out" = "$cache" ] || fail "cache path from ATTNJIT_CACHE_DIR: $out"

out=$("$bin" cache list --cache-dir "$cache")
echo "$out" | grep -q "^4 entries" || fail "list: $out"
echo "$out" | grep -q "sm_80 .*mask='q_idx >= kv_idx' .*bf16 d64" || fail "list summary: $out"
out=$("$bin" cache list --arch sm_90 --cache-dir "$cache")
[ "$(echo "$out" | grep -c '^sm_90 ')" = 2 ] || fail "list --arch: $out"
echo "$out" | grep -q "^2 entries for sm_90 (4 in all), " || fail "list --arch footer: $out"

# An empty filter is an error, never "no filter" (which would clear everything).
for filter in --max-size --older-than --arch --cache-dir; do
  if "$bin" cache clear "$filter" '' --cache-dir "$cache" >"$dir/empty.out" 2>&1; then
    fail "cache clear $filter '' succeeded: $(cat "$dir/empty.out")"
  fi
  grep -q -- "$filter: an empty value is not allowed" "$dir/empty.out" ||
    fail "cache clear $filter '': $(cat "$dir/empty.out")"
done
"$bin" cache list --cache-dir "$cache" | grep -q "^4 entries" || fail "empty filters removed entries"

out=$("$bin" cache verify --cache-dir "$cache")
echo "$out" | grep -q "4 entries checked, 0 bad" || fail "verify: $out"

# Readable names: what each entry is, then its key, in ls and in cache list.
[ "$(find "$cache" -name 'bf16-d64-*.cubin' | wc -l)" = 4 ] || fail "file names: $(find "$cache")"
"$bin" cache list --cache-dir "$cache" | grep -q "^sm_90 .* bf16-d64-[0-9a-f]* " ||
  fail "list names"

# An entry's pair of files copied over another's names: verify names it, the next prewarm
# replaces it.
set -- $(find "$cache" -path '*sm_80*' -name '*.cubin' | sort)
cp "$1" "$2"
cp "${1%.cubin}.json" "${2%.cubin}.json"
if "$bin" cache verify --cache-dir "$cache" >"$dir/verify.out" 2>"$dir/verify.err"; then
  fail "verify passed on a copied entry"
fi
grep -q "records key" "$dir/verify.err" || fail "verify did not name the copied entry"
out=$("$bin" prewarm --manifest "$manifest" --arch sm_80,sm_90 --cache-dir "$cache" 2>&1)
echo "$out" | grep -q "1 compiled, 3 already cached, 0 failed" || fail "prewarm over a copy: $out"
"$bin" cache verify --cache-dir "$cache" >/dev/null || fail "verify after replacing the copy"

# Flip bytes in the middle of one cubin: verify must name it and exit non-zero.
cubin=$(find "$cache" -name '*.cubin' | sort | head -n 1)
printf 'XXXX' | dd of="$cubin" bs=1 seek=200 conv=notrunc 2>/dev/null
if "$bin" cache verify --cache-dir "$cache" >"$dir/verify.out" 2>"$dir/verify.err"; then
  fail "verify passed on a corrupted entry"
fi
grep -q "checksum mismatch" "$dir/verify.err" || fail "verify did not name the bad entry"
grep -q "4 entries checked, 1 bad" "$dir/verify.out" || fail "verify summary"

# The next prewarm recompiles and replaces the damaged entry.
out=$("$bin" prewarm --manifest "$manifest" --arch sm_80,sm_90 --cache-dir "$cache" 2>&1)
echo "$out" | grep -q "1 compiled, 3 already cached, 0 failed" || fail "repair prewarm: $out"
"$bin" cache verify --cache-dir "$cache" >/dev/null || fail "verify after repair"

out=$("$bin" cache clear --arch sm_80 --cache-dir "$cache")
echo "$out" | grep -q "removed 2 entries" || fail "clear --arch: $out"
out=$("$bin" cache clear --older-than 7d --cache-dir "$cache")
echo "$out" | grep -q "removed 0 entries" || fail "clear --older-than: $out"
out=$("$bin" cache clear --max-size 1G --cache-dir "$cache")
echo "$out" | grep -q "removed 0 entries" || fail "clear --max-size 1G: $out"
# A cap below the two remaining entries but above either one keeps the more recently used.
first=$(find "$cache" -name '*.cubin' | sort | head -n 1)
size=$(wc -c < "$first")
out=$("$bin" cache clear --max-size "$((size * 3 / 2))" --cache-dir "$cache")
echo "$out" | grep -q "removed 1 entries" || fail "clear --max-size: $out"
"$bin" prewarm --manifest "$manifest" --arch sm_90 --cache-dir "$cache" >/dev/null 2>&1 ||
  fail "prewarm after --max-size"
out=$("$bin" cache clear --cache-dir "$cache")
echo "$out" | grep -q "removed 2 entries" || fail "clear: $out"
out=$("$bin" cache list --cache-dir "$cache")
echo "$out" | grep -q "^0 entries" || fail "list after clear: $out"
echo PASS
