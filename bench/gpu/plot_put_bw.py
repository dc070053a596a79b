#!/usr/bin/env python3
"""plot_put_bw: the PNG of a put_bw CSV (bench/gpu/put_bw.c's rows, several runs in one file:
each run's own 'cudaMemcpy_d2d' rows belong to the tool rows above them).

    python3 bench/gpu/plot_put_bw.py bench/results/put_bw-h100-gdr-local.csv OUT.png "MACHINE"

Bandwidth (GB/s, from the p50 column) against bytes, log-log: Put and Get of each tool,
cudaMemcpy device-to-device of the first run.  Needs matplotlib (Debian: python3-matplotlib)."""
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def runs(path):
    out, cur = [], None
    for line in open(path):
        f = line.strip().split(",")
        if line.startswith("benchmark"):
            cur = {}
            out.append(cur)
        elif cur is not None and len(f) >= 6 and not line.startswith("#"):
            cur.setdefault((f[0], f[4]), []).append((int(f[1]), float(f[5])))
    return out


def main():
    src, png, machine = sys.argv[1], sys.argv[2], sys.argv[3]
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, run in enumerate(runs(src)):
        for (bench, tool), pts in sorted(run.items()):
            if not bench.startswith(("bw_put", "bw_get", "cudaMemcpy")):
                continue
            if bench.startswith("cudaMemcpy") and i > 0:
                continue
            xs = [b for b, _ in pts]
            ys = [b / us / 1e3 for b, us in pts]
            ax.plot(xs, ys, marker="o", ms=3, label=f"{bench} ({tool})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes per operation")
    ax.set_ylabel("GB/s (p50)")
    ax.set_title(f"same-node Put/Get + flush vs cudaMemcpy D2D\n{machine}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
