#!/usr/bin/env python3
"""attnjit against FlexAttention and SDPA, in one process, on one GPU.

Loads libattnjit.so through ctypes (the C API of include/attnjit/attnjit.h), runs each variant on
torch tensors (device pointers, the current torch stream), checks every attnjit output against
FlexAttention's and prints a row as soon as it is measured (flushed; --json is rewritten after
every row): median times (Flex with and without the LSE), TFLOP/s over unmasked pairs
(4 * B * H * D * pairs, the same count as `attnjit bench`), and Flex time / attnjit time (above 1:
attnjit is faster). Also reports what the block mask costs FlexAttention (warm create_block_mask
time and memory) next to attnjit's equivalent (nothing for index-only masks; per-call tensor
summaries otherwise).

    python3 tools/bench/compare_flex.py --lib build/src/capi/libattnjit.so [--quick] [--json F]
        [--variant NAME]... [--length 16K]... [--head-dim 128]... [--dtype bf16|fp16]
    python3 tools/bench/compare_flex.py --family sm90 --baseline-family sm80   # Hopper vs SM80
    python3 tools/bench/compare_flex.py --family sm90 --baseline-family sm90 \
        --tune sm90_persistent=1 --baseline-tune ''   # two sm90 tunings (ATTNJIT_TUNE) A/B
    python3 tools/bench/compare_flex.py --scaling      # sliding window, document: 4K/16K/64K
    python3 tools/bench/compare_flex.py --decode [--decode-q-len 1] [--decode-batch 8]
        [--decode-heads 32:8] [--split-kv N]...   # one decoding step: split-KV, Flex, SDPA
    python3 tools/bench/compare_flex.py --decode --plan   # its rows and byte counts, no torch
    python3 tools/bench/compare_flex.py --device cpu [--quick]   # no GPU: crosscheck_flex_cpu.py

--decode times one decoding step (q_len query rows over a kv_len cache, GQA) per variant (noop,
causal over the cache, sliding window 1024 over it), kv length (4K, 16K, 64K) and head dim:
attnjit as shipped and with its decoding switches off (ATTNJIT_DECODE_ENTRY, ATTNJIT_SPLIT_KV,
ATTNJIT_PACK_GQA),
FlexAttention and SDPA, each
checked against an fp32 torch reference; ms and GB/s (K and V of the kept keys, plus Q and O).
"""

import argparse
import contextlib
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnjit_ctypes as aj  # noqa: E402  (the C API, field for field; shared with the cross-check)
from attnjit_ctypes import (ATTNJIT_DTYPE_BF16, ATTNJIT_DTYPE_FP16,  # noqa: E402
                            ATTNJIT_PARAM_FLOAT, ATTNJIT_PARAM_INT, ATTNJIT_TENSOR_INT32)


# ---- Variants: attnjit expressions, FlexAttention mods and exact unmasked-pair counts ----

WINDOW = 1024
PREFIX = 1024
SOFTCAP = 30.0
# variant name -> (documents, random sizes)
DOCUMENT_LAYOUTS = {"document": (8, False), "document64": (64, False),
                    "document_random": (16, True)}
STANDARD_VARIANTS = ("noop", "causal", "sliding_window", "prefix_lm", "document", "alibi",
                     "softcap")
SCALING_VARIANTS = ("sliding_window", "document")
# Scores heavier than the standard ones, whose sm90 kernels spill heavily at the wide default
# tiles and are served with the base tiles (jit/variant_compiler.cpp); run only when named.
DECAY = 100.0
HEAVY_SCORE_VARIANTS = ("silu_score", "distance_decay")


def document_ids(length, device, documents, random_sizes, seed=0):
    """Sorted document ids of one sequence: `documents` equal documents, or as many documents of
    random sizes (a seeded split of [0, length) at documents - 1 distinct points)."""
    import torch
    if not random_sizes:
        return (torch.arange(length, device=device, dtype=torch.int64) * documents // length).to(
            torch.int32)
    gen = torch.Generator().manual_seed(seed + length)
    count = min(documents, length)
    cuts = torch.randperm(length - 1, generator=gen)[:count - 1] + 1
    ids = torch.zeros(length, dtype=torch.int32)
    ids[cuts] = 1
    return ids.cumsum(0).to(torch.int32).to(device)


def unmasked_pairs(name, length, doc_ids=None):
    """Exact kept (query, key) pairs of one head, q_len == kv_len == length, O(L)."""
    if name in ("noop", "alibi", "softcap") + HEAVY_SCORE_VARIANTS:
        return length * length
    if name == "causal":
        return length * (length + 1) // 2
    if name == "sliding_window":
        return sum(min(i + 1, WINDOW) for i in range(length))
    if name == "prefix_lm":
        return sum(max(i + 1, min(PREFIX, length)) for i in range(length))
    if name.startswith("document"):
        import torch
        sizes = torch.unique_consecutive(doc_ids.cpu(), return_counts=True)[1].to(torch.int64)
        return int((sizes * sizes).sum())
    raise ValueError(name)


def variants():
    """name -> attnjit spec, and a maker of (mask_mod, score_mod, sdpa_kwargs) for FlexAttention.
    Note: torch is imported only when a Flex mod is built, so that the attnjit specs serve
    without it (sweep_schedules.py --prewarm runs where no torch is installed)."""

    def alibi_mod(num_heads):
        import torch

        def mod(score, b, h, q, kv):
            slope = torch.exp2(-8.0 * (h + 1).to(torch.float32) / num_heads)
            return score + slope * (kv - q).to(torch.float32)
        return mod

    def softcap_mod(score, b, h, q, kv):
        import torch
        return SOFTCAP * torch.tanh(score / SOFTCAP)

    def silu_mod(score, b, h, q, kv):
        import torch
        return score / (1.0 + torch.exp(-score))

    def decay_mod(score, b, h, q, kv):
        import torch
        return score + torch.exp(-(q - kv).abs().to(torch.float32) / DECAY)

    return {
        "noop": dict(mask="", score="", params=[], tensors=[], scalars=[],
                     flex=lambda ctx: (None, None), sdpa=dict(is_causal=False)),
        "causal": dict(mask="q_idx >= kv_idx", score="", params=[], tensors=[], scalars=[],
                       flex=lambda ctx: (lambda b, h, q, kv: q >= kv, None),
                       sdpa=dict(is_causal=True)),
        "sliding_window": dict(
            mask="q_idx >= kv_idx && q_idx - kv_idx < W", score="",
            params=[("W", ATTNJIT_PARAM_INT, WINDOW)], tensors=[],
            scalars=[(ATTNJIT_PARAM_INT, WINDOW)],
            flex=lambda ctx: (lambda b, h, q, kv: (q >= kv) & (q - kv < WINDOW), None), sdpa=None),
        "prefix_lm": dict(
            mask="kv_idx < prefix || q_idx >= kv_idx", score="",
            params=[("prefix", ATTNJIT_PARAM_INT, PREFIX)], tensors=[],
            scalars=[(ATTNJIT_PARAM_INT, PREFIX)],
            flex=lambda ctx: (lambda b, h, q, kv: (kv < PREFIX) | (q >= kv), None), sdpa=None),
        # Three document layouts, one expression: 8 equal documents, 64 equal documents, and
        # 16 documents of random sizes (main() builds the ids from the name).
        **{name: dict(
            mask="doc[q_idx] == doc[kv_idx]", score="", params=[],
            tensors=[("doc", ATTNJIT_TENSOR_INT32, 1)], scalars=[],
            flex=lambda ctx: (lambda b, h, q, kv: ctx["doc"][q] == ctx["doc"][kv], None),
            sdpa=None) for name in DOCUMENT_LAYOUTS},
        "alibi": dict(
            mask="", score="score + exp2(-8.0 * float(h + 1) / float(num_heads)) * "
                            "float(kv_idx - q_idx)", params=[], tensors=[], scalars=[],
            flex=lambda ctx: (None, alibi_mod(ctx["heads"])), sdpa=None),
        "softcap": dict(
            mask="", score="cap * tanh(score / cap)",
            params=[("cap", ATTNJIT_PARAM_FLOAT, SOFTCAP)], tensors=[],
            scalars=[(ATTNJIT_PARAM_FLOAT, SOFTCAP)],
            flex=lambda ctx: (None, softcap_mod), sdpa=None),
        "silu_score": dict(
            mask="", score="score / (1 + exp(-score))", params=[], tensors=[], scalars=[],
            flex=lambda ctx: (None, silu_mod), sdpa=None),
        "distance_decay": dict(
            mask="", score="score + exp(-abs(q_idx - kv_idx) / tau)",
            params=[("tau", ATTNJIT_PARAM_FLOAT, DECAY)], tensors=[],
            scalars=[(ATTNJIT_PARAM_FLOAT, DECAY)],
            flex=lambda ctx: (None, decay_mod), sdpa=None),
    }


# ---- Timing ----

def time_cuda(fn, warmup, iters, sleep_cycles=0):
    """Median milliseconds of fn() on the current stream, by CUDA events. sleep_cycles > 0: the
    GPU first spins that many cycles (torch.cuda._sleep) while the host queues the events and
    fn's launches, so a call shorter than its host work is timed as GPU time alone."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    sleep = getattr(torch.cuda, "_sleep", None) if sleep_cycles > 0 else None
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        if sleep is not None:
            sleep(sleep_cycles)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def fastest_sdpa(q, k, v, kwargs, warmup, iters):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    best = None
    for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION,
                    SDPBackend.EFFICIENT_ATTENTION):
        try:
            with sdpa_kernel([backend]):
                ms = time_cuda(lambda: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, **kwargs), warmup, iters)
        except RuntimeError:
            continue
        if best is None or ms < best[0]:
            best = (ms, backend.name.lower())
    return best


def raise_dynamo_limits(torch):
    """One compiled flex_attention (and create_block_mask) serves every variant, length and head
    dim here: dozens of recompiles of one code object. Past dynamo's default limit (8) it would
    silently fall back to the eager path, which materialises the L x L scores."""
    for knob in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, max(getattr(torch._dynamo.config, knob), 4096))


def build_block_mask(torch, builders, mask_mod, length, device, kv_length=None):
    """(block_mask, ms, bytes) of a warm build: compiled create_block_mask (the eager one
    materialises an L x L mask and its int64 index intermediates: tens of GiB at 64K), timed on
    its second call, so compile time is not counted. Falls back to the eager builder if the
    compiled one fails. kv_length: the keys' length when it is not `length` (decoding)."""
    kv_length = length if kv_length is None else kv_length
    for builder in builders:
        try:
            builder(mask_mod, None, None, length, kv_length, device=device)  # warm-up / compile
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            t0 = time.perf_counter()
            block_mask = builder(mask_mod, None, None, length, kv_length, device=device)
            torch.cuda.synchronize()
            return (block_mask, (time.perf_counter() - t0) * 1e3,
                    torch.cuda.memory_allocated() - before)
        except Exception as e:  # noqa: BLE001 -- report and try the next builder
            if builder is builders[-1]:
                raise
            print(f"compare_flex: compiled create_block_mask failed ({type(e).__name__}: {e}); "
                  f"using the eager one", file=sys.stderr)
    raise AssertionError("unreachable")


def parse_length(text):
    """"16384", "16K", "64k" -> tokens."""
    scale = 1024 if text[-1:] in ("k", "K") else 1
    value = int(text[:-1] if scale > 1 else text) * scale
    if value <= 0:
        raise argparse.ArgumentTypeError(f"length must be positive, got {text!r}")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=aj.default_library(),
                        help="path to libattnjit.so (default: build/src/capi/libattnjit.so)")
    parser.add_argument("--baseline-lib",
                        help="a second libattnjit.so (e.g. the previous build) timed in the same "
                             "process on the same inputs: the 'base ms' column, for before/after")
    parser.add_argument("--family", choices=("auto", "sm80", "sm90"),
                        help="ATTNJIT_KERNEL_FAMILY while --lib's variants are compiled (default: "
                             "the environment's); sm90 forces the Hopper kernel on sm_90a")
    parser.add_argument("--baseline-family", choices=("auto", "sm80", "sm90"),
                        help="the 'base ms' column from --lib itself (or --baseline-lib) with this "
                             "kernel family, e.g. --family sm90 --baseline-family sm80: the Hopper "
                             "kernel against the SM80 one on the same inputs")
    parser.add_argument("--tune",
                        help="ATTNJIT_TUNE while --lib's variants are compiled (default: the "
                             "environment's), e.g. sm90_persistent=1")
    parser.add_argument("--baseline-tune",
                        help="the 'base ms' column with this ATTNJIT_TUNE ('' for the defaults), "
                             "e.g. --tune sm90_persistent=1 --baseline-tune '': the persistent "
                             "sm90 kernel against the default one on the same inputs")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: no timings; runs crosscheck_flex_cpu.py (attnjit's CPU "
                             "backend against Flex on the CPU) with --quick/--variant/--json")
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--json", help="also write the rows to this file (rewritten after "
                                       "every row, so a killed run keeps what it measured)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--variant", action="append",
                        help="only these variants (repeatable; default: the seven standard "
                             "ones; also document64 and document_random)")
    parser.add_argument("--length", action="append", type=parse_length,
                        help="sequence lengths, e.g. 16K (repeatable; default 16K; --decode: "
                             "the cache's, default 4K, 16K and 64K)")
    parser.add_argument("--head-dim", action="append", type=int,
                        help="head dims (repeatable; default 64 and 128)")
    parser.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    parser.add_argument("--tokens", type=int, default=16 * 65536,
                        help="B * H * L per call (default 1M: B=4 H=16 at D=128, L=16K)")
    parser.add_argument("--scaling", action="store_true",
                        help="time linear in L? sliding window and document at L = 4K, 16K, 64K "
                             "with B * L = 64K tokens and H = 16 (D default 128)")
    decode = parser.add_argument_group(
        "decoding (--decode)",
        "one decoding step: --decode-q-len query rows over a cache of --length keys (default "
        "4K, 16K, 64K; --head-dim default 64 and 128), variants noop, causal (over the cache: "
        "kv_idx <= q_idx + P, P = kv_len - q_len) and sliding_window (1024 over the cache); rows "
        "attnjit (as shipped), attnjit 128-row (ATTNJIT_DECODE_ENTRY=off: the forward entry's "
        "128-row blocks), attnjit unsplit (ATTNJIT_SPLIT_KV=off), attnjit unpacked "
        "(ATTNJIT_PACK_GQA=off), attnjit before (all three off), flex, sdpa (noop and "
        "causal); ms and GB/s")
    decode.add_argument("--decode", action="store_true", help="time decoding steps")
    decode.add_argument("--decode-q-len", type=int,
                        help="query rows per step (default 1; at most the shortest --length)")
    decode.add_argument("--decode-batch", action="append", type=int,
                        help="sequences per step (repeatable; default 8; --quick: 2). With 32 "
                             "query heads, B = 8 fills the GPU unsplit: --decode-batch 1 is where "
                             "the heuristic splits")
    decode.add_argument("--decode-heads", type=parse_heads,
                        help="query:key/value heads, Q a multiple of KV (default 32:8; --quick: "
                             "8:2)")
    decode.add_argument("--split-kv", action="append", type=parse_split,
                        help="also an 'attnjit split=N' row with ATTNJIT_SPLIT_KV=N (repeatable)")
    decode.add_argument("--decode-tune", action="append", metavar="SPEC",
                        help="also an 'attnjit tune=SPEC' row, the variant created with "
                             "ATTNJIT_TUNE=SPEC (repeatable; e.g. decode_stages=3: the decoding "
                             "entry's tiles, and with them its residency and the split)")
    decode.add_argument("--paged", action="append", type=int, metavar="PAGE_SIZE",
                        help="also an 'attnjit paged=N' row: the same keys and values in a paged "
                             "cache of pages of N rows (any count), shuffled in their pools "
                             "(repeatable; e.g. 16, vLLM's default, and 128, a key tile)")
    decode.add_argument("--decode-rows", action="append", metavar="LABEL",
                        help="measure only the rows of this label, its spaces written as '-' "
                             "(repeatable; e.g. attnjit, attnjit-no-PDL, sdpa): a short A/B "
                             "without Flex's compile")
    decode.add_argument("--plan", action="store_true",
                        help="print the rows --decode would measure (shapes, kept keys, bytes) "
                             "and exit: needs neither torch nor a GPU")
    args = parser.parse_args(argv)
    decode_only = [flag for flag, value in (
        ("--decode-q-len", args.decode_q_len), ("--decode-batch", args.decode_batch),
        ("--decode-heads", args.decode_heads), ("--split-kv", args.split_kv),
        ("--decode-tune", args.decode_tune), ("--paged", args.paged),
        ("--decode-rows", args.decode_rows), ("--plan", args.plan or None)) if value is not None]
    if not args.decode and decode_only:
        parser.error(f"{', '.join(decode_only)}: only with --decode")
    if args.decode:
        if args.scaling:
            parser.error("--decode and --scaling are separate modes; pick one")
        if args.device == "cpu":
            parser.error("--decode times the GPU; --device cpu is the CPU cross-check")
        if args.decode_q_len is not None and args.decode_q_len < 1:
            parser.error(f"--decode-q-len must be at least 1, got {args.decode_q_len}")
        if any(b < 1 for b in args.decode_batch or []):
            parser.error(f"--decode-batch must be at least 1, got {args.decode_batch}")
        q_len = args.decode_q_len or 1
        short = [n for n in args.length or [] if n < q_len]
        if short:
            parser.error(f"--length {short} is shorter than --decode-q-len {q_len}: a decoding "
                         f"step reads a cache at least as long as its queries")
    return parser, args


def parse_heads(text):
    """"32:8" -> (32, 8) query and key/value heads; "16" -> (16, 16)."""
    try:
        parts = [int(x) for x in text.split(":")]
    except ValueError:
        parts = []
    if len(parts) == 1:
        parts *= 2
    if len(parts) != 2 or min(parts) < 1 or parts[0] % parts[1] != 0:
        raise argparse.ArgumentTypeError(
            f"expected Q:KV heads with Q a multiple of KV (e.g. 32:8), got {text!r}")
    return tuple(parts)


def parse_split(text):
    """ATTNJIT_SPLIT_KV slice count for an extra row: a positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a slice count of at least 1, got {text!r}")
    return value


class JsonRows:
    """The rows measured so far, rewritten whole after each one: valid JSON at every moment."""

    def __init__(self, path):
        self.path, self.rows = path, []

    def add(self, row):
        self.rows.append(row)
        if self.path:
            with open(self.path + ".tmp", "w") as f:
                json.dump(self.rows, f, indent=1)
            os.replace(self.path + ".tmp", self.path)


HEADER = (f"{'variant':<16}{'L':>7}{'D':>5}{'B':>4}{'H':>4} {'attnjit ms':>11}{'base ms':>9}"
          f"{'flex ms':>10}"
          f"{'no-lse ms':>10}{'sdpa ms':>10} {'jit TF/s':>9}{'flex TF/s':>10}{'flex/jit':>9}"
          f"{'max err':>10}{'lse err':>10} {'mask ms':>9}{'mask MiB':>9}{'row s':>7}  kernel")


def format_row(r):
    if "error" in r:
        return f"{r['variant']:<16}{r['L']:>7}{r['D']:>5}  ERROR: {r['error']}"
    sdpa = f"{r['sdpa_ms']:.3f}" if r["sdpa_ms"] is not None else "-"
    base = f"{r['base_ms']:.3f}" if r.get("base_ms") is not None else "-"
    return (f"{r['variant']:<16}{r['L']:>7}{r['D']:>5}{r['B']:>4}{r['H']:>4} "
            f"{r['attnjit_ms']:>11.3f}{base:>9}{r['flex_ms']:>10.3f}{r['flex_nolse_ms']:>10.3f}{sdpa:>10} "
            f"{r['attnjit_tflops']:>9.1f}{r['flex_tflops']:>10.1f}{r['flex_over_jit']:>9.2f}"
            f"{r['max_err']:>10.2e}{r['lse_max_err']:>10.2e}{'' if r['ok'] else '!'} "
            f"{r['block_mask_ms']:>9.1f}{r['block_mask_bytes'] / 2**20:>9.2f}{r['row_s']:>7.1f}"
            f"  {r.get('kernel') or '-'}")


def check_lse(name, length, head_dim, lse, flex_lse):
    """(ok, max error) of attnjit's natural-log LSE against Flex's, converting Flex's should this
    torch return log2."""
    lse_ref = flex_lse.float()
    tol = lambda ref: 5e-3 + 1e-4 * ref.abs()  # noqa: E731
    if bool(((lse - lse_ref).abs() <= tol(lse_ref)).all()):
        return True, (lse - lse_ref).abs().max().item()
    ln_ref = lse_ref * math.log(2.0)
    if bool(((lse - ln_ref).abs() <= tol(ln_ref)).all()):
        print(f"compare_flex: {name} L={length} D={head_dim}: Flex's LSE is in log2 units in "
              f"this torch; attnjit's (ln) matches it converted", file=sys.stderr)
        return True, (lse - ln_ref).abs().max().item()
    return False, (lse - lse_ref).abs().max().item()


@contextlib.contextmanager
def environment(name, value):
    """Environment variable `name` set to `value` inside (None: left as it is). The library reads
    ATTNJIT_KERNEL_FAMILY and ATTNJIT_TUNE when a variant's kernel is chosen, so the setting
    applies to the variants prepared inside."""
    if value is None:
        yield
        return
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            del os.environ[name]
        else:
            os.environ[name] = saved


def measure(torch, env, name, spec, q, k, v, ctx, opts):
    """One row: Flex (with and without the LSE), attnjit checked against Flex, SDPA if it has
    the variant. Both attnjit and Flex write the LSE in the checked and the main timed calls."""
    batch, heads, length, head_dim = q.shape
    t0 = time.perf_counter()

    def progress(step):
        # Note: a row's first torch.compile can take minutes on a fresh machine (over 200 s on
        # an H100 on 2026-11-26), so a run cut short still says which step it was in.
        print(f"compare_flex: {name} L={length} D={head_dim}: {step} "
              f"({time.perf_counter() - t0:.1f} s into the row)", file=sys.stderr, flush=True)

    mask_mod, score_mod = spec["flex"](ctx)
    block_mask, mask_ms, mask_bytes = None, 0.0, 0
    if mask_mod is not None:
        progress("building Flex's block mask (compiled create_block_mask)")
        block_mask, mask_ms, mask_bytes = build_block_mask(
            torch, env["mask_builders"], mask_mod, length, q.device)

    def run_flex(want_lse=True):
        return env["flex_with_lse"](env["flex"], q, k, v, score_mod, block_mask, None, False,
                                    want_lse=want_lse)

    progress("compiling and running Flex")
    flex_out, flex_lse = run_flex()
    progress("timing Flex")
    flex_ms = time_cuda(run_flex, opts.warmup, opts.iters)
    flex_nolse_ms = time_cuda(lambda: run_flex(False), opts.warmup, opts.iters)

    def run_attnjit(jit, family, tune):
        """(ok, max err, mean err, lse err, median ms, kernel) of one libattnjit against Flex;
        kernel: the launch plan's name for the call (AttnJit.plan_name)."""
        # The family and tuning are chosen when the variant is prepared.
        with environment("ATTNJIT_KERNEL_FAMILY", family), environment("ATTNJIT_TUNE", tune):
            variant = jit.variant(spec, env["dtype"], head_dim)
        out = torch.full_like(q, float("nan"))
        lse = torch.full((batch, heads, length), float("nan"), device=q.device,
                         dtype=torch.float32)
        tensors = [ctx["doc"]] if spec["tensors"] else []
        prepared = jit.forward_args(q, k, v, out, spec["scalars"], tensors,
                                    torch.cuda.current_stream().cuda_stream, lse=lse)
        jit.forward(variant, prepared)
        torch.cuda.synchronize()
        err = (out.float() - flex_out.float()).abs()
        max_err, mean_err = err.max().item(), err.mean().item()
        lse_ok, lse_err = check_lse(name, length, head_dim, lse, flex_lse)
        ok = math.isfinite(max_err) and max_err <= 3e-2 and mean_err <= 2e-3 and lse_ok
        ms = time_cuda(lambda: jit.forward(variant, prepared), opts.warmup, opts.iters)
        return ok, max_err, mean_err, lse_err, ms, jit.plan_name(jit.launch_plan(variant, prepared))

    progress("attnjit")
    ok, max_err, mean_err, lse_err, jit_ms, kernel = run_attnjit(env["jit"], opts.family,
                                                                 opts.tune)
    base_ms, base_kernel = None, None
    if env.get("base") is not None:
        base_ok, _, _, _, base_ms, base_kernel = run_attnjit(env["base"], opts.baseline_family,
                                                             opts.baseline_tune)
        ok = ok and base_ok

    sdpa = None
    if spec["sdpa"] is not None:
        sdpa = fastest_sdpa(q, k, v, spec["sdpa"], opts.warmup, opts.iters)

    flops = 4.0 * batch * heads * head_dim * unmasked_pairs(name, length, ctx["doc"])
    return dict(
        variant=name, L=length, D=head_dim, B=batch, H=heads, dtype=opts.dtype,
        attnjit_ms=jit_ms, base_ms=base_ms, flex_ms=flex_ms, flex_nolse_ms=flex_nolse_ms,
        sdpa_ms=sdpa[0] if sdpa else None, sdpa_backend=sdpa[1] if sdpa else None,
        attnjit_tflops=flops / jit_ms / 1e9, flex_tflops=flops / flex_ms / 1e9,
        flex_over_jit=flex_ms / jit_ms, max_err=max_err, mean_err=mean_err,
        lse_max_err=lse_err, ok=ok, block_mask_ms=mask_ms, block_mask_bytes=mask_bytes,
        attnjit_mask_note=("summaries per call, O(L/block) ints" if spec["tensors"]
                           else "none (index-only)"),
        kernel=kernel, base_kernel=base_kernel, row_s=time.perf_counter() - t0)


def shapes(opts):
    """(batch, heads, length, head_dim) in measuring order."""
    if opts.quick:
        return [(2, 4, 1024, 64)]
    if opts.scaling:
        lengths = opts.length or [4096, 16384, 65536]
        return [(max(1, 65536 // length), 16, length, d)
                for d in (opts.head_dim or [128]) for length in lengths]
    result = []
    for d in opts.head_dim or [64, 128]:
        heads = max(1, 2048 // d)  # H=32 at D=64, 16 at D=128, 8 at D=256
        for length in opts.length or [16384]:
            result.append((max(1, opts.tokens // (heads * length)), heads, length, d))
    return result


# ---- Decoding (--decode): one step of q_len query rows over a cache of kv_len keys ----

DECODE_VARIANTS = ("noop", "causal", "sliding_window")
DECODE_SDPA_VARIANTS = ("noop", "causal")
DECODE_LENGTHS = (4096, 16384, 65536)
# The timed calls rotate through copies of the inputs until one round reads at least twice the
# L2 (the device's size where torch reports it; the H100's for --plan), so that K and V come from
# HBM as in a real step, within a memory limit and a count.
ASSUMED_L2_BYTES = 50 * 2**20
DECODE_SETS_LIMIT_BYTES = 16 * 2**30
DECODE_MOST_SETS = 64
# About 1 ms at H100 clocks: the GPU spins while the host queues one timed call (time_cuda's
# sleep_cycles), so a step of tens of microseconds is timed as GPU time, not host overhead.
HOST_AHEAD_CYCLES = 2_000_000


def decode_variants():
    """name -> attnjit spec, `scalars(P)` and `flex(P)` (the Flex mask_mod, None: no mask) of one
    decoding step, P = kv_len - q_len: query row q sits at position q + P of the cache."""
    causal = "kv_idx <= q_idx + P"
    offset = [("P", ATTNJIT_PARAM_INT, 0)]
    return {
        "noop": dict(mask="", score="", params=[], tensors=[], scalars=lambda p: [],
                     flex=lambda p: None),
        "causal": dict(mask=causal, score="", params=offset, tensors=[],
                       scalars=lambda p: [(ATTNJIT_PARAM_INT, p)],
                       flex=lambda p: (lambda b, h, q, kv: q + p >= kv)),
        "sliding_window": dict(
            mask=f"{causal} && q_idx + P - kv_idx < {WINDOW}", score="", params=offset,
            tensors=[], scalars=lambda p: [(ATTNJIT_PARAM_INT, p)],
            flex=lambda p: (lambda b, h, q, kv: (q + p >= kv) & (q + p - kv < WINDOW))),
    }


def decode_intervals(name, q_len, kv_len):
    """Each query row's kept keys in one decoding step: (first, last), inclusive, or None."""
    offset = kv_len - q_len
    rows = []
    for q in range(q_len):
        last = kv_len - 1 if name == "noop" else min(kv_len - 1, q + offset)
        first = max(0, q + offset - WINDOW + 1) if name == "sliding_window" else 0
        rows.append((first, last) if first <= last else None)
    return rows


def decode_kept(name, q_len, kv_len):
    """(keys, pairs) of one head: the keys at least one query row keeps (what K and V reads must
    cover) and the kept (query, key) pairs."""
    intervals = sorted(r for r in decode_intervals(name, q_len, kv_len) if r is not None)
    pairs = sum(last - first + 1 for first, last in intervals)
    keys, end = 0, -1
    for first, last in intervals:
        if last > end:
            keys += last - max(first, end + 1) + 1
            end = last
    return keys, pairs


def decode_bytes(name, batch, heads_q, heads_kv, q_len, kv_len, head_dim, element):
    """The least bytes one step moves: K and V of the kept keys, once per key/value head (the
    query heads of a GQA group share them), plus Q read and O written. The LSE is left out."""
    keys, _ = decode_kept(name, q_len, kv_len)
    return (2 * batch * heads_kv * keys + 2 * batch * heads_q * q_len) * head_dim * element


def decode_input_sets(read_bytes, set_bytes, l2_bytes):
    """How many copies of (q, k, v) the timed calls rotate through: enough that a round reads at
    least twice the L2 (`read_bytes` per call), within DECODE_SETS_LIMIT_BYTES and
    DECODE_MOST_SETS."""
    wanted = -(-2 * l2_bytes // max(1, read_bytes))
    return max(1, min(wanted, DECODE_MOST_SETS, DECODE_SETS_LIMIT_BYTES // max(1, set_bytes)))


def decode_shapes(opts):
    """(batch, heads_q, heads_kv, q_len, kv_len, head_dim) of --decode, in measuring order."""
    batches = opts.decode_batch or [2 if opts.quick else 8]
    heads_q, heads_kv = opts.decode_heads or ((8, 2) if opts.quick else (32, 8))
    lengths = opts.length or ([4096] if opts.quick else list(DECODE_LENGTHS))
    return [(batch, heads_q, heads_kv, opts.decode_q_len or 1, length, d)
            for d in opts.head_dim or ([64] if opts.quick else [64, 128])
            for length in lengths for batch in batches]


# The decoding switches the library reads when a variant is created, ATTNJIT_PDL (the
# programmatic launch of the split-KV merge, sm_90) and ATTNJIT_CARVEOUT (one shared-memory
# carveout for all of a call's kernels).
DECODE_SWITCHES = ("ATTNJIT_DECODE_ENTRY", "ATTNJIT_SPLIT_KV", "ATTNJIT_PACK_GQA", "ATTNJIT_PDL",
                   "ATTNJIT_CARVEOUT")
# A row's own ATTNJIT_TUNE (--decode-tune), in place of --tune, in its switches under this key.
TUNE_ROW = "ATTNJIT_TUNE"
# A row's page size (--paged), in its switches under this key: its keys and values in a paged cache.
PAGE_ROW = "page_size"
NEITHER = {name: "off" for name in DECODE_SWITCHES
           if name not in ("ATTNJIT_PDL", "ATTNJIT_CARVEOUT")}


def decode_impls(name, opts, baseline):
    """The rows of one decoding configuration, in measuring order: (label, what, switches) with
    `what` one of jit (--lib), base (the baseline), flex, sdpa, and `switches` the decoding
    switches set for the row (the others unset: the library's choice). `attnjit` is the library
    as shipped; `128-row` runs it on the forward entry's 128-row blocks instead of the decoding
    entry's 32-row ones, `unsplit` turns split-KV off, `unpacked` packed GQA, `before` all three
    (the kernel before the decoding work), `no PDL` launches the split-KV merge only once the
    forward kernel has ended (ATTNJIT_PDL=off), `mixed carveouts` lets the merge and the
    summaries state no shared-memory carveout where the decoding entry asks for the most
    (ATTNJIT_CARVEOUT=off, the rule before 2026-11-27). --decode-rows keeps only the rows it
    names."""
    impls = [("attnjit", "jit", {}),
             ("attnjit no PDL", "jit", {"ATTNJIT_PDL": "off"}),
             ("attnjit mixed carveouts", "jit", {"ATTNJIT_CARVEOUT": "off"}),
             ("attnjit 128-row", "jit", {"ATTNJIT_DECODE_ENTRY": "off"}),
             ("attnjit unsplit", "jit", {"ATTNJIT_SPLIT_KV": "off"}),
             ("attnjit unpacked", "jit", {"ATTNJIT_PACK_GQA": "off"}),
             ("attnjit before", "jit", NEITHER)]
    impls += [(f"attnjit split={n}", "jit", {"ATTNJIT_SPLIT_KV": str(n)})
              for n in opts.split_kv or []]
    impls += [(f"attnjit tune={spec}", "jit", {TUNE_ROW: spec}) for spec in opts.decode_tune or []]
    impls += [(f"attnjit paged={n}", "jit", {PAGE_ROW: n}) for n in opts.paged or []]
    if baseline:
        impls += [("base", "base", {}), ("base before", "base", NEITHER)]
    impls.append(("flex", "flex", {}))
    if name in DECODE_SDPA_VARIANTS:
        impls.append(("sdpa", "sdpa", {}))
    if opts.decode_rows:
        impls = [impl for impl in impls if impl[0].replace(" ", "-") in opts.decode_rows]
    return impls


@contextlib.contextmanager
def decode_switches(values):
    """The decoding switches as `values` says inside (unset where it says nothing: the library's
    choice), whatever they are outside. A row's tuning (TUNE_ROW) is not one of them: it is read
    when the variant is created (attnjit_row)."""
    saved = {name: os.environ.pop(name, None) for name in DECODE_SWITCHES}
    os.environ.update({name: value for name, value in values.items() if name in DECODE_SWITCHES})
    try:
        yield
    finally:
        for name in DECODE_SWITCHES:
            os.environ.pop(name, None)
            if saved[name] is not None:
                os.environ[name] = saved[name]


def paged_cache(torch, k, v, page_size, seed):
    """(k_pool, v_pool, table) holding k and v ([B, Hkv, L, D]) in pages of `page_size` rows,
    [pages, Hkv, page_size, D], in a shuffled order (as a serving program's pools hold them after
    a while); the last page of a sequence padded with zeros."""
    batch, heads, kv_len, head_dim = k.shape
    per_seq = -(-kv_len // page_size)
    pad = per_seq * page_size - kv_len

    def pages_of(t):
        t = torch.nn.functional.pad(t, (0, 0, 0, pad))
        return (t.view(batch, heads, per_seq, page_size, head_dim).permute(0, 2, 1, 3, 4)
                .reshape(batch * per_seq, heads, page_size, head_dim))

    generator = torch.Generator(device="cpu").manual_seed(seed)
    order = torch.randperm(batch * per_seq, generator=generator)  # pool slot -> page
    where = torch.empty_like(order)
    where[order] = torch.arange(batch * per_seq)  # page -> pool slot
    k_pool = pages_of(k)[order.to(k.device)].contiguous()
    v_pool = pages_of(v)[order.to(k.device)].contiguous()
    table = where.view(batch, per_seq).to(torch.int32).to(k.device).contiguous()
    return k_pool, v_pool, table


def decode_keep(torch, name, q_len, kv_len, device):
    """The step's mask as a bool [q_len, kv_len] tensor (True: kept), None for noop."""
    if name == "noop":
        return None
    q = torch.arange(q_len, device=device)[:, None] + (kv_len - q_len)
    kv = torch.arange(kv_len, device=device)[None, :]
    keep = kv <= q
    if name == "sliding_window":
        keep &= q - kv < WINDOW
    return keep


def decode_reference(torch, q, k, v, keep):
    """(out, natural-log LSE) in fp32: the query heads of each GQA group as rows of one matmul
    against their key/value head."""
    batch, heads_q, q_len, head_dim = q.shape
    heads_kv, kv_len = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    scores = torch.matmul(q.float().reshape(batch, heads_kv, group * q_len, head_dim),
                          k.float().transpose(-1, -2)) * head_dim ** -0.5
    scores = scores.view(batch, heads_kv, group, q_len, kv_len)
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.exp(scores - lse[..., None]).view(batch, heads_kv, group * q_len, kv_len)
    out = torch.matmul(probs, v.float()).view(batch, heads_q, q_len, head_dim)
    return out, lse.view(batch, heads_q, q_len)


def measure_decode(torch, env, name, spec, sets, opts, emit):
    """The rows of one decoding configuration, each handed to emit() as soon as it is measured
    (decode_impls: attnjit with its decoding switches, the baseline's, Flex, SDPA). Every output,
    and LSE where there is one, is checked against decode_reference with compare_flex's
    tolerances; the timed calls rotate through `sets`, (q, k, v) of one shape."""
    q0, k0, v0 = sets[0]
    batch, heads_q, q_len, head_dim = q0.shape
    heads_kv, kv_len = k0.shape[1], k0.shape[2]
    offset = kv_len - q_len
    keys, pairs = decode_kept(name, q_len, kv_len)
    nbytes = decode_bytes(name, batch, heads_q, heads_kv, q_len, kv_len, head_dim,
                          q0.element_size())
    keep = decode_keep(torch, name, q_len, kv_len, q0.device)
    ref_out, ref_lse = decode_reference(torch, q0, k0, v0, keep)
    common = dict(mode="decode", variant=name, L=kv_len, q_len=q_len, D=head_dim, B=batch,
                  Hq=heads_q, Hkv=heads_kv, dtype=opts.dtype, kept_keys=keys, kept_pairs=pairs,
                  bytes=nbytes, input_sets=len(sets))
    turn = itertools.count()

    def timed(call):
        """Median ms of call(i), i cycling through the input sets, GPU time (host queued ahead)."""
        return time_cuda(lambda: call(next(turn) % len(sets)), opts.warmup, opts.iters,
                         sleep_cycles=HOST_AHEAD_CYCLES)

    def check(out, lse, flex_lse=False):
        torch.cuda.synchronize()
        err = (out.float() - ref_out).abs()
        max_err, mean_err = err.max().item(), err.mean().item()
        ok = math.isfinite(max_err) and max_err <= 3e-2 and mean_err <= 2e-3
        lse_err = None
        if lse is not None and flex_lse:  # Flex's may be in log2 units: check_lse converts
            lse_ok, lse_err = check_lse(name, kv_len, head_dim, ref_lse, lse)
            ok = ok and lse_ok
        elif lse is not None:
            diff = (lse - ref_lse).abs()
            lse_err = diff.max().item()
            ok = ok and bool((diff <= 5e-3 + 1e-4 * ref_lse.abs()).all())
        return dict(ok=ok, max_err=max_err, mean_err=mean_err, lse_max_err=lse_err)

    out = torch.empty_like(q0)
    lse = torch.empty((batch, heads_q, q_len), device=q0.device, dtype=torch.float32)
    stream = torch.cuda.current_stream().cuda_stream
    prepared_by_jit = {}

    def attnjit_row(which, switches):
        jit = env[which]
        key = (which, tuple(sorted(switches.items())))
        if key not in prepared_by_jit:
            family, tune = ((opts.family, opts.tune) if which == "jit"
                            else (opts.baseline_family, opts.baseline_tune))
            tune = switches.get(TUNE_ROW, tune)
            # The family, the tuning and the decoding switches are read when the variant is
            # created (older libraries read the switches per call: they are set for both).
            with environment("ATTNJIT_KERNEL_FAMILY", family), environment("ATTNJIT_TUNE", tune), \
                    decode_switches(switches):
                variant = jit.variant(spec, env["dtype"], head_dim)
            page_size = switches.get(PAGE_ROW)
            if page_size is None:
                calls = [jit.forward_args(q, k, v, out, spec["scalars"](offset), [], stream,
                                          lse=lse) for q, k, v in sets]
            else:
                calls = []
                for i, (q, k, v) in enumerate(sets):
                    k_pool, v_pool, table = paged_cache(torch, k, v, page_size, seed=i)
                    calls.append(jit.forward_args(q, k_pool, v_pool, out,
                                                  spec["scalars"](offset), [], stream, lse=lse,
                                                  pages=(table, kv_len)))
            prepared_by_jit[key] = (variant, calls)
        variant, prepared = prepared_by_jit[key]
        with decode_switches(switches):
            out.fill_(float("nan"))
            lse.fill_(float("nan"))
            jit.forward(variant, prepared[0])
            checked = check(out, lse)
            ms = timed(lambda i: jit.forward(variant, prepared[i]))
        # The note names the kernel the call ran (its entry, packing and slices).
        return ms, checked, jit.plan_name(jit.launch_plan(variant, prepared[0]))

    def flex_row():
        mask_mod = spec["flex"](offset)
        block_mask, mask_ms = None, None
        if mask_mod is not None:
            block_mask, mask_ms, _ = build_block_mask(torch, env["mask_builders"], mask_mod,
                                                      q_len, q0.device, kv_length=kv_len)

        def run(q, k, v):
            return env["flex_with_lse"](env["flex"], q, k, v, None, block_mask, None, True)

        flex_out, flex_lse = run(q0, k0, v0)
        checked = check(flex_out, flex_lse, flex_lse=True)
        ms = timed(lambda i: run(*sets[i]))
        return ms, checked, None if mask_ms is None else f"block mask {mask_ms:.2f} ms"

    def sdpa_row():
        from torch.nn.attention import SDPBackend, sdpa_kernel
        sdpa = torch.nn.functional.scaled_dot_product_attention
        kwargs = dict(enable_gqa=True)
        # Note: is_causal is top-left aligned; the cache needs bottom-right, so a mask, and only
        # where it drops something (one query over the cache keeps every key).
        if keep is not None and not bool(keep.all()):
            kwargs["attn_mask"] = keep
        best, refused = None, []
        for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION,
                        SDPBackend.EFFICIENT_ATTENTION):
            try:
                with sdpa_kernel([backend]):
                    result = sdpa(q0, k0, v0, **kwargs)
                    ms = timed(lambda i: sdpa(*sets[i], **kwargs))
            except RuntimeError:
                refused.append(backend.name.lower())
                continue
            if best is None or ms < best[0]:
                best = (ms, backend.name.lower(), result)
        if best is None:
            return None, dict(ok=True), f"not run: no fused backend takes it ({', '.join(refused)})"
        mask_note = " + bool mask" if "attn_mask" in kwargs else ""
        return best[0], check(best[2], None), best[1] + mask_note

    split_ms = None
    for label, what, switches in decode_impls(name, opts, env.get("base") is not None):
        t0 = time.perf_counter()
        row = dict(common, impl=label)
        try:
            if what == "flex":
                ms, checked, note = flex_row()
            elif what == "sdpa":
                ms, checked, note = sdpa_row()
            else:
                ms, checked, note = attnjit_row(what, switches)
            row.update(checked, ms=ms, gbps=nbytes / ms / 1e6 if ms else None, note=note)
        except Exception as e:  # noqa: BLE001 -- one failing row must not lose the others
            row.update(ok=False, error=f"{type(e).__name__}: {e}")
        if label == "attnjit" and row.get("ms"):
            split_ms = row["ms"]
        row["x_split"] = row["ms"] / split_ms if split_ms and row.get("ms") else None
        row["row_s"] = time.perf_counter() - t0
        emit(row)


DECODE_HEADER = (f"{'variant':<16}{'L':>7}{'q':>6}{'D':>5}{'B':>4}{'H':>7}  {'impl':<18}"
                 f"{'ms':>9}{'GB/s':>8}{'x/jit':>8}{'max err':>10}{'lse err':>10}{'row s':>7}"
                 f"  note")


def format_decode_row(r):
    """x/jit: this row's time over the `attnjit` row's (above 1: attnjit as shipped is
    faster)."""
    head = (f"{r['variant']:<16}{r['L']:>7}{r['q_len']:>6}{r['D']:>5}{r['B']:>4}"
            f"{str(r['Hq']) + ':' + str(r['Hkv']):>7}  {r['impl']:<18}")
    if "error" in r:
        return f"{head}ERROR: {r['error']}"
    if r.get("ms") is None:
        return f"{head}{'-':>9}{'':>43}{r.get('row_s', 0.0):>7.1f}  {r.get('note') or ''}".rstrip()
    ratio = f"{r['x_split']:.2f}" if r.get("x_split") is not None else "-"
    lse = f"{r['lse_max_err']:.2e}" if r.get("lse_max_err") is not None else "-"
    return (f"{head}{r['ms']:>9.4f}{r['gbps']:>8.0f}{ratio:>8}{r['max_err']:>10.2e}{lse:>10}"
            f"{'' if r['ok'] else '!'}{r['row_s']:>7.1f}  {r.get('note') or ''}").rstrip()


def plan_decode(opts, variant_names):
    """--decode --plan: the configurations and rows a run would measure, without torch."""
    element = 2  # bf16 and fp16
    print(f"{'variant':<16}{'L':>7}{'q':>6}{'D':>5}{'B':>4}{'H':>7}{'kept keys':>11}"
          f"{'pairs/head':>12}{'MB/step':>10}{'sets':>6}  rows")
    baseline = bool(opts.baseline_lib or opts.baseline_family or opts.baseline_tune is not None)
    for batch, heads_q, heads_kv, q_len, kv_len, d in decode_shapes(opts):
        set_bytes = (heads_q * q_len + 2 * heads_kv * kv_len) * batch * d * element
        read = min(decode_bytes(n, batch, heads_q, heads_kv, q_len, kv_len, d, element)
                   for n in variant_names)
        sets = decode_input_sets(read, set_bytes, ASSUMED_L2_BYTES)
        for name in variant_names:
            keys, pairs = decode_kept(name, q_len, kv_len)
            nbytes = decode_bytes(name, batch, heads_q, heads_kv, q_len, kv_len, d, element)
            rows = ", ".join(label for label, _, _ in decode_impls(name, opts, baseline))
            print(f"{name:<16}{kv_len:>7}{q_len:>6}{d:>5}{batch:>4}"
                  f"{str(heads_q) + ':' + str(heads_kv):>7}{keys:>11}{pairs:>12}"
                  f"{nbytes / 1e6:>10.1f}{sets:>6}  {rows}")
    return 0


def run_decode(torch, env, opts, selected, emit, device, dtype, l2_bytes):
    """--decode: every configuration's rows through emit()."""
    all_specs = decode_variants()
    for batch, heads_q, heads_kv, q_len, kv_len, head_dim in decode_shapes(opts):
        element = torch.finfo(dtype).bits // 8
        set_bytes = (heads_q * q_len + 2 * heads_kv * kv_len) * batch * head_dim * element
        read = min(decode_bytes(n, batch, heads_q, heads_kv, q_len, kv_len, head_dim, element)
                   for n in selected)
        gen = torch.Generator(device=device).manual_seed(kv_len + head_dim + q_len)
        sets = [tuple(torch.randn(shape, device=device, dtype=dtype, generator=gen)
                      for shape in ((batch, heads_q, q_len, head_dim),
                                    (batch, heads_kv, kv_len, head_dim),
                                    (batch, heads_kv, kv_len, head_dim)))
                for _ in range(decode_input_sets(read, set_bytes, l2_bytes))]
        for name in selected:
            measure_decode(torch, env, name, all_specs[name], sets, opts, emit)
        del sets
        torch.cuda.empty_cache()


def main(argv=None):
    parser, args = parse_args(argv)
    if args.device == "cpu":
        import crosscheck_flex_cpu
        forwarded = ["--lib", args.lib] + (["--quick"] if args.quick else [])
        for name in args.variant or []:
            forwarded += ["--variant", name]
        if args.json:
            forwarded += ["--json", args.json]
        return crosscheck_flex_cpu.main(forwarded)
    if args.decode:
        selected = args.variant or list(DECODE_VARIANTS)
        unknown = [n for n in selected if n not in DECODE_VARIANTS]
        if unknown:
            parser.error(f"unknown decoding variant(s) {unknown}; known: {list(DECODE_VARIANTS)}")
        if args.plan:
            return plan_decode(args, selected)

    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    from crosscheck_flex_cpu import flex_with_lse

    if not torch.cuda.is_available():
        print("compare_flex: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    device = "cuda"
    all_variants = variants()
    if not args.decode:
        default = SCALING_VARIANTS if args.scaling else STANDARD_VARIANTS
        selected = args.variant or list(default)
        unknown = [n for n in selected if n not in all_variants]
        if unknown:
            parser.error(f"unknown variant(s) {unknown}; known: {list(all_variants)}")
    if args.quick:
        args.iters, args.warmup = 5, 2
    props = torch.cuda.get_device_properties(0)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    env = dict(jit=aj.AttnJit(args.lib, backend=aj.ATTNJIT_BACKEND_CUDA),
               dtype=ATTNJIT_DTYPE_BF16 if args.dtype == "bf16" else ATTNJIT_DTYPE_FP16,
               flex_with_lse=flex_with_lse, flex=None, mask_builders=None,
               # Note: a cache of its own, so that the two builds never share an entry.
               base=(aj.AttnJit(args.baseline_lib or args.lib, backend=aj.ATTNJIT_BACKEND_CUDA,
                                cache_dir=tempfile.mkdtemp(prefix="attnjit-baseline-"))
                     if args.baseline_lib or args.baseline_family or args.baseline_tune is not None
                     else None))
    print(f"attnjit {env['jit'].version()} | torch {torch.__version__} | "
          f"{props.name} ({props.multi_processor_count} SMs) | {args.dtype}", flush=True)
    raise_dynamo_limits(torch)
    env["flex"] = torch.compile(flex_attention, dynamic=False)
    env["mask_builders"] = (torch.compile(create_block_mask), create_block_mask)

    rows = JsonRows(args.json)
    failures = 0
    if args.decode:
        l2_bytes = getattr(props, "L2_cache_size", 0) or ASSUMED_L2_BYTES
        print(f"decode: GB/s = (K and V of the kept keys once per key/value head + Q + O) / time; "
              f"GPU time (the host queues ahead), inputs rotated past 2x the {l2_bytes >> 20} MiB "
              f"L2; checked against an fp32 reference", flush=True)
        print(DECODE_HEADER, flush=True)

        def emit(row):
            nonlocal failures
            failures += 0 if row["ok"] else 1
            rows.add(row)
            print(format_decode_row(row), flush=True)

        run_decode(torch, env, args, selected, emit, device, dtype, l2_bytes)
    else:
        print(HEADER, flush=True)
        for batch, heads, length, head_dim in shapes(args):
            shape = (batch, heads, length, head_dim)
            gen = torch.Generator(device=device).manual_seed(length + head_dim)
            q, k, v = (torch.randn(shape, device=device, dtype=dtype, generator=gen)
                       for _ in range(3))
            for name in selected:
                documents, random_sizes = DOCUMENT_LAYOUTS.get(name, DOCUMENT_LAYOUTS["document"])
                ctx = {"doc": document_ids(length, device, documents, random_sizes),
                       "heads": heads}
                try:
                    row = measure(torch, env, name, all_variants[name], q, k, v, ctx, args)
                except Exception as e:  # noqa: BLE001 -- one failing row must not lose the others
                    row = dict(variant=name, L=length, D=head_dim, B=batch, H=heads, ok=False,
                               error=f"{type(e).__name__}: {e}")
                failures += 0 if row["ok"] else 1
                rows.add(row)
                print(format_row(row), flush=True)
                torch.cuda.empty_cache()
            del q, k, v
    env["jit"].close()
    if env["base"] is not None:
        env["base"].close()
    measured = len(rows.rows)
    reference = "the fp32 reference" if args.decode else "FlexAttention"
    if failures:
        print(f"mismatch: {failures} of {measured} rows failed or differ from {reference} "
              f"beyond tolerance (out: max abs 3e-2, mean abs 2e-3; LSE: 5e-3 + 1e-4 |lse|)")
        return 1
    what = "rows' outputs (and LSEs)" if args.decode else "attnjit outputs and LSEs"
    print(f"checked: all {measured} {what} match {reference} within {args.dtype} tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
