#!/usr/bin/env python3
"""Where the blocks of an sm90 call spent their time, from the records a timeline kernel wrote
(ATTNJIT_TUNE=sm90_timeline=1 ATTNJIT_TIMELINE=FILE; kernels_templates/attnjit/sm90_timeline.cuh):

    ATTNJIT_TUNE=sm90_timeline=1 ATTNJIT_TIMELINE=/tmp/doc64.json \\
        python3 tools/bench/profile_variant.py document 16K 64
    python3 tools/bench/timeline_report.py /tmp/doc64.json

Prints, over the blocks (median, 10th and 90th percentile, microseconds), each phase of a block:
its setup, the producer's search for the first kept tile, the consumers' waits for Q and the
first K, the tile loop, the epilogue; then a block's time fitted as fixed + per-tile * tiles
(least squares over the blocks), and how long an SM sat between one block's end and the next
one's start (one block per SM: the stamps of consecutive blocks on an SM share its clock).
Cycles become microseconds at --clock-ghz, else at the rate the records' global timer shows.
"""
import argparse
import json
import statistics
import sys


def percentiles(values):
    """(median, 10th, 90th percentile) of a non-empty list."""
    ordered = sorted(values)

    def at(q):
        return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]

    return statistics.median(ordered), at(0.1), at(0.9)


def clock_rate(records, stamp):
    """SM cycles per nanosecond, from each block's cycles and global-timer span."""
    rates = []
    for r in records:
        cycles = r["clock"][stamp["last_consumer_done"]] - r["clock"][stamp["block_start"]]
        ns = r["end_ns"] - r["start_ns"]
        if cycles > 0 and ns > 0:
            rates.append(cycles / ns)
    return statistics.median(rates) if rates else None


def phases(record, stamp):
    """A block's phases in cycles, by name; None where a stamp is missing."""
    c = record["clock"]

    def span(a, b):
        return c[stamp[b]] - c[stamp[a]] if c[stamp[a]] and c[stamp[b]] else None

    return {
        "setup (start -> barriers ready)": span("block_start", "setup_done"),
        "first kept tile found (producer)": span("setup_done", "first_k_issued"),
        "Q landed (consumer 0)": span("setup_done", "q_ready"),
        "first K landed (consumer 0)": span("setup_done", "first_k_ready"),
        # Note: kernels without the overlap (the short-rows kernel) do not stamp the first K: a
        # stamp in their tile loop made the 104-register consumers spill. Their loop counts from Q.
        "tile loop (consumer 0)": span("first_k_ready", "loop_done") or
                                  span("q_ready", "loop_done"),
        "epilogue (consumer 0)": span("loop_done", "output_done"),
        "last consumer after consumer 0": span("output_done", "last_consumer_done"),
        "whole block": span("block_start", "last_consumer_done"),
    }


def fit(points):
    """Least-squares (fixed, per_tile) for block = fixed + per_tile * tiles; None if degenerate."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_b = sum(b for _, b in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return None
    slope = sum((t - mean_t) * (b - mean_b) for t, b in points) / var
    return mean_b - slope * mean_t, slope


def sm_gaps(records, stamp):
    """Cycles an SM sat between a block's end and the next block's start on it."""
    by_sm = {}
    for r in records:
        by_sm.setdefault(r["smid"], []).append(r)
    gaps = []
    for blocks in by_sm.values():
        blocks.sort(key=lambda r: r["clock"][stamp["block_start"]])
        for before, after in zip(blocks, blocks[1:]):
            gap = after["clock"][stamp["block_start"]] - before["clock"][stamp["last_consumer_done"]]
            if gap >= 0:  # overlapping blocks (two per SM) have no gap to report
                gaps.append(gap)
    return gaps


def report(timeline, clock_ghz=None, out=sys.stdout):
    stamp = {name: i for i, name in enumerate(timeline["stamps"])}
    records = [r for r in timeline["records"] if r.get("written")]
    print(f"kernel: {timeline['kernel']}; grid {timeline['grid']}, {len(records)} blocks recorded",
          file=out)
    if not records:
        print("no block wrote its record", file=out)
        return 1
    rate = clock_ghz or clock_rate(records, stamp)
    if not rate:
        print("no clock rate: pass --clock-ghz", file=out)
        return 1
    us = 1.0 / (rate * 1000.0)  # microseconds per cycle
    print(f"clock: {rate:.3f} GHz ({'given' if clock_ghz else 'from the global timer'})", file=out)
    print(f"{'phase':36} {'median us':>10} {'p10':>8} {'p90':>8}", file=out)
    table = {}
    for r in records:
        for name, cycles in phases(r, stamp).items():
            if cycles is not None:
                table.setdefault(name, []).append(cycles * us)
    for name, values in table.items():
        median, low, high = percentiles(values)
        print(f"{name:36} {median:10.3f} {low:8.3f} {high:8.3f}", file=out)
    points = [(r["tiles"], (r["clock"][stamp["last_consumer_done"]] -
                            r["clock"][stamp["block_start"]]) * us)
              for r in records if r["clock"][stamp["last_consumer_done"]]]
    tiles = [t for t, _ in points]
    print(f"kept tiles a block: median {statistics.median(tiles)}, {min(tiles)} to {max(tiles)}",
          file=out)
    fitted = fit(points)
    if fitted:
        print(f"block time = {fitted[0]:.3f} us fixed + {fitted[1]:.3f} us a tile (least squares)",
              file=out)
    else:
        print("block time fit: every block kept as many tiles", file=out)
    gaps = sm_gaps(records, stamp)
    if gaps:
        median, low, high = percentiles([g * us for g in gaps])
        print(f"{'SM idle between blocks':36} {median:10.3f} {low:8.3f} {high:8.3f}", file=out)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("timeline", help="the file ATTNJIT_TIMELINE named")
    parser.add_argument("--clock-ghz", type=float, help="SM clock (default: from the records)")
    args = parser.parse_args(argv)
    with open(args.timeline) as f:
        timeline = json.load(f)
    return report(timeline, args.clock_ghz)


if __name__ == "__main__":
    sys.exit(main())
