#!/usr/bin/env python3
"""attnjit's CPU backend against PyTorch FlexAttention on the CPU, through the ctypes bindings.

An independent check of attnjit's semantics (mask, score, parameters, tensors, GQA, layouts,
explicit strides, scale, LSE, fully masked rows) and of tools/bench/attnjit_ctypes.py, the
bindings compare_flex.py uses on a GPU machine. No GPU needed.

    python3 tools/bench/crosscheck_flex_cpu.py [--lib build/src/capi/libattnjit.so] [--quick]
        [--variant NAME ...] [--compiled] [--json rows.json]

For each case it runs attnjit (backend CPU) and flex_attention (eager: the dense reference that
FlexAttention itself runs without torch.compile, traced through dynamo like the real thing; with
--compiled, torch.compile(flex_attention), i.e. the Inductor CPU kernel, which is slow to build)
on the same inputs and compares:

- out vs Flex in the same dtype: fp32 |d| <= 2e-5 + 2e-5 |ref|; bf16 |d| <= 1e-2 + 1.6e-2 |ref|
  (Flex's eager bf16 path rounds the probabilities to bf16 before P @ V);
- bf16 only, out vs Flex in fp32 on the same bf16 inputs ("ref32"): attnjit computes in fp32 and
  rounds once, so |d| <= 2^-8 |ref| + 1e-5;
- LSE (attnjit: natural log, fp32) vs Flex's LSE, converted to natural log if this torch
  returns log2 (detected at start-up): |d| <= 1e-4 + 1e-5 |ref| where finite;
- fully masked rows (counted from the mask alone): attnjit's contract is out = 0 exactly and
  LSE = -inf. Those rows are checked against that contract, not against Flex; what Flex gives
  there (zeros or NaN, LSE -inf or other) is reported in the `empty` column and the summary.

Prints one table, one row per case, and exits non-zero on any failure.
"""

import argparse
import itertools
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnjit_ctypes as aj  # noqa: E402

# Parameter values for the small sizes used here (the standard manifest's are for long rows).
WINDOW = 16
PREFIX = 24
SOFTCAP = 2.0        # small enough that tanh bends the scores (30 hardly touches N(0, 1) scores)
SOFTCAP_SCALE = 0.5  # the soft-cap cases pass an explicit scale (exercises args.scale)
DOCUMENTS = 4
REL_RADIUS = 20      # bias[h, kv_idx - q_idx + 20], dims [Hq, 41]: farther pairs read 0


def flex_api():
    """What this torch offers: (flex_attention, create_block_mask, AuxRequest or None)."""
    from torch.nn.attention import flex_attention as fa
    return fa.flex_attention, fa.create_block_mask, getattr(fa, "AuxRequest", None)


def flex_with_lse(flex, q, k, v, score_mod, block_mask, scale, gqa, want_lse=True):
    """(out, lse) from flex_attention, whichever LSE API this torch has (return_aux in 2.9+,
    return_lse before; return_lse is deprecated since). want_lse=False: (out, None)."""
    _, _, aux_request = flex_api()
    kwargs = dict(score_mod=score_mod, block_mask=block_mask, scale=scale, enable_gqa=gqa)
    if not want_lse:
        return flex(q, k, v, **kwargs), None
    if aux_request is not None:
        out, aux = flex(q, k, v, return_aux=aux_request(lse=True), **kwargs)
        return out, aux.lse
    return flex(q, k, v, return_lse=True, **kwargs)


def variants():
    """name -> attnjit spec plus Flex mods. ctx: doc (int32 [N]), bias (float32 [Hq, 2R+1]),
    heads (Hq). Each `flex` returns (mask_mod or None, score_mod or None)."""
    import torch

    def relbias_mod(bias):
        width = bias.shape[1]

        def mod(score, b, h, q, kv):
            idx = kv - q + REL_RADIUS
            inside = (idx >= 0) & (idx < width)
            return score + torch.where(inside, bias[h, idx.clamp(0, width - 1)],
                                       torch.zeros((), dtype=score.dtype))
        return mod

    def alibi_mod(num_heads):
        def mod(score, b, h, q, kv):
            slope = torch.exp2(-8.0 * (h + 1).to(torch.float32) / num_heads)
            return score + slope * (kv - q).to(torch.float32)
        return mod

    def softcap_mod(score, b, h, q, kv):
        return SOFTCAP * torch.tanh(score / SOFTCAP)

    none = dict(params=[], tensors=[], scalars=[], tensor_keys=[], scale=None)
    return {
        "noop": dict(none, mask="true", score="score", flex=lambda c: (None, None)),
        "causal": dict(none, mask="q_idx >= kv_idx", score="",
                       flex=lambda c: (lambda b, h, q, kv: q >= kv, None)),
        "sliding_window": dict(
            none, mask="q_idx >= kv_idx && q_idx - kv_idx < W", score="",
            params=[("W", aj.ATTNJIT_PARAM_INT)], scalars=[(aj.ATTNJIT_PARAM_INT, WINDOW)],
            flex=lambda c: (lambda b, h, q, kv: (q >= kv) & (q - kv < WINDOW), None)),
        "prefix_lm": dict(
            none, mask="kv_idx < prefix || q_idx >= kv_idx", score="",
            params=[("prefix", aj.ATTNJIT_PARAM_INT)], scalars=[(aj.ATTNJIT_PARAM_INT, PREFIX)],
            flex=lambda c: (lambda b, h, q, kv: (kv < PREFIX) | (q >= kv), None)),
        "document": dict(
            none, mask="doc[q_idx] == doc[kv_idx]", score="",
            tensors=[("doc", aj.ATTNJIT_TENSOR_INT32, 1)], tensor_keys=["doc"],
            flex=lambda c: (lambda b, h, q, kv: c["doc"][q] == c["doc"][kv], None)),
        # Unsorted ids: the per-tile min/max summaries cannot prove tiles empty or full, so
        # this exercises the partial-tile path and the block analysis' soundness.
        "document_unsorted": dict(
            none, mask="doc[q_idx] == doc[kv_idx]", score="",
            tensors=[("doc", aj.ATTNJIT_TENSOR_INT32, 1)], tensor_keys=["doc_unsorted"],
            flex=lambda c: (lambda b, h, q, kv:
                            c["doc_unsorted"][q] == c["doc_unsorted"][kv], None)),
        "alibi": dict(
            none, mask="", score="score + exp2(-8.0 * float(h + 1) / float(num_heads)) * "
                                 "float(kv_idx - q_idx)",
            flex=lambda c: (None, alibi_mod(c["heads"]))),
        "softcap": dict(
            none, mask="", score="cap * tanh(score / cap)",
            params=[("cap", aj.ATTNJIT_PARAM_FLOAT)], scalars=[(aj.ATTNJIT_PARAM_FLOAT, SOFTCAP)],
            scale=SOFTCAP_SCALE, flex=lambda c: (None, softcap_mod)),
        "rel_bias": dict(
            none, mask="", score=f"score + bias[h, kv_idx - q_idx + {REL_RADIUS}]",
            tensors=[("bias", aj.ATTNJIT_TENSOR_FLOAT32, 2)], tensor_keys=["bias"],
            flex=lambda c: (None, relbias_mod(c["bias"]))),
        # A mask and a score together, plus a float param in the score.
        "causal_softcap": dict(
            none, mask="q_idx >= kv_idx", score="cap * tanh(score / cap)",
            params=[("cap", aj.ATTNJIT_PARAM_FLOAT)], scalars=[(aj.ATTNJIT_PARAM_FLOAT, SOFTCAP)],
            flex=lambda c: (lambda b, h, q, kv: q >= kv, softcap_mod)),
    }


def make_context(q_len, kv_len, heads, gen):
    import torch
    n = max(q_len, kv_len)
    doc = (torch.arange(n, dtype=torch.int64) * DOCUMENTS // n).to(torch.int32)
    doc_unsorted = torch.randint(0, 3, (n,), generator=gen, dtype=torch.int32)
    bias = torch.randn(heads, 2 * REL_RADIUS + 1, generator=gen, dtype=torch.float32)
    return {"doc": doc, "doc_unsorted": doc_unsorted, "bias": bias, "heads": heads}


def to_layout(x, layout):
    """x: [B, H, L, D] logical. Returns the tensor to hand to attnjit and its attnjit layout."""
    if layout == "bhld":
        return x.contiguous(), aj.ATTNJIT_LAYOUT_BHLD
    if layout == "blhd":
        return x.transpose(1, 2).contiguous(), aj.ATTNJIT_LAYOUT_BLHD
    # "strided": rows padded to D + 8 inside [B, L, H, D + 8] memory; explicit strides.
    import torch
    b, h, length, d = x.shape
    buffer = torch.full((b, length, h, d + 8), 7.0, dtype=x.dtype)
    view = buffer[..., :d].transpose(1, 2)  # [B, H, L, D] logical, non-contiguous
    view.copy_(x)
    return view, aj.ATTNJIT_LAYOUT_BHLD


def from_layout(y, layout):
    return y.transpose(1, 2) if layout == "blhd" else y


def empty_output_like(x, layout):
    import torch
    if layout == "strided":
        b, h, length, d = x.shape
        return torch.full((b, length, h, d + 8), float("nan"), dtype=x.dtype)[..., :d] \
            .transpose(1, 2)
    return torch.full_like(x, float("nan"))


def detect_lse_convention(flex):
    """'ln' or 'log2': what flex_attention's LSE is, against torch.logsumexp."""
    import torch
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 8, 16, generator=gen) for _ in range(3))
    _, lse = flex_with_lse(flex, q, k, v, None, None, 0.25, False)
    ref = torch.logsumexp((q @ k.transpose(-1, -2)) * 0.25, dim=-1)
    if torch.allclose(lse, ref, atol=1e-4):
        return "ln"
    if torch.allclose(lse * math.log(2.0), ref, atol=1e-4):
        return "log2"
    raise RuntimeError(f"flex_attention LSE is neither natural log nor log2: {lse} vs {ref}")


def run_case(jit, flex, create_block_mask, lse_scale, name, spec, dtype, layout, shape, gen):
    """lse_scale None: Flex cannot return the LSE (compiled on the CPU); LSE not compared."""
    import torch
    b, hq, hkv, lq, lkv, d = shape
    tdtype = torch.float32 if dtype == "fp32" else torch.bfloat16
    q = torch.randn(b, hq, lq, d, generator=gen).to(tdtype)
    k = torch.randn(b, hkv, lkv, d, generator=gen).to(tdtype)
    v = torch.randn(b, hkv, lkv, d, generator=gen).to(tdtype)
    ctx = make_context(lq, lkv, hq, gen)
    mask_mod, score_mod = spec["flex"](ctx)

    # Flex, in the case's dtype and (bf16) in fp32 on the same rounded inputs.
    block_mask = None
    if mask_mod is not None:
        block_mask = create_block_mask(mask_mod, None, None, lq, lkv, device="cpu")
    scale = spec["scale"]
    gqa = hq != hkv
    want_lse = lse_scale is not None
    flex_out, flex_lse = flex_with_lse(flex, q, k, v, score_mod, block_mask, scale, gqa, want_lse)
    flex_lse = flex_lse.float() * lse_scale if want_lse else None
    ref32 = None
    if tdtype != torch.float32:
        ref32, _ = flex_with_lse(flex, q.float(), k.float(), v.float(), score_mod, block_mask,
                                 scale, gqa, False)

    # Which rows have no kept pair, from the mask alone.
    if mask_mod is None:
        empty = torch.zeros(b, hq, lq, dtype=torch.bool)
    else:
        qi = torch.arange(lq).view(-1, 1)
        ki = torch.arange(lkv).view(1, -1)
        dense = mask_mod(torch.zeros((), dtype=torch.int64), torch.zeros((), dtype=torch.int64),
                         qi, ki)
        empty = (~dense.expand(lq, lkv).any(dim=-1)).view(1, 1, lq).expand(b, hq, lq)

    # attnjit.
    variant = jit.variant(spec, aj.ATTNJIT_DTYPE_FP32 if dtype == "fp32" else
                          aj.ATTNJIT_DTYPE_BF16, d)
    jq, jl = to_layout(q, layout)
    jk, _ = to_layout(k, layout)
    jv, _ = to_layout(v, layout)
    jout = empty_output_like(jq, layout)
    lse = torch.full((b, hq, lq), float("nan"), dtype=torch.float32)
    tensors = [ctx[key] for key in spec["tensor_keys"]]
    prepared = jit.forward_args(jq, jk, jv, jout, spec["scalars"], tensors, layout=jl, lse=lse,
                                scale=spec["scale"] or 0.0)
    jit.forward(variant, prepared)
    out = from_layout(jout, layout).float()
    if layout == "strided":  # the padding must be untouched
        pad = jout.transpose(1, 2).as_strided(
            (b, lq, hq, 8), jout.transpose(1, 2).stride(), jout.storage_offset() + d)
        assert torch.isnan(pad).all(), "attnjit wrote outside the strided output rows"

    keep = ~empty
    fo = flex_out.float()
    if dtype == "fp32":
        atol, rtol = 2e-5, 2e-5
    else:
        atol, rtol = 1e-2, 1.6e-2
    diff = (out - fo).abs()[keep]
    max_err = diff.max().item() if diff.numel() else 0.0
    ok_out = bool(torch.isfinite(out[keep]).all()) and \
        bool((diff <= atol + rtol * fo.abs()[keep]).all())
    max_err32 = None
    ok_ref32 = True
    if ref32 is not None:
        r = ref32.float()
        diff32 = (out - r).abs()[keep]
        max_err32 = diff32.max().item() if diff32.numel() else 0.0
        ok_ref32 = bool((diff32 <= 2.0 ** -8 * r.abs()[keep] + 1e-5).all())
    max_lse, ok_lse = None, bool(torch.isfinite(lse[keep]).all())
    if want_lse:
        lse_diff = (lse - flex_lse).abs()[keep]
        max_lse = lse_diff.max().item() if lse_diff.numel() else 0.0
        ok_lse = ok_lse and bool((lse_diff <= 1e-4 + 1e-5 * flex_lse.abs()[keep]).all())

    n_empty = int(empty[0, 0].sum())
    ok_empty = True
    flex_empty = ""
    if n_empty:
        rows_out = out[empty]
        ok_empty = bool((rows_out == 0).all()) and bool((lse[empty] == -math.inf).all())
        fe = fo[empty]
        flex_empty = ("0" if bool((fe == 0).all()) else "nan" if bool(torch.isnan(fe).all())
                      else "other")
        if want_lse:
            fl = flex_lse[empty]
            flex_empty += "/" + ("-inf" if bool((fl == -math.inf).all()) else
                                 "nan" if bool(torch.isnan(fl).all()) else "other")
    ok = ok_out and ok_ref32 and ok_lse and ok_empty
    return dict(variant=name, dtype=dtype, layout=layout, B=b, Hq=hq, Hkv=hkv, Lq=lq, Lkv=lkv,
                D=d, empty_rows=n_empty, flex_empty=flex_empty, max_err=max_err,
                max_err_ref32=max_err32, max_lse_err=max_lse, ok_out=ok_out, ok_ref32=ok_ref32,
                ok_lse=ok_lse, ok_empty=ok_empty, ok=ok)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=aj.default_library(), help="path to libattnjit.so")
    parser.add_argument("--quick", action="store_true", help="a subset: a smoke run")
    parser.add_argument("--variant", action="append", help="only these variants")
    parser.add_argument("--compiled", action="store_true",
                        help="torch.compile(flex_attention) (Inductor's CPU kernel); slow")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)

    import warnings
    import torch
    warnings.filterwarnings("ignore", message=".*flex_attention called without torch.compile.*")
    # Every case is a new closure for dynamo to trace; do not let it give up.
    for knob in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 100000)
    flex, create_block_mask, _ = flex_api()
    if args.compiled:
        flex = torch.compile(flex, dynamic=False)
    if args.compiled:  # Inductor's CPU flex kernel does not return the LSE (torch 2.15)
        lse_convention, lse_scale = "not available compiled on the CPU", None
    else:
        lse_convention = detect_lse_convention(flex)
        lse_scale = 1.0 if lse_convention == "ln" else math.log(2.0)

    jit = aj.AttnJit(args.lib, backend=aj.ATTNJIT_BACKEND_CPU, log_level=aj.ATTNJIT_LOG_ERROR)
    assert jit.backend() == aj.ATTNJIT_BACKEND_CPU
    print(f"attnjit {jit.version()} (CPU backend, {args.lib}) | torch {torch.__version__} | "
          f"flex_attention {'compiled' if args.compiled else 'eager'} | Flex LSE: "
          f"{lse_convention}{' (converted to ln)' if lse_convention == 'log2' else ''}")

    all_variants = variants()
    selected = args.variant or list(all_variants)
    unknown = [n for n in selected if n not in all_variants]
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; known: {list(all_variants)}")
    # (B, Hq, Hkv, Lq, Lkv): GQA (4 -> 2) throughout, MQA and MHA once each.
    if args.quick:
        shapes = [(2, 4, 2, 17, 17), (2, 4, 2, 100, 17), (1, 4, 1, 33, 100)]
        head_dims, dtypes, layouts = [32], ["fp32", "bf16"], ["bhld", "blhd", "strided"]
    else:
        shapes = [(2, 4, 2, 1, 1), (2, 4, 2, 1, 257), (2, 4, 2, 17, 17), (2, 4, 2, 17, 100),
                  (2, 4, 2, 100, 17), (2, 4, 2, 100, 100), (2, 4, 2, 257, 257),
                  (2, 4, 2, 257, 100), (1, 4, 1, 33, 100), (1, 4, 4, 65, 65)]
        head_dims, dtypes, layouts = [32, 64], ["fp32", "bf16"], ["bhld", "blhd", "strided"]

    rows, failures = [], 0
    gen = torch.Generator().manual_seed(1234)
    started = time.time()
    header = (f"{'variant':<18}{'dtype':<6}{'layout':<8}{'B':>2}{'Hq':>3}{'Hkv':>4}{'Lq':>5}"
              f"{'Lkv':>5}{'D':>4}  {'empty (flex)':<14}{'max|out-flex|':>14}{'max|out-ref32|':>15}"
              f"{'max|lse-flex|':>14}  result")
    print(header)
    print("-" * len(header))
    for name, dtype, layout, shape, d in itertools.product(selected, dtypes, layouts, shapes,
                                                           head_dims):
        b, hq, hkv, lq, lkv = shape
        try:
            row = run_case(jit, flex, create_block_mask, lse_scale, name, all_variants[name],
                           dtype, layout, (b, hq, hkv, lq, lkv, d), gen)
        except Exception as e:  # a case that cannot run is a failure, reported in its row
            row = dict(variant=name, dtype=dtype, layout=layout, B=b, Hq=hq, Hkv=hkv, Lq=lq,
                       Lkv=lkv, D=d, ok=False, error=f"{type(e).__name__}: {e}")
        rows.append(row)
        failures += 0 if row["ok"] else 1
        prefix = (f"{name:<18}{dtype:<6}{layout:<8}{b:>2}{hq:>3}{hkv:>4}{lq:>5}{lkv:>5}{d:>4}  ")
        if "error" in row:
            print(prefix + f"ERROR {row['error']}")
            continue
        empty = f"{row['empty_rows']}" + (f" ({row['flex_empty']})" if row["empty_rows"] else "")
        ref32 = f"{row['max_err_ref32']:.2e}" if row["max_err_ref32"] is not None else "-"
        what = "PASS" if row["ok"] else "FAIL " + ",".join(
            k[3:] for k in ("ok_out", "ok_ref32", "ok_lse", "ok_empty") if not row[k])
        lse_err = f"{row['max_lse_err']:.2e}" if row["max_lse_err"] is not None else "-"
        print(prefix + f"{empty:<14}{row['max_err']:>14.2e}{ref32:>15}{lse_err:>14}  {what}",
              flush=True)
    jit.close()

    flex_empty = sorted({r["flex_empty"] for r in rows if r.get("empty_rows")})
    print(f"\n{len(rows)} cases in {time.time() - started:.0f} s: {len(rows) - failures} PASS, "
          f"{failures} FAIL")
    print("tolerances: fp32 |d| <= 2e-5 + 2e-5|flex|; bf16 |d| <= 1e-2 + 1.6e-2|flex| and "
          "<= 2^-8|ref32| + 1e-5; LSE |d| <= 1e-4 + 1e-5|flex|")
    if flex_empty:
        print(f"fully masked rows: attnjit gives out 0 and LSE -inf (checked); Flex gives "
              f"out/LSE = {', '.join(flex_empty)} there (reported, not compared)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
