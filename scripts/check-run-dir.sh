#!/bin/sh
# scripts/check-run-dir.sh RUN_DIR: `make train` calls this first. A run folder that already holds
# a run (after a Ctrl-C, or a finished run) is not trained over: say so and how to go on.
set -eu
run=$1
[ -e "$run/train_state.safetensors" ] || exit 0
cat >&2 <<MSG
make train: $run already holds a run (interrupted or finished); it is left as it is.
  continue it:        make resume            (attograd train --resume $run)
  extend a finished run, where its schedule allows:  make resume RESUME_FLAGS="--iters N"
  start over:         rm -r $run && make train    (or: make train RUN_DIR=runs/other)
MSG
exit 1
