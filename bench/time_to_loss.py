#!/usr/bin/env python3
"""Time to a validation loss, attograd beside its PyTorch twin (docs/speedrun.md).

One run per side of the speedrun recipe (configs/speedrun.toml) for the same fixed step count,
one after the other on the same cores, each evaluated on the whole validation split every
--eval-every steps. A side's time at an evaluation is its training steps' own time up to
there (data, forward, backward, update): start-up, the evaluations and checkpoints are left
out, so that evaluating often does not count against either side.
  * attograd: `attograd train --config configs/speedrun.toml --iters N --eval-every E
    --log-every E`; each logged step's ms_per_step covers the E steps since the last
    evaluation (the run restarts its throughput clock after each), so the steps' time is
    their sum;
  * PyTorch: bench/torch_speedrun.py --config configs/speedrun.toml --iters N --eval-every E,
    whose evaluation lines carry train_s, the same sum.
The time to a target loss is found between the two evaluations that straddle it, linearly in
time (the first evaluation at or below it bounds it from above); the ratio is PyTorch's time
over attograd's (above 1: attograd is there sooner). Prints one JSON object per line (the
bench: "time_to_loss" records of bench/compare.py). Needs only the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "configs/speedrun.toml")


def attograd_curve(ag: str, data: str, iters: int, every: int) -> tuple[list[tuple[float, float, int]], str]:
    """[(train_s, val_loss, step)] of an attograd run, and an error ('' when it ran)."""
    with tempfile.TemporaryDirectory(prefix="attograd-ttl-") as tmp:
        out = os.path.join(tmp, "run")
        proc = subprocess.run([ag, "train", "--config", CONFIG, "--data", data, "--out", out, "--iters", str(iters),
                               "--eval-every", str(every), "--log-every", str(every), "--sample-tokens", "0",
                               "--no-progress"], capture_output=True, text=True)
        if proc.returncode != 0:
            return [], f"attograd train exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
        with open(os.path.join(out, "metrics.jsonl")) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    curve, train_s, last_step = [], 0.0, 0
    for r in rows:
        if r.get("val_loss") is None:  # a logged step: the window since the last one
            train_s += r["ms_per_step"] * (r["iter"] - last_step) / 1e3
            last_step = r["iter"]
        else:
            curve.append((train_s, r["val_loss"], r["iter"]))
    return curve, ""


def torch_curve(py: str, data: str, iters: int, every: int, threads: int) -> tuple[list[tuple[float, float, int]], str, str]:
    """[(train_s, val_loss, step)] of the twin, an error ('' when it ran), and torch's version."""
    proc = subprocess.run([py, os.path.join(ROOT, "bench/torch_speedrun.py"), "--config", CONFIG, "--data", data,
                           "--iters", str(iters), "--eval-every", str(every), "--log-every", str(every),
                           "--threads", str(threads)], capture_output=True, text=True)
    if proc.returncode != 0:
        return [], f"torch_speedrun.py exited {proc.returncode}: {proc.stderr.strip()[-300:]}", ""
    curve, version = [], ""
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "train_s" in r:
            curve.append((r["train_s"], r["val_loss"], r.get("step", r.get("iters"))))
        version = r.get("torch", version)
    return curve, "", version


def time_to(curve: list[tuple[float, float, int]], target: float) -> float | None:
    """The training time at which the loss first reaches target, linear between evaluations."""
    prev = None
    for t, v, _ in curve:
        if v <= target:
            if prev is None or prev[1] == v:
                return t
            (t0, v0) = prev
            return t0 + (t - t0) * (v0 - target) / (v0 - v)
        prev = (t, v)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attograd", default=os.path.join(ROOT, "build/attograd"))
    ap.add_argument("--torch-python", default=None, help="a Python that imports torch (none: attograd only)")
    ap.add_argument("--data", required=True)
    ap.add_argument("--iters", type=int, default=2500, help="the step count of both runs (the schedule's length)")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--targets", default="1.70,1.60,1.55")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="the twin's torch threads")
    a = ap.parse_args()
    if a.iters < 1 or a.eval_every < 1:
        ap.error("--iters and --eval-every must be at least 1")
    targets = [float(x) for x in a.targets.split(",") if x.strip()]
    common = {"bench": "time_to_loss", "iters": a.iters, "eval_every": a.eval_every, "load_avg": os.getloadavg()[0]}
    sides = [("attograd", *attograd_curve(a.attograd, a.data, a.iters, a.eval_every), "")]
    if a.torch_python:
        sides.append(("torch", *torch_curve(a.torch_python, a.data, a.iters, a.eval_every, a.threads)))
    for side, curve, error, version in sides:
        rec = dict(common, side=side)
        if error:
            rec["error"] = error
        else:
            rec.update(final_val=curve[-1][1] if curve else None, train_s=curve[-1][0] if curve else None,
                       curve=[[round(t, 3), v, s] for t, v, s in curve],
                       seconds_to={f"{x:.2f}": time_to(curve, x) for x in targets})
            if version:
                rec["torch"] = version
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
