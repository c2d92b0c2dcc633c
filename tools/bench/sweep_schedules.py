#!/usr/bin/env python3
"""attnjit's kernel schedules against each other, in one process, on one GPU, on the same inputs.

For each variant and head dim, every schedule (a kernel family plus ATTNJIT_TUNE overrides, see
docs/TUNING.md) gets its own runtime and kernel cache, compiles the variant (the
compile time is reported), runs it once and is checked against the first schedule's output and
LSE (the sm80 kernel by default: verified on hardware), then timed. No FlexAttention and no
torch.compile, so a whole sweep fits one short GPU call; compare_flex.py puts the winner next to
FlexAttention. A row is printed (flushed) per schedule as soon as it is measured; --json is
rewritten after every row.

    python3 tools/bench/sweep_schedules.py --lib build/src/capi/libattnjit.so
        [--variant causal]... [--head-dim 128]... [--length 16K] [--dtype bf16|fp16]
        [--schedule NAME=FAMILY[:TUNE]]... [--schedule-env NAME:ATTNJIT_VAR=VALUE]...
        [--json F] [--iters 20] [--baseline sm90]
    python3 tools/bench/sweep_schedules.py --summarize sweep.json [--baseline sm90]
    python3 tools/bench/sweep_schedules.py --prewarm --cli build/tools/cli/attnjit
        --cache-dir DIR [--arch sm_90a] [--watchdog-ms 5000] [the sweep's own options]

--cache-dir DIR gives every schedule that one kernel cache (default: a fresh one each, so each
compiles its kernels). --prewarm compiles, without a GPU and without torch, the kernels a sweep
with the same options (schedules, variants, head dims, dtype, watchdog) will load, into DIR,
with `attnjit prewarm` once per schedule: tools/gpu-bundle.sh --sweep 'ARGS' does it for a
planned device call, so that the call spends its seconds timing rather than in NVRTC (about a
second a kernel). The cache key is the generated source, the arch and NVRTC's version, so a
kernel prewarmed for the sweep's schedule is the one the sweep's schedule loads; its "compile s"
is then the time to load it.

After the rows, a summary per head dim: each variant's fastest schedule that agreed with the
reference, and each schedule's geometric-mean speed over --baseline across the variants both ran
(the figure that picks a default). --summarize prints it again from a --json file, anywhere
(no GPU, no torch).

The default schedules: sm80; sm80 in 64-row blocks of 4 warps, two per SM; sm90; sm90 with
sm90_overlap=1; sm90 with sm90_persistent=1; sm90 with both; sm90 with 3 stages (D <= 128); sm90
with the overlap and FlashAttention-3's 176-key tiles (its choice at D=128 for masks without a
causal diagonal); sm90 with three consumer warpgroups (sm90_block_m=192, FlashAttention-3's
head-dim-64 tile; D = 64 only), without and with sm90_overlap=1, and with 64-key stages and the
overlap; P through shared memory (sm90_p_smem=1) with the overlap, with two and with three
consumer warpgroups, and with three without the overlap (the only block_m 192 schedule at
D=128); without the tile handoff (the masked default since the fifteenth session); 2 and 4 of
each 8 exponentials on the FMA pipe; the scale folded in 192-row blocks, alone and with 2 of 8
exponentials in software (the fold is the unmasked default since the fifteenth session, so
`fold192` differs from sm90 only where a score's special function turns it off); 64-key stages
without the overlap, and the same with two blocks per SM (D = 64 only), with 2 and with 4
stages; 64-row blocks of one consumer warpgroup, two per SM (D = 64 and 128), without and with
the tile handoff (tuned tiles take it only when asked). At D=256, FlashAttention-3's 80-key
tile: --head-dim 256 --schedule sm80=sm80 --schedule sm90=sm90
--schedule n80=sm90:sm90_block_n=80 (--schedule replaces the default list).
"""

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnjit_ctypes as aj  # noqa: E402
import compare_flex as cf  # noqa: E402  (variants, inputs, pair counts, timing)

DEFAULT_SCHEDULES = ("sm80=sm80", "sm80-m64x2=sm80:sm80_block_m=64,sm80_warps=4,sm80_blocks_per_sm=2",
                     "sm90=sm90", "overlap=sm90:sm90_overlap=1",
                     "persistent=sm90:sm90_persistent=1",
                     "overlap+persistent=sm90:sm90_overlap=1,sm90_persistent=1",
                     "stages3=sm90:sm90_stages=3",
                     "overlap-n176=sm90:sm90_block_n=176,sm90_overlap=1",
                     "m192=sm90:sm90_block_m=192",
                     "m192-overlap=sm90:sm90_block_m=192,sm90_overlap=1",
                     "m192-n64-overlap=sm90:sm90_block_m=192,sm90_block_n=64,sm90_overlap=1",
                     "psmem-overlap=sm90:sm90_p_smem=1,sm90_overlap=1",
                     "m192-psmem-overlap=sm90:sm90_block_m=192,sm90_p_smem=1,sm90_overlap=1",
                     "m192-psmem=sm90:sm90_block_m=192,sm90_p_smem=1",
                     "no-handoff=sm90:sm90_handoff=0",
                     "poly2=sm90:sm90_poly_exp2=2", "poly4=sm90:sm90_poly_exp2=4",
                     "fold192=sm90:sm90_fold_m192=1",
                     "fold192-poly2=sm90:sm90_fold_m192=1,sm90_poly_exp2=2",
                     "n64=sm90:sm90_block_n=64,sm90_overlap=0",
                     "2persm=sm90:sm90_blocks_per_sm=2",
                     "2persm-s4=sm90:sm90_blocks_per_sm=2,sm90_stages=4",
                     "m64x2=sm90:sm90_block_m=64,sm90_blocks_per_sm=2",
                     "m64x2-handoff=sm90:sm90_block_m=64,sm90_blocks_per_sm=2,sm90_handoff=1")


def parse_schedule(text):
    """NAME=FAMILY[:TUNE] -> (name, family, tune)."""
    name, sep, rest = text.partition("=")
    family, _, tune = rest.partition(":")
    if not sep or not name or family not in ("auto", "sm80", "sm90"):
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=auto|sm80|sm90[:TUNE]")
    return name, family, tune


def parse_schedule_env(text):
    """NAME:VAR=VALUE -> (name, var, value); VAR one of the library's ATTNJIT_* switches, which
    it reads when a variant is created (launch choices such as ATTNJIT_CARVEOUT or ATTNJIT_PDL):
    the same kernels as the schedule without it, launched otherwise."""
    name, sep, assignment = text.partition(":")
    var, eq, value = assignment.partition("=")
    if not sep or not name or not eq or not var.startswith("ATTNJIT_") or \
            var in ("ATTNJIT_KERNEL_FAMILY", "ATTNJIT_TUNE"):
        raise argparse.ArgumentTypeError(
            f"'{text}' is not NAME:ATTNJIT_VAR=VALUE (the family and tune belong in --schedule)")
    return name, var, value


def with_watchdog(schedule, watchdog_ms):
    """The schedule with sm90_watchdog_ms=watchdog_ms joined to its tune when it is an sm90
    schedule and watchdog_ms > 0 (the sm80 kernel has no mbarriers to watch)."""
    name, family, tune = schedule
    if family != "sm90" or watchdog_ms <= 0:
        return schedule
    return name, family, ",".join(filter(None, (tune, f"sm90_watchdog_ms={watchdog_ms}")))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", default=aj.default_library(), help="libattnjit.so to load")
    parser.add_argument("--variant", action="append",
                        help="a compare_flex.py variant (repeatable; default: the standard set)")
    parser.add_argument("--head-dim", action="append", type=int,
                        help="repeatable; default 64 and 128")
    parser.add_argument("--length", type=cf.parse_length, default=16384)
    parser.add_argument("--tokens", type=int, default=16 * 65536, help="B * H * L")
    parser.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    parser.add_argument("--schedule", action="append", type=parse_schedule,
                        help="NAME=FAMILY[:TUNE], repeatable; the first is the reference")
    parser.add_argument("--schedule-env", action="append", type=parse_schedule_env, default=[],
                        metavar="NAME:VAR=VALUE",
                        help="an ATTNJIT_* launch switch (e.g. ATTNJIT_CARVEOUT=off) set while "
                             "schedule NAME's variants are created; repeatable")
    parser.add_argument("--watchdog-ms", type=int, default=0,
                        help="the sm90 schedules' mbarrier watchdog (docs/KERNELS.md): a wait "
                             "longer than this faults the kernel, naming the wait, instead of "
                             "hanging the sweep (default 0: off)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--baseline", default="sm90",
                        help="the schedule the summary's speeds are relative to (default sm90)")
    parser.add_argument("--summarize", metavar="JSON",
                        help="print the summary of an earlier run's --json file and exit")
    parser.add_argument("--cache-dir",
                        help="one kernel cache for every schedule (default: a fresh one each)")
    parser.add_argument("--prewarm", action="store_true",
                        help="compile the sweep's kernels into --cache-dir with --cli, no GPU")
    parser.add_argument("--cli", help="--prewarm: the attnjit command-line tool")
    parser.add_argument("--arch", default="sm_90a", help="--prewarm: the arch (default sm_90a)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="--prewarm: parallel compiles (default: the cores)")
    opts = parser.parse_args(argv)
    if opts.prewarm and not (opts.cli and opts.cache_dir):
        parser.error("--prewarm needs --cli and --cache-dir")
    return opts


def chosen_schedules(opts):
    """The schedules to run, the reference first, each with the watchdog joined to its tune."""
    return [with_watchdog(s, opts.watchdog_ms)
            for s in opts.schedule or [parse_schedule(s) for s in DEFAULT_SCHEDULES]]


def manifest(specs, names, head_dims, dtype):
    """A prewarm manifest (src/jit/manifest.hpp) of the named variants, with the declarations
    their specs give the C API, so that prewarm generates the sources the sweep's variants do.
    Variants that share their expressions and declarations (the document layouts) go in once."""
    entries, seen = [], set()
    for name in names:
        spec = specs[name]
        params = [f"{p[0]}:{'int' if p[1] == aj.ATTNJIT_PARAM_INT else 'float'}"
                  for p in spec["params"]]
        tensors = [f"{t[0]}:{'int32' if t[1] == aj.ATTNJIT_TENSOR_INT32 else 'float32'}[{t[2]}]"
                   for t in spec["tensors"]]
        key = (spec["mask"], spec["score"], tuple(params), tuple(tensors))
        if key in seen:
            continue
        seen.add(key)
        entries.append(dict(name=name, mask=spec["mask"], score=spec["score"], params=params,
                            tensors=tensors))
    return dict(version=1, dtypes=[dtype], head_dims=list(head_dims), variants=entries)


def prewarm(opts, schedules, names):
    """Compiles each schedule's kernels with `attnjit prewarm` (ATTNJIT_KERNEL_FAMILY and
    ATTNJIT_TUNE set as run_schedule sets them). A schedule that refuses a head dim (e.g. two
    blocks per SM at 128) fails there as it would in the sweep, and the others go on. Returns
    the number of schedules whose prewarm crashed or could not run."""
    head_dims = opts.head_dim or [64, 128]
    with tempfile.TemporaryDirectory(prefix="attnjit-sweep-prewarm-") as folder:
        path = os.path.join(folder, "sweep-manifest.json")
        with open(path, "w") as f:
            json.dump(manifest(cf.variants(), names, head_dims, opts.dtype), f, indent=1)
        broken = 0
        for name, family, tune in schedules:
            env = dict(os.environ, ATTNJIT_KERNEL_FAMILY=family, ATTNJIT_TUNE=tune,
                       ATTNJIT_LOG_LEVEL=os.environ.get("ATTNJIT_LOG_LEVEL", "error"))
            command = [opts.cli, "prewarm", "--manifest", path, "--arch", opts.arch,
                       "--cache-dir", opts.cache_dir, "--jobs", str(opts.jobs)]
            started = time.perf_counter()
            try:
                done = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
            except OSError as error:
                print(f"{name:<22}cannot run {opts.cli}: {error}", flush=True)
                return len(schedules)
            lines = [line for line in done.stdout.splitlines() if line.strip()]
            # Note: the CLI's last line is its summary; a refusal names the kernel above it.
            failed = [line for line in lines if "FAILED" in line or "error" in line.lower()]
            print(f"{name:<22}{time.perf_counter() - started:6.1f} s  "
                  f"{lines[-1] if lines else '(no output)'}", flush=True)
            for line in failed[:3]:
                if line != lines[-1]:
                    print(f"{'':<22}  {line[:160]}", flush=True)
            if done.returncode < 0 or done.returncode > 1:
                broken += 1
        return broken


def summary_lines(rows, baseline):
    """The summary of sweep rows (dicts as written to --json): per head dim, each variant's
    fastest schedule among those that agreed with the reference, then each schedule's geometric
    mean of baseline ms / ms over the variants where both ran and agreed."""
    lines = []
    for head_dim in sorted({r["head_dim"] for r in rows}):
        good = [r for r in rows if r["head_dim"] == head_dim and r["ok"]]
        lines.append(f"D={head_dim}: fastest schedule per variant (x {baseline})")
        variants = list(dict.fromkeys(r["variant"] for r in good))
        base_ms = {r["variant"]: r["ms"] for r in good if r["schedule"] == baseline}
        for variant in variants:
            best = min((r for r in good if r["variant"] == variant), key=lambda r: r["ms"])
            speed = (f"{base_ms[variant] / best['ms']:.2f}" if variant in base_ms else "-")
            lines.append(f"  {variant:<16}{best['schedule']:<22}{best['tflops']:8.1f} TFLOP/s"
                         f"  x{speed}")
        lines.append(f"D={head_dim}: geometric mean over the variants, x {baseline}")
        schedules = list(dict.fromkeys(r["schedule"] for r in good))
        for schedule in schedules:
            ratios = [base_ms[r["variant"]] / r["ms"] for r in good
                      if r["schedule"] == schedule and r["variant"] in base_ms]
            if ratios:
                mean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
                lines.append(f"  {schedule:<22}x{mean:.3f} over {len(ratios)} variant(s)")
            else:
                lines.append(f"  {schedule:<22}- (no variant shared with {baseline})")
    return lines


class KernelFault(Exception):
    """A kernel faulted (a watchdog's expired wait among the causes): the CUDA context is lost,
    so nothing more can run in this process."""


def attnjit_account(jit, variant, prepared):
    """attnjit's own message for a fault torch reported: one more launch fails with the sticky
    error, and attnjit's error names the expired wait when the sm90 watchdog caused it."""
    try:
        jit.forward(variant, prepared)
    except aj.AttnJitError as error:
        return str(error)
    return None


def run_schedule(torch, opts, schedule, spec, inputs, head_dim):
    """(output, lse, compile seconds, median ms, kernel) of one schedule on `inputs`, the kernel
    as the call's launch plan names it ("sm90 short_rows"); raises aj.AttnJitError when the
    schedule cannot compile (e.g. its shared memory does not fit)."""
    name, family, tune = schedule
    q, k, v, tensors = inputs
    jit = aj.AttnJit(opts.lib, backend=aj.ATTNJIT_BACKEND_CUDA,
                     cache_dir=opts.cache_dir or tempfile.mkdtemp(prefix=f"attnjit-sweep-{name}-"))
    try:
        with contextlib.ExitStack() as switches:
            switches.enter_context(cf.environment("ATTNJIT_KERNEL_FAMILY", family))
            switches.enter_context(cf.environment("ATTNJIT_TUNE", tune))
            for schedule_name, var, value in opts.schedule_env:
                if schedule_name == name:
                    switches.enter_context(cf.environment(var, value))
            started = time.perf_counter()
            variant = jit.variant(spec, opts.attnjit_dtype, head_dim)
            compile_s = time.perf_counter() - started
        out = torch.full_like(q, float("nan"))
        lse = torch.full(q.shape[:3], float("nan"), device=q.device, dtype=torch.float32)
        prepared = jit.forward_args(q, k, v, out, spec["scalars"], tensors,
                                    torch.cuda.current_stream().cuda_stream, lse=lse)
        try:
            jit.forward(variant, prepared)
            torch.cuda.synchronize()
        except aj.AttnJitError:
            raise
        except RuntimeError as fault:  # torch's CUDA error: the context is unusable from now on
            raise KernelFault(attnjit_account(jit, variant, prepared) or str(fault)) from fault
        ms = cf.time_cuda(lambda: jit.forward(variant, prepared), opts.warmup, opts.iters)
        return out, lse, compile_s, ms, jit.plan_name(jit.launch_plan(variant, prepared))
    finally:
        jit.close()


def differences(out, lse, ref_out, ref_lse):
    """(max |out - ref|, max |lse - ref| over finite entries, same -inf rows)."""
    out_err = (out.float() - ref_out.float()).abs().max().item()
    finite = ref_lse.isfinite()
    lse_err = (lse[finite] - ref_lse[finite]).abs().max().item() if finite.any() else 0.0
    same_inf = bool(((lse == float("-inf")) == (ref_lse == float("-inf"))).all())
    return out_err, lse_err, same_inf


def main(argv=None):
    opts = parse_args(argv)
    if opts.summarize:
        with open(opts.summarize) as f:
            print("\n".join(summary_lines(json.load(f), opts.baseline)))
        return 0
    schedules = chosen_schedules(opts)
    stray = sorted({n for n, _, _ in opts.schedule_env} - {n for n, _, _ in schedules})
    if stray:
        sys.exit(f"--schedule-env names no schedule: {stray}")
    all_variants = cf.variants()
    names = opts.variant or list(cf.STANDARD_VARIANTS)
    unknown = [n for n in names if n not in all_variants]
    if unknown:
        sys.exit(f"unknown variant(s) {unknown}; known: {list(all_variants)}")
    if opts.prewarm:
        return 1 if prewarm(opts, schedules, names) else 0
    import torch
    opts.attnjit_dtype = (cf.ATTNJIT_DTYPE_BF16 if opts.dtype == "bf16"
                          else cf.ATTNJIT_DTYPE_FP16)
    props = torch.cuda.get_device_properties(0)
    watchdog = f" | sm90 watchdog {opts.watchdog_ms} ms" if opts.watchdog_ms > 0 else ""
    print(f"torch {torch.__version__} | {props.name} ({props.multi_processor_count} SMs) | "
          f"{opts.dtype} | L={opts.length} | reference schedule: {schedules[0][0]}{watchdog}",
          flush=True)
    print(f"{'variant':<16}{'D':>5}{'B':>4}{'H':>4}  {'schedule':<20}{'ms':>9}{'TFLOP/s':>9}"
          f"{'x ref':>7}{'compile s':>10}{'max err':>9}{'lse err':>9}  kernel", flush=True)
    rows = cf.JsonRows(opts.json)
    failures = 0
    dtype = torch.bfloat16 if opts.dtype == "bf16" else torch.float16
    lost_context = False
    for head_dim in opts.head_dim or [64, 128]:
        if lost_context:
            break
        heads = max(1, 2048 // head_dim)
        batch = max(1, opts.tokens // (heads * opts.length))
        gen = torch.Generator(device="cuda").manual_seed(opts.length + head_dim)
        shape = (batch, heads, opts.length, head_dim)
        q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, generator=gen)
                   for _ in range(3))
        for name in names:
            if lost_context:
                break
            spec = all_variants[name]
            documents, random_sizes = cf.DOCUMENT_LAYOUTS.get(name, cf.DOCUMENT_LAYOUTS["document"])
            doc = cf.document_ids(opts.length, "cuda", documents, random_sizes)
            inputs = (q, k, v, [doc] if spec["tensors"] else [])
            flops = 4.0 * batch * heads * head_dim * cf.unmasked_pairs(name, opts.length, doc)
            reference = None
            for schedule in schedules:
                prefix = f"{name:<16}{head_dim:>5}{batch:>4}{heads:>4}  {schedule[0]:<20}"
                try:
                    out, lse, compile_s, ms, kernel = run_schedule(torch, opts, schedule, spec,
                                                                   inputs, head_dim)
                except aj.AttnJitError as error:
                    print(f"{prefix}not run: {error}", flush=True)
                    continue
                except KernelFault as fault:
                    print(f"{prefix}FAULT: {fault}", flush=True)
                    print("the CUDA context is lost: the sweep stops here", flush=True)
                    failures += 1
                    lost_context = True
                    break
                if reference is None:
                    reference = (out, lse, ms)
                out_err, lse_err, same_inf = differences(out, lse, reference[0], reference[1])
                ok = math.isfinite(out_err) and out_err <= 3e-2 and lse_err <= 1e-2 and same_inf
                failures += not ok
                print(f"{prefix}{ms:9.3f}{flops / ms / 1e9:9.1f}{reference[2] / ms:7.2f}"
                      f"{compile_s:10.2f}{out_err:9.4f}{lse_err:9.4f}  {kernel}"
                      f"{'' if ok else '  MISMATCH'}", flush=True)
                rows.add(dict(variant=name, head_dim=head_dim, batch=batch, heads=heads,
                              length=opts.length, dtype=opts.dtype, schedule=schedule[0],
                              family=schedule[1], tune=schedule[2], ms=ms,
                              tflops=flops / ms / 1e9, compile_s=compile_s, max_err=out_err,
                              lse_err=lse_err, ok=ok, kernel=kernel))
                del out, lse
    print("\n".join(summary_lines(rows.rows, opts.baseline)), flush=True)
    if failures:
        print(f"{failures} schedule run(s) disagree with the reference", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
