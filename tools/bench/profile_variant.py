#!/usr/bin/env python3
"""Runs one standard variant through attnjit on CUDA tensors, a few times, for a profiler:

    ncu -k attnjit_fwd -s 2 -c 1 --set full python3 tools/bench/profile_variant.py document 16K 64

Arguments: variant (a compare_flex.py name), length (16K syntax), head dim. The shape follows
compare_flex.py (B * H * L = 1M tokens, H = 2048 / D). Prints the median time of the timed calls.

With --decode, one decoding step instead (compare_flex.py --decode's variants: noop, causal,
sliding_window; B = 1, 32 query heads over 8, one query over a cache of `length` keys), so that
ncu can take the step apart kernel by kernel:

    ncu -k regex:attnjit -s 4 --metrics gpu__time_duration.sum,dram__bytes_read.sum \\
        python3 tools/bench/profile_variant.py --decode causal 16K 128 2

Each kernel's duration next to the step's event time shows what the launches between them cost.
"""
import sys

import compare_flex as cf
import attnjit_ctypes as aj

DECODE_HEADS_Q, DECODE_HEADS_KV = 32, 8


def prefill_call(torch, jit, name, length, head_dim):
    """(the call's inputs and outputs, a label) at compare_flex.py's prefill shape."""
    heads = max(1, 2048 // head_dim)
    batch = max(1, 16 * 65536 // (heads * length))
    spec = cf.variants()[name]
    shape = (batch, heads, length, head_dim)
    gen = torch.Generator(device="cuda").manual_seed(length + head_dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen)
               for _ in range(3))
    documents, random_sizes = cf.DOCUMENT_LAYOUTS.get(name, cf.DOCUMENT_LAYOUTS["document"])
    doc = cf.document_ids(length, "cuda", documents, random_sizes)
    variant = jit.variant(spec, cf.ATTNJIT_DTYPE_BF16, head_dim)
    out = torch.empty_like(q)
    lse = torch.empty((batch, heads, length), device="cuda", dtype=torch.float32)
    prepared = jit.forward_args(q, k, v, out, spec["scalars"], [doc] if spec["tensors"] else [],
                                torch.cuda.current_stream().cuda_stream, lse=lse)
    return variant, prepared, f"B={batch} H={heads}"


def decode_call(torch, jit, name, length, head_dim):
    """(the call's inputs and outputs, a label) of one decoding step over `length` keys."""
    spec = cf.decode_variants()[name]
    gen = torch.Generator(device="cuda").manual_seed(length + head_dim)
    q = torch.randn((1, DECODE_HEADS_Q, 1, head_dim), device="cuda", dtype=torch.bfloat16,
                    generator=gen)
    k, v = (torch.randn((1, DECODE_HEADS_KV, length, head_dim), device="cuda",
                        dtype=torch.bfloat16, generator=gen) for _ in range(2))
    variant = jit.variant(spec, cf.ATTNJIT_DTYPE_BF16, head_dim)
    out = torch.empty_like(q)
    lse = torch.empty((1, DECODE_HEADS_Q, 1), device="cuda", dtype=torch.float32)
    prepared = jit.forward_args(q, k, v, out, spec["scalars"](length - 1), [],
                                torch.cuda.current_stream().cuda_stream, lse=lse)
    kernel = jit.plan_name(jit.launch_plan(variant, prepared))
    return variant, prepared, f"B=1 H={DECODE_HEADS_Q}:{DECODE_HEADS_KV} q=1 ({kernel})"


def main(argv):
    import torch
    decode = bool(argv) and argv[0] == "--decode"
    if decode:
        argv = argv[1:]
    if len(argv) < 3:
        sys.exit("usage: profile_variant.py [--decode] VARIANT LENGTH HEAD_DIM [ITERS]")
    name, length, head_dim = argv[0], cf.parse_length(argv[1]), int(argv[2])
    iters = int(argv[3]) if len(argv) > 3 else 5
    jit = aj.AttnJit(None, backend=aj.ATTNJIT_BACKEND_CUDA)
    make = decode_call if decode else prefill_call
    variant, prepared, label = make(torch, jit, name, length, head_dim)
    # Note: a decoding step is shorter than its host work: the GPU spins while the host queues
    # it (compare_flex.py's timing of decoding rows), so the time is the GPU's.
    ms = cf.time_cuda(lambda: jit.forward(variant, prepared), 1, iters,
                      sleep_cycles=cf.HOST_AHEAD_CYCLES if decode else 0)
    print(f"{name} L={length} D={head_dim} {label}: {ms:.3f} ms")
    jit.close()


if __name__ == "__main__":
    main(sys.argv[1:])
