#!/usr/bin/env python3
"""plot_internode: the PNG of a bench/gpu/internode-run CSV.

    /usr/bin/python3 bench/gpu/plot_internode.py CSV OUT.png "MACHINE"

Two panels (Put, Get): bandwidth (MB/s, from the p50 column) against bytes, log-x, the
device window of each GPUDirect mode (solid) next to the same run's host window (dashed).
Needs matplotlib (Debian: python3-matplotlib)."""
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    out = {}
    for line in open(path):
        f = line.strip().split(",")
        if line.startswith(("#", "benchmark")) or len(f) < 6 or not f[0].startswith("bw_"):
            continue
        out.setdefault((f[0], f[4]), []).append((int(f[1]), float(f[3])))
    return out


def main():
    src, png, machine = sys.argv[1], sys.argv[2], sys.argv[3]
    data = rows(src)
    tools = sorted({t for (_, t) in data})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, op in zip(axes, ("put", "get")):
        for i, tool in enumerate(tools):
            color = "C%d" % i
            for kind, style in (("device", "-"), ("host", "--")):
                pts = sorted(data.get(("bw_%s_%s_create_flush" % (op, kind), tool), []))
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color,
                            marker="o" if kind == "device" else None,
                            label="%s, %s window" % (tool, kind))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes per operation")
        ax.set_title("MPI_%s + flush, 16 per flush" % op.capitalize())
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("MB/s (median)")
    axes[1].legend(fontsize=7)
    fig.suptitle("gdr device windows between nodes, per GPUDirect mode: %s" % machine,
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
