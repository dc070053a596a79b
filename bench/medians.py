#!/usr/bin/env python3
"""medians: one row per benchmark, bytes and tool out of several interleaved rounds.

    /usr/bin/python3 bench/medians.py ROUNDS_CSV OUT_CSV

ROUNDS_CSV has bench/README.md's columns after a first "round" column (bench/rma-vs-raw
--rounds, bench/osu/run).  A row measured twice in one round (rma-vs-raw's 8-byte Put+flush
is in its size sweep and in its synchronisation sweep) counts once for that round, with its
better figure: the lower P50 (or mean) latency, else the higher bandwidth.  Each column of
OUT_CSV is then the median over rounds, so one round's scheduling stall moves no figure.
Also imported by bench/osu/plot.py."""
import csv
import statistics
import sys

COLUMNS = ("latency_us", "bandwidth_MBps", "p50_us")


def number(cell):
    return float(cell) if cell not in ("", None) else None


def better(a, b):
    """The better of two rows of one benchmark in one round."""
    for col, lower in (("p50_us", True), ("latency_us", True), ("bandwidth_MBps", False)):
        x, y = number(a[col]), number(b[col])
        if x is not None and y is not None and x != y:
            return a if (x < y) == lower else b
    return a


def medians(path):
    """{(benchmark, bytes, tool): (latency_us, bandwidth_MBps, p50_us)}, medians over rounds."""
    best = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["benchmark"], int(r["bytes"]), r["tool"])
            slot = (key, r["round"])
            best[slot] = better(best[slot], r) if slot in best else r
    by_key = {}
    for (key, _), r in best.items():
        by_key.setdefault(key, []).append(r)
    out = {}
    for key, rs in by_key.items():
        def med(col):
            vals = [number(r[col]) for r in rs if number(r[col]) is not None]
            return statistics.median(vals) if vals else None
        out[key] = tuple(med(c) for c in COLUMNS)
    return out


def write(med, path, order=None):
    """OUT_CSV in bench/README.md's columns; rows in ORDER's order (first seen) if given."""
    keys = order if order is not None else sorted(med)
    with open(path, "w") as f:
        f.write("benchmark,bytes,latency_us,bandwidth_MBps,tool,p50_us\n")
        for bench, size, tool in keys:
            cell = lambda v: "" if v is None else f"{v:.2f}"  # noqa: E731
            lat, band, p50 = med[(bench, size, tool)]
            f.write(f"{bench},{size},{cell(lat)},{cell(band)},{tool},{cell(p50)}\n")


def first_seen(path):
    """The keys of ROUNDS_CSV in the order they first appear (the run's order)."""
    seen = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            seen.setdefault((r["benchmark"], int(r["bytes"]), r["tool"]), None)
    return list(seen)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: medians.py ROUNDS_CSV OUT_CSV")
    write(medians(sys.argv[1]), sys.argv[2], first_seen(sys.argv[1]))
