#!/usr/bin/env python3
"""sweep_schedules.py --prewarm compiles the kernels the sweep loads: after a prewarm into a
cache, each schedule's variants are prepared through the C API on the fake device (as
run_schedule prepares them on a GPU) with that cache, and the cubins in the cache are counted
before and after. Prewarmed schedules must add none; a schedule left out of the prewarm must add
one per variant and head dim, which shows the count can fail.

    sweep_prewarm_check.py LIBATTNJIT CLI 'PREWARMED SWEEP ARGS' 'LEFT-OUT SWEEP ARGS'

The cache is a fresh temporary folder.
Run with ATTNJIT_CUDA_DRIVER naming the fake driver and ATTNJIT_FAKE_CUDA_SM=90."""

import glob
import os
import shlex
import subprocess
import sys
import tempfile

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench")
sys.path.insert(0, BENCH)
import attnjit_ctypes as aj  # noqa: E402
import compare_flex as cf  # noqa: E402
import sweep_schedules as ss  # noqa: E402


def cubins(cache):
    return set(glob.glob(os.path.join(cache, "**", "*.cubin"), recursive=True))


def prepare_all(lib, cache, opts):
    """Prepares every (schedule, head dim, variant) of opts as the sweep does; returns the
    cubins this added to the cache."""
    specs = cf.variants()
    before = cubins(cache)
    for name, family, tune in ss.chosen_schedules(opts):
        # Note: prepare loads the kernels, and the fake driver finds a cubin's source (hence its
        # parameter block) in the cache ATTNJIT_CACHE_DIR names.
        with cf.environment("ATTNJIT_KERNEL_FAMILY", family), cf.environment("ATTNJIT_TUNE", tune), \
                cf.environment("ATTNJIT_CACHE_DIR", cache):
            jit = aj.AttnJit(lib, cache_dir=cache)
            try:
                for head_dim in opts.head_dim:
                    for variant in opts.variant:
                        jit.variant(specs[variant], aj.ATTNJIT_DTYPE_BF16, head_dim)
            finally:
                jit.close()
    return cubins(cache) - before


def check(lib, cli, cache, prewarmed, left_out):
    done = subprocess.run([sys.executable, "-B", os.path.join(BENCH, "sweep_schedules.py"),
                           "--prewarm", "--cli", cli, "--cache-dir", cache, *prewarmed])
    if done.returncode != 0:
        print(f"FAIL: the prewarm exited with {done.returncode}")
        return 1
    failures = 0
    added = prepare_all(lib, cache, ss.parse_args(prewarmed))
    if added:
        print(f"FAIL: the sweep's schedules compiled {len(added)} kernel(s) the prewarm did not:")
        print("\n".join(sorted(added)))
        failures += 1
    else:
        print(f"ok: {len(cubins(cache))} cubins; every schedule's variants load from the cache")
    if not prepare_all(lib, cache, ss.parse_args(left_out)):
        print(f"FAIL: a sweep the prewarm left out ({' '.join(left_out)}) compiled nothing")
        failures += 1
    else:
        print(f"ok: a sweep the prewarm left out ({' '.join(left_out)}) compiled its kernels")
    return 1 if failures else 0


def main():
    lib, cli, prewarmed, left_out = sys.argv[1:5]
    with tempfile.TemporaryDirectory(prefix="attnjit-sweep-prewarm-check-") as cache:
        return check(lib, cli, cache, shlex.split(prewarmed), shlex.split(left_out))


if __name__ == "__main__":
    sys.exit(main())
