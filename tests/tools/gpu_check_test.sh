#!/bin/bash
# tools/gpu-check.sh without a GPU: fake test_gpu, compute-sanitizer, nvidia-smi, attnjit and
# attnjit_host_overhead binaries print the ATTNJIT_TUNE they were started with, so the test checks which steps get the
# sm90 mbarrier watchdog (test: --watchdog-ms, sanitize: at least 60000 ms, bench: never) and that
# each step's header names its ATTNJIT_TUNE, and that the Hopper probes run before the sm90
# family (and only when it is asked for). The fake test_gpu also writes FAKE_DUMPS dumps of
# FAKE_DUMP_KB KiB (random, so they do not compress) into ATTNJIT_TEST_DUMP_DIR, to check
# failures.tar.gz: what it holds, the tarball limit, nvidia-smi.txt moving into it when OUTDIR
# would hold a 9th file. A fake python3 and libattnjit.so check the decode stage's command line
# (compare_flex.py --decode) and where its rows go. Usage: gpu_check_test.sh PATH/TO/gpu-check.sh
set -u
script=$1
scratch=$(mktemp -d /tmp/attnjit-gpu-check-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/build" "$scratch/bin"
fake() {  # fake PATH NAME: an executable printing NAME, its ATTNJIT_TUNE and its arguments
  printf '#!/bin/sh\necho "%s ran with ATTNJIT_TUNE=${ATTNJIT_TUNE-<unset>} args: $*"\n' "$2" > "$1"
  chmod +x "$1"
}
fake "$scratch/build/test_gpu" FAKE_TEST_GPU
cat >> "$scratch/build/test_gpu" <<'SH'
echo "FAKE_TEST_GPU cache: $(find "$ATTNJIT_CACHE_DIR" -name '*.cubin' 2>/dev/null | wc -l) cubins"
echo "FAKE_TEST_GPU cache dir: $ATTNJIT_CACHE_DIR"
touch "$ATTNJIT_CACHE_DIR/written-by-test-gpu"
SH
cat >> "$scratch/build/test_gpu" <<'SH'
if [ -n "${ATTNJIT_TEST_DUMP_DIR:-}" ]; then
  mkdir -p "$ATTNJIT_TEST_DUMP_DIR"
  i=1
  while [ "$i" -le "${FAKE_DUMPS:-0}" ]; do
    head -c "$((${FAKE_DUMP_KB:-1} * 1024))" /dev/urandom > "$ATTNJIT_TEST_DUMP_DIR/case-$i.dump"
    i=$((i + 1))
  done
fi
SH
# FAKE_FAIL_UNLESS=NAME=VALUE (or tune:KEY=VALUE): the family runs fail, listing two cases in
# ATTNJIT_TEST_FAILED_LIST, unless that variable (or ATTNJIT_TUNE key) is set so.
cat >> "$scratch/build/test_gpu" <<'SH'
if [ -n "${FAKE_FAIL_UNLESS:-}" ] && [ "$1" != "[sm90_probe]" ]; then
  case "$FAKE_FAIL_UNLESS" in
    tune:*) case ",${ATTNJIT_TUNE-}," in *",${FAKE_FAIL_UNLESS#tune:},"*) exit 0 ;; esac ;;
    *) env | grep -qx "$FAKE_FAIL_UNLESS" && exit 0 ;;
  esac
  if [ -n "${ATTNJIT_TEST_FAILED_LIST:-}" ] && [ "$1" != "--input-file" ]; then
    printf 'case one\ncase two\\, with a comma\n' >> "$ATTNJIT_TEST_FAILED_LIST"
  fi
  exit 1
fi
SH
fake "$scratch/build/attnjit" FAKE_CLI
printf '#!/bin/sh\necho "FAKE_HOST_OVERHEAD family=${ATTNJIT_KERNEL_FAMILY-<unset>} ATTNJIT_TUNE=${ATTNJIT_TUNE-<unset>}"\n' \
  > "$scratch/build/attnjit_host_overhead"
chmod +x "$scratch/build/attnjit_host_overhead"
fake "$scratch/bin/nvidia-smi" FAKE_SMI
fake "$scratch/bin/sanitizer" FAKE_SANITIZER
failures=0
# check RUN_OUTPUT PATTERN WHAT: PATTERN (grep -E) must match a line of the output.
check() {
  if ! grep -qE -- "$2" <<< "$1"; then
    echo "FAIL: $3 (no line matches: $2)"
    failures=$((failures + 1))
  fi
}
refute() {
  if grep -qE -- "$2" <<< "$1"; then
    echo "FAIL: $3 (a line matches: $2)"
    failures=$((failures + 1))
  fi
}
run_with_cache() {  # run with ATTNJIT_CACHE_DIR=$ATTNJIT_CACHE_DIR_FOR_TEST
  mkdir -p "$ATTNJIT_CACHE_DIR_FOR_TEST"
  env -u ATTNJIT_TUNE ATTNJIT_CACHE_DIR="$ATTNJIT_CACHE_DIR_FOR_TEST" PATH="$scratch/bin:$PATH" \
    COMPUTE_SANITIZER="$scratch/bin/sanitizer" GPU_CHECK_BUDGET=60 bash "$script" \
    --build-dir "$scratch/build" --families sm90 --quick --only test "$scratch/out" 2>&1
}
run() {  # run ARGS...: the script on the fake build, one family, its whole output
  env -u ATTNJIT_TUNE -u ATTNJIT_CACHE_DIR PATH="$scratch/bin:$PATH" COMPUTE_SANITIZER="$scratch/bin/sanitizer" \
    GPU_CHECK_BUDGET=60 bash "$script" --build-dir "$scratch/build" --families sm90 --quick \
    --only test,sanitize,bench "$@" "$scratch/out" 2>&1
}

out=$(run)
echo "$out"
check "$out" '^FAKE_TEST_GPU ran with ATTNJIT_TUNE=sm90_watchdog_ms=5000 args: \[gpu\]' \
  "the test stage gets the default watchdog"
check "$out" '^== env ATTNJIT_KERNEL_FAMILY=sm90 .*test_gpu \[gpu\].*\(ATTNJIT_TUNE=sm90_watchdog_ms=5000, timeout' \
  "the test step's header names its ATTNJIT_TUNE"
check "$out" '^FAKE_SANITIZER ran with ATTNJIT_TUNE=sm90_watchdog_ms=60000 args: --tool memcheck' \
  "memcheck gets the sanitizer watchdog"
check "$out" '^FAKE_SANITIZER ran with ATTNJIT_TUNE=sm90_watchdog_ms=60000 args: --tool synccheck' \
  "synccheck gets the sanitizer watchdog"
check "$out" '^FAKE_CLI ran with ATTNJIT_TUNE=<unset> args: bench' "bench runs without a watchdog"
check "$out" '^== .*attnjit bench .*\(ATTNJIT_TUNE=<unset>, timeout' "the bench header says so"
refute "$out" '^FAKE_CLI .*watchdog' "bench never gets the watchdog"
check "$out" '^FAKE_CLI ran with ATTNJIT_TUNE=<unset> args: bench --manifest .*/cache/decoding.json --q-len 1 --seq-len 4096 --batch 1 --heads 32 --kv-heads 8' \
  "the bench stage times decoding steps of the decoding manifest"
check "$out" '^FAKE_HOST_OVERHEAD family=sm90 ATTNJIT_TUNE=<unset>$' \
  "the bench stage measures the host time per call, per family, without the watchdog"

check "$out" '^FAKE_TEST_GPU ran with ATTNJIT_TUNE=<unset> args: \[sm90_probe\]' \
  "the Hopper probes run first, on their own compiled-in watchdog"
check "$out" '^hopper_probes +PASS' "the summary has a line for the probes"
check "$out" 'args: \[gpu\]~\[sm90_probe\] --durations' "the family runs leave the probes out"
probe_line=$(grep -nE '^FAKE_TEST_GPU .*\[sm90_probe\]' <<< "$out" | head -n1 | cut -d: -f1)
family_line=$(grep -nE '^FAKE_TEST_GPU .*\[gpu\]' <<< "$out" | head -n1 | cut -d: -f1)
if [[ -z "$probe_line" || -z "$family_line" ]] || (( probe_line > family_line )); then
  echo "FAIL: the probes run before the sm90 family (lines ${probe_line:-none}, ${family_line:-none})"
  failures=$((failures + 1))
fi
out=$(run --families sm80)
refute "$out" 'sm90_probe' "no probes when sm90 is not among the families"
check "$out" 'args: \[gpu\] --durations' "sm80 alone runs every [gpu] case"
check "$out" '^FAKE_HOST_OVERHEAD family=sm80 ' "the host time per call of the sm80 family"
refute "$out" '^FAKE_HOST_OVERHEAD family=sm90' "and not of a family that was not asked for"

# A bundle's prewarmed cache (gpu-bundle.sh): copied into the run's cache, not used in place.
mkdir -p "$scratch/build/cache/v1/sm_90a/cuda-13.0"
: > "$scratch/build/cache/v1/sm_90a/cuda-13.0/bf16-d64-0.cubin"
: > "$scratch/build/cache/v1/sm_90a/cuda-13.0/bf16-d64-1.cubin"
out=$(run)
check "$out" '^gpu-check started .*, 2 kernels prewarmed by gpu-bundle.sh' "the summary counts them"
check "$out" '^FAKE_TEST_GPU cache: 2 cubins' "the tests see the prewarmed kernels"
if [[ -e "$scratch/build/cache/written-by-test-gpu" ]]; then
  echo "FAIL: the bundle's cache is used in place (test_gpu wrote into it)"
  failures=$((failures + 1))
fi
own_cache=$(sed -n 's/^FAKE_TEST_GPU cache dir: //p' <<< "$out" | head -n 1)
if [[ -z "$own_cache" || -e "$own_cache" ]]; then
  echo "FAIL: the run's own cache (${own_cache:-none seen}) outlives the run"
  failures=$((failures + 1))
fi
out=$(ATTNJIT_CACHE_DIR_FOR_TEST="$scratch/own" run_with_cache)
check "$out" '^FAKE_TEST_GPU cache: 0 cubins' "a caller's ATTNJIT_CACHE_DIR is used as it is"
refute "$out" 'prewarmed' "and not seeded"
if [[ ! -e "$scratch/own/written-by-test-gpu" ]]; then
  echo "FAIL: a caller's ATTNJIT_CACHE_DIR is removed or not used"
  failures=$((failures + 1))
fi
rm -rf "$scratch/build/cache"

# gpu-bundle.sh packs the cache as cache.tar.xz: unpacked into the run's cache.
mkdir -p "$scratch/packed/v1/sm_90a/cuda-13.0"
for i in 0 1 2; do : > "$scratch/packed/v1/sm_90a/cuda-13.0/bf16-d64-$i.cubin"; done
tar -C "$scratch/packed" -cJf "$scratch/build/cache.tar.xz" .
out=$(run)
check "$out" '^gpu-check started .*, 3 kernels prewarmed by gpu-bundle.sh' "a packed cache is counted"
check "$out" '^FAKE_TEST_GPU cache: 3 cubins' "and unpacked for the tests"
rm -f "$scratch/build/cache.tar.xz"

out=$(run --tune sm90_overlap=1 --watchdog-ms 90000)
check "$out" '^FAKE_TEST_GPU ran with ATTNJIT_TUNE=sm90_overlap=1,sm90_watchdog_ms=90000 ' \
  "--watchdog-ms joins --tune for the test stage"
check "$out" '^FAKE_SANITIZER ran with ATTNJIT_TUNE=sm90_overlap=1,sm90_watchdog_ms=90000 args: --tool racecheck' \
  "a limit above 60000 ms holds for the sanitizers too"
check "$out" '^FAKE_CLI ran with ATTNJIT_TUNE=sm90_overlap=1 args: bench' "bench gets --tune alone"

out=$(run --tune sm90_overlap=1 --watchdog-ms 0)
check "$out" '^FAKE_TEST_GPU ran with ATTNJIT_TUNE=sm90_overlap=1 args' "--watchdog-ms 0: test without it"
check "$out" '^FAKE_SANITIZER ran with ATTNJIT_TUNE=sm90_overlap=1 args' "--watchdog-ms 0: sanitize without it"
refute "$out" 'watchdog_ms' "--watchdog-ms 0 leaves it out everywhere"

out=$(run --watchdog-ms 5s)
check "$out" '--watchdog-ms 5s is not an integer in \[0, 600000\]' "a bad --watchdog-ms is refused"
out=$(run --only decode,nope)
check "$out" "unknown stage 'nope' \(stages: test,sanitize,compare,scaling,decode,anatomy,sweep,builds,bench\)" \
  "a bad stage is refused, naming decode among the stages"

# The decode stage: compare_flex.py --decode under a fake python3, against a fake library.
mkdir -p "$scratch/pybin"
printf '#!/bin/sh\necho "FAKE_PYTHON ATTNJIT_TUNE=${ATTNJIT_TUNE-<unset>} args: $*"\ncase "$*" in *compare_flex.py*) echo "checked: fake rows; flex 0.1 ms" ;; *profile_variant.py*) echo "noop L=16384 D=128 B=4 H=16: 28.300 ms" ;; esac\n' \
  > "$scratch/pybin/python3"
chmod +x "$scratch/pybin/python3"
: > "$scratch/build/libattnjit.so.0.1.0"
run_py() {  # run_py ARGS...: run with the fake python3 first on PATH, a 500 s budget
  env -u ATTNJIT_TUNE -u ATTNJIT_CACHE_DIR PATH="$scratch/pybin:$scratch/bin:$PATH" \
    COMPUTE_SANITIZER="$scratch/bin/sanitizer" GPU_CHECK_BUDGET=500 bash "$script" \
    --build-dir "$scratch/build" --families sm90 "$@" "$scratch/out" 2>&1
}
rm -rf "$scratch/out"
out=$(run_py --only decode --quick --compare-args '--decode-batch 1')
check "$out" '^FAKE_PYTHON ATTNJIT_TUNE=<unset> args: .*/tools/bench/attnjit_ctypes.py --lib .*/libattnjit.so' \
  "the decode stage checks the ctypes bindings first"
check "$out" '^FAKE_PYTHON ATTNJIT_TUNE=<unset> args: .*/tools/bench/compare_flex.py --lib .*/libattnjit.so.0.1.0 --decode --quick --decode-batch 1 --json .*/out/decode.json$' \
  "--only decode runs compare_flex.py --decode with --quick, --compare-args and its own JSON"
check "$out" '^== .*compare_flex.py .*--decode.*\(ATTNJIT_TUNE=<unset>, timeout (4[0-9][0-9]|500)s\)' \
  "alone, the decode stage gets the whole budget"
check "$out" '^decode +PASS checked: fake rows' "the summary has a decode line"
refute "$out" 'FAKE_TEST_GPU|FAKE_CLI|--scaling' "--only decode runs nothing else"
out=$(run_py --only compare,decode)
check "$out" '^FAKE_PYTHON .*compare_flex.py --lib \S+ --json .*/out/compare-flex.json$' "compare keeps its JSON"
check "$out" '^FAKE_PYTHON .*compare_flex.py --lib \S+ --decode$' \
  "beside compare, decode's rows go to compare-flex.txt only"
check "$out" '^== .*compare_flex.py .*--decode \(ATTNJIT_TUNE=<unset>, timeout 200s\)' \
  "beside another stage, decode has its own cap"
check "$out" '^compare_flex +PASS' "the summary has the compare line"
check "$out" '^decode +PASS' "and the decode line"

# The anatomy stage: profile_variant.py --decode under ncu, one step per --anatomy-args (three by
# default), with the carried library; its lines go to compare-flex.txt.
fake "$scratch/bin/ncu" FAKE_NCU
rm -rf "$scratch/out"
out=$(run_py --only anatomy)
check "$(grep -c '^FAKE_NCU ' <<< "$out")" '^3$' "by default, three decoding steps under ncu"
check "$out" '^FAKE_NCU ran with ATTNJIT_TUNE=<unset> args: -k regex:attnjit -s 2 -c 4 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum python3 \S+/tools/bench/profile_variant.py --decode causal 4K 128 2$' \
  "each kernel of two steps after the first, the causal step among them"
check "$out" '^== env ATTNJIT_LIB=\S+/libattnjit.so.0.1.0 ncu ' "with the carried library"
check "$out" '^anatomy +PASS 3 step\(s\)' "the summary has an anatomy line"
out=$(run_py --only decode,anatomy --anatomy-args 'noop 64K 64')
check "$(grep -c '^FAKE_NCU ' <<< "$out")" '^1$' "--anatomy-args replaces the default steps"
check "$out" '^FAKE_NCU .*profile_variant.py --decode noop 64K 64 2$' "with the step it names"
check "$out" '^== env ATTNJIT_LIB=\S+ ncu .*\(ATTNJIT_TUNE=<unset>, timeout 60s\)' \
  "beside another stage, a step has 60 s"
rm -f "$scratch/bin/ncu"

# The sweep stage: one sweep_schedules.py per --sweep-args set, in order, each with the watchdog
# and the run's cache; one set keeps its JSON, several put their rows in compare-flex.txt only.
rm -rf "$scratch/out"
out=$(run_py --only sweep --sweep-args '--head-dim 64 --variant causal' \
  --sweep-args '--variant alibi --schedule x=sm90:score_row_shift=0')
sweeps=$(grep -E '^FAKE_PYTHON .*sweep_schedules.py' <<< "$out")
check "$(grep -c . <<< "$sweeps")" '^2$' "two --sweep-args sets run two sweeps"
check "$(head -n1 <<< "$sweeps")" 'sweep_schedules.py --lib \S+ --watchdog-ms 5000 --cache-dir \S+ --head-dim 64 --variant causal$' \
  "the first set first, with the watchdog, the run's cache and no JSON"
check "$(tail -n1 <<< "$sweeps")" '--variant alibi --schedule x=sm90:score_row_shift=0$' \
  "then the second set"
check "$out" '^== .*sweep_schedules.py .*\(ATTNJIT_TUNE=<unset>, timeout 300s\)' \
  "several sweeps take 300 s each at most"
check "$out" '^sweep +PASS 2 sweep\(s\), 0 mismatches, 0 faults' "one summary line for both"
out=$(run_py --only sweep --sweep-args '--variant noop')
check "$out" '^FAKE_PYTHON .*sweep_schedules.py .*--variant noop --json .*/out/sweep.json$' \
  "a single sweep alone keeps its JSON"

# The builds stage: the libraries in BUILD_DIR/bisect in their order, then the carried one (never
# one of the others), each with its own profile_variant.py, kernel family and cache; twice over.
mkdir -p "$scratch/build/bisect/aaa1111/bench" "$scratch/build/bisect/bbb2222/bench"
: > "$scratch/build/bisect/aaa1111/libattnjit.so"
: > "$scratch/build/bisect/bbb2222/libattnjit.so"
printf 'bbb2222\naaa1111\n' > "$scratch/build/bisect/order"
rm -rf "$scratch/out"
out=$(run_py --only builds --builds-args 'noop document 16K 128 sm80')
builds_order=$(grep -oE '^== env ATTNJIT_LIB=\S+' <<< "$out" | sed 's|.*/build/||' | tr '\n' ' ')
check "$builds_order" '^bisect/bbb2222/libattnjit.so bisect/bbb2222/libattnjit.so bisect/aaa1111/libattnjit.so bisect/aaa1111/libattnjit.so libattnjit.so.0.1.0 libattnjit.so.0.1.0 bisect/bbb2222/' \
  "--only builds times each build in the order file's order, then the carried one, each variant"
check "$(grep -c '^== env ATTNJIT_LIB=' <<< "$out")" '^12$' "twice over: 3 builds x 2 variants x 2"
check "$out" '^== env ATTNJIT_LIB=\S+/bisect/bbb2222/libattnjit.so ATTNJIT_KERNEL_FAMILY=sm80 ATTNJIT_CACHE_DIR=\S+/builds-bbb2222 python3 \S+/bisect/bbb2222/bench/profile_variant.py noop 16K 128 20' \
  "an earlier build runs with its own bindings, the family and a cache of its own"
check "$out" '^== env ATTNJIT_LIB=\S+/build/libattnjit.so.0.1.0 .*python3 \S+/tools/bench/profile_variant.py document 16K 128 20' \
  "the carried build runs with this checkout's bindings"
check "$out" '^builds +PASS 12 timings' "the summary counts profile_variant.py's timings alone"
out=$(run_py --only decode,builds --builds-args 'noop document 16K 128 sm80')
check "$out" '^builds +PASS 12 timings' "beside decode, whose rows share the file, the count holds"
out=$(run_py --only builds --builds-args 'noop')
check "$out" "--builds-args needs 'VARIANT... LENGTH HEAD_DIM FAMILY', got 'noop'" \
  "a short --builds-args is refused"
rm -rf "$scratch/build/bisect"
rm -f "$scratch/build/libattnjit.so.0.1.0"
rm -rf "$scratch/out"

# A failing family's cases rerun under each --bisect switch (bisect_family): the summary names
# the switches under which they pass.
rm -rf "$scratch/out"
out=$(FAKE_FAIL_UNLESS=ATTNJIT_CARVEOUT=off run --only test)
check "$out" '^test_gpu\[sm90\] +FAIL' "the family run fails"
check "$out" '^FAKE_TEST_GPU ran with ATTNJIT_TUNE=sm90_watchdog_ms=5000 args: --input-file \S+/sm90.failed$' \
  "the failing cases run again from their list"
check "$out" '^case two\\, with a comma$' "the log shows the listed cases"
check "$out" '^bisect\[sm90\] +2 case\(s\); all pass with: ATTNJIT_CARVEOUT=off; some fail with: ATTNJIT_PDL=off ATTNJIT_SHORT_ROWS=off .*tune:sm90_handoff=0 ATTNJIT_KERNEL_FAMILY=sm80  \[' \
  "the summary names the switch that passes them and those that do not"
check "$(grep -c -- '^== .*--input-file' <<< "$out")" '^10$' "one rerun a switch, ten"
out=$(FAKE_FAIL_UNLESS=tune:score_row_shift=0 run --only test --families sm80)
check "$out" '^== env ATTNJIT_KERNEL_FAMILY=sm80 \S+/test_gpu --input-file \S+ \(ATTNJIT_TUNE=sm90_watchdog_ms=5000,score_row_shift=0,' \
  "a tune: switch joins ATTNJIT_TUNE"
check "$out" '^bisect\[sm80\] +2 case\(s\); all pass with: tune:score_row_shift=0; some fail with: .*tune:sm90_handoff=0  \[' \
  "the sm80 family is not rerun on the sm80 kernel"
out=$(FAKE_FAIL_UNLESS=ATTNJIT_CARVEOUT=off run --only test --bisect 'ATTNJIT_PDL=off tune:sm90_handoff=0')
check "$out" '^bisect\[sm90\] +2 case\(s\); all pass with: none; some fail with: ATTNJIT_PDL=off tune:sm90_handoff=0  \[' \
  "--bisect replaces the switches"
out=$(FAKE_FAIL_UNLESS=ATTNJIT_CARVEOUT=off run --only test --bisect '')
refute "$out" '^bisect|--input-file' "--bisect '' reruns nothing"
out=$(run --only test)
refute "$out" '^bisect|--input-file' "nothing failed: nothing rerun"
out=$(run --bisect 'ATTNJIT_PDL')
check "$out" "--bisect switch 'ATTNJIT_PDL' is neither NAME=VALUE nor tune:KEY=VALUE" "a bad switch is refused"
rm -rf "$scratch/out"

# Failure dumps. tarball_list: the members of OUTDIR/failures.tar.gz, one a line.
tarball_list() { tar -tzf "$scratch/out/failures.tar.gz" 2>/dev/null | LC_ALL=C sort | tr '\n' ' '; }
rm -rf "$scratch/out"
out=$(run)
check "$out" '^failure_dumps +none$' "no failing case: no dumps"
[[ -e "$scratch/out/failures.tar.gz" ]] && { echo "FAIL: a tarball without dumps"; failures=$((failures + 1)); }

out=$(FAKE_DUMPS=2 FAKE_DUMP_KB=10 run --families sm80,sm90)
check "$out" '^FAKE_TEST_GPU ran .*args: \[gpu\]~\[sm90_probe\]' "the family runs ran"
check "$out" '^failure_dumps +4 files, [0-9]+ KiB in failures.tar.gz$' "the summary counts the dumps"
check "$(tarball_list)" '^sm80/case-1.dump sm80/case-2.dump sm90/case-1.dump sm90/case-2.dump $' \
  "the tarball holds each family's dumps"
check "$(tar -xzOf "$scratch/out/failures.tar.gz" sm90/case-2.dump | wc -c)" '^10240$' \
  "a dump is packed whole"
check "$(ls "$scratch/out")" '^nvidia-smi.txt$' "nvidia-smi.txt stays when OUTDIR has room"

# Two files more in OUTDIR (as compare and sweep leave): the tarball would be the 9th file.
rm -rf "$scratch/out" && mkdir -p "$scratch/out" && touch "$scratch/out/extra1" "$scratch/out/extra2"
out=$(FAKE_DUMPS=1 run)
check "$(tarball_list)" '^nvidia-smi.txt sm90/case-1.dump $' "nvidia-smi.txt moves into the tarball"
check "$out" '^failure_dumps +1 files, .*nvidia-smi.txt inside' "the summary says so"
check "$(ls "$scratch/out" | wc -l)" '^8$' "OUTDIR keeps to 8 files"

# Three incompressible 10 KiB dumps under a 25000-byte limit: the first two fit.
rm -rf "$scratch/out"
out=$(FAKE_DUMPS=3 FAKE_DUMP_KB=10 GPU_CHECK_TARBALL_LIMIT=25000 run)
check "$(tarball_list)" '^sm90/case-1.dump sm90/case-2.dump $' "the largest prefix that fits"
check "$out" '^failure_dumps +2 files, .*only the first 2 of 3 fit GPU_CHECK_TARBALL_LIMIT \(25000 bytes\)' \
  "the summary says what was left out"
check "$(stat -c %s "$scratch/out/failures.tar.gz")" '^([0-9]{1,4}|1[0-9]{4}|2[0-4][0-9]{3})$' \
  "the tarball is within the limit"
out=$(FAKE_DUMPS=1 FAKE_DUMP_KB=10 GPU_CHECK_TARBALL_LIMIT=5000 run)
check "$out" '^failure_dumps +1 dumps, none packed: over GPU_CHECK_TARBALL_LIMIT' "nothing fits"
[[ -e "$scratch/out/failures.tar.gz" ]] && { echo "FAIL: a tarball over the limit"; failures=$((failures + 1)); }
out=$(GPU_CHECK_TARBALL_LIMIT=16M run)
check "$out" 'GPU_CHECK_TARBALL_LIMIT=16M is not a number of bytes' "a bad limit is refused"

if (( failures > 0 )); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "gpu-check: all checks passed"
