#!/usr/bin/env python3
"""Where a profiled training step's time goes, op by op, from the trace `attograd bench train
--profile=DIR` (or `attograd train --profile-steps`) writes:

    bench/trace_ops.py DIR/trace.json

Per top-level op or backward function on the main thread, per step: its wall time, the GEMM
time of every thread inside it, the pool tasks' time on the other threads inside it, and
"nongemm" = wall + workers' tasks - GEMMs: the two threads' time spent outside GEMMs in that
op, waiting for the other thread included. (Under bf16 autocast, a GEMM's own rounding of its
operands is inside its GEMM event.)"""
import json, sys, collections
tr = json.load(open(sys.argv[1]))
ev = [e for e in tr["traceEvents"] if e.get("ph") == "X"]
steps = sum(1 for e in ev if e["cat"] == "step")
main = sorted([e for e in ev if e["tid"] == 0], key=lambda e: (e["ts"], -e["dur"]))
others = [e for e in ev if e["tid"] != 0]
gem = sorted([e for e in ev if e["cat"] == "gemm"], key=lambda e: e["ts"])
tasks = sorted([e for e in others if e["cat"] == "pool task"], key=lambda e: e["ts"])
phases = [e for e in main if e["cat"] == "phase"]
tops = []
for e in main:
    if e["cat"] not in ("op", "backward"): continue
    # top-level: directly within a phase, not inside another op/backward
    enclosed = False
    for t in tops[-3:]:
        if t["ts"] <= e["ts"] and e["ts"] + e["dur"] <= t["ts"] + t["dur"]: enclosed = True
    if not enclosed: tops.append(e)
import bisect
gts = [g["ts"] for g in gem]; tts = [t["ts"] for t in tasks]
def inside(lst, keys, a, b):
    i = bisect.bisect_left(keys, a); s = 0.0
    while i < len(lst) and lst[i]["ts"] < b:
        s += min(lst[i]["ts"] + lst[i]["dur"], b) - lst[i]["ts"]; i += 1
    return s
rows = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
tot = [0.0, 0.0, 0.0]
for t in tops:
    a, b = t["ts"], t["ts"] + t["dur"]
    g = inside(gem, gts, a, b); w = inside(tasks, tts, a, b)
    r = rows[(t["cat"], t["name"])]
    r[0] += 1; r[1] += t["dur"]; r[2] += g; r[3] += w
stepdur = sum(e["dur"] for e in ev if e["cat"] == "step") / max(steps, 1) / 1000
print(f"steps {steps}  step wall {stepdur:.2f} ms")
for ph in sorted(set(p["name"] for p in phases)):
    print(f"  phase {ph}: {sum(p['dur'] for p in phases if p['name']==ph)/steps/1000:.2f} ms")
print(f"{'cat':9} {'name':40} {'n/st':>5} {'wall':>7} {'gemm':>7} {'worker':>7} {'nongemm':>8}")
S = [0.0] * 4
for (c, n), r in sorted(rows.items(), key=lambda kv: -(kv[1][1] + kv[1][3] - kv[1][2])):
    wall, g, w = r[1] / steps / 1000, r[2] / steps / 1000, r[3] / steps / 1000
    S[0] += wall; S[1] += g; S[2] += w; S[3] += wall + w - g
    print(f"{c:9} {n[:40]:40} {r[0]/steps:5.1f} {wall:7.3f} {g:7.3f} {w:7.3f} {wall + w - g:8.3f}")
print(f"{'':9} {'TOTAL':40} {'':5} {S[0]:7.3f} {S[1]:7.3f} {S[2]:7.3f} {S[3]:8.3f}")
