#!/usr/bin/env python3
"""bench/opcost/report.py DIR [N1 N2]: instructions per MPI call from the callgrind dumps that
bench/opcost/run leaves in DIR (cg.<config>-<N>.<pid>.<part>).

Per configuration (gdr, gdr-db0, ucx) and phase, the measured call's cost is
(cost at N2 - cost at N1) / (N2 - N1): one-time costs (connections, first registrations,
pools) cancel.  Writes DIR/opcost.csv and DIR/opcost.txt (the table and the breakdown of
gdr's MPI_Put by layer) and prints the text.  Python 3 alone, no matplotlib.
"""
import collections
import glob
import os
import re
import sys

PHASES = [  # phase (marker opcost_end_<phase>), measured function, row name
    ("put", "MPI_Put", "MPI_Put"),
    ("get", "MPI_Get", "MPI_Get"),
    ("acc", "MPI_Accumulate", "MPI_Accumulate (SUM)"),
    ("fop", "MPI_Fetch_and_op", "MPI_Fetch_and_op (SUM)"),
    ("cas", "MPI_Compare_and_swap", "MPI_Compare_and_swap"),
    ("flushdone", "MPI_Win_flush", "MPI_Win_flush, Put completed"),
    ("flush", "MPI_Win_flush", "MPI_Win_flush right after Put"),
    ("send", "MPI_Send", "MPI_Send 8 B"),
]
CONFIGS = [("gdr", "gdr"), ("gdr-db0", "gdr, DOORBELL_BATCH=0"), ("ucx", "Debian MPICH 4.0.2 ch4:ucx")]
# The flushes wait for the link, a number of polls that follows its timing: their rows are
# the median of the flushes dumped one by one (the other figures are per-call differences).
SAMPLED = {"flushdone": "flushdone1", "flush": "flush1"}
PROGRESS = {"host_progress", "ucp_worker_progress"}   # one round of the progress loop
WRITE = {"write", "__write", "__libc_write"}   # rxe's doorbell: write() on the uverbs fd
ALLOC = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign"}
PROVIDER_OBJ = re.compile(r"libibverbs|librxe|rdmav")
UCX_OBJ = re.compile(r"libuc[pst][.-]")


def base(name):
    """A --separate-callers context 'f'caller'caller2' (and recursion 'f'2) -> f."""
    return name.split("'")[0]


def bare(name):
    """PMPI_Put and MPI_Put are one function under two names."""
    return name[1:] if name.startswith("PMPI_") else name


class Dump:
    """One callgrind dump: exclusive Ir per context, calls between contexts."""

    def __init__(self, path):
        self.trigger = ""
        self.excl = collections.Counter()      # context -> exclusive Ir
        self.obj = {}                          # function (base name) -> object file
        self.calls = []                        # (caller ctx, callee ctx, count, inclusive Ir)
        self.total = 0
        names = {"ob": {}, "fl": {}, "fn": {}}
        ob = fn = cob = cfn = None
        pending = None
        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if pending is not None:      # the cost line of a call
                    parts = line.split()
                    self.calls.append((fn, cfn, pending, int(parts[1]) if len(parts) > 1 else 0))
                    pending = None
                    continue
                if not line or line.startswith("#"):
                    continue
                c = line[0]
                if c.isdigit() or c in "+-*":
                    parts = line.split()
                    if len(parts) > 1 and fn is not None:
                        self.excl[fn] += int(parts[1])
                    continue
                key, _, val = line.partition("=")
                if key in ("ob", "cob", "fl", "fi", "fe", "cfi", "cfl", "fn", "cfn"):
                    kind = {"cob": "ob", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl",
                            "cfn": "fn"}.get(key, key)
                    m = re.match(r"\((\d+)\)(?: (.*))?$", val)
                    if m:
                        if m.group(2) is not None:
                            names[kind][m.group(1)] = m.group(2)
                        val = names[kind].get(m.group(1), val)
                    if key == "ob":
                        ob = val
                    elif key == "cob":
                        cob = val
                    elif key == "fn":
                        fn = val
                        self.obj.setdefault(base(fn), ob)
                    elif key == "cfn":
                        cfn = val
                        if cob is not None:
                            self.obj.setdefault(base(cfn), cob)
                        cob = None
                elif key == "calls":
                    pending = int(val.split()[0])
                elif line.startswith("desc: Trigger:"):
                    self.trigger = line.split(":", 2)[2].strip()
                elif line.startswith("totals:") or line.startswith("summary:"):
                    self.total = int(line.split()[1])

    def inclusive(self, func):
        """Inclusive Ir of a function (every context), its calls not counted twice."""
        own = [c for c in self.excl if bare(base(c)) == func] + \
              [b for (a, b, n, i) in self.calls if bare(base(b)) == func]
        own = set(own)
        cost = sum(self.excl[c] for c in own)
        cost += sum(i for (a, b, n, i) in self.calls if a in own and b not in own)
        return cost

    def count_calls(self, names, func, provider=False):
        """Calls to functions named in names made inside func (its contexts' callees);
        provider: only those made from the verbs provider (its doorbell system calls)."""
        total = 0
        for (a, b, n, i) in self.calls:
            if base(b) not in names or base(a) in names:   # free'free: one call, two names
                continue
            chain = [bare(f) for f in b.split("'")]
            if func not in chain:
                continue
            if provider and not PROVIDER_OBJ.search(self.obj.get(base(a)) or ""):
                continue
            total += n
        return total

    def call_cost(self, names, func):
        """Instructions inside the calls count_calls counts (inclusive)."""
        return sum(i for (a, b, n, i) in self.calls if base(b) in names and base(a) not in names
                   and func in [bare(f) for f in b.split("'")])

    def calls_into(self, func):
        return sum(n for (a, b, n, i) in self.calls
                   if bare(base(b)) == func and bare(base(a)) != func)

    def layers(self, root):
        """Exclusive Ir by layer, each context judged by its caller chain up to root:
        provider (in libibverbs or its provider, or called from them), netmod (an
        MPIDI_GDR_/gdr_ function or UCX's libucp/libuct/libucs, or called from one), else MPICH above the netmod (with the
        libc it calls directly); 'unknown' where the chain did not reach root."""
        out = collections.Counter()
        for ctx, ir in self.excl.items():
            chain = [f for f in ctx.split("'") if not f.isdigit()]
            layer = None
            seen_root = False
            for f in chain:
                if bare(f) == root:
                    seen_root = True
                    break
                if PROVIDER_OBJ.search(self.obj.get(f) or ""):
                    layer = "provider"
                elif layer is None and (re.match(r"(MPIDI_GDR_|gdr_)", f)
                                        or UCX_OBJ.search(self.obj.get(f) or "")):
                    layer = "netmod"
            if bare(chain[0]) == root:
                seen_root = True
            if not seen_root:
                layer = "unknown"
            out[layer or "mpich"] += ir
        return out


def load(d, tag):
    """phase -> Dump for one run (cg.<tag>.<pid>.<part>); the per-flush samples
    (opcost_end_flush1, opcost_end_flushdone1) as lists under 'flush1', 'flushdone1'."""
    got = {}
    for p in sorted(glob.glob(os.path.join(d, "cg.%s.*" % tag))):
        dump = Dump(p)
        m = re.search(r"opcost_end_(\w+)", dump.trigger)
        if m and m.group(1).endswith("1"):
            got.setdefault(m.group(1), []).append(dump)
        elif m:
            got[m.group(1)] = dump
    return got


def median(xs):
    xs = sorted(xs)
    k = len(xs) // 2
    return xs[k] if len(xs) % 2 else (xs[k - 1] + xs[k]) / 2.0


def measure(a, b, n1, n2, ph, func):
    """One round's figures for one call: per call, the difference of N2 and N1 (a, b: their
    dumps)."""
    da, db = a[ph], b[ph]
    per = lambda x1, x2: (x2 - x1) / float(n2 - n1)
    rounds = db.count_calls(PROGRESS, func)
    return {
        "ins": per(da.inclusive(func), db.inclusive(func)),
        "alloc": per(da.count_calls(ALLOC, func), db.count_calls(ALLOC, func)),
        "free": per(da.count_calls({"free"}, func), db.count_calls({"free"}, func)),
        "alloc_ins": per(da.call_cost(ALLOC, func), db.call_cost(ALLOC, func)),
        "free_ins": per(da.call_cost({"free"}, func), db.call_cost({"free"}, func)),
        "bells": per(da.count_calls(WRITE, func, True), db.count_calls(WRITE, func, True)),
        "progress": per(da.count_calls(PROGRESS, func), rounds),
        "round_ins": db.call_cost(PROGRESS, func) / float(rounds) if rounds else 0.0,
        "calls": (da.calls_into(func), db.calls_into(func)),
    }


def main():
    d = sys.argv[1]
    n1, n2 = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (200, 400)
    runs = {}     # cfg -> [(dumps at n1, dumps at n2) per round]
    for cfg, _ in CONFIGS:
        rs = sorted({re.match(r"cg\.%s-r(\d+)-" % re.escape(cfg), os.path.basename(p)).group(1)
                     for p in glob.glob(os.path.join(d, "cg.%s-r*-*" % cfg))
                     if re.match(r"cg\.%s-r(\d+)-" % re.escape(cfg), os.path.basename(p))}, key=int)
        for r in rs:
            a, b = load(d, "%s-r%s-%d" % (cfg, r, n1)), load(d, "%s-r%s-%d" % (cfg, r, n2))
            if a and b:
                runs.setdefault(cfg, []).append((a, b))
    if not runs:
        sys.exit("bench/opcost/report.py: no callgrind dumps in %s" % d)
    per = lambda x1, x2: (x2 - x1) / float(n2 - n1)
    rows, res = [], {}
    for cfg, _ in CONFIGS:
        for ph, func, _ in PHASES:
            ms = [measure(a, b, n1, n2, ph, func) for (a, b) in runs.get(cfg, [])
                  if ph in a and ph in b]
            if not ms:
                continue
            m = {k: median([x[k] for x in ms]) for k in ms[0] if k != "calls"}
            m["calls"] = ms[0]["calls"]
            m["min"] = min(x["ins"] for x in ms)
            m["max"] = max(x["ins"] for x in ms)
            m["n"] = len(ms)
            res[cfg, ph] = m
            rows.append((cfg, ph, func, m))
    samples = {}
    for cfg, _ in CONFIGS:
        for ph, sph in SAMPLED.items():
            xs = []
            for (a, b) in runs.get(cfg, []):
                for dumps in (a.get(sph, []), b.get(sph, [])):
                    xs += [(x.inclusive("MPI_Win_flush"), x.count_calls(PROGRESS, "MPI_Win_flush"))
                           for x in dumps]
            if xs and (cfg, ph) in res:
                xs.sort()
                samples[cfg, ph] = xs
                m = res[cfg, ph]
                m["ins"], m["progress"] = xs[len(xs) // 2]
                m["min"], m["max"] = xs[0][0], xs[-1][0]
    with open(os.path.join(d, "opcost.csv"), "w") as f:
        f.write("benchmark,bytes,latency_us,bandwidth_MBps,tool,p50_us,instructions_per_call,"
                "instructions_min,instructions_max,rounds,n1,n2,allocs_per_call,frees_per_call,"
                "doorbells_per_call,progress_rounds_per_call,instructions_per_progress_round\n")
        for cfg, ph, func, m in rows:
            tool = {"gdr": "gdr", "gdr-db0": "gdr-doorbell-batch-0", "ucx": "peer-mpich-ucx"}[cfg]
            f.write("opcost_%s,8,,,%s,,%.1f,%.1f,%.1f,%d,%d,%d,%.2f,%.2f,%.2f,%.2f,%.0f\n"
                    % (ph, tool, m["ins"], m["min"], m["max"], m["n"], n1, n2, m["alloc"],
                       m["free"], m["bells"], m["progress"], m["round_ins"]))
    t = []
    t.append("instructions per call on rank 0 (callgrind), (cost(%d) - cost(%d)) / %d, median of "
             "%s rounds [min-max where they differ]" % (n2, n1, n2 - n1,
                                                        "/".join(str(len(v)) for v in runs.values())))
    hdr = "%-30s %18s %18s %18s %8s" % ("call", "gdr", "gdr batch=0", "ucx", "gdr/ucx")
    t.append(hdr)
    for ph, func, label in PHASES:
        def fmt(cfg):
            m = res.get((cfg, ph))
            if m is None:
                return "%18s" % "-"
            v = "%.0f" % m["ins"]
            if round(m["min"]) != round(m["max"]) and ph not in SAMPLED:
                v += " [%.0f-%.0f]" % (m["min"], m["max"])
            return "%18s" % v
        g, u = res.get(("gdr", ph)), res.get(("ucx", ph))
        ratio = "%8.2f" % (g["ins"] / u["ins"]) if g and u and u["ins"] else "%8s" % "-"
        t.append("%-30s %s %s %s %s" % (label, fmt("gdr"), fmt("gdr-db0"), fmt("ucx"), ratio))
    t.append("(flush rows: the median flush of those dumped one by one, below; the others: "
             "(cost(N2) - cost(N1)) / (N2 - N1))")
    t.append("")
    t.append("MPI_Win_flush one by one (the first %d of each loop, every run): min / median / max "
             "instructions, progress rounds of the median" % (len(next(iter(samples.values()))) // 6
                                                              if samples else 0))
    for (cfg, ph), xs in sorted(samples.items()):
        label = {"flushdone": "Put completed", "flush": "right after Put"}[ph]
        t.append("  %-8s %-16s %6d / %6d / %8d   (%d samples; %d progress rounds)"
                 % (cfg, label, xs[0][0], xs[len(xs) // 2][0], xs[-1][0], len(xs),
                    xs[len(xs) // 2][1]))
    with open(os.path.join(d, "opcost-flush-samples.csv"), "w") as f:
        f.write("tool,flush,instructions,progress_rounds\n")
        for (cfg, ph), xs in sorted(samples.items()):
            for ins, pr in xs:
                f.write("%s,%s,%d,%d\n" % (cfg, ph, ins, pr))
    t.append("")
    t.append("per call: malloc-family and free calls, doorbells (the provider's write() system "
             "calls), progress rounds; calls counted at N=%d, N=%d (check)" % (n1, n2))
    for cfg, ph, func, m in rows:
        t.append("  %-8s %-9s alloc %5.2f (%4.0f instr)  free %5.2f (%4.0f instr)  doorbells %5.2f  "
                 "progress rounds %6.2f (%4.0f instr each)  calls %s"
                 % (cfg, ph, m["alloc"], m["alloc_ins"], m["free"], m["free_ins"], m["bells"],
                    m["progress"], m["round_ins"], m["calls"]))
    for cfg in ("gdr", "gdr-db0", "ucx"):
        if cfg not in runs or "put" not in runs[cfg][0][0]:
            continue
        la = runs[cfg][0][0]["put"].layers("MPI_Put")   # the first round (MPI_Put's count
        lb = runs[cfg][0][1]["put"].layers("MPI_Put")   # does not change between rounds)
        keys = ["mpich", "netmod", "provider", "unknown"]
        vals = {k: per(la[k], lb[k]) for k in keys}
        tot = sum(vals.values()) or 1
        t.append("")
        t.append("%s MPI_Put by layer (instructions per call):" % cfg)
        top = collections.Counter()
        for dump, sign in ((runs[cfg][0][0]["put"], -1), (runs[cfg][0][1]["put"], 1)):
            for c, ir in dump.excl.items():
                top[base(c)] += sign * ir
        for k, label in zip(keys, ["MPICH above the netmod (MPI_Put .. MPIDI_NM_*, libc they call)",
                                   "netmod (MPIDI_GDR_*, gdr_* and what they call)",
                                   "verbs provider (libibverbs, librxe; user space only)",
                                   "caller chain not resolved"]):
            if k == "netmod" and cfg == "ucx":
                label = "UCX (libucp, libuct, libucs and what they call)"
            if k == "mpich" and cfg == "ucx":
                label = "MPICH with its ucx netmod glue (libmpich is stripped)"
            if vals[k] or k != "unknown":
                t.append("  %-62s %8.0f  %5.1f%%" % (label, vals[k], 100.0 * vals[k] / tot))
        t.append("  functions with the most instructions of their own per Put: " + ", ".join(
            "%s %.0f" % (f, ir / float(n2 - n1)) for f, ir in top.most_common(10)))
    text = "\n".join(t) + "\n"
    with open(os.path.join(d, "opcost.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
