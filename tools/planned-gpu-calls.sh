#!/usr/bin/env bash
# The next GPU session's device calls, written down here so that each fits the device tool's
# 2,000-character command and all of them the session's 15 device minutes (one machine start,
# then the calls back to back on the warm machine). What each measures, and what it was predicted
# to show: docs/PERFORMANCE.md, "The next GPU session".
#
#   tools/planned-gpu-calls.sh bundle          # here: .gpu-bundle with test_gpu's kernels
#                                              # prewarmed (gpu-bundle.sh; about 25 minutes on
#                                              # 2 cores), RAGGED's kernels, and the library of
#                                              # BASELINE under .gpu-bundle/bisect
#   tools/planned-gpu-calls.sh call1 "$OUT"    # there, first call (about 420 s): the cache
#                                              # reuse check, test_gpu and the sanitizers on
#                                              # both families, nothing else (in the forty-
#                                              # second session test_gpu took 140 s a family)
#   tools/planned-gpu-calls.sh call2 "$OUT"    # there, second call (budgets of about 420 s):
#                                              # BASELINE's library against main's, D=64 against
#                                              # Flex, a ragged batch's balanced slices, a
#                                              # prefill chunk split on the sm90 kernel, a
#                                              # speculative tree packed on it, then the
#                                              # timelines, speculative steps, decoding and
#                                              # prefills over paged caches as time allows
#   tools/planned-gpu-calls.sh print           # the sweeps and the commands, without running
#
# Run the calls with run(carry=[".gpu-bundle"], timeout_s=440 and 400): each call's steps stop at
# their budgets, and a step that fails or runs out of time does not stop the ones after it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Done in the forty-second session ("Forty-second session"): the handoff on long rows (S3), D=64's
# short-row schedules (S4), the heavy scores' tiles (S5, S6), D=256's noop against Flex, the
# packed chunks split and the speculative tree's balanced slices.
#
# Planned in the forty-second session: causal D=128 read 549-573 TFLOP/s and soft-capping 491-500
# there, against 590 and 522 in the twenty-fifth session (another H200), with kernels whose SASS
# changed since (causal 4848 -> 4000 instructions, the same configuration). This session's
# baseline library (33d3ab1, the twenty-fifth session's) against main's, one process: a
# regression or another GPU.
BASELINE=33d3ab1
BUILDS='noop causal softcap 16K 128 sm90'
# D=64 against Flex, every variant (issue 9 and 10's unmet 1.3x; not timed since the twenty-fifth
# session).
C64='--head-dim 64 --variant causal --variant sliding_window --variant document --variant prefix_lm --variant alibi --variant softcap --variant noop'
# The timeline cases (profile_variant.py VARIANT LENGTH HEAD_DIM): the short rows at both head
# dims beside noop, and noop at 2K (16 kept tiles a row, as the 8 documents at 16K).
# (causal at D=64 and noop at D=128 dropped in the thirty-sixth session to make room for RAGGED.)
TIMELINE_CASES=("document 16K 64" "sliding_window 16K 64" "noop 16K 64" "noop 2K 64"
                "document 16K 128" "sliding_window 16K 128")
D14='--decode-batch 1 --decode-batch 8 --head-dim 128 --length 65536 --decode-rows attnjit --decode-rows sdpa --decode-rows flex'
# Planned in the twenty-eighth session: speculative steps (4 queries, 32:8 heads) with the group's
# heads packed into one decoding block, against the unpacked blocks of before.
D15='--decode-q-len 4 --decode-batch 1 --decode-batch 8 --head-dim 128 --length 16384 --variant noop --variant causal --decode-rows attnjit --decode-rows attnjit-unpacked --decode-rows sdpa --decode-rows flex'
# Planned in the twenty-ninth session: decoding over a paged cache (pages of 16 rows, a lookup per
# row; of 128, one per key tile) against the same keys and values dense, attnjit rows only.
D16='--decode-batch 1 --decode-batch 8 --head-dim 128 --length 16384 --variant noop --variant causal --paged 16 --paged 128 --decode-rows attnjit --decode-rows attnjit-paged=16 --decode-rows attnjit-paged=128'
# Planned in the thirtieth session: prefills over a paged cache on the sm90 kernel (4096 queries
# over their own 4096 keys, B=2, 32:8 heads: pages of 16, eight TMA boxes a key tile; of 128,
# one) against the same keys and values dense. Since the thirty-eighth session also pages of 24
# (not a power of two: sixteen boxes of 8 rows a key tile).
D17='--decode-q-len 4096 --decode-batch 2 --head-dim 128 --length 4096 --variant noop --variant causal --paged 16 --paged 24 --paged 128 --decode-rows attnjit --decode-rows attnjit-paged=16 --decode-rows attnjit-paged=24 --decode-rows attnjit-paged=128'
# Planned in the thirty-ninth session: a prefill chunk of too few query tiles to fill the GPU (512
# queries of 8 heads over one key/value head, a 64-head model's share under 8-way tensor
# parallelism, over 32K keys: 32 blocks on 132 SMs) on the sm90 split kernel (attnjit), unsplit
# (attnjit unsplit), and split on the sm80 kernel as before (attnjit tune=sm90_stages=2: a
# schedule tuning bars the split kernel). Replaces D14 in call 2 (decoding at 64K, timed after).
D18='--decode-q-len 512 --decode-batch 1 --decode-heads 8:1 --head-dim 128 --length 32768 --variant noop --variant causal --decode-tune sm90_stages=2 --decode-rows attnjit --decode-rows attnjit-unsplit --decode-rows attnjit-tune=sm90_stages=2 --decode-rows sdpa --decode-rows flex'
# Planned in the fortieth session: a speculative tree's 24 tokens of 32 query heads over 4 (groups
# of 8: 192 rows) over 32K keys, on the sm90 split kernel with the group's heads packed into its
# 128-row blocks (attnjit), unpacked (ATTNJIT_PACK_GQA=off: 24-row blocks of one head on the sm80
# decoding entry), and as before (tune=sm90_stages=2 bars the split kernel: the sm80 decoding
# entry packs the group into six 32-row blocks); SDPA beside them (no Flex row: its compile would
# take most of the item's 40 s).
D19='--decode-q-len 24 --decode-batch 1 --decode-batch 8 --decode-heads 32:4 --head-dim 128 --length 32768 --variant noop --variant causal --decode-tune sm90_stages=2 --decode-rows attnjit --decode-rows attnjit-unpacked --decode-rows attnjit-tune=sm90_stages=2 --decode-rows sdpa'

# Planned in the thirty-sixth session: a ragged batch's decoding step (per-sequence key counts,
# B=8 caches of 16K filled to 0.75, 0.25, 1.0, 0.5 twice) with its slices sized to each sequence
# against uniform slices (ATTNJIT_BALANCE_SPLIT=off), noop and causal ("Thirty-sixth session").
RAGGED='--manifest cache/decoding.json --variant noop --variant causal --q-len 1 --seq-len 16384 --heads 32 --kv-heads 8 --kv-lens 12288,4096,16384,8192,12288,4096,16384,8192 --iters 50'
# Here, after the bundle: RAGGED's kernels for sm_90a (the decoding manifest's noop and causal,
# bf16, D=128, with their paged and sm80 kernels) into .gpu-bundle/ragged-cache.tar.xz, so that
# call 2 does not compile them.
ragged_prewarm() {
  local cache manifest
  cache=$(mktemp -d)
  manifest=$(mktemp --suffix=.json)
  python3 - "$manifest" <<'PY'
import json, sys
manifest = json.load(open("cache/decoding.json"))
manifest["variants"] = [v for v in manifest["variants"] if v["name"] in ("noop", "causal")]
manifest["dtypes"], manifest["head_dims"] = ["bf16"], [128]
json.dump(manifest, open(sys.argv[1], "w"))
PY
  LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    .gpu-bundle/bin/attnjit prewarm --manifest "$manifest" --arch sm_90a --cache-dir "$cache"
  find "$cache" -name '*.lock' -delete
  tar -C "$cache" -cJf .gpu-bundle/ragged-cache.tar.xz .
  rm -rf "$cache" "$manifest"
}

ragged_decode() {  # OUTDIR: each switch's run of RAGGED, on the bundle's kernels
  mkdir -p "$1/ragged-cache"
  tar -C "$1/ragged-cache" -xJf .gpu-bundle/ragged-cache.tar.xz || true
  ragged_bench "$1" ragged 40 "$RAGGED" ATTNJIT_BALANCE_SPLIT
  rm -rf "$1/ragged-cache"
}

ragged_bench() {  # OUTDIR NAME SECONDS ARGS SWITCH: SWITCH=auto, then SWITCH=off
  local args
  read -r -a args <<< "$4"
  for value in auto off; do
    env "$5=$value" ATTNJIT_CACHE_DIR="$1/ragged-cache" \
      LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout "$3" \
      .gpu-bundle/bin/attnjit bench "${args[@]}" --json "$1/$2-$value.json" \
      | tee "$1/$2-$value.txt" || true
  done
}

usage() {
  echo "usage: tools/planned-gpu-calls.sh bundle | call1 OUTDIR | call2 OUTDIR | print" >&2
  exit 2
}

# Note: a step that fails or runs out of its budget returns non-zero; the calls go on to the
# next step (set -e stopped the forty-second session's rescue call after its first timeout).
gpu_check() {  # BUDGET OUTDIR STAGES COMPARE_ARGS [--builds-args ARGS | SWEEP...]
  local budget=$1 out=$2 stages=$3 compare=$4
  shift 4
  local args=()
  [[ -n "$compare" ]] && args+=(--compare-args "$compare")
  if [[ "${1:-}" == --builds-args ]]; then
    args+=(--builds-args "$2")
  else
    for sweep in "$@"; do args+=(--sweep-args "$sweep"); done
  fi
  mkdir -p "$out"
  GPU_CHECK_BUDGET=$budget tools/gpu-check.sh --build-dir .gpu-bundle --deps .gpu-bundle/lib \
    --only "$stages" "${args[@]}" "$out" || echo "planned-gpu-calls: $stages in $out: rc $?"
}

case "${1:-}" in
  bundle)
    tools/gpu-bundle.sh
    ragged_prewarm
    tools/bench/build_at_commits.sh .gpu-bundle/bisect "$BASELINE"
    du -sh .gpu-bundle ;;
  call1)
    [[ $# -eq 2 ]] || usage
    # The cache entries prepare compiles, read back by a later process ("Twenty-fifth session";
    # each variant is first prepared on a throwaway cache, which fills the driver's compute
    # cache: the sequence that lost the reports there, "Twenty-sixth session").
    # Note: the bundle's fmt/spdlog/xxhash sit beside the library (the GPU machine has none);
    # gpu-check finds them through --deps, this step through LD_LIBRARY_PATH.
    LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 60 \
      python3 tools/bench/cache_reuse_check.py --lib .gpu-bundle/lib/libattnjit.so.0.1.0 \
      | tee "$2/cache-reuse.txt" || true
    gpu_check 390 "$2" test,sanitize "" ;;
  call2)
    [[ $# -eq 2 ]] || usage
    gpu_check 100 "$2/builds" builds "" --builds-args "$BUILDS"
    gpu_check 170 "$2/compare" compare "$C64"
    ragged_decode "$2"
    gpu_check 60 "$2/chunk" decode "$D18"
    gpu_check 40 "$2/tree" decode "$D19"
    # Where a block's time goes (the short rows' per-block cost; "Twenty-sixth session"): each
    # case once with the timeline kernel (about 10 s each), then its report; the records come
    # back gzipped.
    mkdir -p "$2/timeline"
    for case in "${TIMELINE_CASES[@]}"; do
      name=${case// /-}
      env ATTNJIT_LIB="$PWD/.gpu-bundle/lib/libattnjit.so.0.1.0" ATTNJIT_TUNE=sm90_timeline=1 \
        ATTNJIT_TIMELINE="$2/timeline/$name.json" \
        LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 40 \
        python3 tools/bench/profile_variant.py $case 3 || true
      [[ -f "$2/timeline/$name.json" ]] || continue
      python3 tools/bench/timeline_report.py "$2/timeline/$name.json" | tee "$2/timeline/$name.txt"
      gzip -f "$2/timeline/$name.json"
    done
    gpu_check 60 "$2/speculative" decode "$D15"
    gpu_check 40 "$2/paged" decode "$D16"
    gpu_check 50 "$2/paged-prefill" decode "$D17" ;;
  print)
    printf 'BASELINE=%s\nBUILDS=%s\nC64=%s\nD14=%s\nD15=%s\nD16=%s\nD17=%s\nD18=%s\nD19=%s\nRAGGED=%s\n' \
      "$BASELINE" "$BUILDS" "$C64" "$D14" "$D15" "$D16" "$D17" "$D18" "$D19" "$RAGGED"
    printf 'timeline: %s\n' "${TIMELINE_CASES[@]}" ;;
  *) usage ;;
esac
