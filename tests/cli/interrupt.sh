#!/usr/bin/env bash
# Ctrl-C during `attograd train`: the first SIGINT finishes the step, writes a checkpoint,
# prints how to resume and exits 130 (interrupted); the run then resumes to the end. Two quick SIGINTs stop
# at once with status 130 and write nothing.
# usage: interrupt.sh ATTOGRAD CORPUS WORKDIR
set -u
ag=$1 corpus=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
args=(--data "$corpus" --layers 1 --heads 2 --embd 32 --block 16 --batch 8 --iters 100000 --eval-every 100000
      --eval-iters 1 --log-every 1 --sample-tokens 0 --no-progress)

wait_for_line() {  # wait until the log shows training steps, at most ~20 s
  for _ in $(seq 200); do grep -q '^iter' "$1" && return 0; sleep 0.1; done
  echo "FAIL: training never started"; cat "$1"; exit 1
}

# One SIGINT: clean stop with a checkpoint.
"$ag" train "${args[@]}" --out "$work/run" >"$work/one.log" 2>&1 &
pid=$!
wait_for_line "$work/one.log"
kill -INT $pid
wait $pid; status=$?
[ $status -eq 130 ] || { echo "FAIL: exit status $status after one SIGINT, want 130"; cat "$work/one.log"; exit 1; }
grep -q "resume with: attograd train --resume $work/run" "$work/one.log" || { echo "FAIL: no resume hint"; cat "$work/one.log"; exit 1; }
[ -f "$work/run/train_state.safetensors" ] || { echo "FAIL: no train state"; exit 1; }
[ -f "$work/run/model.safetensors" ] || { echo "FAIL: no model"; exit 1; }

# The run resumes from there (and can be interrupted again, with SIGTERM this time).
before=$(grep -c '^iter' "$work/one.log")
"$ag" train --resume "$work/run" --no-progress >"$work/resume.log" 2>&1 &
pid=$!
wait_for_line "$work/resume.log"
grep -q "resuming at iter" "$work/resume.log" || { echo "FAIL: resume did not say where it starts"; cat "$work/resume.log"; exit 1; }
kill -TERM $pid
wait $pid; status=$?
[ $status -eq 130 ] || { echo "FAIL: exit status $status after SIGTERM, want 130"; cat "$work/resume.log"; exit 1; }

# Two SIGINTs: immediate stop, 130, no checkpoint written.
"$ag" train "${args[@]}" --out "$work/run2" --eval-every 100000 >"$work/two.log" 2>&1 &
pid=$!
wait_for_line "$work/two.log"
rm -f "$work/run2/train_state.safetensors" "$work/run2/model.safetensors"
kill -INT $pid; kill -INT $pid
wait $pid; status=$?
# Both ways out end with 130: the second SIGINT arrived in time (nothing written), or the
# first one had already stopped the run cleanly (its checkpoint written).
[ $status -eq 130 ] || { echo "FAIL: exit status $status after two SIGINTs, want 130"; cat "$work/two.log"; exit 1; }
if grep -q "second interrupt" "$work/two.log"; then
  [ ! -f "$work/run2/train_state.safetensors" ] || { echo "FAIL: a checkpoint was written after the second SIGINT"; exit 1; }
else
  grep -q "resume with:" "$work/two.log" || { echo "FAIL: neither an immediate nor a clean stop"; cat "$work/two.log"; exit 1; }
fi
echo "PASS: interrupt, resume ($before steps before the first stop), double interrupt (status $status)"
