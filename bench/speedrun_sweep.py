#!/usr/bin/env python3
"""Sweeps the speedrun's recipe: each variant is `attograd train --config configs/speedrun.toml
--time-budget BUDGET` plus its own flags, run one after another on the same cores, and one JSON
line per run is appended to OUT (the flags, the steps, the run's clock at its end, the process's
wall time start to exit, the final validation loss over the whole split, the load average before
it). docs/speedrun.md keeps the record log these lines become.

    python3 bench/speedrun_sweep.py --data tinyshakespeare.txt --budget 120 --out sweep.jsonl \\
        --variant= --variant="--value-embeds 1" --variant="--embd 96 --heads 3"

A variant is one string of flags, split as a shell splits words, given as --variant=FLAGS (with
the `=`, since the flags begin with dashes); --variant= is the recipe as it stands.
On a machine whose load changes, interleave repeats (--repeat) rather than trusting one run.

--budget 0 runs without a time budget: each variant then names its step count (--iters N), and
the loss it reaches depends only on the flags, not on the machine's load, so two sweeps can share
the cores (each with --threads 1) and the chosen variant is then confirmed by a budgeted run.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time


def final_eval(metrics_path):
    """The last line of metrics.jsonl with a validation loss: the run's final evaluation."""
    last = None
    with open(metrics_path) as f:
        for line in f:
            row = json.loads(line)
            if row.get("val_loss") is not None:
                last = row
    return last


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="the corpus (tinyshakespeare.txt)")
    p.add_argument("--budget", type=float, default=120,
                   help="--time-budget of every run, seconds (0: none, the variants give --iters)")
    p.add_argument("--out", required=True, help="JSON lines are appended here")
    p.add_argument("--variant", action="append", default=[], help="flags over the recipe (repeatable)")
    p.add_argument("--repeat", type=int, default=1, help="rounds over all the variants")
    p.add_argument("--attograd", default=os.path.join(root, "build", "attograd"))
    p.add_argument("--config", default=os.path.join(root, "configs", "speedrun.toml"))
    p.add_argument("--run-dir", default="/tmp/attograd_speedrun_sweep")
    a = p.parse_args()
    if not a.variant:
        a.variant = [""]
    if not os.path.isfile(a.data):
        sys.exit(f"speedrun_sweep: --data {a.data}: no such file")
    for rnd in range(a.repeat):
        for flags in a.variant:
            budget = ["--time-budget", str(a.budget)] if a.budget > 0 else []
            cmd = [a.attograd, "train", "--config", a.config] + budget + ["--data", a.data,
                   "--out", a.run_dir, "--overwrite", "--sample-tokens", "0"] + shlex.split(flags)
            load = os.getloadavg()[0]
            t0 = time.monotonic()
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            wall = time.monotonic() - t0
            row = {"round": rnd + 1, "flags": flags, "budget_s": a.budget, "load_before": round(load, 2),
                   "process_wall_s": round(wall, 2), "exit": proc.returncode}
            if proc.returncode == 0:
                last = final_eval(os.path.join(a.run_dir, "metrics.jsonl"))
                row.update({"steps": last["iter"], "run_clock_s": round(last["elapsed_s"], 2),
                            "budget_share": round(last["elapsed_s"] / a.budget, 4) if a.budget > 0 else None,
                            "val": last["val_loss"],
                            "train": last["train_loss"],  # 20 random batches: beside val, overfitting shows
                            "ms_per_step": round(last["ms_per_step"], 2)})
            else:
                row["error"] = " / ".join(proc.stderr.strip().splitlines()[:2]) or "(no message)"
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
