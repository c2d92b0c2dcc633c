#!/usr/bin/env bash
# The next GPU session's device calls, written down here so that each fits the device tool's
# 2,000-character command and all of them the session's 15 device minutes (one machine start,
# then the calls back to back on the warm machine). What each measures, and what it was predicted
# to show: docs/PERFORMANCE.md, "The next GPU session".
#
#   tools/planned-gpu-calls.sh bundle          # here: .gpu-bundle with S3-S6's kernels
#                                              # prewarmed (gpu-bundle.sh; about 8 minutes),
#                                              # and RAGGED's (a few minutes more)
#   tools/planned-gpu-calls.sh call1 "$OUT"    # there, first call (about 400 s): the cache
#                                              # reuse check, test_gpu and the sanitizers on
#                                              # both families, then S3 to S6
#   tools/planned-gpu-calls.sh call2 "$OUT"    # there, second call (about 70 s of timelines,
#                                              # D=256 against Flex in 120 s, 150 s of ragged
#                                              # steps, then budgets of 260 s): the blocks'
#                                              # timelines, D=256 against Flex, a ragged batch's
#                                              # balanced slices, packed chunks split, a prefill
#                                              # chunk split on the sm90 kernel, a speculative
#                                              # tree packed on it, speculative steps packed and
#                                              # not, decoding and prefills over paged caches
#   tools/planned-gpu-calls.sh print           # the sweeps and the commands, without running
#
# Run the calls with run(carry=[".gpu-bundle"], timeout_s=430 and 445): the budgets leave each
# call's last step its time and the machine start (about 35 s) inside the 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

# Planned in the twenty-fifth session (the earlier items ran then: docs/PERFORMANCE.md,
# "Twenty-fifth session").
# Item 3: the handoff against none on causal and prefix-LM, twice each in one process.
S3='--head-dim 64 --head-dim 128 --variant causal --variant prefix_lm --schedule a=sm90 --schedule off=sm90:sm90_handoff=0 --schedule b=sm90 --schedule off2=sm90:sm90_handoff=0'
# Item 4: D=64's short rows (the masked variants' gap to 1.3x Flex): two blocks per SM and
# 64-row blocks against the shipped choice.
S4='--watchdog-ms 0 --head-dim 64 --variant document64 --variant document_random --variant prefix_lm --variant sliding_window --variant document --schedule sm90=sm90 --schedule 2persm=sm90:sm90_blocks_per_sm=2 --schedule m64x2=sm90:sm90_block_m=64,sm90_blocks_per_sm=2'
# Planned in the twenty-seventh session: heavy scores (compare_flex.py's HEAVY_SCORE_VARIANTS)
# served with the base tiles where the wide default tiles spill heavily, against those wide
# tiles asked for explicitly; soft-capping (no fallback: both schedules are one kernel) is the
# control. Last in call 1, so they take only what S3 and S4 leave of the budget.
S5='--head-dim 128 --variant silu_score --variant distance_decay --variant softcap --schedule served=sm90 --schedule wide=sm90:sm90_block_n=176'
S6='--head-dim 64 --variant silu_score --variant distance_decay --variant softcap --schedule served=sm90 --schedule wide=sm90:sm90_block_m=192'
# D=256 against Flex (not timed since the fifteenth session), and decoding at 64K keys and B=8.
C256='--head-dim 256 --variant noop --variant causal --variant sliding_window --variant document'
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
# Planned in the forty-first session: a speculative tree's 24 tokens of 32:4 heads over a ragged
# batch's caches (2K to 32K keys), packed on the sm90 split kernel, its slices sized to each
# sequence (auto) against uniform slices of the longest (off). The same kernels as RAGGED's.
RAGGED_TREE='--manifest cache/decoding.json --variant noop --variant causal --q-len 24 --seq-len 32768 --heads 32 --kv-heads 4 --kv-lens 24576,4096,32768,8192,16384,2048,32768,12288 --iters 30'
# Planned in the forty-second session: a chunked prefill's packed queries (q_seq_starts), chunks of
# 512 and 300 queries of 8 heads over one key/value head (8-way tensor parallelism) over caches
# of 24K and 9K keys, split on the sm90 split kernel of paged calls (auto) against unsplit
# (ATTNJIT_SPLIT_KV=off: 7 query tiles a head, 56 blocks on 132 SMs; predicted 1.6-1.9x).
PACKED_CHUNK='--manifest cache/decoding.json --variant noop --variant causal --q-lens 512,300 --seq-len 24576 --kv-lens 24576,9216 --heads 8 --kv-heads 1 --iters 30'

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

ragged_decode() {  # OUTDIR: each switch's run of RAGGED and RAGGED_TREE, on the bundle's kernels
  mkdir -p "$1/ragged-cache"
  tar -C "$1/ragged-cache" -xJf .gpu-bundle/ragged-cache.tar.xz || true
  ragged_bench "$1" ragged 70 "$RAGGED" ATTNJIT_BALANCE_SPLIT
  ragged_bench "$1" ragged-tree 30 "$RAGGED_TREE" ATTNJIT_BALANCE_SPLIT
  ragged_bench "$1" packed-chunk 30 "$PACKED_CHUNK" ATTNJIT_SPLIT_KV
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

gpu_check() {  # BUDGET OUTDIR STAGES COMPARE_ARGS SWEEP...
  local budget=$1 out=$2 stages=$3 compare=$4
  shift 4
  local args=()
  [[ -n "$compare" ]] && args+=(--compare-args "$compare")
  for sweep in "$@"; do args+=(--sweep-args "$sweep"); done
  GPU_CHECK_BUDGET=$budget tools/gpu-check.sh --build-dir .gpu-bundle --deps .gpu-bundle/lib \
    --only "$stages" "${args[@]}" "$out"
}

case "${1:-}" in
  bundle)
    tools/gpu-bundle.sh --sweep "$S3" --sweep "$S4" --sweep "$S5" --sweep "$S6"
    ragged_prewarm
    du -sh .gpu-bundle ;;
  call1)
    [[ $# -eq 2 ]] || usage
    # The cache entries prepare compiles, read back by a later process ("Twenty-fifth session";
    # each variant is first prepared on a throwaway cache, which fills the driver's compute
    # cache: the sequence that lost the reports there, "Twenty-sixth session").
    # Note: the bundle's fmt/spdlog/xxhash sit beside the library (the GPU machine has none);
    # gpu-check finds them through --deps, this step through LD_LIBRARY_PATH.
    LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 180 \
      python3 tools/bench/cache_reuse_check.py --lib .gpu-bundle/lib/libattnjit.so.0.1.0 \
      | tee "$2/cache-reuse.txt" || true
    gpu_check 300 "$2" test,sanitize,sweep "" "$S3" "$S4" "$S5" "$S6" ;;
  call2)
    [[ $# -eq 2 ]] || usage
    mkdir -p "$2/compare" "$2/decode" "$2/timeline"
    # Where a block's time goes (the short rows' per-block cost; "Twenty-sixth session"): each
    # case once with the timeline kernel (about 10 s each), then its report; the records come
    # back gzipped.
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
    mkdir -p "$2/speculative" "$2/paged"
    gpu_check 120 "$2/compare" compare "$C256"
    ragged_decode "$2"
    mkdir -p "$2/chunk"
    gpu_check 70 "$2/chunk" decode "$D18"
    mkdir -p "$2/tree"
    gpu_check 40 "$2/tree" decode "$D19"
    gpu_check 60 "$2/speculative" decode "$D15"
    gpu_check 40 "$2/paged" decode "$D16"
    mkdir -p "$2/paged-prefill"
    gpu_check 50 "$2/paged-prefill" decode "$D17" ;;
  rescue)
    # Call 1's sweeps, D=256 against Flex and the packed chunks, where call 1's tests took its
    # budget (forty-second session).
    [[ $# -eq 2 ]] || usage
    mkdir -p "$2/compare" "$2/ragged-cache"
    gpu_check 200 "$2" sweep "" "$S4" "$S3" "$S5" "$S6"
    gpu_check 110 "$2/compare" compare "$C256"
    tar -C "$2/ragged-cache" -xJf .gpu-bundle/ragged-cache.tar.xz || true
    ragged_bench "$2" packed-chunk 25 "$PACKED_CHUNK" ATTNJIT_SPLIT_KV
    ragged_bench "$2" ragged-tree 25 "$RAGGED_TREE" ATTNJIT_BALANCE_SPLIT
    rm -rf "$2/ragged-cache" ;;
  print)
    printf 'S3=%s\nS4=%s\nS5=%s\nS6=%s\nC256=%s\nD14=%s\nD15=%s\nD16=%s\nD17=%s\nD18=%s\nD19=%s\nRAGGED=%s\nRAGGED_TREE=%s\nPACKED_CHUNK=%s\n' \
      "$S3" "$S4" "$S5" "$S6" "$C256" "$D14" "$D15" "$D16" "$D17" "$D18" "$D19" "$RAGGED" "$RAGGED_TREE" "$PACKED_CHUNK"
    printf 'timeline: %s\n' "${TIMELINE_CASES[@]}" ;;
  *) usage ;;
esac
