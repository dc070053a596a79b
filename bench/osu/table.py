#!/usr/bin/env python3
"""bench/osu/table.py RATIO_TXT: ratio.txt (bench/osu/run, plot.py) summed up per program,
synchronisation and window kind: how many rows gdr is behind on and the median ratio, as a
Markdown table, then the total.  Above 1, gdr is behind (P50 latency gdr/peer, bandwidth
peer/gdr)."""
import sys, collections, statistics
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith('#'): continue
    f = line.split()
    if len(f) < 9: continue
    prog, win, sync = f[0].split('/')
    rows[(prog.replace('osu_', ''), sync, win)].append(float(f[-1]))
progs = sorted({k[0] for k in rows}); wins = ['create', 'allocate', 'dynamic']
print('| program / sync | ' + ' | '.join(wins) + ' |')
print('|---|' + '---|' * len(wins))
tot = beh = 0
for p in progs:
    for s in sorted({k[1] for k in rows if k[0] == p}):
        cells = []
        for w in wins:
            v = rows.get((p, s, w))
            if not v: cells.append('-'); continue
            b = sum(x > 1 for x in v); tot += len(v); beh += b
            cells.append(f'{b}/{len(v)} behind, median {statistics.median(v):.2f}')
        print(f'| {p} / {s} | ' + ' | '.join(cells) + ' |')
print(f'\ngdr behind on {beh} of {tot} rows')
