#!/usr/bin/env python3
"""plot_ratios: bench/rma-vs-raw's table of ratios (its .txt) as a PNG beside it.

    /usr/bin/python3 bench/plot_ratios.py TXT

One panel per section of the table (gdr against raw verbs, against the peer, native
synchronisation against messages), a bar per row: the ratio, with the row's target where
it names one ("(target <= X)" or ">= X") and the line of equality.  Bars in red miss their
target or, where no target is named, show gdr behind (the table says which way is better).
Needs matplotlib (Debian: python3-matplotlib)."""
import re
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROW = re.compile(r"^(?P<what>.+?)\s+(?P<a>[0-9.]+)\s+(?P<b>[0-9.]+)\s+(?P<ratio>[0-9.]+)\s*(?P<note>\(.*\))?\s*$")
TARGET = re.compile(r"target (?P<op><=|>=) (?P<x>[0-9.]+)")


def sections(path):
    """[(title, [(what, ratio, op, target)])] and the machine line."""
    out, machine = [], ""
    with open(path) as f:
        for raw in f:
            text = raw.rstrip("\n")
            if text.startswith("machine:"):
                machine = text[len("machine:"):].strip()
                continue
            m = ROW.match(text)
            if m and out:
                note = m.group("note") or ""
                t = TARGET.search(note)
                if t:
                    op, target = t.group("op"), float(t.group("x"))
                elif "higher is better" in note:
                    op, target = ">=", None
                else:
                    op, target = "<=", None
                out[-1][1].append((m.group("what").strip(), float(m.group("ratio")), op, target))
            elif text and not text.startswith((" ", "(", "p50")) and not m:
                # a section's header: its title, then the column names
                out.append((re.split(r"\s{2,}", text.strip())[0], []))
    return [s for s in out if s[1]], machine


def missed(ratio, op, target):
    limit = 1.0 if target is None else target
    return ratio > limit if op == "<=" else ratio < limit


def main():
    path = sys.argv[1]
    secs, machine = sections(path)
    heights = [max(2.0, 0.28 * len(rows) + 1.0) for _, rows in secs]
    fig, axes = plt.subplots(len(secs), 1, figsize=(10, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (title, rows) in zip(axes[:, 0], secs):
        y = list(range(len(rows)))[::-1]
        ax.barh(y, [r[1] for r in rows],
                color=["tab:red" if missed(*r[1:]) else "tab:green" for r in rows])
        for yi, (_, ratio, op, target) in zip(y, rows):
            ax.text(ratio, yi, f" {ratio:.2f}", va="center", fontsize=7)
            if target is not None:
                ax.plot([target, target], [yi - 0.4, yi + 0.4], "k-", lw=2)
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_yticks(y)
        ax.set_yticklabels([r[0] for r in rows], fontsize=7)
        ax.set_title(title + " (ratio; black tick: target)", fontsize=9)
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(machine, fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    out = re.sub(r"\.txt$", "", path) + ".png"
    fig.savefig(out, dpi=110)
    print(f"plot_ratios: {out}")


if __name__ == "__main__":
    main()
