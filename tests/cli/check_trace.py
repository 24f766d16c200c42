#!/usr/bin/env python3
"""Checks what `attograd train --profile-steps N` wrote into a run folder (tests/cli_study.cmake):

  check_trace.py RUN_DIR GRAPH.dot STEPS

* trace.json is JSON in the Chrome Trace Event format: complete ("X") events with ts/dur in µs;
* on every thread the events nest (each one inside the one open around it, or after it);
* there are STEPS step events, and in each the phases (data, forward, backward, optimizer)
  cover at least 95% of the step's measured time;
* the backward events are the graph's nodes (`attograd graph` of the same model, GRAPH.dot):
  per step, as many of each op as the graph has; every op of the graph has forward events;
* GEMM events carry M, N, K; there are pool tasks, and on the workers nothing outside them;
* profile_table.txt holds the op table with a GEMM GFLOP/s figure.
"""
import collections
import json
import os
import re
import sys

EPS = 1e-3  # µs: ts and dur are printed from whole nanoseconds


def fail(msg):
    print("check_trace: " + msg)
    sys.exit(1)


def main():
    run_dir, dot_path, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(os.path.join(run_dir, "trace.json"), encoding="utf-8") as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    if not events:
        fail("no complete events")
    for e in events:
        for k in ("name", "cat", "ts", "dur", "pid", "tid"):
            if k not in e:
                fail("an event without %r: %r" % (k, e))

    # nesting, per thread
    by_tid = collections.defaultdict(list)
    for e in events:
        by_tid[e["tid"]].append(e)
    parent = {}
    for tid, evs in by_tid.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            end = e["ts"] + e["dur"]
            while stack and not (stack[-1]["ts"] <= e["ts"] + EPS and end <= stack[-1]["ts"] + stack[-1]["dur"] + EPS):
                top = stack.pop()  # it does not contain e: then e must begin after it ended
                if e["ts"] < top["ts"] + top["dur"] - EPS:
                    fail("thread %s: %s [%f, +%f] overlaps %s [%f, +%f] without nesting" %
                         (tid, e["name"], e["ts"], e["dur"], top["name"], top["ts"], top["dur"]))
            parent[id(e)] = stack[-1] if stack else None
            stack.append(e)

    # coverage of each step by its phases
    step_events = [e for e in by_tid[0] if e["cat"] == "step"]
    if len(step_events) != steps:
        fail("%d step events, expected %d" % (len(step_events), steps))
    for s in step_events:
        if parent[id(s)] is not None:
            fail("a step inside %s" % parent[id(s)]["name"])
        covered = sum(e["dur"] for e in by_tid[0] if e["cat"] == "phase" and parent[id(e)] is s)
        if covered < 0.95 * s["dur"]:
            fail("step %s: phases cover %.1f of %.1f µs (%.1f%% < 95%%)" %
                 (s["args"]["iter"], covered, s["dur"], 100 * covered / s["dur"]))
        print("step %s: %.1f ms, phases cover %.2f%%" % (s["args"]["iter"], s["dur"] / 1e3, 100 * covered / s["dur"]))

    # the ops named are the graph's
    with open(dot_path, encoding="utf-8") as f:
        graph = collections.Counter(re.findall(r'^  n[0-9]+ \[.*label="([^"\\]+)\\n', f.read(), re.M))
    if not graph:
        fail(dot_path + ": no op nodes")
    backward = collections.Counter(e["name"] for e in events if e["cat"] == "backward")
    per_step = collections.Counter({k: v // steps for k, v in backward.items()})
    if any(v % steps for v in backward.values()) or per_step != graph:
        fail("backward events per step %s differ from the graph's nodes %s" % (dict(per_step), dict(graph)))
    forward = {e["name"] for e in events if e["cat"] == "op"}
    missing = set(graph) - forward
    if missing:
        fail("no forward event for the graph's ops %s" % sorted(missing))

    gemms = [e for e in events if e["cat"] == "gemm"]
    if not gemms or any(min(e["args"][k] for k in "MNK") < 1 for e in gemms):
        fail("no GEMM events with M, N, K")
    if not any(e["cat"] == "pool task" for e in events):
        fail("no pool task")
    # On the pool's workers (when they got a chunk before the caller took it: a busy machine
    # can leave them none) every event is a pool task or lies inside one.
    for e in events:
        if e["tid"] != 0 and e["cat"] != "pool task" and (parent[id(e)] is None or parent[id(e)]["cat"] != "pool task"):
            fail("thread %s: %s outside a pool task" % (e["tid"], e["name"]))

    with open(os.path.join(run_dir, "profile_table.txt"), encoding="utf-8") as f:
        table = f.read()
    if "Fwd GFLOP/s" not in table:
        fail("profile_table.txt has no GFLOP/s column:\n" + table)
    rows = [l for l in table.splitlines() if re.match(r"^[a-z_]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9]+ .*%( +[0-9.]+)+$", l)]
    if not rows:
        fail("profile_table.txt has no op line with a GEMM GFLOP/s figure:\n" + table)
    print("trace ok: %d events on %d threads, %d ops in the graph" % (len(events), len(by_tid), len(graph)))


if __name__ == "__main__":
    main()
