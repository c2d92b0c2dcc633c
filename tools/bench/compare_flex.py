#!/usr/bin/env python3
"""attnjit against FlexAttention and SDPA, in one process, on one GPU.

Loads libattnjit.so through ctypes (the C API of include/attnjit/attnjit.h), runs each variant on
torch tensors (device pointers, the current torch stream), checks every attnjit output against
FlexAttention's and prints one table: median times, TFLOP/s over unmasked pairs
(4 * B * H * D * pairs, the same count as `attnjit bench`), and the attnjit/Flex time ratio.
Also reports what the block mask costs FlexAttention (create_block_mask time and memory) next to
attnjit's equivalent (nothing for index-only masks; per-call tensor summaries otherwise).

    python3 tools/bench/compare_flex.py --lib build/src/capi/libattnjit.so [--quick] [--json F]
"""

import argparse
import ctypes
import json
import math
import statistics
import sys
import time

# ---- The C API (include/attnjit/attnjit.h), field for field ----

ATTNJIT_OK = 0
ATTNJIT_BACKEND_CUDA = 1
ATTNJIT_LOG_DEFAULT = 0
ATTNJIT_DTYPE_BF16 = 0
ATTNJIT_DTYPE_FP16 = 1
ATTNJIT_LAYOUT_BHLD = 0
ATTNJIT_PARAM_INT = 0
ATTNJIT_PARAM_FLOAT = 1
ATTNJIT_TENSOR_INT32 = 0
ATTNJIT_TENSOR_FLOAT32 = 1


class RuntimeOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int), ("cache_dir", ctypes.c_char_p),
                ("backend", ctypes.c_int), ("log_level", ctypes.c_int)]


class ParamDecl(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int)]


class TensorDecl(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("rank", ctypes.c_int)]


class VariantDesc(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int), ("mask", ctypes.c_char_p), ("score", ctypes.c_char_p),
                ("params", ctypes.POINTER(ParamDecl)), ("num_params", ctypes.c_int),
                ("tensors", ctypes.POINTER(TensorDecl)), ("num_tensors", ctypes.c_int),
                ("dtype", ctypes.c_int), ("head_dim", ctypes.c_int)]


class Scalar(ctypes.Union):
    _fields_ = [("i", ctypes.c_int32), ("f", ctypes.c_float)]


class TensorArg(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dims", ctypes.c_int64 * 2)]


class ForwardArgs(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int),
                ("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("out", ctypes.c_void_p), ("lse", ctypes.POINTER(ctypes.c_float)),
                ("q_dtype", ctypes.c_int), ("k_dtype", ctypes.c_int), ("v_dtype", ctypes.c_int),
                ("batch", ctypes.c_int), ("num_heads_q", ctypes.c_int),
                ("num_heads_kv", ctypes.c_int), ("q_len", ctypes.c_int), ("kv_len", ctypes.c_int),
                ("layout", ctypes.c_int),
                ("q_strides", ctypes.c_int64 * 3), ("k_strides", ctypes.c_int64 * 3),
                ("v_strides", ctypes.c_int64 * 3), ("out_strides", ctypes.c_int64 * 3),
                ("scale", ctypes.c_float),
                ("params", ctypes.POINTER(Scalar)), ("num_params", ctypes.c_int),
                ("tensors", ctypes.POINTER(TensorArg)), ("num_tensors", ctypes.c_int),
                ("stream", ctypes.c_void_p)]


class AttnJit:
    """The few C API calls this script needs; every failure raises with attnjit's message."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        p = ctypes.POINTER
        lib.attnjit_last_error.restype = ctypes.c_char_p
        lib.attnjit_version.restype = ctypes.c_char_p
        lib.attnjit_runtime_options_init.argtypes = [p(RuntimeOptions)]
        lib.attnjit_runtime_create.argtypes = [p(ctypes.c_void_p), p(RuntimeOptions)]
        lib.attnjit_runtime_destroy.argtypes = [ctypes.c_void_p]
        lib.attnjit_variant_desc_init.argtypes = [p(VariantDesc)]
        lib.attnjit_variant_create.argtypes = [p(ctypes.c_void_p), ctypes.c_void_p, p(VariantDesc)]
        lib.attnjit_variant_prepare.argtypes = [ctypes.c_void_p]
        lib.attnjit_variant_destroy.argtypes = [ctypes.c_void_p]
        lib.attnjit_forward_args_init.argtypes = [p(ForwardArgs)]
        lib.attnjit_forward.argtypes = [ctypes.c_void_p, p(ForwardArgs)]
        for name in ("attnjit_runtime_create", "attnjit_variant_create", "attnjit_variant_prepare",
                     "attnjit_forward"):
            getattr(lib, name).restype = ctypes.c_int
        self.lib = lib
        options = RuntimeOptions()
        lib.attnjit_runtime_options_init(ctypes.byref(options))
        options.backend = ATTNJIT_BACKEND_CUDA
        self.runtime = ctypes.c_void_p()
        self.check(lib.attnjit_runtime_create(ctypes.byref(self.runtime), ctypes.byref(options)),
                   "attnjit_runtime_create")

    def check(self, status, what):
        if status != ATTNJIT_OK:
            raise RuntimeError(f"{what} failed ({status}): "
                               f"{self.lib.attnjit_last_error().decode(errors='replace')}")

    def variant(self, spec, dtype, head_dim):
        params = (ParamDecl * max(1, len(spec["params"])))(
            *[ParamDecl(n.encode(), t) for n, t, _ in spec["params"]])
        tensors = (TensorDecl * max(1, len(spec["tensors"])))(
            *[TensorDecl(n.encode(), t, r) for n, t, r in spec["tensors"]])
        desc = VariantDesc()
        self.lib.attnjit_variant_desc_init(ctypes.byref(desc))
        desc.mask = spec["mask"].encode() if spec["mask"] else None
        desc.score = spec["score"].encode() if spec["score"] else None
        desc.params, desc.num_params = params, len(spec["params"])
        desc.tensors, desc.num_tensors = tensors, len(spec["tensors"])
        desc.dtype, desc.head_dim = dtype, head_dim
        handle = ctypes.c_void_p()
        self.check(self.lib.attnjit_variant_create(ctypes.byref(handle), self.runtime,
                                                   ctypes.byref(desc)), "attnjit_variant_create")
        self.check(self.lib.attnjit_variant_prepare(handle), "attnjit_variant_prepare")
        return handle

    def forward_args(self, q, k, v, out, scalars, tensors, stream):
        """Arguments for attnjit_forward; the returned tuple keeps the ctypes arrays alive."""
        import torch
        b, hq, lq, d = q.shape
        args = ForwardArgs()
        self.lib.attnjit_forward_args_init(ctypes.byref(args))
        args.q, args.k, args.v, args.out = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
        dtype = ATTNJIT_DTYPE_BF16 if q.dtype == torch.bfloat16 else ATTNJIT_DTYPE_FP16
        args.q_dtype = args.k_dtype = args.v_dtype = dtype
        args.batch, args.num_heads_q, args.num_heads_kv = b, hq, k.shape[1]
        args.q_len, args.kv_len = lq, k.shape[2]
        args.layout = ATTNJIT_LAYOUT_BHLD
        scalar_array = (Scalar * max(1, len(scalars)))()
        for i, (kind, value) in enumerate(scalars):
            if kind == ATTNJIT_PARAM_FLOAT:
                scalar_array[i].f = value
            else:
                scalar_array[i].i = value
        tensor_array = (TensorArg * max(1, len(tensors)))()
        for i, t in enumerate(tensors):
            tensor_array[i].data = t.data_ptr()
            tensor_array[i].dims[0] = t.shape[0]
            tensor_array[i].dims[1] = t.shape[1] if t.dim() == 2 else 1
        args.params, args.num_params = scalar_array, len(scalars)
        args.tensors, args.num_tensors = tensor_array, len(tensors)
        args.stream = stream
        return args, scalar_array, tensor_array

    def forward(self, variant, prepared):
        self.check(self.lib.attnjit_forward(variant, ctypes.byref(prepared[0])), "attnjit_forward")

    def close(self, variants):
        for handle in variants:
            self.lib.attnjit_variant_destroy(handle)
        self.lib.attnjit_runtime_destroy(self.runtime)


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, help="path to libattnjit.so")
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--variant", action="append", help="only these variants")
    args = parser.parse_args()

    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    if not torch.cuda.is_available():
        print("compare_flex: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    device = "cuda"
    props = torch.cuda.get_device_properties(0)
    jit = AttnJit(args.lib)
    print(f"attnjit {jit.lib.attnjit_version().decode()} | torch {torch.__version__} | "
          f"{props.name} ({props.multi_processor_count} SMs)")
    flex = torch.compile(flex_attention, dynamic=False)
    lengths = [1024] if args.quick else [4096, 16384, 65536]
    head_dims = [64] if args.quick else [64, 128]
    iters = 5 if args.quick else args.iters
    warmup = 2 if args.quick else args.warmup
    # B * H * L = 16 * 64K tokens fills an H100 at every length.
    tokens = 2 * 4096 if args.quick else 16 * 65536

    rows, handles, failures = [], [], 0
    all_variants = variants()
    selected = args.variant or list(all_variants)
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

                torch.cuda.synchronize()
                free_before = torch.cuda.memory_allocated()
                t0 = time.perf_counter()
                block_mask = None
                if mask_mod is not None:
                    block_mask = create_block_mask(mask_mod, None, None, length, length,
                                                   device=device)
                torch.cuda.synchronize()
                mask_ms = (time.perf_counter() - t0) * 1e3
                mask_bytes = torch.cuda.memory_allocated() - free_before

                flex_out = flex(q, k, v, score_mod=score_mod, block_mask=block_mask)
                flex_ms = time_cuda(lambda: flex(q, k, v, score_mod=score_mod,
                                                 block_mask=block_mask), warmup, iters)

                variant = jit.variant(spec, ATTNJIT_DTYPE_BF16, head_dim)
                handles.append(variant)
                out = torch.full_like(q, float("nan"))
                tensors = [ctx["doc"]] if spec["tensors"] else []
                prepared = jit.forward_args(q, k, v, out, spec["scalars"], tensors,
                                            torch.cuda.current_stream().cuda_stream)
                jit.forward(variant, prepared)
                torch.cuda.synchronize()
                err = (out.float() - flex_out.float()).abs()
                max_err = err.max().item()
                mean_err = err.mean().item()
                ok = math.isfinite(max_err) and max_err <= 3e-2 and mean_err <= 2e-3
                failures += 0 if ok else 1
                jit_ms = time_cuda(lambda: jit.forward(variant, prepared), warmup, iters)

                sdpa = None
                if spec["sdpa"] is not None:
                    sdpa = fastest_sdpa(q, k, v, spec["sdpa"], warmup, iters)

                flops = 4.0 * batch * heads * head_dim * unmasked_pairs(name, length)
                rows.append(dict(
                    variant=name, L=length, D=head_dim, B=batch, H=heads,
                    attnjit_ms=jit_ms, flex_ms=flex_ms,
                    sdpa_ms=sdpa[0] if sdpa else None, sdpa_backend=sdpa[1] if sdpa else None,
                    attnjit_tflops=flops / jit_ms / 1e9, flex_tflops=flops / flex_ms / 1e9,
                    ratio=jit_ms / flex_ms, max_err=max_err, mean_err=mean_err, ok=ok,
                    block_mask_ms=mask_ms, block_mask_bytes=mask_bytes,
                    attnjit_mask_note=("summaries per call, O(L/block) ints"
                                       if spec["tensors"] else "none (index-only)")))
                del flex_out, out, block_mask

    header = (f"{'variant':<15}{'L':>7}{'D':>5}{'B':>4}{'H':>4} {'attnjit ms':>11}"
              f"{'flex ms':>10}{'sdpa ms':>10} {'jit TF/s':>9}{'flex TF/s':>10}{'jit/flex':>9}"
              f"{'max err':>10} {'mask ms':>9}{'mask MiB':>9}  attnjit mask cost")
    print(header)
    for r in rows:
        sdpa = f"{r['sdpa_ms']:.3f}" if r["sdpa_ms"] is not None else "-"
        print(f"{r['variant']:<15}{r['L']:>7}{r['D']:>5}{r['B']:>4}{r['H']:>4} "
              f"{r['attnjit_ms']:>11.3f}{r['flex_ms']:>10.3f}{sdpa:>10} "
              f"{r['attnjit_tflops']:>9.1f}{r['flex_tflops']:>10.1f}{r['ratio']:>9.2f}"
              f"{r['max_err']:>10.2e}{'' if r['ok'] else '!'} {r['block_mask_ms']:>9.1f}"
              f"{r['block_mask_bytes'] / 2**20:>9.2f}  {r['attnjit_mask_note']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    jit.close(handles)
    if failures:
        print(f"mismatch: {failures} of {len(rows)} attnjit outputs differ from FlexAttention "
              f"beyond bf16 tolerance (max abs 3e-2, mean abs 2e-3)")
        return 1
    print(f"checked: all {len(rows)} attnjit outputs match FlexAttention within bf16 tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
