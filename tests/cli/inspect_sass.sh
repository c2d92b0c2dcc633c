#!/bin/sh
# `attnjit inspect --emit sass` with whatever cuobjdump the machine has: the listing and its counts
# (an sm80 kernel has HMMA, no HGMMA), or, without one, exit 77 (ctest: skipped) when the CLI
# said so clearly. Usage: inspect_sass.sh ATTNJIT
out=$("$1" inspect --mask 'q_idx >= kv_idx' --arch sm_80 --emit sass 2>&1)
status=$?
if [ $status -ne 0 ] && printf '%s\n' "$out" | grep -q "needs cuobjdump, which was not found"; then
  echo "skipped: no cuobjdump here"
  exit 77
fi
printf '%s\n' "$out" | tail -n 3
[ $status -eq 0 ] || { echo "FAIL: exit $status"; exit 1; }
printf '%s\n' "$out" | grep -Eq '^# [0-9]+ instructions: HGMMA 0, HMMA [1-9][0-9]*, ' ||
  { echo "FAIL: no counts line with HMMA"; exit 1; }
printf '%s\n' "$out" | grep -Eq 'Function : attnjit_fwd' || { echo "FAIL: no listing"; exit 1; }
