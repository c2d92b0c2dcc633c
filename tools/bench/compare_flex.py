#!/usr/bin/env python3
"""attnjit against FlexAttention and SDPA, in one process, on one GPU.

Loads libattnjit.so through ctypes (the C API of include/attnjit/attnjit.h), runs each variant on
torch tensors (device pointers, the current torch stream), checks every attnjit output against
FlexAttention's and prints one table: median times, TFLOP/s over unmasked pairs
(4 * B * H * D * pairs, the same count as `attnjit bench`), and the attnjit/Flex time ratio.
Also reports what the block mask costs FlexAttention (create_block_mask time and memory) next to
attnjit's equivalent (nothing for index-only masks; per-call tensor summaries otherwise).

    python3 tools/bench/compare_flex.py --lib build/src/capi/libattnjit.so [--quick] [--json F]
    python3 tools/bench/compare_flex.py --device cpu [--quick]   # no GPU: crosscheck_flex_cpu.py
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnjit_ctypes as aj  # noqa: E402  (the C API, field for field; shared with the cross-check)
from attnjit_ctypes import (ATTNJIT_DTYPE_BF16, ATTNJIT_PARAM_FLOAT,  # noqa: E402
                            ATTNJIT_PARAM_INT, ATTNJIT_TENSOR_INT32)


# ---- Variants: attnjit expressions, FlexAttention mods and exact unmasked-pair counts ----

WINDOW = 1024
PREFIX = 1024
SOFTCAP = 30.0
DOCUMENTS = 8


def document_ids(length, device):
    import torch
    return (torch.arange(length, device=device, dtype=torch.int64) * DOCUMENTS // length).to(
        torch.int32)


def unmasked_pairs(name, length):
    """Exact kept (query, key) pairs of one head, q_len == kv_len == length, O(L)."""
    if name in ("noop", "alibi", "softcap"):
        return length * length
    if name == "causal":
        return length * (length + 1) // 2
    if name == "sliding_window":
        return sum(min(i + 1, WINDOW) for i in range(length))
    if name == "prefix_lm":
        return sum(max(i + 1, min(PREFIX, length)) for i in range(length))
    if name == "document":
        sizes = [0] * DOCUMENTS
        for i in range(length):
            sizes[i * DOCUMENTS // length] += 1
        return sum(s * s for s in sizes)
    raise ValueError(name)


def variants():
    """name -> attnjit spec, and a maker of (mask_mod, score_mod, sdpa_kwargs) for FlexAttention."""
    import torch

    def alibi_mod(num_heads):
        def mod(score, b, h, q, kv):
            slope = torch.exp2(-8.0 * (h + 1).to(torch.float32) / num_heads)
            return score + slope * (kv - q).to(torch.float32)
        return mod

    def softcap_mod(score, b, h, q, kv):
        return SOFTCAP * torch.tanh(score / SOFTCAP)

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
        "document": dict(
            mask="doc[q_idx] == doc[kv_idx]", score="", params=[],
            tensors=[("doc", ATTNJIT_TENSOR_INT32, 1)], scalars=[],
            flex=lambda ctx: (lambda b, h, q, kv: ctx["doc"][q] == ctx["doc"][kv], None),
            sdpa=None),
        "alibi": dict(
            mask="", score="score + exp2(-8.0 * float(h + 1) / float(num_heads)) * "
                            "float(kv_idx - q_idx)", params=[], tensors=[], scalars=[],
            flex=lambda ctx: (None, alibi_mod(ctx["heads"])), sdpa=None),
        "softcap": dict(
            mask="", score="cap * tanh(score / cap)",
            params=[("cap", ATTNJIT_PARAM_FLOAT, SOFTCAP)], tensors=[],
            scalars=[(ATTNJIT_PARAM_FLOAT, SOFTCAP)],
            flex=lambda ctx: (None, softcap_mod), sdpa=None),
    }


# ---- Timing ----

def time_cuda(fn, warmup, iters):
    """Median milliseconds of fn() on the current stream, by CUDA events."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
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


def build_block_mask(torch, builders, mask_mod, length, device):
    """(block_mask, ms, bytes) of a warm build: compiled create_block_mask (the eager one
    materialises an L x L mask and its int64 index intermediates: tens of GiB at 64K), timed on
    its second call, so compile time is not counted. Falls back to the eager builder if the
    compiled one fails."""
    for builder in builders:
        try:
            builder(mask_mod, None, None, length, length, device=device)  # warm-up / compile
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            t0 = time.perf_counter()
            block_mask = builder(mask_mod, None, None, length, length, device=device)
            torch.cuda.synchronize()
            return (block_mask, (time.perf_counter() - t0) * 1e3,
                    torch.cuda.memory_allocated() - before)
        except Exception as e:  # noqa: BLE001 -- report and try the next builder
            if builder is builders[-1]:
                raise
            print(f"compare_flex: compiled create_block_mask failed ({type(e).__name__}: {e}); "
                  f"using the eager one", file=sys.stderr)
    raise AssertionError("unreachable")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=aj.default_library(),
                        help="path to libattnjit.so (default: build/src/capi/libattnjit.so)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: no timings; runs crosscheck_flex_cpu.py (attnjit's CPU "
                             "backend against Flex on the CPU) with --quick/--variant/--json")
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--variant", action="append", help="only these variants")
    args = parser.parse_args(argv)

    if args.device == "cpu":
        import crosscheck_flex_cpu
        forwarded = ["--lib", args.lib] + (["--quick"] if args.quick else [])
        for name in args.variant or []:
            forwarded += ["--variant", name]
        if args.json:
            forwarded += ["--json", args.json]
        return crosscheck_flex_cpu.main(forwarded)

    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    from crosscheck_flex_cpu import flex_with_lse

    if not torch.cuda.is_available():
        print("compare_flex: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    device = "cuda"
    all_variants = variants()
    selected = args.variant or list(all_variants)
    unknown = [n for n in selected if n not in all_variants]
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; known: {list(all_variants)}")
    props = torch.cuda.get_device_properties(0)
    jit = aj.AttnJit(args.lib, backend=aj.ATTNJIT_BACKEND_CUDA)
    print(f"attnjit {jit.version()} | torch {torch.__version__} | "
          f"{props.name} ({props.multi_processor_count} SMs)")
    raise_dynamo_limits(torch)
    flex = torch.compile(flex_attention, dynamic=False)
    mask_builders = (torch.compile(create_block_mask), create_block_mask)
    lengths = [1024] if args.quick else [4096, 16384, 65536]
    head_dims = [64] if args.quick else [64, 128]
    iters = 5 if args.quick else args.iters
    warmup = 2 if args.quick else args.warmup
    # B * H * L = 16 * 64K tokens fills an H100 at every length.
    tokens = 2 * 4096 if args.quick else 16 * 65536

    rows, failures = [], 0
    for head_dim in head_dims:
        heads = 2048 // head_dim if not args.quick else 4
        for length in lengths:
            batch = max(1, tokens // (heads * length))
            shape = (batch, heads, length, head_dim)
            gen = torch.Generator(device=device).manual_seed(length + head_dim)
            q, k, v = (torch.randn(shape, device=device, dtype=torch.bfloat16, generator=gen)
                       for _ in range(3))
            ctx = {"doc": document_ids(length, device), "heads": heads}
            for name in selected:
                spec = all_variants[name]
                mask_mod, score_mod = spec["flex"](ctx)

                block_mask, mask_ms, mask_bytes = None, 0.0, 0
                if mask_mod is not None:
                    block_mask, mask_ms, mask_bytes = build_block_mask(
                        torch, mask_builders, mask_mod, length, device)

                # Both sides write the LSE (B * H * L floats) in the checked and timed calls.
                def run_flex(score_mod=score_mod, block_mask=block_mask):
                    return flex_with_lse(flex, q, k, v, score_mod, block_mask, None, False)

                flex_out, flex_lse = run_flex()
                flex_ms = time_cuda(run_flex, warmup, iters)

                variant = jit.variant(spec, ATTNJIT_DTYPE_BF16, head_dim)
                out = torch.full_like(q, float("nan"))
                lse = torch.full(shape[:3], float("nan"), device=device, dtype=torch.float32)
                tensors = [ctx["doc"]] if spec["tensors"] else []
                prepared = jit.forward_args(q, k, v, out, spec["scalars"], tensors,
                                            torch.cuda.current_stream().cuda_stream, lse=lse)
                jit.forward(variant, prepared)
                torch.cuda.synchronize()
                err = (out.float() - flex_out.float()).abs()
                max_err = err.max().item()
                mean_err = err.mean().item()
                # Flex returns the natural-log LSE (it converts its internal log2); should a
                # torch return log2, say so rather than blame attnjit.
                lse_ref = flex_lse.float()
                lse_err = (lse - lse_ref).abs().max().item()
                lse_ok = bool(((lse - lse_ref).abs() <= 5e-3 + 1e-4 * lse_ref.abs()).all())
                if not lse_ok:
                    ln_ref = lse_ref * math.log(2.0)
                    if bool(((lse - ln_ref).abs() <= 5e-3 + 1e-4 * ln_ref.abs()).all()):
                        print(f"compare_flex: {name} L={length} D={head_dim}: Flex's LSE is in "
                              f"log2 units in this torch; attnjit's (ln) matches it converted",
                              file=sys.stderr)
                        lse_ok, lse_err = True, (lse - ln_ref).abs().max().item()
                ok = (math.isfinite(max_err) and max_err <= 3e-2 and mean_err <= 2e-3
                      and lse_ok)
                failures += 0 if ok else 1
                jit_ms = time_cuda(lambda p=prepared: jit.forward(variant, p), warmup, iters)

                sdpa = None
                if spec["sdpa"] is not None:
                    sdpa = fastest_sdpa(q, k, v, spec["sdpa"], warmup, iters)

                flops = 4.0 * batch * heads * head_dim * unmasked_pairs(name, length)
                rows.append(dict(
                    variant=name, L=length, D=head_dim, B=batch, H=heads,
                    attnjit_ms=jit_ms, flex_ms=flex_ms,
                    sdpa_ms=sdpa[0] if sdpa else None, sdpa_backend=sdpa[1] if sdpa else None,
                    attnjit_tflops=flops / jit_ms / 1e9, flex_tflops=flops / flex_ms / 1e9,
                    ratio=jit_ms / flex_ms, max_err=max_err, mean_err=mean_err,
                    lse_max_err=lse_err, ok=ok,
                    block_mask_ms=mask_ms, block_mask_bytes=mask_bytes,
                    attnjit_mask_note=("summaries per call, O(L/block) ints"
                                       if spec["tensors"] else "none (index-only)")))
                del flex_out, flex_lse, out, lse, block_mask, prepared

    header = (f"{'variant':<15}{'L':>7}{'D':>5}{'B':>4}{'H':>4} {'attnjit ms':>11}"
              f"{'flex ms':>10}{'sdpa ms':>10} {'jit TF/s':>9}{'flex TF/s':>10}{'jit/flex':>9}"
              f"{'max err':>10}{'lse err':>10} {'mask ms':>9}{'mask MiB':>9}  attnjit mask cost")
    print(header)
    for r in rows:
        sdpa = f"{r['sdpa_ms']:.3f}" if r["sdpa_ms"] is not None else "-"
        print(f"{r['variant']:<15}{r['L']:>7}{r['D']:>5}{r['B']:>4}{r['H']:>4} "
              f"{r['attnjit_ms']:>11.3f}{r['flex_ms']:>10.3f}{sdpa:>10} "
              f"{r['attnjit_tflops']:>9.1f}{r['flex_tflops']:>10.1f}{r['ratio']:>9.2f}"
              f"{r['max_err']:>10.2e}{r['lse_max_err']:>10.2e}{'' if r['ok'] else '!'} "
              f"{r['block_mask_ms']:>9.1f}{r['block_mask_bytes'] / 2**20:>9.2f}  "
              f"{r['attnjit_mask_note']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    jit.close()
    if failures:
        print(f"mismatch: {failures} of {len(rows)} attnjit outputs differ from FlexAttention "
              f"beyond bf16 tolerance (out: max abs 3e-2, mean abs 2e-3; "
              f"LSE: 5e-3 + 1e-4 |lse|)")
        return 1
    print(f"checked: all {len(rows)} attnjit outputs and LSEs match FlexAttention within bf16 "
          f"tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
