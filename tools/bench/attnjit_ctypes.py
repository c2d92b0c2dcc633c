#!/usr/bin/env python3
"""ctypes bindings for the attnjit C API (include/attnjit/attnjit.h), shared by the bench tools.

Every enum, struct and function of the header, field for field, plus `AttnJit`, a thin wrapper
that raises on any failure with attnjit's message and runs attnjit_forward on torch tensors (CUDA
device pointers on the CUDA backend, host pointers on the CPU backend).

Self-test (no torch needed):

    python3 tools/bench/attnjit_ctypes.py [--lib build/src/capi/libattnjit.so] [--include include]

checks sizeof/offsetof of every struct against the LP64 values of the header (and, when gcc and
the header are found, against a C program compiled from the header right now), then, with a
library, the version, a parse error, and a tiny fp32 forward pass on the CPU backend.
"""

import ctypes
import math
import os
import sys

# ---- Enums (values never change, per the header) ----

ATTNJIT_OK = 0
ATTNJIT_ERROR_INVALID_ARGUMENT = 1
ATTNJIT_ERROR_PARSE = 2
ATTNJIT_ERROR_UNSUPPORTED = 3
ATTNJIT_ERROR_NO_DEVICE = 4
ATTNJIT_ERROR_COMPILE = 5
ATTNJIT_ERROR_CACHE = 6
ATTNJIT_ERROR_CUDA = 7
ATTNJIT_ERROR_OUT_OF_MEMORY = 8
ATTNJIT_ERROR_IO = 9
ATTNJIT_ERROR_INTERNAL = 10

ATTNJIT_BACKEND_AUTO = 0
ATTNJIT_BACKEND_CUDA = 1
ATTNJIT_BACKEND_CPU = 2

ATTNJIT_LOG_DEFAULT = 0
ATTNJIT_LOG_TRACE = 1
ATTNJIT_LOG_DEBUG = 2
ATTNJIT_LOG_INFO = 3
ATTNJIT_LOG_WARN = 4
ATTNJIT_LOG_ERROR = 5
ATTNJIT_LOG_OFF = 6

ATTNJIT_DTYPE_BF16 = 0
ATTNJIT_DTYPE_FP16 = 1
ATTNJIT_DTYPE_FP32 = 2  # CPU backend only

ATTNJIT_LAYOUT_BHLD = 0  # [batch, heads, len, head_dim]
ATTNJIT_LAYOUT_BLHD = 1  # [batch, len, heads, head_dim]

ATTNJIT_PARAM_INT = 0
ATTNJIT_PARAM_FLOAT = 1

ATTNJIT_TENSOR_INT32 = 0
ATTNJIT_TENSOR_FLOAT32 = 1

ATTNJIT_RUNTIME_OPTIONS_VERSION = 1
ATTNJIT_VARIANT_DESC_VERSION = 1
ATTNJIT_FORWARD_ARGS_VERSION = 3
ATTNJIT_LAUNCH_PLAN_VERSION = 1

# C enums are `int` on every ABI the library targets (sizeof == 4, checked in the self-test).
c_enum = ctypes.c_int


# ---- Structs ----

class RuntimeOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int),
                ("cache_dir", ctypes.c_char_p),
                ("backend", c_enum),
                ("log_level", c_enum)]


class ParamDecl(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("type", c_enum)]


class TensorDecl(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("type", c_enum),
                ("rank", ctypes.c_int)]


class VariantDesc(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int),
                ("mask", ctypes.c_char_p),
                ("score", ctypes.c_char_p),
                ("params", ctypes.POINTER(ParamDecl)),
                ("num_params", ctypes.c_int),
                ("tensors", ctypes.POINTER(TensorDecl)),
                ("num_tensors", ctypes.c_int),
                ("dtype", c_enum),
                ("head_dim", ctypes.c_int)]


class Scalar(ctypes.Union):
    _fields_ = [("i", ctypes.c_int32),
                ("f", ctypes.c_float)]


class TensorArg(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("dims", ctypes.c_int64 * 2)]


class ForwardArgs(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int),
                ("q", ctypes.c_void_p),
                ("k", ctypes.c_void_p),
                ("v", ctypes.c_void_p),
                ("out", ctypes.c_void_p),
                ("lse", ctypes.POINTER(ctypes.c_float)),
                ("q_dtype", c_enum),
                ("k_dtype", c_enum),
                ("v_dtype", c_enum),
                ("batch", ctypes.c_int),
                ("num_heads_q", ctypes.c_int),
                ("num_heads_kv", ctypes.c_int),
                ("q_len", ctypes.c_int),
                ("kv_len", ctypes.c_int),
                ("layout", c_enum),
                ("q_strides", ctypes.c_int64 * 3),
                ("k_strides", ctypes.c_int64 * 3),
                ("v_strides", ctypes.c_int64 * 3),
                ("out_strides", ctypes.c_int64 * 3),
                ("scale", ctypes.c_float),
                ("params", ctypes.POINTER(Scalar)),
                ("num_params", ctypes.c_int),
                ("tensors", ctypes.POINTER(TensorArg)),
                ("num_tensors", ctypes.c_int),
                ("stream", ctypes.c_void_p),
                ("kv_page_table", ctypes.c_void_p),
                ("kv_page_table_width", ctypes.c_int),
                ("kv_page_size", ctypes.c_int),
                ("kv_num_pages", ctypes.c_int),
                ("q_seq_starts", ctypes.c_void_p),
                ("q_total", ctypes.c_int),
                ("kv_seq_starts", ctypes.c_void_p),
                ("kv_total", ctypes.c_int),
                ("kv_seq_lens", ctypes.c_void_p)]


class LaunchPlan(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int),
                ("backend", c_enum),
                ("kernel_family", ctypes.c_char_p),
                ("kernel", ctypes.c_char_p),
                ("entry", ctypes.c_char_p),
                ("reason", ctypes.c_char * 256),
                ("block_m", ctypes.c_int),
                ("block_n", ctypes.c_int),
                ("num_warps", ctypes.c_int),
                ("blocks_per_sm", ctypes.c_int),
                ("grid_x", ctypes.c_uint),
                ("grid_y", ctypes.c_uint),
                ("threads", ctypes.c_uint),
                ("dynamic_smem_bytes", ctypes.c_uint),
                ("gqa_group", ctypes.c_int),
                ("num_splits", ctypes.c_int),
                ("split_tiles", ctypes.c_int),
                ("summary_launches", ctypes.c_int),
                ("scratch_bytes", ctypes.c_size_t)]


# sizeof / offsetof on LP64 (x86-64 and aarch64 Linux), as gcc prints them for the header.
EXPECTED_LAYOUT = {
    RuntimeOptions: (24, dict(version=0, cache_dir=8, backend=16, log_level=20)),
    ParamDecl: (16, dict(name=0, type=8)),
    TensorDecl: (16, dict(name=0, type=8, rank=12)),
    VariantDesc: (64, dict(version=0, mask=8, score=16, params=24, num_params=32, tensors=40,
                           num_tensors=48, dtype=52, head_dim=56)),
    Scalar: (4, dict(i=0, f=0)),
    TensorArg: (24, dict(data=0, dims=8)),
    ForwardArgs: (296, dict(version=0, q=8, k=16, v=24, out=32, lse=40, q_dtype=48, k_dtype=52,
                            v_dtype=56, batch=60, num_heads_q=64, num_heads_kv=68, q_len=72,
                            kv_len=76, layout=80, q_strides=88, k_strides=112, v_strides=136,
                            out_strides=160, scale=184, params=192, num_params=200,
                            tensors=208, num_tensors=216, stream=224, kv_page_table=232,
                            kv_page_table_width=240, kv_page_size=244, kv_num_pages=248,
                            q_seq_starts=256, q_total=264, kv_seq_starts=272, kv_total=280,
                            kv_seq_lens=288)),
    LaunchPlan: (344, dict(version=0, backend=4, kernel_family=8, kernel=16, entry=24,
                           reason=32, block_m=288, block_n=292, num_warps=296,
                           blocks_per_sm=300, grid_x=304, grid_y=308, threads=312,
                           dynamic_smem_bytes=316, gqa_group=320, num_splits=324,
                           split_tiles=328, summary_launches=332, scratch_bytes=336)),
}

C_NAMES = {RuntimeOptions: "attnjit_runtime_options", ParamDecl: "attnjit_param_decl",
           TensorDecl: "attnjit_tensor_decl", VariantDesc: "attnjit_variant_desc",
           Scalar: "attnjit_scalar", TensorArg: "attnjit_tensor_arg",
           ForwardArgs: "attnjit_forward_args", LaunchPlan: "attnjit_launch_plan"}


# ---- Functions ----

def load(path):
    """The library at `path` with argtypes/restype set for every function of the header."""
    lib = ctypes.CDLL(path)
    p = ctypes.POINTER
    handle = ctypes.c_void_p  # attnjit_runtime* / attnjit_variant*: opaque
    signatures = {
        "attnjit_version": (ctypes.c_char_p, []),
        "attnjit_version_number": (ctypes.c_int, []),
        "attnjit_status_string": (ctypes.c_char_p, [c_enum]),
        "attnjit_last_error": (ctypes.c_char_p, []),
        "attnjit_runtime_options_init": (None, [p(RuntimeOptions)]),
        "attnjit_runtime_create": (c_enum, [p(handle), p(RuntimeOptions)]),
        "attnjit_runtime_destroy": (None, [handle]),
        "attnjit_runtime_backend": (c_enum, [handle]),
        "attnjit_variant_desc_init": (None, [p(VariantDesc)]),
        "attnjit_variant_create": (c_enum, [p(handle), handle, p(VariantDesc)]),
        "attnjit_variant_prepare": (c_enum, [handle]),
        "attnjit_variant_destroy": (None, [handle]),
        "attnjit_forward_args_init": (None, [p(ForwardArgs)]),
        "attnjit_forward": (c_enum, [handle, p(ForwardArgs)]),
    }
    # Note: newer than the library a benchmark may load (build_at_commits.sh builds old ones);
    # absent there, and the wrapper says so instead of failing to load.
    optional = {
        "attnjit_launch_plan_init": (None, [p(LaunchPlan)]),
        "attnjit_variant_launch_plan": (c_enum, [p(LaunchPlan), handle, p(ForwardArgs)]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    for name, (restype, argtypes) in optional.items():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = restype
            fn.argtypes = argtypes
    return lib


def default_library():
    """build/src/capi/libattnjit.so of this checkout, or $ATTNJIT_LIB."""
    if os.environ.get("ATTNJIT_LIB"):
        return os.environ["ATTNJIT_LIB"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "build", "src", "capi", "libattnjit.so")


class AttnJitError(RuntimeError):
    def __init__(self, what, status, message):
        super().__init__(f"{what} failed ({status}): {message}")
        self.status = status
        self.message = message


class AttnJit:
    """A runtime on one backend; every failure raises AttnJitError with attnjit's message."""

    def __init__(self, path=None, backend=ATTNJIT_BACKEND_CUDA, cache_dir=None,
                 log_level=ATTNJIT_LOG_DEFAULT):
        self.lib = load(path or default_library())
        options = RuntimeOptions()
        self.lib.attnjit_runtime_options_init(ctypes.byref(options))
        options.backend = backend
        options.log_level = log_level
        self._cache_dir = cache_dir.encode() if cache_dir else None  # kept alive with self
        options.cache_dir = self._cache_dir
        self.runtime = ctypes.c_void_p()
        self.check(self.lib.attnjit_runtime_create(ctypes.byref(self.runtime),
                                                   ctypes.byref(options)),
                   "attnjit_runtime_create")
        self.variants = []

    def version(self):
        return self.lib.attnjit_version().decode()

    def backend(self):
        return self.lib.attnjit_runtime_backend(self.runtime)

    def check(self, status, what):
        if status != ATTNJIT_OK:
            raise AttnJitError(what, status,
                               self.lib.attnjit_last_error().decode(errors="replace"))

    def variant(self, spec, dtype, head_dim, prepare=True):
        """spec: dict(mask=str, score=str, params=[(name, ATTNJIT_PARAM_*, ...)],
        tensors=[(name, ATTNJIT_TENSOR_*, rank)]). The handle is destroyed by close()."""
        params = (ParamDecl * max(1, len(spec["params"])))(
            *[ParamDecl(p[0].encode(), p[1]) for p in spec["params"]])
        tensors = (TensorDecl * max(1, len(spec["tensors"])))(
            *[TensorDecl(t[0].encode(), t[1], t[2]) for t in spec["tensors"]])
        desc = VariantDesc()
        self.lib.attnjit_variant_desc_init(ctypes.byref(desc))
        desc.mask = spec["mask"].encode() if spec.get("mask") else None
        desc.score = spec["score"].encode() if spec.get("score") else None
        desc.params, desc.num_params = params, len(spec["params"])
        desc.tensors, desc.num_tensors = tensors, len(spec["tensors"])
        desc.dtype, desc.head_dim = dtype, head_dim
        handle = ctypes.c_void_p()
        self.check(self.lib.attnjit_variant_create(ctypes.byref(handle), self.runtime,
                                                   ctypes.byref(desc)), "attnjit_variant_create")
        self.variants.append(handle)
        if prepare:
            self.check(self.lib.attnjit_variant_prepare(handle), "attnjit_variant_prepare")
        return handle

    def forward_args(self, q, k, v, out, scalars=(), tensors=(), stream=None,
                     layout=ATTNJIT_LAYOUT_BHLD, lse=None, scale=0.0, pages=None):
        """Arguments for attnjit_forward from torch tensors; keep the returned object alive.

        q/k/v/out: [B, H, L, D] for BHLD or [B, L, H, D] for BLHD, one dtype, each either
        contiguous (strides from `layout`) or with unit stride along D (explicit strides).
        pages: None, or (table, kv_len) for a paged cache: k and v are then the pools, [pages,
        Hkv, page_size, D] (BHLD) or [pages, page_size, Hkv, D] (BLHD), and table a contiguous
        int32 [B, width] tensor of page indices; kv_len is the sequences' length.
        scalars: [(ATTNJIT_PARAM_INT or _FLOAT, value)] in declaration order.
        tensors: contiguous int32 / float32 torch tensors of rank 1 or 2, declaration order.
        lse: None or a contiguous float32 [B, Hq, q_len] tensor.
        """
        import torch
        dtypes = {torch.bfloat16: ATTNJIT_DTYPE_BF16, torch.float16: ATTNJIT_DTYPE_FP16,
                  torch.float32: ATTNJIT_DTYPE_FP32}
        for name, t in (("q", q), ("k", k), ("v", v), ("out", out)):
            if t.dim() != 4 or t.dtype != q.dtype or (t.stride(3) != 1 and t.shape[3] > 1):
                raise ValueError(f"{name}: expected a 4-D {q.dtype} tensor with unit stride "
                                 f"along head_dim")
        if layout == ATTNJIT_LAYOUT_BHLD:
            b, hq, lq, _ = q.shape
            hkv, lkv = k.shape[1], k.shape[2]
        else:
            b, lq, hq, _ = q.shape
            lkv, hkv = k.shape[1], k.shape[2]
        args = ForwardArgs()
        self.lib.attnjit_forward_args_init(ctypes.byref(args))
        args.q, args.k, args.v = q.data_ptr(), k.data_ptr(), v.data_ptr()
        args.out = out.data_ptr()
        if lse is not None:
            if lse.dtype != torch.float32 or not lse.is_contiguous() or \
                    tuple(lse.shape) != (b, hq, lq):
                raise ValueError("lse: expected a contiguous float32 [B, Hq, q_len] tensor")
            args.lse = ctypes.cast(ctypes.c_void_p(lse.data_ptr()),
                                   ctypes.POINTER(ctypes.c_float))
        args.q_dtype = args.k_dtype = args.v_dtype = dtypes[q.dtype]
        args.batch, args.num_heads_q, args.num_heads_kv = b, hq, hkv
        args.q_len, args.kv_len = lq, lkv
        args.layout = layout
        if pages is not None:
            table, args.kv_len = pages
            if table.dtype != torch.int32 or not table.is_contiguous() or table.dim() != 2 or \
                    table.shape[0] != b:
                raise ValueError("pages: expected a contiguous int32 [B, width] table")
            args.kv_page_table = table.data_ptr()
            args.kv_page_table_width = table.shape[1]
            args.kv_page_size = lkv  # the pools' row extent is the page size
            args.kv_num_pages = k.shape[0]
        # Explicit strides (batch, head, row) in elements for a tensor that is not contiguous;
        # all zero (from `layout`) otherwise.
        for field, t in (("q_strides", q), ("k_strides", k), ("v_strides", v),
                         ("out_strides", out)):
            if not t.is_contiguous():
                s = t.stride()
                getattr(args, field)[:] = (s[0], s[1], s[2]) if layout == ATTNJIT_LAYOUT_BHLD \
                    else (s[0], s[2], s[1])
        args.scale = scale
        scalar_array = (Scalar * max(1, len(scalars)))()
        for i, (kind, value) in enumerate(scalars):
            if kind == ATTNJIT_PARAM_FLOAT:
                scalar_array[i].f = value
            else:
                scalar_array[i].i = value
        tensor_array = (TensorArg * max(1, len(tensors)))()
        for i, t in enumerate(tensors):
            if not t.is_contiguous() or t.dim() not in (1, 2) or \
                    t.dtype not in (torch.int32, torch.float32):
                raise ValueError(f"tensor {i}: expected a contiguous int32/float32 rank 1 or 2")
            tensor_array[i].data = t.data_ptr()
            tensor_array[i].dims[0] = t.shape[0]
            tensor_array[i].dims[1] = t.shape[1] if t.dim() == 2 else 1
        args.params, args.num_params = scalar_array, len(scalars)
        args.tensors, args.num_tensors = tensor_array, len(tensors)
        args.stream = stream
        return (args, scalar_array, tensor_array,
                (q, k, v, out, lse, tuple(tensors), pages[0] if pages is not None else None))

    def forward(self, variant, prepared):
        self.check(self.lib.attnjit_forward(variant, ctypes.byref(prepared[0])),
                   "attnjit_forward")

    def launch_plan(self, variant, prepared):
        """What attnjit_forward would launch for `prepared` (forward_args'), as a LaunchPlan;
        None for a library older than attnjit_variant_launch_plan."""
        if not hasattr(self.lib, "attnjit_variant_launch_plan"):
            return None
        plan = LaunchPlan()
        self.lib.attnjit_launch_plan_init(ctypes.byref(plan))
        self.check(self.lib.attnjit_variant_launch_plan(ctypes.byref(plan), variant,
                                                        ctypes.byref(prepared[0])),
                   "attnjit_variant_launch_plan")
        return plan

    @staticmethod
    def plan_name(plan):
        """"sm90 short_rows", "sm80 decoding, 8 slices", "cpu reference" (as `attnjit bench`
        prints it), or "-" without a plan."""
        if plan is None:
            return "-"
        if plan.backend == ATTNJIT_BACKEND_CPU:
            return "cpu reference"
        name = f"{plan.kernel_family.decode()} {plan.kernel.decode()}"
        return name + (f", {plan.num_splits} slices" if plan.num_splits > 1 else "")

    def close(self):
        for handle in self.variants:
            self.lib.attnjit_variant_destroy(handle)
        self.variants = []
        if self.runtime:
            self.lib.attnjit_runtime_destroy(self.runtime)
            self.runtime = ctypes.c_void_p()


# ---- Self-test ----

def _layout_of(cls):
    return ctypes.sizeof(cls), {name: getattr(cls, name).offset for name, _ in cls._fields_}


def check_layout_against_gcc(include_dir, compiler="gcc"):
    """Compiles a program printing sizeof/offsetof of every struct of the header; compares.
    Returns None when it cannot compile (no compiler or header), else a list of mismatches."""
    import shutil
    import subprocess
    import tempfile
    header = os.path.join(include_dir, "attnjit", "attnjit.h")
    if shutil.which(compiler) is None or not os.path.exists(header):
        return None
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <attnjit/attnjit.h>",
             "int main(void) {"]
    for cls, cname in C_NAMES.items():
        lines.append(f'  printf("{cname} sizeof %zu\\n", sizeof({cname}));')
        for field, _ in cls._fields_:
            lines.append(f'  printf("{cname} {field} %zu\\n", offsetof({cname}, {field}));')
    for enum in ("attnjit_status", "attnjit_backend", "attnjit_log_level", "attnjit_dtype",
                 "attnjit_layout", "attnjit_param_type", "attnjit_tensor_type"):
        lines.append(f'  printf("{enum} sizeof %zu\\n", sizeof({enum}));')
    lines += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run([compiler, "-std=c99", "-Wall", "-Werror", "-I", include_dir, src, "-o",
                        exe], check=True)
        output = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    c = {}
    for line in output.splitlines():
        struct, field, value = line.split()
        c[(struct, field)] = int(value)
    problems = []
    for cls, cname in C_NAMES.items():
        size, offsets = _layout_of(cls)
        if c[(cname, "sizeof")] != size:
            problems.append(f"sizeof({cname}): C {c[(cname, 'sizeof')]}, ctypes {size}")
        for field, offset in offsets.items():
            if c[(cname, field)] != offset:
                problems.append(f"offsetof({cname}, {field}): C {c[(cname, field)]}, "
                                f"ctypes {offset}")
    for key, value in c.items():
        if key[0].startswith("attnjit_") and key[0] not in C_NAMES.values() and value != \
                ctypes.sizeof(c_enum):
            problems.append(f"sizeof({key[0]}) is {value}, ctypes uses {ctypes.sizeof(c_enum)}")
    return problems


def self_test(lib_path=None, include_dir=None):
    """Raises AssertionError on any problem; prints what it checked."""
    for cls, (size, offsets) in EXPECTED_LAYOUT.items():
        got_size, got_offsets = _layout_of(cls)
        assert got_size == size, f"sizeof({C_NAMES[cls]}): ctypes {got_size}, expected {size}"
        assert got_offsets == offsets, \
            f"offsets of {C_NAMES[cls]}: ctypes {got_offsets}, expected {offsets}"
    print(f"layout: {len(EXPECTED_LAYOUT)} structs match the LP64 table")
    if include_dir is None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        include_dir = os.path.join(root, "include")
    problems = check_layout_against_gcc(include_dir)
    if problems is None:
        print("layout: gcc or the header not found; compiled check skipped")
    else:
        assert not problems, "ctypes layout differs from the C header:\n  " + \
            "\n  ".join(problems)
        print(f"layout: every sizeof/offsetof matches a C program compiled from "
              f"{include_dir}/attnjit/attnjit.h")
    if lib_path is None:
        return
    jit = AttnJit(lib_path, backend=ATTNJIT_BACKEND_CPU, log_level=ATTNJIT_LOG_ERROR)
    try:
        assert jit.lib.attnjit_version_number() == 100 * int(jit.version().split(".")[1]) + \
            int(jit.version().split(".")[2]) + 10000 * int(jit.version().split(".")[0])
        assert jit.backend() == ATTNJIT_BACKEND_CPU
        assert jit.lib.attnjit_status_string(ATTNJIT_ERROR_PARSE)
        try:
            jit.variant(dict(mask="q_idx >= kv_idz", score="", params=[], tensors=[]),
                        ATTNJIT_DTYPE_FP32, 32)
            raise AssertionError("a bad mask was accepted")
        except AttnJitError as e:
            assert e.status == ATTNJIT_ERROR_PARSE and "kv_idz" in e.message, e
        # One head, q_len 2, kv_len 3, D 32, causal + a float param in the score + a tensor,
        # from plain ctypes arrays: checks every field that carries data.
        d, lq, lkv = 32, 2, 3
        handle = jit.variant(dict(mask="q_idx >= kv_idx", score="score * c + bias[kv_idx]",
                                  params=[("c", ATTNJIT_PARAM_FLOAT)],
                                  tensors=[("bias", ATTNJIT_TENSOR_FLOAT32, 1)]),
                             ATTNJIT_DTYPE_FP32, d)
        q = (ctypes.c_float * (lq * d))(*[0.1 * ((i % 7) - 3) for i in range(lq * d)])
        k = (ctypes.c_float * (lkv * d))(*[0.05 * ((i % 5) - 2) for i in range(lkv * d)])
        v = (ctypes.c_float * (lkv * d))(*[float(i // d) + 0.01 * (i % d)
                                           for i in range(lkv * d)])
        out = (ctypes.c_float * (lq * d))()
        lse = (ctypes.c_float * lq)()
        bias = (ctypes.c_float * lkv)(0.5, -0.25, 1.0)
        scalars = (Scalar * 1)()
        scalars[0].f = 1.5
        tensor = (TensorArg * 1)()
        tensor[0].data = ctypes.addressof(bias)
        tensor[0].dims[0], tensor[0].dims[1] = lkv, 1
        args = ForwardArgs()
        jit.lib.attnjit_forward_args_init(ctypes.byref(args))
        assert args.version == ATTNJIT_FORWARD_ARGS_VERSION
        args.q, args.k, args.v = ctypes.addressof(q), ctypes.addressof(k), ctypes.addressof(v)
        args.out = ctypes.addressof(out)
        args.lse = lse
        args.q_dtype = args.k_dtype = args.v_dtype = ATTNJIT_DTYPE_FP32
        args.batch = args.num_heads_q = args.num_heads_kv = 1
        args.q_len, args.kv_len, args.layout = lq, lkv, ATTNJIT_LAYOUT_BHLD
        args.params, args.num_params = scalars, 1
        args.tensors, args.num_tensors = tensor, 1
        jit.check(jit.lib.attnjit_forward(handle, ctypes.byref(args)), "attnjit_forward")
        plan = jit.launch_plan(handle, (args,))
        assert plan.version == ATTNJIT_LAUNCH_PLAN_VERSION and plan.kernel == b"reference", plan
        assert jit.plan_name(plan) == "cpu reference" and b"CPU" in plan.reason, plan.reason
        scale = 1.0 / math.sqrt(d)
        for i in range(lq):
            s = [sum(q[i * d + x] * k[j * d + x] for x in range(d)) * scale * 1.5 + bias[j]
                 for j in range(i + 1)]
            m = max(s)
            w = [math.exp(x - m) for x in s]
            ref_lse = m + math.log(sum(w))
            assert abs(lse[i] - ref_lse) < 1e-5, (i, lse[i], ref_lse)
            for x in range(d):
                ref = sum(w[j] * v[j * d + x] for j in range(i + 1)) / sum(w)
                assert abs(out[i * d + x] - ref) < 1e-5, (i, x, out[i * d + x], ref)
        print(f"library: {lib_path} (attnjit {jit.version()}): version, parse error, CPU forward "
              f"with a float param, a float32 tensor and the LSE, and its launch plan, all as expected")
    finally:
        jit.close()


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description="self-test of the attnjit ctypes bindings")
    parser.add_argument("--lib", help="libattnjit.so to exercise (default: the build's, if any)")
    parser.add_argument("--include", help="the include/ folder holding attnjit/attnjit.h")
    parser.add_argument("--no-lib", action="store_true", help="layout checks only")
    cli = parser.parse_args()
    lib_path = None if cli.no_lib else (cli.lib or default_library())
    if lib_path is not None and not os.path.exists(lib_path):
        if cli.lib:
            sys.exit(f"no library at {lib_path}")
        print(f"library: {lib_path} not found; layout checks only")
        lib_path = None
    self_test(lib_path, cli.include)
    print("attnjit_ctypes self-test: OK")
