#!/usr/bin/env python3
"""`attograd train`'s progress bar in a real 80-column terminal (tmux).

usage: check_progress_tmux.py ATTOGRAD CORPUS WORKDIR

Runs a short training in a detached tmux session of 80 × 24 on its own tmux server, under
`script`, which gives it the pane as its terminal and records every byte it writes. Then checks:
  * every frame of the progress line fits in 79 columns (the line is redrawn with "\\r", which
    only returns to the start of its last row: a wrapped frame would leave rows behind);
  * the frames before the first logged step already show tokens/s and an ETA, not 0;
  * the pane's whole history holds no leftover progress rows, and the run's last line.
Exits 77 (skipped for ctest) when tmux or script is not installed.
"""

import os
import re
import shutil
import subprocess
import sys
import time

SKIP = 77


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    ag, corpus, work = (os.path.abspath(a) for a in sys.argv[1:])
    for tool in ("tmux", "script"):
        if not shutil.which(tool):
            print(f"skipped: {tool} is not installed")
            return SKIP
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    typescript, status = os.path.join(work, "typescript"), os.path.join(work, "status")
    # --log-every 50: the first 49 frames come before the first logged rate.
    train = (f"{ag} train --data {corpus} --out {work}/run --iters 120 --eval-every 60 --log-every 50 "
             "--layers 1 --heads 2 --embd 16 --block 16 --batch 4 --eval-iters 2 --sample-tokens 0")
    inner = f"script -q -e -c '{train}' {typescript}; echo $? > {status}; sleep 600"
    server = f"attograd-progress-{os.getpid()}"
    tmux = ["tmux", "-L", server, "-f", "/dev/null"]
    env = dict(os.environ)
    env.pop("TMUX", None)
    subprocess.run(tmux + ["new-session", "-d", "-x", "80", "-y", "24", "-s", "t", inner], check=True, env=env)
    try:
        deadline = time.time() + 90
        while not os.path.exists(status) or not open(status).read().strip():
            if time.time() > deadline:
                print("FAIL: the training did not finish in 90 s")
                return 1
            time.sleep(0.2)
        width = subprocess.run(tmux + ["display-message", "-p", "-t", "t", "#{pane_width}"], capture_output=True,
                               text=True, env=env).stdout.strip()
        history = subprocess.run(tmux + ["capture-pane", "-p", "-J", "-S", "-", "-t", "t"], capture_output=True,
                                 text=True, check=True, env=env).stdout
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True, env=env)

    if open(status).read().strip() != "0":
        print(f"FAIL: attograd train exited with {open(status).read().strip()}; pane:\n{history}")
        return 1
    if width != "80":
        print(f"FAIL: the pane is {width} columns wide, not 80")
        return 1
    out = open(typescript, "rb").read().decode("utf-8", "replace")
    frames = [f for f in re.split(r"[\r\n]", out) if f.startswith("\x1b[K[")]
    frames = [f[len("\x1b[K"):] for f in frames]
    if len(frames) < 100:
        print(f"FAIL: {len(frames)} progress frames, expected one per step (120)")
        return 1
    too_wide = [f for f in frames if len(f) > 79]
    if too_wide:
        print(f"FAIL: {len(too_wide)} frames wider than 79 columns, e.g. {too_wide[0]!r} ({len(too_wide[0])})")
        return 1
    early = [f for f in frames if int(re.search(r"\] (\d+)/", f).group(1)) < 10]
    for f in early:
        m = re.search(r"  (\d+) tok/s  (?:mfu \d+%  )?ETA (\S+)$", f)
        if not m or int(m.group(1)) == 0:
            print(f"FAIL: before step 10 the frame {f!r} shows no rate")
            return 1
    leftovers = [line for line in history.splitlines() if re.match(r"\[[#.]+\] \d+/", line)]
    if leftovers or "done: 120 iters" not in history:
        print(f"FAIL: the pane's history holds {len(leftovers)} leftover progress rows or lacks the end:\n{history}")
        return 1
    print(f"ok: {len(frames)} frames, widest {max(len(f) for f in frames)} columns; step 1 shows {early[0]!r}; "
          f"{len(history.splitlines())} rows of history, no leftover progress rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
