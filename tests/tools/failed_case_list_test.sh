#!/bin/bash
# The failed-case list (tests/support/failed_case_list.cpp) on a binary whose hidden cases fail
# on purpose: the list names exactly the failing cases, `--input-file LIST` selects exactly them
# (commas, quotes, backslashes and brackets in a name included), a rerun of the list fails the
# same way, and nothing is written when ATTNJIT_TEST_FAILED_LIST is unset.
# Usage: failed_case_list_test.sh PATH/TO/test_failed_case_list
set -u
binary=$1
scratch=$(mktemp -d /tmp/attnjit-failed-list-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

ATTNJIT_TEST_FAILED_LIST="$scratch/first" "$binary" "[.failed_case_list]" > "$scratch/first.log" 2>&1
rc=$?
(( rc != 0 )) || fail "a run with failing cases exits 0"
expected='fails on purpose\, with a comma\, a \"quote\"\, a \\ backslash and [brackets]
throws on purpose'
[[ "$(cat "$scratch/first" 2>/dev/null)" == "$expected" ]] ||
  fail "the list is not the two failing cases, escaped; it is: $(cat "$scratch/first" 2>/dev/null)"

selected=$("$binary" --input-file "$scratch/first" --list-test-names-only 2>&1)
wanted='fails on purpose, with a comma, a "quote", a \ backslash and [brackets]
throws on purpose'
[[ "$selected" == "$wanted" ]] || fail "--input-file selects: $selected"

ATTNJIT_TEST_FAILED_LIST="$scratch/second" "$binary" --input-file "$scratch/first" \
  > "$scratch/second.log" 2>&1
(( $? != 0 )) || fail "the rerun of the failing cases exits 0"
cmp -s "$scratch/first" "$scratch/second" || fail "the rerun's list differs from the first"
grep -q 'test cases: 2 | 2 failed' "$scratch/second.log" || fail "the rerun ran other cases: $(tail -n 2 "$scratch/second.log")"

env -u ATTNJIT_TEST_FAILED_LIST "$binary" "[.failed_case_list]" > /dev/null 2>&1
"$binary" "passes on purpose" > /dev/null 2>&1 || fail "a passing case exits non-zero"
ATTNJIT_TEST_FAILED_LIST="$scratch/passing" "$binary" "passes on purpose" > /dev/null 2>&1
[[ ! -e "$scratch/passing" ]] || fail "a passing run writes a list"
ATTNJIT_TEST_FAILED_LIST="$scratch/no/such/dir/list" "$binary" "throws on purpose" \
  > "$scratch/unwritable.log" 2>&1
grep -q 'warning: cannot append to ATTNJIT_TEST_FAILED_LIST' "$scratch/unwritable.log" ||
  fail "an unwritable list is not reported"

if (( failures > 0 )); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "failed-case list: all checks passed"
