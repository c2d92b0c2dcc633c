#!/usr/bin/env bash
# Builds libattnjit.so at earlier commits, each with that commit's tools/bench scripts, so that one
# device call can time them one after another on the same GPU (a bisect of a slowdown: the
# 2026-11-26 H200 session found the SM80 kernel's 13% this way; docs/PERFORMANCE.md).
#
#   tools/bench/build_at_commits.sh OUTDIR COMMIT...
#
# OUTDIR/COMMIT/libattnjit.so (stripped) and OUTDIR/COMMIT/bench/*.py, plus OUTDIR/order (the
# commits as given). Each commit builds in a temporary worktree (a few minutes each on 2 cores);
# a folder already holding its library is kept. Carry OUTDIR inside the GPU bundle (the libraries
# need the bundle's lib/ for fmt and spdlog) and time each with its own bindings, e.g.
#   for c in $(cat B/order); do ATTNJIT_LIB=$PWD/B/$c/libattnjit.so ATTNJIT_KERNEL_FAMILY=sm80 \
#     ATTNJIT_CACHE_DIR=/tmp/c-$c python3 B/$c/bench/profile_variant.py noop 16K 128 20; done
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: tools/bench/build_at_commits.sh OUTDIR COMMIT..." >&2
  exit 2
fi
ROOT_DIR=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
shift
: > "$OUT/order"
for commit in "$@"; do
  name=$(git -C "$ROOT_DIR" rev-parse --short "$commit")
  echo "$name" >> "$OUT/order"
  if [[ -f "$OUT/$name/libattnjit.so" ]]; then
    echo "$name: already built"
    continue
  fi
  worktree=$(mktemp -d /tmp/attnjit-at-"$name".XXXXXX)
  # Note: removed however the build ends, so that a failed commit leaves no worktree behind.
  trap 'git -C "$ROOT_DIR" worktree remove --force "$worktree" 2>/dev/null || true' EXIT
  git -C "$ROOT_DIR" worktree add --detach -f "$worktree" "$name" > /dev/null
  cmake -S "$worktree" -B "$worktree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build "$worktree/build" --target attnjit -j"$(nproc)" > "$OUT/$name.log" 2>&1 ||
    { echo "$name: build failed (log: $OUT/$name.log)" >&2; exit 1; }
  mkdir -p "$OUT/$name/bench"
  cp -L "$worktree/build/src/capi/libattnjit.so" "$OUT/$name/"
  strip --strip-unneeded "$OUT/$name/libattnjit.so"
  cp "$worktree"/tools/bench/*.py "$OUT/$name/bench/"
  rm -f "$OUT/$name.log"
  git -C "$ROOT_DIR" worktree remove --force "$worktree"
  trap - EXIT
  echo "$name: built"
done
