#!/usr/bin/env python3
"""bench/opcost/plot_svg.py CSV SVG: instructions per call as grouped horizontal bars, one
group per MPI call, one bar per tool.  Plain SVG written by hand (no matplotlib needed)."""
import csv
import sys

TOOLS = [("gdr", "gdr", "#1f77b4"), ("gdr-doorbell-batch-0", "gdr, doorbell batch 0", "#6baed6"),
         ("peer-mpich-ucx", "MPICH 4.0.2 ch4:ucx", "#d62728")]
CALLS = [("put", "MPI_Put"), ("get", "MPI_Get"), ("acc", "MPI_Accumulate"),
         ("fop", "MPI_Fetch_and_op"), ("cas", "MPI_Compare_and_swap"),
         ("flushdone", "MPI_Win_flush (Put done)"), ("send", "MPI_Send 8 B")]


def main():
    val = {}
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            val[r["benchmark"].replace("opcost_", ""), r["tool"]] = float(r["instructions_per_call"])
    tools = [t for t in TOOLS if any((c, t[0]) in val for c, _ in CALLS)]
    top = max(val.values()) if val else 1.0
    left, width, bar, gap, head = 170, 480, 11, 12, 40
    group = bar * len(tools) + gap
    height = head + group * len(CALLS) + 40
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="11">' % (left + width + 90, height),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="16" font-size="13">Instructions per MPI call, 8 bytes, rank 0 '
         '(callgrind, Soft-RoCE guests)</text>']
    for i, (tid, label, colour) in enumerate(tools):
        x = left + i * 170
        o.append('<rect x="%d" y="24" width="10" height="10" fill="%s"/>' % (x, colour))
        o.append('<text x="%d" y="33">%s</text>' % (x + 14, label))
    for g, (cid, clabel) in enumerate(CALLS):
        y0 = head + g * group
        o.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                 % (left - 6, y0 + bar * len(tools) / 2 + 4, clabel))
        for i, (tid, _, colour) in enumerate(tools):
            v = val.get((cid, tid))
            if v is None:
                continue
            w = max(1, width * v / top)
            y = y0 + i * bar
            o.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>'
                     % (left, y, w, bar - 1, colour))
            o.append('<text x="%.1f" y="%d" font-size="9">%.0f</text>' % (left + w + 3, y + bar - 2, v))
    o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'
             % (left, head - 4, left, head + group * len(CALLS)))
    o.append('<text x="%d" y="%d">instructions per call: (cost(N2) - cost(N1)) / (N2 - N1)</text>'
             % (left, height - 12))
    o.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(o) + "\n")


if __name__ == "__main__":
    main()
