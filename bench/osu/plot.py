#!/usr/bin/env python3
"""plot: bench/osu/run's summary of DIR/raw.csv (every round's rows).

    /usr/bin/python3 bench/osu/plot.py DIR "MACHINE"

Writes DIR/osu.csv (the median over rounds of each benchmark, bytes and tool, in
bench/README.md's columns), DIR/ratio.txt (gdr against each peer, row by row: the P50
latency ratio gdr/peer, or the bandwidth ratio peer/gdr, so that above 1 gdr is behind,
with the rows where gdr is behind listed first) and DIR/osu_<program>.png: the P50 latency
(or bandwidth) against bytes, one line per window/sync and MPI.  Needs matplotlib
(Debian: python3-matplotlib)."""
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from medians import medians, write  # noqa: E402  (bench/medians.py)


def value(m, bw):
    """The number a row is compared and plotted by: bandwidth, else the P50 (the mean
    where OMB printed no percentiles)."""
    lat, band, p50 = m
    return band if bw else (p50 if p50 is not None else lat)


def main():
    out, machine = sys.argv[1], sys.argv[2]
    med = medians(os.path.join(out, "raw.csv"))
    write(med, os.path.join(out, "osu.csv"))

    tools = sorted({k[2] for k in med})
    peers = [t for t in tools if t != "gdr"]
    lines = []
    for peer in peers:
        for (bench, size, tool), m in sorted(med.items()):
            if tool != "gdr" or (bench, size, peer) not in med:
                continue
            bw = "_bw/" in bench or "_bibw/" in bench
            g, p = value(m, bw), value(med[(bench, size, peer)], bw)
            if not g or not p:
                continue
            ratio = p / g if bw else g / p
            lines.append((ratio, f"{bench:40s} {size:>8d} B  gdr {g:10.2f}  {peer} {p:10.2f}  "
                                 f"{'peer/gdr' if bw else 'gdr/peer'} {ratio:5.2f}"))
    lines.sort(key=lambda x: -x[0])
    behind = sum(1 for r, _ in lines if r > 1.0)
    with open(os.path.join(out, "ratio.txt"), "w") as f:
        f.write(f"# {machine}\n# {len(lines)} rows; gdr behind on {behind} "
                "(ratio above 1: P50 latency gdr/peer, bandwidth peer/gdr)\n")
        for _, text in lines:
            f.write(text + "\n")

    programs = sorted({k[0].split("/")[0] for k in med})
    for prog in programs:
        bw = prog.endswith(("_bw", "_bibw"))
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for (bench, tool) in sorted({(k[0], k[2]) for k in med if k[0].startswith(prog + "/")}):
            pts = sorted((s, value(m, bw)) for (b, s, t), m in med.items()
                         if b == bench and t == tool and value(m, bw) is not None)
            ax.plot([s for s, _ in pts], [v for _, v in pts], marker="o", ms=2.5, lw=1,
                    ls="-" if tool == "gdr" else "--",
                    label=f"{bench.split('/', 1)[1]} ({tool})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes")
        ax.set_ylabel("MB/s (higher is better)" if bw else "P50 latency, us (lower is better)")
        ax.set_title(f"{prog}: gdr (solid) and peers (dashed)\n{machine}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=5, ncol=3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"{prog}.png"), dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    main()
