#!/usr/bin/env bash
# The whole GPU verification on a lent machine (H100/H200, CUDA 13, driver 580, PyTorch, no
# network): GPU tests (the Hopper probes first where sm90 is among the families),
# compute-sanitizer memcheck and racecheck, `attnjit bench` and the FlexAttention comparison.
# Uses a build made elsewhere (see tools/bench/README.md).
#
#   tools/gpu-check.sh [--build-dir DIR] [--deps DIR] [--quick] [--only STAGES]
#                      [--families LIST] [--tune SPEC] [--watchdog-ms N] [--compare-args 'ARGS']
#                      [--sweep-args 'ARGS']... [--builds-args 'ARGS'] [--anatomy-args 'ARGS']...
#                      [--bisect 'SWITCH...'] OUTDIR
#
# --build-dir     the carried build tree (default: build); its cache.tar.xz or cache/
#                 (gpu-bundle.sh's prewarmed kernels) seeds a copy that becomes ATTNJIT_CACHE_DIR,
#                 unless the caller set one; the sweep stage runs every schedule with it
# --deps          a folder whose *.so files (fmt, spdlog, xxhash...) go on LD_LIBRARY_PATH, or a
#                 tree unpacked with dpkg -x (its usr/lib/x86_64-linux-gnu is used)
# --quick         small sizes for compare_flex.py and bench
# --only STAGES   comma-separated subset of
#                 test,sanitize,compare,scaling,decode,anatomy,sweep,builds,bench (default: all
#                 but scaling, decode, anatomy, sweep and builds). builds: the libraries
#                 tools/bench/build_at_commits.sh made into BUILD_DIR/bisect, then the carried
#                 one, each timed with its own profile_variant.py (--builds-args: 'VARIANT LENGTH
#                 HEAD_DIM FAMILY...', default 'noop 16K 128 sm80'), twice in that order, so a
#                 slowdown between commits shows on one GPU with its spread. decode: compare_flex.py --decode,
#                 one decoding step (split-KV on and off, Flex, SDPA; ms and GB/s). anatomy:
#                 decoding steps kernel by kernel under ncu (profile_variant.py --decode; each
#                 kernel's duration and DRAM bytes, for the step times of decode). sweep:
#                 tools/bench/sweep_schedules.py, the kernel schedules (sm80, sm90, ATTNJIT_TUNE
#                 options) against each other, no Flex. A stage run on its own gets the whole
#                 budget: the full Flex table (7 variants x D 64/128 at 16K) is `--only compare`,
#                 one device call.
# --families      kernel families the test and sanitize stages run, each with
#                 ATTNJIT_KERNEL_FAMILY set (default sm80,sm90: the Hopper kernel is forced even
#                 where `auto` does not pick it yet, so one call verifies both; its sanitize run
#                 adds synccheck for the mbarriers and named barriers)
# --tune          ATTNJIT_TUNE for every step (e.g. 'sm90_overlap=1,sm90_persistent=1' with
#                 --only test,sanitize --families sm90: the schedule options under test_gpu and
#                 the sanitizers; compare too, unless --compare-args has --tune); the sweep
#                 sets its own per schedule. Default: the caller's ATTNJIT_TUNE
# --watchdog-ms   the sm90 kernel's mbarrier watchdog (sm90_watchdog_ms, docs/KERNELS.md) for the
#                 test and sweep stages: a wait longer than N ms records which one and faults the
#                 kernel, so a hang fails in seconds instead of eating the step (default 5000;
#                 the sweep is the pipelined schedules' first hardware run). The sanitize stage
#                 uses the larger of N and 60000 (compute-sanitizer slows kernels a lot). 0: off.
#                 Never for compare, scaling or bench: their figures are the shipped kernels'.
#                 Each step's header shows the ATTNJIT_TUNE it runs with.
# --compare-args  extra arguments for compare_flex.py, e.g. '--variant causal --length 64K'
# --sweep-args    extra arguments for sweep_schedules.py, e.g. '--head-dim 128 --schedule ...';
#                 repeatable: each set is its own sweep, in the order given (each planned with
#                 gpu-bundle.sh --sweep 'ARGS'), so one call times several planned comparisons
#                 without their cross product; their rows go to compare-flex.txt, and sweep.json
#                 only when there is one
# --builds-args   the builds stage's variants: 'noop document 16K 128 sm80' (variants, then the
#                 length, head dim and kernel family)
# --anatomy-args  one decoding step for the anatomy stage, 'VARIANT LENGTH HEAD_DIM'
#                 (repeatable; default: noop 4K 128, causal 4K 128, sliding_window 16K 128)
# --bisect        the switches a family's failing test cases are run again under, one run each,
#                 right after the test stage (within 120 s a family): NAME=VALUE sets an
#                 environment variable, tune:KEY=VALUE joins ATTNJIT_TUNE. The summary's
#                 bisect[FAMILY] line names those under which every failing case passed. Default:
#                 each default changed since hardware last ran it turned off, and the sm80
#                 kernel for the sm90 family (bisect_switches below); '' for none.
# COMPUTE_SANITIZER names the sanitizer to run (default: compute-sanitizer from the toolkit).
# OUTDIR gets at most 8 files: nvidia-smi.txt, test-gpu.log, memcheck.log, racecheck.log,
# bench.txt, compare-flex.txt, compare-flex.json, summary.txt (scaling, decode, anatomy, sweep and builds
# append their rows to compare-flex.txt and write scaling.json / decode.json / sweep.json only when they
# run alone), and
# failures.tar.gz when a test case failed: the test stage runs with ATTNJIT_TEST_DUMP_DIR, so each
# failing case leaves a dump (tests/support/failure_dump.hpp; read it with
# tools/read_failure_dump.py), packed as FAMILY/CASE.dump into a tarball of at most
# GPU_CHECK_TARBALL_LIMIT bytes (default 16 MiB: the first files in name order that fit). When
# the tarball would be a 9th file, nvidia-smi.txt moves into it. The summary is printed last.
# Every stage prints as it goes.
# The whole run fits one 10-minute device call: GPU_CHECK_BUDGET (default 560 s) caps it, and
# each step has its own timeout when several stages run (Hopper probes 60, test_gpu 360, after a
# failure its bisect 120 a family, memcheck 120 and racecheck 120, each shared by the families, synccheck 60 for sm90, ctypes 30,
# compare_flex 150, scaling 200, decode 200, anatomy 60 a step, sweep 300, then bench 6 x 60,
# its decoding step 90 and the host time per call 60 per family), all cut to what is left:
# `--only test,sanitize` verifies both families in one call.
set -uo pipefail

build_dir=build
deps_dir=""
quick=0
out_dir=""
stages="test,sanitize,compare,bench"
families="sm80,sm90"
compare_args=""
sweep_arg_sets=()
builds_args="noop 16K 128 sm80"
anatomy_cases=()
# The switches a failing test case is rerun under (--bisect): each turns off one default that
# has changed since hardware last ran it (docs/PERFORMANCE.md, "Where attnjit stands"), or runs
# the case on the sm80 kernel; `tune:` ones join ATTNJIT_TUNE.
bisect_switches=(ATTNJIT_PDL=off ATTNJIT_CARVEOUT=off ATTNJIT_SHORT_ROWS=off ATTNJIT_SPLIT_KV=off
                 ATTNJIT_PACK_GQA=off ATTNJIT_DECODE_ENTRY=off tune:score_row_shift=0
                 tune:sm80_safe_sources=1 tune:sm90_handoff=0 ATTNJIT_KERNEL_FAMILY=sm80)
tune="${ATTNJIT_TUNE:-}"
watchdog_ms=5000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --deps) deps_dir="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --only) stages="$2"; shift 2 ;;
    --families) families="$2"; shift 2 ;;
    --compare-args) compare_args="$2"; shift 2 ;;
    --sweep-args) sweep_arg_sets+=("$2"); shift 2 ;;
    --builds-args) builds_args="$2"; shift 2 ;;
    --anatomy-args) anatomy_cases+=("$2"); shift 2 ;;
    --tune) tune="$2"; shift 2 ;;
    --watchdog-ms) watchdog_ms="$2"; shift 2 ;;
    --bisect) read -r -a bisect_switches <<< "$2"; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
    *) out_dir="$1"; shift ;;
  esac
done
if [[ -z "$out_dir" ]]; then
  echo "usage: tools/gpu-check.sh [--build-dir DIR] [--deps DIR] [--quick] [--only STAGES] [--families LIST] [--tune SPEC] [--watchdog-ms N] [--compare-args 'ARGS'] [--sweep-args 'ARGS']... [--builds-args 'ARGS'] [--anatomy-args 'ARGS']... [--bisect 'SWITCH...'] OUTDIR" >&2
  exit 2
fi
if ! [[ "$watchdog_ms" =~ ^[0-9]+$ ]] || (( watchdog_ms > 600000 )); then
  echo "gpu-check: --watchdog-ms $watchdog_ms is not an integer in [0, 600000]" >&2
  exit 2
fi
for switch in "${bisect_switches[@]}"; do
  if ! [[ "$switch" =~ ^(tune:[a-z0-9_]+|[A-Z][A-Z0-9_]*)=[^,[:space:]]+$ ]]; then
    echo "gpu-check: --bisect switch '$switch' is neither NAME=VALUE nor tune:KEY=VALUE" >&2
    exit 2
  fi
done
for stage in ${stages//,/ }; do
  case "$stage" in
    test|sanitize|compare|scaling|decode|anatomy|sweep|builds|bench) ;;
    *) echo "gpu-check: unknown stage '$stage' (stages: test,sanitize,compare,scaling,decode,anatomy,sweep,builds,bench)" >&2; exit 2 ;;
  esac
done
for family in ${families//,/ }; do
  case "$family" in
    sm80|sm90) ;;
    *) echo "gpu-check: unknown kernel family '$family' (families: sm80,sm90)" >&2; exit 2 ;;
  esac
done
tarball_limit=${GPU_CHECK_TARBALL_LIMIT:-16777216}
if ! [[ "$tarball_limit" =~ ^[0-9]+$ ]]; then
  echo "gpu-check: GPU_CHECK_TARBALL_LIMIT=$tarball_limit is not a number of bytes" >&2
  exit 2
fi
# wants STAGE: whether STAGE was asked for.
wants() { [[ ",$stages," == *",$1,"* ]]; }
# A stage alone gets the whole budget instead of its share.
single_stage=0
[[ "$stages" != *,* ]] && single_stage=1
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
# Note: a tarball left by an earlier run would pass for this run's failures.
rm -f "$out_dir/failures.tar.gz"
build_dir=$(cd "$build_dir" && pwd) || { echo "gpu-check: no build dir" >&2; exit 2; }
repo_dir=$(cd "$(dirname "$0")/.." && pwd)

if [[ -n "$deps_dir" ]]; then
  deps_dir=$(cd "$deps_dir" && pwd)
  for lib in "$deps_dir" "$deps_dir/usr/lib/x86_64-linux-gnu" "$deps_dir/lib"; do
    [[ -d "$lib" ]] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
fi
export PATH="/usr/local/cuda/bin:$PATH"
# libnvrtc from the toolkit, whatever rpath the carried binaries have.
for cuda_lib in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d "$cuda_lib" ]] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cuda_lib"
done
cache_note=""
if [[ -z "${ATTNJIT_CACHE_DIR:-}" ]]; then
  ATTNJIT_CACHE_DIR=$(mktemp -d /tmp/attnjit-cache.XXXXXX)
  # Note: the run's own cache goes with it (each run starts a fresh one anyway); a caller's
  # ATTNJIT_CACHE_DIR is theirs and stays.
  trap 'rm -rf "$ATTNJIT_CACHE_DIR"' EXIT
  # The kernels tools/gpu-bundle.sh compiled for the test and sanitize stages: a copy, so the
  # carried bundle stays as it came and each run starts from the same cache.
  if [[ -f "$build_dir/cache.tar.xz" ]]; then
    tar -C "$ATTNJIT_CACHE_DIR" -xJf "$build_dir/cache.tar.xz" ||
      echo "gpu-check: could not unpack $build_dir/cache.tar.xz: its kernels compile here instead" >&2
  elif [[ -d "$build_dir/cache" ]]; then
    cp -R "$build_dir/cache/." "$ATTNJIT_CACHE_DIR/"
  fi
  prewarmed=$(find "$ATTNJIT_CACHE_DIR" -name '*.cubin' | wc -l)
  ((prewarmed)) && cache_note=", $prewarmed kernels prewarmed by gpu-bundle.sh"
fi
export ATTNJIT_CACHE_DIR
export ATTNJIT_LOG_LEVEL="${ATTNJIT_LOG_LEVEL:-warn}"
# with_watchdog MS: --tune's spec plus sm90_watchdog_ms=MS (nothing added for 0).
with_watchdog() {
  if (( $1 == 0 )); then echo "$tune"; else echo "${tune:+$tune,}sm90_watchdog_ms=$1"; fi
}
test_tune=$(with_watchdog "$watchdog_ms")
sanitize_watchdog_ms=0
(( watchdog_ms > 0 )) && sanitize_watchdog_ms=$(( watchdog_ms > 60000 ? watchdog_ms : 60000 ))
sanitize_tune=$(with_watchdog "$sanitize_watchdog_ms")
sanitizer="${COMPUTE_SANITIZER:-compute-sanitizer}"

summary="$out_dir/summary.txt"
# Note: the device tool allows 10 minutes per call, so the whole check runs against one deadline
# (GPU_CHECK_BUDGET seconds, default 560) and every step has its own cap besides: a hung step is
# killed (SIGTERM, SIGKILL 10 s later) and recorded as TIMEOUT, and later steps still run. Every
# step writes its log straight into OUTDIR, so a killed step leaves its partial log behind.
budget=${GPU_CHECK_BUDGET:-560}
start_time=$SECONDS
printf 'gpu-check started %s, budget %ss%s%s%s\n' "$(date -u +%FT%TZ)" "$budget" \
  "${tune:+, ATTNJIT_TUNE=$tune}" "$cache_note" \
  "$( ((watchdog_ms > 0)) && echo ", sm90 watchdog ${watchdog_ms} ms (test), ${sanitize_watchdog_ms} ms (sanitize)")" \
  > "$summary"
status=0
record() {  # record NAME RC [note]
  local verdict=PASS
  case "$2" in
    0) verdict=PASS ;;
    # Note: on the lent GPU machine a skip means the GPU was not usable: that is a failure here.
    77) verdict="FAIL (skipped: no usable GPU)"; status=1 ;;
    124|137) verdict="TIMEOUT (rc $2)"; status=1 ;;
    *) verdict="FAIL (rc $2)"; status=1 ;;
  esac
  printf '%-22s %s %s  [%ss elapsed]\n' "$1" "$verdict" "${3:-}" "$((SECONDS - start_time))" >> "$summary"
}
# step_timeout CAP: the smaller of CAP and what is left of the budget (at least 1 s).
step_timeout() {
  local left=$((budget - (SECONDS - start_time)))
  local cap=$1
  (( left < cap )) && cap=$left
  (( cap < 1 )) && cap=1
  echo "$cap"
}
# run_step CAP LOG TUNE COMMAND...: runs COMMAND with ATTNJIT_TUNE=TUNE (unset when TUNE is
# empty) under a timeout, output appended to LOG.
run_step() {
  local cap log tune_spec
  cap=$(step_timeout "$1"); log=$2; tune_spec=$3; shift 3
  echo "== $* (ATTNJIT_TUNE=${tune_spec:-<unset>}, timeout ${cap}s)" | tee -a "$log"
  if [[ -n "$tune_spec" ]]; then
    set -- env ATTNJIT_TUNE="$tune_spec" "$@"
  else
    set -- env -u ATTNJIT_TUNE "$@"
  fi
  # Note: the log is also printed as it grows, so a device call that is cut off still shows
  # how far it got; PIPESTATUS keeps the step's own exit status.
  timeout -k 10 "$cap" "$@" 2>&1 | tee -a "$log"
  return "${PIPESTATUS[0]}"
}
# cap ALONE SHARED: a step's cap when its stage runs alone, or beside other stages.
cap() { if (( single_stage )); then echo "$1"; else echo "$2"; fi; }
find_binary() {  # find_binary NAME: first match under the build dir
  find "$build_dir" -type f -name "$1" -perm -u+x 2>/dev/null | head -n 1
}

: > "$out_dir/nvidia-smi.txt"
run_step 20 "$out_dir/nvidia-smi.txt" "" nvidia-smi
record nvidia-smi $? "$(timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1)"

test_gpu=$(find_binary test_gpu)
if (wants test || wants sanitize) && [[ -z "$test_gpu" ]]; then
  echo "test_gpu not found under $build_dir" > "$out_dir/test-gpu.log"
  record test_gpu 1 "binary missing"
  test_gpu=""
fi
num_families=$(wc -w <<< "${families//,/ }")
# bisect_family FAMILY LIST: the family's failing cases (LIST, test_gpu's --input-file: written by
# the run above through ATTNJIT_TEST_FAILED_LIST) run again under each of bisect_switches, one run
# a switch, within 120 s for the family (60 s a run), so that one device call says which default
# a failure follows. Its summary line names the switches under which every listed case passed,
# those under which some still failed, and those the time did not reach.
bisect_family() {
  local family=$1 list=$2 switch spec rc left passed=() failed=() unreached=() env_args=()
  local deadline=$((SECONDS + $(step_timeout "$(cap "$budget" 120)")))
  { echo "== $family: $(grep -c . "$list") failing case(s), rerun under each switch:"; cat "$list"; } |
    tee -a "$out_dir/test-gpu.log"
  for switch in "${bisect_switches[@]}"; do
    # Note: the sm80 family is that switch already.
    [[ "$family" == sm80 && "$switch" == ATTNJIT_KERNEL_FAMILY=sm80 ]] && continue
    left=$((deadline - SECONDS))
    if (( left < 5 )); then
      unreached+=("$switch")
      continue
    fi
    spec=$test_tune
    env_args=(ATTNJIT_KERNEL_FAMILY="$family")
    case "$switch" in
      tune:*) spec="${test_tune:+$test_tune,}${switch#tune:}" ;;
      *) env_args+=("$switch") ;;
    esac
    run_step "$(( left < 60 ? left : 60 ))" "$out_dir/test-gpu.log" "$spec" env "${env_args[@]}" \
      "$test_gpu" --input-file "$list"
    rc=$?
    case "$rc" in
      0) passed+=("$switch") ;;
      124|137) failed+=("$switch(timeout)") ;;
      *) failed+=("$switch") ;;
    esac
  done
  printf '%-22s %s case(s); all pass with: %s; some fail with: %s%s  [%ss elapsed]\n' \
    "bisect[$family]" "$(grep -c . "$list")" "${passed[*]:-none}" "${failed[*]:-none}" \
    "${unreached[*]:+; not reached (time): ${unreached[*]}}" "$((SECONDS - start_time))" >> "$summary"
}
if wants test && [[ -n "$test_gpu" ]]; then
  # Budget (H100): ~110 kernels at ~0.4 s of NVRTC each plus the CPU reference: about 2 min per
  # family (H200, forty-second session: 140 s for the sm90 family, the [large] cases most of it).
  : > "$out_dir/test-gpu.log"
  family_filter="[gpu]"
  if [[ ",$families," == *",sm90,"* ]]; then
    # Note: the Hopper probes first (tests/support/hopper_probes.hpp): each checks one primitive
    # the emulator models (TMA box and swizzle, wgmma descriptors, the register-A fragment, the
    # MN-major B, the mbarrier ring) against the same expectation on hardware, so when the sm90
    # kernel fails below, this step says which encoding is wrong. Their watchdog is compiled in
    # (2 s), so they need no ATTNJIT_TUNE; the family runs leave them out.
    run_step "$(cap 120 60)" "$out_dir/test-gpu.log" "" "$test_gpu" "[sm90_probe]" --durations yes
    rc=$?
    record hopper_probes "$rc" "$(grep -E '^(All tests passed|test cases:)' "$out_dir/test-gpu.log" | tail -n1)"
    family_filter="[gpu]~[sm90_probe]"
  fi
  # A failing case writes a dump here, one folder per family (the same case may fail in both).
  dump_root=$(mktemp -d /tmp/attnjit-dumps.XXXXXX)
  bisect_families=()
  for family in ${families//,/ }; do
    run_step "$(cap "$budget" $((360 / num_families)))" \
      "$out_dir/test-gpu.log" "$test_tune" env ATTNJIT_KERNEL_FAMILY="$family" \
      ATTNJIT_TEST_DUMP_DIR="$dump_root/$family" \
      ATTNJIT_TEST_FAILED_LIST="$dump_root/$family.failed" "$test_gpu" "$family_filter" --durations yes
    rc=$?
    record "test_gpu[$family]" "$rc" "$(grep -E '^(All tests passed|test cases:)' "$out_dir/test-gpu.log" | tail -n1)"
    # Note: not after a timeout (what is left of the budget is the sanitizers').
    if (( rc != 0 && rc != 77 && rc != 124 && rc != 137 && ${#bisect_switches[@]} > 0 )) &&
       [[ -s "$dump_root/$family.failed" ]]; then
      bisect_families+=("$family")
    fi
  done
  for family in "${bisect_families[@]}"; do
    bisect_family "$family" "$dump_root/$family.failed"
  done
fi
if wants sanitize && [[ -n "$test_gpu" ]]; then
  # Sanitizers over the reduced set: the kernels are slow under instrumentation. The cubins come
  # from the cache the test stage filled (ATTNJIT_CACHE_DIR), else they are compiled here.
  : > "$out_dir/memcheck.log"
  : > "$out_dir/racecheck.log"
  for family in ${families//,/ }; do
    run_step "$(cap $((budget / 2)) $((120 / num_families)))" "$out_dir/memcheck.log" \
      "$sanitize_tune" env ATTNJIT_KERNEL_FAMILY="$family" "$sanitizer" --tool memcheck --error-exitcode 3 \
      --leak-check full "$test_gpu" "[sanitize]"
    rc=$?
    record "memcheck[$family]" "$rc" "$(grep -E 'ERROR SUMMARY' "$out_dir/memcheck.log" | tail -n1)"
    run_step "$(cap "$budget" $((120 / num_families)))" "$out_dir/racecheck.log" \
      "$sanitize_tune" env ATTNJIT_KERNEL_FAMILY="$family" "$sanitizer" --tool racecheck \
      --racecheck-report analysis --error-exitcode 3 "$test_gpu" "[sanitize]"
    rc=$?
    record "racecheck[$family]" "$rc" "$(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out_dir/racecheck.log" | tail -n1)"
    if [[ "$family" == sm90 ]]; then
      # The Hopper kernel synchronises with mbarriers and named barriers: synccheck too (its log
      # joins racecheck.log, OUTDIR keeps to 8 files).
      run_step "$(cap "$budget" 60)" "$out_dir/racecheck.log" "$sanitize_tune" \
        env ATTNJIT_KERNEL_FAMILY=sm90 "$sanitizer" --tool synccheck --error-exitcode 3 "$test_gpu" "[sanitize]"
      rc=$?
      record "synccheck[sm90]" "$rc" "$(grep -E 'ERROR SUMMARY' "$out_dir/racecheck.log" | tail -n1)"
    fi
  done
fi

# Note: not one of the builds stage's libraries from other commits (BUILD_DIR/bisect). The
# bundle's own lib/ comes first: any other copy under the build dir (an older library carried
# for a comparison, say) would otherwise be found in directory order (2026-11-26: the Flex
# comparison timed an older library that way).
lib=$(find "$build_dir/lib" -maxdepth 1 -name 'libattnjit.so*' -type f -print 2>/dev/null | head -n 1)
[[ -z "$lib" ]] && lib=$(find "$build_dir" -path "$build_dir/bisect" -prune -o -name 'libattnjit.so*' \
      -type f -print 2>/dev/null | head -n 1)
if (wants compare || wants scaling || wants decode || wants anatomy || wants sweep) && [[ -z "$lib" ]]; then
  echo "libattnjit.so not found under $build_dir" > "$out_dir/compare-flex.txt"
  record compare_flex 1 "library missing"
elif wants compare || wants scaling || wants decode || wants anatomy || wants sweep; then
  # The ctypes bindings against the C header and the library, before trusting any comparison.
  : > "$out_dir/compare-flex.txt"
  run_step 30 "$out_dir/compare-flex.txt" "$tune" python3 "$repo_dir/tools/bench/attnjit_ctypes.py" --lib "$lib"
  record ctypes_bindings $?
  extra=()
  [[ $quick == 1 ]] && extra+=(--quick)
  read -r -a user_args <<< "$compare_args"
  export PYTHONUNBUFFERED=1
  if wants compare; then
    # Before the bench: correctness first. Rows print as they are measured, so a step cut off
    # by its cap still leaves every finished row in the log and the JSON.
    run_step "$(cap "$budget" 150)" "$out_dir/compare-flex.txt" "$tune" python3 \
      "$repo_dir/tools/bench/compare_flex.py" --lib "$lib" "${extra[@]}" "${user_args[@]}" \
      --json "$out_dir/compare-flex.json"
    record compare_flex $? "$(grep -E '^(checked|mismatch)' "$out_dir/compare-flex.txt" | tail -n1)"
  fi
  if wants scaling; then
    # Beside compare, the rows are in compare-flex.txt only (OUTDIR keeps to 8 files).
    scaling_json=(--json "$out_dir/scaling.json")
    wants compare && scaling_json=()
    run_step "$(cap "$budget" 200)" "$out_dir/compare-flex.txt" "$tune" python3 \
      "$repo_dir/tools/bench/compare_flex.py" --lib "$lib" --scaling "${extra[@]}" \
      "${user_args[@]}" "${scaling_json[@]}"
    record scaling $? "$(grep -E '^(checked|mismatch)' "$out_dir/compare-flex.txt" | tail -n1)"
  fi
  if wants decode; then
    # One decoding step, the decoding entry, split-KV and packing each on and off, against Flex
    # and SDPA. Beside compare, scaling or
    # sweep, the rows are in compare-flex.txt only (OUTDIR keeps to 8 files).
    decode_json=(--json "$out_dir/decode.json")
    (wants compare || wants scaling || wants sweep) && decode_json=()
    run_step "$(cap "$budget" 200)" "$out_dir/compare-flex.txt" "$tune" python3 \
      "$repo_dir/tools/bench/compare_flex.py" --lib "$lib" --decode "${extra[@]}" \
      "${user_args[@]}" "${decode_json[@]}"
    record decode $? "$(grep -E '^(checked|mismatch)' "$out_dir/compare-flex.txt" | tail -n1)"
  fi
  if wants anatomy; then
    # Where a decoding step's time goes (docs/PERFORMANCE.md, item 14): the kernels of two steps
    # (after a first one that loads them) under ncu, each one's duration and DRAM bytes, to set
    # against the step's time in the decode rows. ncu serialises the kernels and flushes the
    # caches before each: K and V come from HBM as in a real step, the merge's partials too
    # (a real step finds them in L2), and no launch overlaps the one before.
    ((${#anatomy_cases[@]})) ||
      anatomy_cases=("noop 4K 128" "causal 4K 128" "sliding_window 16K 128")
    anatomy_rc=0
    for anatomy_case in "${anatomy_cases[@]}"; do
      read -r -a anatomy_words <<< "$anatomy_case"
      run_step "$(cap "$budget" 60)" "$out_dir/compare-flex.txt" "$tune" env ATTNJIT_LIB="$lib" \
        ncu -k regex:attnjit -s 2 -c 4 \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        python3 "$repo_dir/tools/bench/profile_variant.py" --decode "${anatomy_words[@]}" 2 ||
        anatomy_rc=$?
    done
    record anatomy "$anatomy_rc" "${#anatomy_cases[@]} step(s)"
  fi
  if wants sweep; then
    # One sweep per --sweep-args set (none: one with the script's defaults); several take 300 s
    # each at most, within what the budget leaves; the summary line counts over all of them.
    ((${#sweep_arg_sets[@]})) || sweep_arg_sets=("")
    sweep_json=(--json "$out_dir/sweep.json")
    (wants compare || wants scaling || ((${#sweep_arg_sets[@]} > 1))) && sweep_json=()
    sweep_cap=$(cap "$budget" 300)
    ((${#sweep_arg_sets[@]} > 1)) && sweep_cap=300
    sweep_status=0
    for sweep_args in "${sweep_arg_sets[@]}"; do
      read -r -a user_sweep_args <<< "$sweep_args"
      run_step "$sweep_cap" "$out_dir/compare-flex.txt" "$tune" python3 \
        "$repo_dir/tools/bench/sweep_schedules.py" --lib "$lib" --watchdog-ms "$watchdog_ms" \
        --cache-dir "$ATTNJIT_CACHE_DIR" \
        "${user_sweep_args[@]}" "${sweep_json[@]}"
      status=$?
      ((status != 0)) && sweep_status=$status
    done
    record sweep "$sweep_status" "${#sweep_arg_sets[@]} sweep(s), $(grep -cE "MISMATCH" "$out_dir/compare-flex.txt") mismatches, $(grep -cE " FAULT: " "$out_dir/compare-flex.txt") faults"
  fi
fi

if wants builds; then
  # The libraries tools/bench/build_at_commits.sh made (BUILD_DIR/bisect/COMMIT, in the order of
  # BUILD_DIR/bisect/order), then this build's, each with its own bindings and cache directory;
  # the whole list twice, so that the spread between two runs of one build is in the log. Each
  # step's header names the library it timed.
    read -r -a builds_words <<< "$builds_args"
  n=${#builds_words[@]}
  if (( n < 4 )); then
    echo "gpu-check: --builds-args needs 'VARIANT... LENGTH HEAD_DIM FAMILY', got '$builds_args'" >&2
    record builds 2 "bad --builds-args"
  else
    builds_variants=("${builds_words[@]:0:n-3}")
    builds_shape=("${builds_words[@]:n-3:2}")
    builds_family=${builds_words[n-1]}
    builds_list=()
    [[ -f "$build_dir/bisect/order" ]] && read -r -a builds_list < <(tr '\n' ' ' < "$build_dir/bisect/order")
    builds_list+=(this)
    builds_rc=0
    export PYTHONUNBUFFERED=1
    for round in 1 2; do
      for build in "${builds_list[@]}"; do
        if [[ "$build" == this ]]; then
          build_lib=$lib; build_bench="$repo_dir/tools/bench"
        else
          build_lib="$build_dir/bisect/$build/libattnjit.so"; build_bench="$build_dir/bisect/$build/bench"
        fi
        for variant in "${builds_variants[@]}"; do
          run_step "$(cap "$budget" 60)" "$out_dir/compare-flex.txt" "$tune" env ATTNJIT_LIB="$build_lib" \
            ATTNJIT_KERNEL_FAMILY="$builds_family" ATTNJIT_CACHE_DIR="$ATTNJIT_CACHE_DIR/builds-$build" \
            python3 "$build_bench/profile_variant.py" "$variant" "${builds_shape[@]}" 20 ||
            builds_rc=$?
        done
      done
    done
    # Note: profile_variant.py's lines only (decode rows in the same file end in " ms" too).
    record builds "$builds_rc" \
      "$(grep -cE ' L=[0-9]+ D=[0-9]+ B=[0-9]+ H=[0-9]+: [0-9.]+ ms$' "$out_dir/compare-flex.txt") timings"
  fi
fi

# Last, with whatever is left of the budget.
cli=$(find_binary attnjit)
if wants bench && [[ -z "$cli" ]]; then
  echo "attnjit CLI not found under $build_dir" > "$out_dir/bench.txt"
  record bench 1 "binary missing"
elif wants bench; then
  # B * L = 64K tokens per call at every length; 64K gets fewer timed calls (each is ~0.1 s).
  : > "$out_dir/bench.txt"
  bench_rc=0
  for d in 64 128; do
    if [[ $quick == 1 ]]; then
      run_step 60 "$out_dir/bench.txt" "$tune" "$cli" bench --seq-len 2048 --batch 2 --heads 8 \
        --head-dim "$d" --iters 10 || bench_rc=$?
    else
      for l in 4096 16384 65536; do
        iters=(--warmup 3 --iters 20)
        [[ $l == 65536 ]] && iters=(--warmup 1 --iters 5)
        run_step 60 "$out_dir/bench.txt" "$tune" "$cli" bench --seq-len "$l" --batch $((65536 / l)) \
          --heads 16 --head-dim "$d" "${iters[@]}" || bench_rc=$?
      done
    fi
  done
  # Decoding steps (B=1, 32 query heads over 8, D=128, one query at the end of the cache), the
  # C API's own figure beside compare_flex.py's decode rows: microseconds and GB/s per step; the
  # ragged cache (its example fills sequence 0 to 0.75 of the cache) reads the keys up to its
  # length only, so it should take about 0.75 of the causal step.
  decode_len=16384
  [[ $quick == 1 ]] && decode_len=4096
  run_step 90 "$out_dir/bench.txt" "$tune" "$cli" bench --manifest "$repo_dir/cache/decoding.json" \
    --q-len 1 --seq-len "$decode_len" --batch 1 --heads 32 --kv-heads 8 --head-dim 128 \
    --variant noop --variant causal --variant sliding_window --variant ragged_cache --warmup 10 \
    --iters 100 || bench_rc=$?
  # The host time of one call per family (tools/bench/host_overhead.cpp): attnjit's checks and
  # launches plus the driver's, small problems, kernels queued.
  host_overhead=$(find_binary attnjit_host_overhead)
  if [[ -n "$host_overhead" ]]; then
    for family in ${families//,/ }; do
      run_step 60 "$out_dir/bench.txt" "$tune" env ATTNJIT_KERNEL_FAMILY="$family" \
        "$host_overhead" || bench_rc=$?
    done
  else
    echo "attnjit_host_overhead not found under $build_dir: host time per call not measured" |
      tee -a "$out_dir/bench.txt"
  fi
  record bench "$bench_rc" "$(grep -c '^== ' "$out_dir/bench.txt") runs"
fi

# pack_failure_dumps: the test stage's dumps into OUTDIR/failures.tar.gz and a summary line.
pack_failure_dumps() {
  local dumps=() members=() staging size kept dumps_kept note=""
  mapfile -t dumps < <(cd "$dump_root" && find . -type f -name '*.dump' | sed 's|^\./||' |
                       LC_ALL=C sort)
  if ((${#dumps[@]} == 0)); then
    printf '%-22s none\n' failure_dumps >> "$summary"
    return
  fi
  members=("${dumps[@]}")
  # Note: the device tool brings back at most 8 files; nvidia-smi.txt goes first into the
  # tarball, so it is kept whatever the limit leaves out.
  if (( $(find "$out_dir" -maxdepth 1 -type f | wc -l) >= 8 )) && [[ -f "$out_dir/nvidia-smi.txt" ]]; then
    cp "$out_dir/nvidia-smi.txt" "$dump_root/nvidia-smi.txt"
    members=(nvidia-smi.txt "${dumps[@]}")
  fi
  staging=$(mktemp -d /tmp/attnjit-dumps-tar.XXXXXX)
  # The largest prefix whose compressed tarball fits the limit.
  for ((kept = ${#members[@]}; kept > 0; kept--)); do
    tar -czf "$staging/failures.tar.gz" -C "$dump_root" "${members[@]:0:kept}" || continue
    size=$(stat -c %s "$staging/failures.tar.gz")
    (( size <= tarball_limit )) && break
  done
  dumps_kept=$((kept - (${#members[@]} - ${#dumps[@]})))
  if (( dumps_kept <= 0 )); then
    printf '%-22s %s dumps, none packed: over GPU_CHECK_TARBALL_LIMIT (%s bytes)\n' \
      failure_dumps "${#dumps[@]}" "$tarball_limit" >> "$summary"
    rm -rf "$staging"
    return
  fi
  mv "$staging/failures.tar.gz" "$out_dir/failures.tar.gz"
  rm -rf "$staging"
  if [[ "${members[0]}" == nvidia-smi.txt ]]; then
    rm -f "$out_dir/nvidia-smi.txt"
    note=", nvidia-smi.txt inside (OUTDIR keeps to 8 files)"
  fi
  if (( dumps_kept < ${#dumps[@]} )); then
    note="$note; only the first $dumps_kept of ${#dumps[@]} fit GPU_CHECK_TARBALL_LIMIT ($tarball_limit bytes)"
  fi
  printf '%-22s %s files, %s KiB in failures.tar.gz%s\n' failure_dumps "$dumps_kept" \
    "$(( ($(stat -c %s "$out_dir/failures.tar.gz") + 1023) / 1024 ))" "$note" >> "$summary"
}
if [[ -n "${dump_root:-}" ]]; then
  pack_failure_dumps
  rm -rf "$dump_root"
fi

echo "== logs in $out_dir"
cat "$summary"
exit $status
