#!/usr/bin/env python3
"""plot_halo: the PNG of a halo CSV (bench/gpu/halo.c's and halo_device.cu's rows, several runs
in one file, '#' lines and repeated headers allowed).

    /usr/bin/python3 bench/gpu/plot_halo.py bench/results/halo-h100.csv OUT.png "MACHINE"

Microseconds per iteration (the p50 column) against bytes, log-log: one line per way
(halo_host, halo_enqueue, halo_device, and their -notify forms dashed) and tool; several runs
of a size give their median and the spread as an error bar.  Needs matplotlib (Debian: python3-matplotlib)."""
import statistics
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(path):
    out = {}
    for line in open(path):
        f = line.strip().split(",")
        if line.startswith(("#", "benchmark")) or len(f) < 6 or not f[0].startswith("halo_"):
            continue
        # halo.c's rows end with the p50 (its third column is the mean); halo_device.cu's
        # third column is the p50 and the last says so
        try:
            us = float(f[5])
        except ValueError:
            us = float(f[2])
        out.setdefault((f[0], f[4]), []).append((int(f[1]), us))
    return out


def main():
    src, png, machine = sys.argv[1], sys.argv[2], sys.argv[3]
    fig, ax = plt.subplots(figsize=(8, 5))
    for (way, tool), pts in sorted(series(src).items()):
        # several runs of a size (rounds): their median, the spread as an error bar
        by_size = {}
        for b, us in pts:
            by_size.setdefault(b, []).append(us)
        sizes = sorted(by_size)
        mid = [statistics.median(by_size[b]) for b in sizes]
        lo = [m - min(by_size[b]) for b, m in zip(sizes, mid)]
        hi = [max(by_size[b]) - m for b, m in zip(sizes, mid)]
        dashed = "notify" in way
        ax.errorbar(sizes, mid, yerr=[lo, hi], marker="o", ms=3, capsize=2,
                    linestyle="--" if dashed else "-", label=f"{way} ({tool})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("halo bytes")
    ax.set_ylabel("us per iteration (p50; lower is better)")
    ax.set_title(f"halo loop: host-driven, stream-enqueued, device API\n{machine}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
