#!/usr/bin/env bash
# The next GPU session's device calls, written down here so that each fits the device tool's
# 2,000-character command and all of them the session's 15 device minutes (one machine start,
# then the calls back to back on the warm machine). What each measures, and what it was predicted
# to show: docs/PERFORMANCE.md, "The next GPU session".
#
#   tools/planned-gpu-calls.sh bundle          # here: .gpu-bundle with every sweep's kernels
#                                              # prewarmed (gpu-bundle.sh; about 8 minutes) and
#                                              # D13's base library (a few minutes more)
#   tools/planned-gpu-calls.sh call1 "$OUT"    # there, first call (budget 420 s): test_gpu and
#                                              # the sanitizers on both families, then S11, S11b
#                                              # and S12
#   tools/planned-gpu-calls.sh call2 "$OUT"    # there, second call (budget 380 s): D13 (the
#                                              # decoding A/Bs), item 14 (gpu-check's anatomy
#                                              # stage: decoding steps under ncu), then S8, S1,
#                                              # S11c
#   tools/planned-gpu-calls.sh print           # the sweeps and the commands, without running
#
# Run the calls with run(carry=[".gpu-bundle"], timeout_s=450 and 400): the budgets leave each
# call's last step its time and the machine start (about 35 s) inside the 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

# Item 11: the short-rows rule at 16K and 2K (the rule, the standard kernel for every call, the
# short-rows kernel for every call), without the watchdog that makes the short-rows kernels spill.
# mixed: the kernels as sm90's, with the carveout rule before the twenty-first session (the
# one-block kernels state no preference; ATTNJIT_CARVEOUT=off), a prefill check of that change.
S11='--watchdog-ms 0 --head-dim 64 --variant sliding_window --variant causal --schedule sm90=sm90 --schedule standard=sm90:sm90_handoff=1 --schedule short=sm90:sm90_blocks_per_sm=2,sm90_handoff=1 --schedule sm90b=sm90 --schedule mixed=sm90 --schedule-env mixed:ATTNJIT_CARVEOUT=off'
S11b='--watchdog-ms 0 --head-dim 64 --length 2048 --variant causal --variant prefix_lm --variant sliding_window --variant noop --schedule sm90=sm90 --schedule standard=sm90:sm90_handoff=1 --schedule short=sm90:sm90_blocks_per_sm=2,sm90_handoff=1 --schedule sm90b=sm90'
# Item 12: the sm80 kernel's K/V copies (nineteenth session) against their earlier addresses.
S12='--head-dim 64 --head-dim 128 --variant noop --variant causal --variant sliding_window --schedule sm80=sm80 --schedule safe=sm80:sm80_safe_sources=1 --schedule sm80b=sm80 --schedule safe2=sm80:sm80_safe_sources=1 --schedule sm80-mixed=sm80 --schedule-env sm80-mixed:ATTNJIT_CARVEOUT=off'
# Item 8: masked 192-row tiles at D=64.
S8='--watchdog-ms 0 --head-dim 64 --variant causal --variant prefix_lm --variant sliding_window --variant document --schedule sm90=sm90 --schedule m192n96=sm90:sm90_block_m=192,sm90_block_n=96,sm90_handoff=1,sm90_fold_m192=1 --schedule m192n112=sm90:sm90_block_m=192,sm90_block_n=112,sm90_handoff=1,sm90_fold_m192=1 --schedule m192=sm90:sm90_block_m=192,sm90_handoff=1 --schedule m192f=sm90:sm90_block_m=192,sm90_handoff=1,sm90_fold_m192=1 --schedule sm90b=sm90 --schedule m192n96b=sm90:sm90_block_m=192,sm90_block_n=96,sm90_handoff=1,sm90_fold_m192=1'
# Item 1: ALiBi's row shift on both kernels.
S1='--variant alibi --head-dim 64 --head-dim 128 --schedule sm90=sm90 --schedule unshifted=sm90:score_row_shift=0 --schedule sm90b=sm90 --schedule unshifted2=sm90:score_row_shift=0 --schedule sm80=sm80 --schedule sm80-unshifted=sm80:score_row_shift=0'
# Item 11: the sm80 kernel's own two blocks per SM on short and long rows.
S11c='--head-dim 64 --head-dim 128 --variant sliding_window --variant document --variant causal --schedule sm80=sm80 --schedule sm80-m64x2=sm80:sm80_block_m=64,sm80_warps=4,sm80_blocks_per_sm=2'

# Items 13 and 15: decoding steps at B=1 (split) for 4K and 16K keys: the split-KV merge launched
# programmatically (twentieth session) against ATTNJIT_PDL=off, one carveout for a call's kernels
# (twenty-first session) against ATTNJIT_CARVEOUT=off, the block-per-row merge against the
# twentieth session's library (base: b66c038, built into the bundle's bisect/ by `bundle`; its
# kernels compile there, about 10 s a variant), and SDPA beside them; no Flex (its compile).
BASE=b66c038
# Item 16: the slices per head, forced (ATTNJIT_SPLIT_KV) against the heuristic's 14 (4K) and 42
# (16K): whether a block's chain of key tiles is the fixed cost (docs/PERFORMANCE.md).
D13="--decode-batch 1 --head-dim 128 --length 4096 --length 16384 --decode-rows attnjit --decode-rows attnjit-no-PDL --decode-rows attnjit-mixed-carveouts --decode-rows base --decode-rows sdpa --split-kv 32 --split-kv 64 --split-kv 128 --decode-rows attnjit-split=32 --decode-rows attnjit-split=64 --decode-rows attnjit-split=128 --baseline-lib .gpu-bundle/bisect/$BASE/libattnjit.so"

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
    tools/gpu-bundle.sh --sweep "$S11" --sweep "$S11b" --sweep "$S12" --sweep "$S8" \
      --sweep "$S1" --sweep "$S11c"
    tools/bench/build_at_commits.sh .gpu-bundle/bisect "$BASE"
    du -sh .gpu-bundle ;;
  call1)
    [[ $# -eq 2 ]] || usage
    gpu_check 420 "$2" test,sanitize,sweep "" "$S11" "$S11b" "$S12" ;;
  call2)
    [[ $# -eq 2 ]] || usage
    gpu_check 380 "$2" decode,anatomy,sweep "$D13" "$S8" "$S1" "$S11c" ;;
  print)
    printf 'S11=%s\nS11b=%s\nS12=%s\nS8=%s\nS1=%s\nS11c=%s\nD13=%s\n' "$S11" "$S11b" "$S12" \
      "$S8" "$S1" "$S11c" "$D13" ;;
  *) usage ;;
esac
