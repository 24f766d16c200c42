#!/usr/bin/env bash
# Ctrl-C during `attograd train`: the first SIGINT finishes the step, writes a checkpoint,
# prints how to resume and exits 0; the run then resumes to the end. Two quick SIGINTs stop
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
[ $status -eq 0 ] || { echo "FAIL: exit status $status after one SIGINT, want 0"; cat "$work/one.log"; exit 1; }
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
[ $status -eq 0 ] || { echo "FAIL: exit status $status after SIGTERM, want 0"; cat "$work/resume.log"; exit 1; }

# Two SIGINTs: immediate stop, 130, no checkpoint written.
"$ag" train "${args[@]}" --out "$work/run2" --eval-every 100000 >"$work/two.log" 2>&1 &
pid=$!
wait_for_line "$work/two.log"
rm -f "$work/run2/train_state.safetensors" "$work/run2/model.safetensors"
kill -INT $pid; kill -INT $pid
wait $pid; status=$?
if [ $status -ne 130 ] && [ $status -ne 0 ]; then echo "FAIL: exit status $status after two SIGINTs"; cat "$work/two.log"; exit 1; fi
if [ $status -eq 130 ]; then
  [ ! -f "$work/run2/train_state.safetensors" ] || { echo "FAIL: a checkpoint was written after the second SIGINT"; exit 1; }
  grep -q "second interrupt" "$work/two.log" || { echo "FAIL: no message for the second SIGINT"; cat "$work/two.log"; exit 1; }
fi
echo "PASS: interrupt, resume ($before steps before the first stop), double interrupt (status $status)"
