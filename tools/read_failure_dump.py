#!/usr/bin/env python3
"""Reads a failure dump (tests/support/failure_dump.hpp) that a failing GPU test case left in
ATTNJIT_TEST_DUMP_DIR (gpu-check.sh packs them into OUTDIR/failures.tar.gz).

  tools/read_failure_dump.py CASE.dump [--worst N] [--npz OUT.npz]

Prints the header (the case, its parameters, the error stats, the anatomy), then a summary of
the arrays: the largest errors with their (b, h, row, col), one character per query row showing
which rows are wrong, and whether the LSE matches. --npz saves every array (bf16 and fp16 widened
to float32, strided tensors made contiguous [batch, heads, len, head_dim]) and the header.
"""
import argparse
import json
import sys

try:
    import numpy as np
except ImportError:  # Note: reported, not a traceback: the GPU machine has numpy, CI may not.
    np = None

# Characters of the row picture, from the best row to the worst.
ROW_OK, ROW_WRONG, ROW_NON_FINITE = ".", "x", "N"


def read_dump(path):
    with open(path, "rb") as f:
        data = f.read()
    newline = data.index(b"\n")
    header = json.loads(data[:newline])
    return header, data[newline + 1:]


def decode(entry, data):
    """One array as float32 (int32 tensors as they are), contiguous in its logical shape."""
    raw = data[entry["offset"]:entry["offset"] + entry["bytes"]]
    if len(raw) != entry["bytes"]:
        raise ValueError(f"{entry['name']}: the file ends inside the array")
    dtype = entry["dtype"]
    if dtype == "bf16":
        # bf16 is the top half of a float32: shift its bits into place.
        flat = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    elif dtype == "fp16":
        flat = np.frombuffer(raw, "<f2").astype(np.float32)
    elif dtype == "fp32":
        flat = np.frombuffer(raw, "<f4")
    elif dtype == "int32":
        flat = np.frombuffer(raw, "<i4")
    else:
        raise ValueError(f"{entry['name']}: unknown dtype {dtype}")
    shape, strides = entry["shape"], entry["strides"]
    last = sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else -1
    if last >= flat.size:
        raise ValueError(f"{entry['name']}: shape {shape} with strides {strides} overruns the data")
    view = np.lib.stride_tricks.as_strided(
        flat, shape=shape, strides=[s * flat.itemsize for s in strides], writeable=False)
    return np.ascontiguousarray(view)


def load_arrays(header, data):
    return {entry["name"]: decode(entry, data) for entry in header["arrays"]}


def number(value):
    """A header number; JSON has no NaN or inf, so the writer stores them as null."""
    return "nan" if value is None else f"{value:.3e}"


def print_header(header):
    shape = header["shape"]
    print(f"case: {header['case']}")
    print(f"  mask: {header['mask']}")
    print(f"  score: {header['score']}")
    for param in header["params"]:
        print(f"  param {param['decl']} = {param['value']}")
    for tensor in header["tensors"]:
        print(f"  tensor {tensor['decl']} dims {tensor['dims']}")
    for p in header["planted"]:
        print(f"  planted {p['tensor']}[{p['b']},{p['h']},{p['row']},{p['d']}] = {p['value']}")
    print(f"  {header['dtype']} {header['layout']} D={header['head_dim']} B={shape['batch']} "
          f"Hq={shape['heads_q']} Hkv={shape['heads_kv']} Lq={shape['q_len']} "
          f"Lkv={shape['kv_len']} pad={shape['row_padding']} seed={header['seed']} "
          f"scale={header['effective_scale']} lse={'on' if header['with_lse'] else 'off'}")
    print(f"  kernel family: {header['kernel_family'] or '<unset>'}, "
          f"ATTNJIT_TUNE: {header['tune'] or '<unset>'}")
    errors = header["errors"]
    for name in ("out", "lse"):
        stats, limit = errors[name], errors[name + "_limit"]
        if stats is None:
            continue
        print(f"  {name}: max_abs_error {number(stats['max_abs_error'])} (at "
              f"{stats['worst_index']}, limit {limit['max_abs_error']:.1e}) nmse "
              f"{number(stats['nmse'])} (limit {limit['nmse']:.1e}) non_finite "
              f"{stats['non_finite']} of {stats['count']}")
    print(f"  writes outside the output view: {errors['padding_writes']}")
    if "dropped" in header:
        dropped = header["dropped"]
        print(f"  dropped: {', '.join(dropped['arrays'])} ({dropped['reason']})")
    if header["anatomy"]:
        print("where the output is wrong:")
        print(header["anatomy"].rstrip("\n"))


def output_errors(out, ref):
    """|out - ref| with inf where exactly one side is finite or they are different non-finites."""
    both_finite = np.isfinite(out) & np.isfinite(ref)
    same_non_finite = (np.isnan(out) & np.isnan(ref)) | (np.isinf(out) & (out == ref))
    error = np.where(both_finite, np.abs(out.astype(np.float64) - ref), np.inf)
    return np.where(same_non_finite, 0.0, error)


def print_worst(out, ref, error, count):
    flat = np.argsort(error, axis=None, kind="stable")[::-1][:count]
    print(f"worst {len(flat)} elements (b, h, row, col): out, reference, |error|")
    for index in flat:
        b, h, row, col = np.unravel_index(index, error.shape)
        print(f"  ({b}, {h}, {row}, {col}): {out[b, h, row, col]:.6g}, "
              f"{ref[b, h, row, col]:.6g}, {error[b, h, row, col]:.3e}")


def print_rows(error, tolerance, width=128):
    """One character per query row: ok, wrong, or non-finite somewhere in the row."""
    row_error = error.max(axis=3)
    print(f"rows ({ROW_OK} ok, {ROW_WRONG} error > {tolerance:.1e}, {ROW_NON_FINITE} non-finite), "
          f"{width} per line:")
    for b in range(row_error.shape[0]):
        for h in range(row_error.shape[1]):
            chars = "".join(ROW_NON_FINITE if e == np.inf else ROW_WRONG if e > tolerance
                            else ROW_OK for e in row_error[b, h])
            for start in range(0, len(chars), width):
                print(f"  b{b} h{h} rows {start:>6}: {chars[start:start + width]}")
    wrong = int((row_error > tolerance).sum())
    print(f"{wrong} of {row_error.size} rows wrong")


def print_lse(lse, ref_lse, tolerance):
    error = output_errors(lse, ref_lse)
    bad = error > tolerance
    if not bad.any():
        print(f"lse matches (max error {error.max():.3e}, limit {tolerance:.1e})")
        return
    print(f"lse differs in {int(bad.sum())} of {bad.size} rows (limit {tolerance:.1e}); worst:")
    for index in np.argsort(error, axis=None, kind="stable")[::-1][:min(5, int(bad.sum()))]:
        b, h, row = np.unravel_index(index, error.shape)
        print(f"  ({b}, {h}, {row}): {lse[b, h, row]:.6g}, reference {ref_lse[b, h, row]:.6g}")


def print_summary(header, arrays, worst):
    if "out" not in arrays or "ref_out" not in arrays:
        print("no output arrays in this dump (see 'dropped')")
        return
    out, ref = arrays["out"], arrays["ref_out"]
    error = output_errors(out, ref)
    finite = error[np.isfinite(error)]
    print(f"out: max abs error {finite.max() if finite.size else 0.0:.3e} over finite pairs, "
          f"{int(np.isinf(error).sum())} non-finite mismatches of {error.size}")
    print_worst(out, ref, error, worst)
    print_rows(error, header["errors"]["out_limit"]["max_abs_error"])
    if "lse" in arrays and "ref_lse" in arrays:
        print_lse(arrays["lse"], arrays["ref_lse"], header["errors"]["lse_limit"]["max_abs_error"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", help="a .dump file")
    parser.add_argument("--worst", type=int, default=8, help="how many worst elements to list")
    parser.add_argument("--npz", metavar="OUT", help="save the arrays and header as numpy arrays")
    args = parser.parse_args()
    if np is None:
        sys.exit("read_failure_dump: needs numpy (python3 -m pip install numpy)")
    header, data = read_dump(args.dump)
    print_header(header)
    arrays = load_arrays(header, data)
    print_summary(header, arrays, args.worst)
    if args.npz:
        # Note: npz keys must be identifiers for np.load(...).name access: "tensor:doc" -> tensor_doc.
        named = {name.replace(":", "_"): value for name, value in arrays.items()}
        np.savez(args.npz, header=np.array(json.dumps(header)), **named)
        print(f"saved {', '.join(sorted(named))} and header to {args.npz}")


if __name__ == "__main__":
    main()
