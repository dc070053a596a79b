#!/usr/bin/env python3
"""p2p: bench/osu/run --p2p's summary of DIR/raw.csv (every round's rows).

    /usr/bin/python3 bench/osu/p2p.py DIR "MACHINE"

Compares gdr with the peer (the first tool that is not gdr, peer-mpich-ucx by default) size
by size on the P50s: osu_latency's P50 latency (us), osu_bw's and osu_bibw's median window
(MB/s, rows osu_bw/p50 and osu_bibw/p50).  For each size: each MPI's median over rounds and
its spread (largest minus smallest round), and the ratio, above 1 when gdr is behind
(latency gdr/peer, bandwidth peer/gdr).  A size is marked BEHIND when gdr is behind by more
than the round-to-round spread: the medians differ by more than the larger of the two
spreads (with one round there is no spread and every size gdr is behind on is marked).

Writes DIR/osu.csv (bench/medians.py: every row's median over rounds, bench/README.md's
columns), DIR/p2p.csv (program,bytes,unit,gdr_median,peer_median,ratio,gdr_spread,
peer_spread,rounds,behind), DIR/p2p.txt (the same as text tables, the marked sizes listed
after each) and DIR/p2p.svg (three panels, drawn by hand: no matplotlib)."""
import csv
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from medians import first_seen, medians, write  # noqa: E402  (bench/medians.py)

# (program, benchmark rows compared, column, unit, higher is better)
PROGRAMS = [("osu_latency", "osu_latency", "p50_us", "us (P50)", False),
            ("osu_bw", "osu_bw/p50", "bandwidth_MBps", "MB/s (P50 window)", True),
            ("osu_bibw", "osu_bibw/p50", "bandwidth_MBps", "MB/s (P50 window)", True)]


def per_round(path):
    """{(benchmark, bytes, tool): {round: value}} of the compared columns."""
    cols = {bench: col for _, bench, col, _, _ in PROGRAMS}
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            col = cols.get(r["benchmark"])
            if col is None or r[col] in ("", None):
                continue
            out.setdefault((r["benchmark"], int(r["bytes"]), r["tool"]), {})[r["round"]] = float(r[col])
    return out


def compare(vals, peer):
    """[(program, unit, hib, [row...])], a row (bytes, g, p, ratio, gspread, pspread, rounds, behind)."""
    result = []
    for prog, bench, _, unit, hib in PROGRAMS:
        rows = []
        sizes = sorted({k[1] for k in vals if k[0] == bench})
        for size in sizes:
            g, p = vals.get((bench, size, "gdr")), vals.get((bench, size, peer))
            if not g or not p:
                continue
            gm, pm = statistics.median(g.values()), statistics.median(p.values())
            gs, ps = max(g.values()) - min(g.values()), max(p.values()) - min(p.values())
            if gm <= 0 or pm <= 0:
                continue
            ratio = pm / gm if hib else gm / pm
            behind = ratio > 1 and abs(gm - pm) > max(gs, ps)
            rows.append((size, gm, pm, ratio, gs, ps, min(len(g), len(p)), behind))
        result.append((prog, unit, hib, rows))
    return result


def num(v, w):
    """v in w columns, two decimals, four where it is below 10 (1-byte bandwidth)."""
    return f"{v:{w}.2f}" if abs(v) >= 10 else f"{v:{w}.4f}"


def size_name(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def write_text(result, peer, machine, path):
    with open(path, "w") as f:
        f.write(f"# OMB 7.4 point to point, gdr against {peer}: {machine}\n"
                "# medians over rounds; spread = largest - smallest round; ratio above 1: gdr behind\n"
                "# (latency gdr/peer, bandwidth peer/gdr); BEHIND: by more than the larger spread\n")
        for prog, unit, _, rows in result:
            f.write(f"\n{prog}, {unit}\n")
            f.write(f"{'size':>9} {'gdr':>10} {peer:>15} {'ratio':>6} {'gdr spread':>11} "
                    f"{'peer spread':>11} {'rounds':>6}\n")
            for size, g, p, ratio, gs, ps, n, behind in rows:
                f.write(f"{size_name(size):>9} {num(g, 10)} {num(p, 15)} {ratio:6.2f} {num(gs, 11)} "
                        f"{num(ps, 11)} {n:6d}{'  BEHIND' if behind else ''}\n")
            marked = [size_name(r[0]) for r in rows if r[7]]
            f.write(f"{prog}: gdr behind beyond the spread at {', '.join(marked) if marked else 'no size'}"
                    f" ({len(rows)} sizes)\n")


def write_csv(result, path):
    with open(path, "w") as f:
        f.write("program,bytes,unit,gdr_median,peer_median,ratio,gdr_spread,peer_spread,rounds,behind\n")
        for prog, unit, _, rows in result:
            u = "us" if "us" in unit else "MBps"
            for size, g, p, ratio, gs, ps, n, behind in rows:
                f.write(f"{prog},{size},{u},{g:.4g},{p:.4g},{ratio:.3f},{gs:.4g},{ps:.4g},{n},"
                        f"{int(behind)}\n")


def write_svg(result, peer, machine, path):
    """Three panels side by side, log-log, gdr solid blue, the peer dashed red, BEHIND sizes
    ringed."""
    pw, ph, ml, mt, mb, gap = 300, 240, 55, 50, 45, 25
    width = len(result) * (pw + ml + gap) + 10
    height = mt + ph + mb + 20
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         'font-family="sans-serif" font-size="10">',
         '<rect width="100%" height="100%" fill="white"/>',
         f'<text x="10" y="15" font-size="12">OMB 7.4 point to point: gdr (solid blue) and {peer} '
         '(dashed red), medians over rounds; rings: gdr behind beyond the spread</text>',
         f'<text x="10" y="29" font-size="9">{machine}</text>']
    for i, (prog, unit, hib, rows) in enumerate(result):
        x0 = 10 + i * (pw + ml + gap) + ml
        o.append(f'<text x="{x0}" y="{mt - 6}" font-size="11">{prog}: {unit}'
                 f' ({"higher" if hib else "lower"} is better)</text>')
        o.append(f'<rect x="{x0}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        if not rows:
            continue
        xs = [math.log2(r[0]) for r in rows]
        vs = [v for r in rows for v in (r[1], r[2]) if v > 0]
        lo, hi = math.floor(math.log10(min(vs))), math.ceil(math.log10(max(vs)))
        hi = hi if hi > lo else lo + 1
        xmin, xmax = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1

        def px(b):
            return x0 + (math.log2(b) - xmin) / (xmax - xmin) * pw

        def py(v):
            return mt + ph - (math.log10(v) - lo) / (hi - lo) * ph
        for d in range(lo, hi + 1):
            y = py(10 ** d)
            o.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + pw}" y2="{y:.1f}" stroke="#eee"/>')
            o.append(f'<text x="{x0 - 4}" y="{y + 3:.1f}" text-anchor="end">{10 ** d:g}</text>')
        for b in (r[0] for r in rows):
            if int(math.log2(b)) % 4 == 0 or b == rows[-1][0]:
                o.append(f'<text x="{px(b):.1f}" y="{mt + ph + 13}" text-anchor="middle">'
                         f'{size_name(b).replace(" ", "")}</text>')
        o.append(f'<text x="{x0 + pw / 2}" y="{mt + ph + 28}" text-anchor="middle">bytes</text>')
        for col, colour, dash in ((1, "#1f77b4", ""), (2, "#d62728", ' stroke-dasharray="5,3"')):
            pts = " ".join(f"{px(r[0]):.1f},{py(r[col]):.1f}" for r in rows)
            o.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"{dash}/>')
        for r in rows:
            if r[7]:
                o.append(f'<circle cx="{px(r[0]):.1f}" cy="{py(r[1]):.1f}" r="4" fill="none" '
                         'stroke="black"/>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main():
    out, machine = sys.argv[1], sys.argv[2]
    raw = os.path.join(out, "raw.csv")
    write(medians(raw), os.path.join(out, "osu.csv"), first_seen(raw))
    vals = per_round(raw)
    peers = sorted({k[2] for k in vals} - {"gdr"})
    if not peers:
        sys.exit("p2p.py: no peer rows in raw.csv: nothing to compare gdr with")
    peer = peers[0]
    result = compare(vals, peer)
    write_csv(result, os.path.join(out, "p2p.csv"))
    write_text(result, peer, machine, os.path.join(out, "p2p.txt"))
    write_svg(result, peer, machine, os.path.join(out, "p2p.svg"))
    sys.stdout.write(open(os.path.join(out, "p2p.txt")).read())


if __name__ == "__main__":
    main()
