#!/usr/bin/env python3
"""Runs one standard variant through attnjit on CUDA tensors, a few times, for a profiler:

    ncu -k attnjit_fwd -s 2 -c 1 --set full python3 tools/bench/profile_variant.py document 16K 64

Arguments: variant (a compare_flex.py name), length (16K syntax), head dim. The shape follows
compare_flex.py (B * H * L = 1M tokens, H = 2048 / D). Prints the median time of the timed calls.
"""
import sys

import compare_flex as cf
import attnjit_ctypes as aj


def main(argv):
    import torch
    name, length, head_dim = argv[0], cf.parse_length(argv[1]), int(argv[2])
    iters = int(argv[3]) if len(argv) > 3 else 5
    heads = max(1, 2048 // head_dim)
    batch = max(1, 16 * 65536 // (heads * length))
    spec = cf.variants()[name]
    shape = (batch, heads, length, head_dim)
    gen = torch.Generator(device="cuda").manual_seed(length + head_dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen)
               for _ in range(3))
    documents, random_sizes = cf.DOCUMENT_LAYOUTS.get(name, cf.DOCUMENT_LAYOUTS["document"])
    doc = cf.document_ids(length, "cuda", documents, random_sizes)
    jit = aj.AttnJit(None, backend=aj.ATTNJIT_BACKEND_CUDA)
    variant = jit.variant(spec, cf.ATTNJIT_DTYPE_BF16, head_dim)
    out = torch.empty_like(q)
    lse = torch.empty((batch, heads, length), device="cuda", dtype=torch.float32)
    prepared = jit.forward_args(q, k, v, out, spec["scalars"], [doc] if spec["tensors"] else [],
                                torch.cuda.current_stream().cuda_stream, lse=lse)
    ms = cf.time_cuda(lambda: jit.forward(variant, prepared), 1, iters)
    print(f"{name} L={length} D={head_dim} B={batch} H={heads}: {ms:.3f} ms")
    jit.close()


if __name__ == "__main__":
    main(sys.argv[1:])
