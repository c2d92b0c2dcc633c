#!/usr/bin/env python3
"""Whether kernels that attnjit_variant_prepare compiles into a fresh cache are read back by a
later process without being refused (docs/PERFORMANCE.md, "Twenty-fifth session": on an H200 an
entry was stored with a report that lacked its forward entry, and every later process refused it
and compiled it again; "Twenty-sixth session": NVRTC had taken the cubin from the driver's
compute cache without running ptxas).

    python3 tools/bench/cache_reuse_check.py --lib .gpu-bundle/lib/libattnjit.so.0.1.0

Prepares each variant in a child process on a throwaway cache (so that the driver's compute
cache, where libcuda loads, holds its cubins, as it did on the H200 after an earlier program),
then on a fresh cache (the sm90 and sm80 kernels compile at once there on sm_90a), then again in
a third child on that cache, and reports every sidecar's entries and every warning of a refused
entry or of a report that lacks an entry. Exit status 1 when there is any. Needs a GPU (prepare
loads the kernels) or the fake device, and nothing else: no torch.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

VARIANTS = {
    "noop": "true",
    "causal": "q_idx >= kv_idx",
    "document": "doc[q_idx] == doc[kv_idx]",
}


def child(lib, cache_dir, mask, head_dim):
    """Runs in the child: prepare one variant (bf16) on `cache_dir`."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import attnjit_ctypes as aj
    # Note: also the environment's cache, where the fake device (tests/fake_driver) looks for
    # a loaded cubin's source; the runtime's own option decides where attnjit stores it.
    os.environ["ATTNJIT_CACHE_DIR"] = cache_dir
    tensors = [("doc", aj.ATTNJIT_TENSOR_INT32, 1)] if "doc[" in mask else []
    jit = aj.AttnJit(lib, cache_dir=cache_dir)
    try:
        jit.variant(dict(mask=mask, score="score", params=[], tensors=tensors),
                    aj.ATTNJIT_DTYPE_BF16, head_dim)
    finally:
        jit.close()


def check_variant(lib, cache, name, mask, head_dim):
    """Prepares the variant on a throwaway cache, then twice on `cache`, each time in a child
    process; prints every warning of a refused entry or a report without an entry, then the
    stored sidecars' entries. Returns the count of those warnings and failed children."""
    refused = 0
    for run in ("prime", "first", "second"):
        with tempfile.TemporaryDirectory(prefix="attnjit-prime-") as throwaway:
            result = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--lib", lib, "--child",
                 throwaway if run == "prime" else cache, mask, str(head_dim)],
                capture_output=True, text=True, timeout=300)
        warnings = [line for line in (result.stdout + result.stderr).splitlines()
                    if "refusing entry" in line or "does not describe" in line]
        if result.returncode != 0:
            print(f"{name} d{head_dim} {run}: failed ({result.returncode}): "
                  f"{result.stderr.strip()[-300:]}")
            refused += 1
        for line in warnings:
            print(f"{name} d{head_dim} {run}: {line.strip()}")
        refused += len(warnings)
    for sidecar in sorted(glob.glob(os.path.join(cache, "v1", "*", "*", "*.json"))):
        with open(sidecar) as f:
            stored = json.load(f)
        print(f"{name} d{head_dim}: {os.path.basename(sidecar)} "
              f"{stored.get('config', {}).get('family')} {sorted(stored.get('resources', {}))}")
    return refused


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", required=True, help="libattnjit.so to load")
    parser.add_argument("--head-dim", type=int, action="append",
                        help="head dims (repeatable; default 64 and 128)")
    parser.add_argument("--child", nargs=3, metavar=("CACHE", "MASK", "HEAD_DIM"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.lib, args.child[0], args.child[1], int(args.child[2]))
        return 0
    refused = 0
    for head_dim in args.head_dim or [64, 128]:
        for name, mask in VARIANTS.items():
            with tempfile.TemporaryDirectory(prefix="attnjit-reuse-") as cache:
                refused += check_variant(args.lib, cache, name, mask, head_dim)
    print(f"cache_reuse_check: {refused} refused or failed")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
