#!/usr/bin/env python3
"""plot: bench/init/run's CSV as a PNG beside it (same name, .png).

    /usr/bin/python3 bench/init/plot.py CSV

Three panels against the number of ranks, lazy connections (the default) next to
MPIR_CVAR_CH4_GDR_LAZY_CONNECT=0: pinned bytes per rank after MPI_Init and after the ring
exchange (the largest rank's), MPI_Init's wall time (the slowest rank's), and the first and
second Sendrecv to a rank 3 away (the first pays the handshake when lazy; the mean over
ranks, measured at 8 ranks and more).  Each point is the median over the CSV's rounds.  Needs matplotlib (Debian: python3-matplotlib)."""
import csv
import statistics
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    """{(metric, lazy, "max"|"mean"): {ranks: [one per round]}} and the header comment."""
    with open(path) as f:
        title = f.readline().lstrip("# ").strip()
        rows = {}
        for r in csv.DictReader(f):
            for stat in ("max", "mean"):
                rows.setdefault((r["metric"], r["lazy"], stat), {}) \
                    .setdefault(int(r["ranks"]), []).append(float(r[stat]))
    return rows, title


def line(ax, rows, metric, lazy, label, scale=1.0, style="o-", stat="max"):
    pts = rows.get((metric, lazy, stat), {})
    n = [k for k in sorted(pts) if statistics.median(pts[k]) > 0]   # (0: not measured)
    if n:
        ax.plot(n, [statistics.median(pts[k]) / scale for k in n], style, label=label)


def main():
    path = sys.argv[1]
    rows, title = read(path)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    mode = {"yes": "lazy", "no": "eager"}
    ax = axes[0]
    for lazy, name in mode.items():
        line(ax, rows, "pinned_bytes_after_init", lazy, f"{name}: after MPI_Init", 2**20)
        line(ax, rows, "pinned_bytes_after_ring", lazy, f"{name}: after the ring", 2**20, "s--")
    ax.set_ylabel("pinned MiB per rank (largest rank)")
    ax = axes[1]
    for lazy, name in mode.items():
        line(ax, rows, "init_s", lazy, name)
    ax.set_ylabel("MPI_Init s (slowest rank)")
    ax = axes[2]
    for lazy, name in mode.items():
        line(ax, rows, "first_sendrecv_us", lazy, f"{name}: first Sendrecv", stat="mean")
        line(ax, rows, "second_sendrecv_us", lazy, f"{name}: second", 1.0, "s--", "mean")
    ax.set_ylabel("us (mean over ranks)")
    ax.set_yscale("log")
    for ax in axes:
        ax.set_xlabel("ranks")
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0 if ax.get_yscale() == "linear" else None)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title + " (medians over rounds)", fontsize=9)
    fig.tight_layout()
    out = path[:-4] + ".png" if path.endswith(".csv") else path + ".png"
    fig.savefig(out, dpi=110)
    print(f"bench/init: {out}")


if __name__ == "__main__":
    main()
