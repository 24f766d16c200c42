#!/usr/bin/env bash
# `mpirun -np 2 attograd train` over loopback (tests/cli_mpi.cmake). One scenario per call:
#   equivalence  -np 2 and -np 1 --grad-accum 2, same global batch and seed, 50 steps: per-step
#                train losses within 1e-5 relative, final weights within 1e-4
#   sigterm_mpirun  SIGTERM to mpirun: every rank stops after the same step, rank 0 writes the
#                checkpoint, mpirun exits 1; the run then resumes on the two ranks to the end, and
#                logs every loss bit for bit as an uninterrupted -np 2 run
#   sigint_group SIGINT to mpirun's process group (Ctrl-C in a terminal): the same
#   interrupt    SIGTERM to every rank: the same stop, mpirun exits 130; the run resumes on ONE
#                rank (--grad-accum 2), and its losses match an uninterrupted -np 1 --grad-accum 2
#                run to 1e-5
#   signal_one_rank  SIGTERM to rank 1 alone: both ranks stop after the same step, exit 130
#   rank_dies    SIGKILL to one rank: the job ends with an error naming that rank within 30 s
#   hung_peer    SIGSTOP to rank 1 at a random step, --comm-timeout 5: rank 0 names it and the
#                step, mpirun exits 75 (peer lost) within 15 s, no rank is left, and the run
#                folder resumes
# usage: mpi_train.sh SCENARIO ATTOGRAD CORPUS WORKDIR COMPARE_SAFETENSORS MPIRUN
set -u
scenario=$1 ag=$2 corpus=$3 work=$4 compare=$5 mpirun=$6
rm -rf "$work" && mkdir -p "$work"
# As root OpenMPI refuses to start without these; they are set here, not in the user's shell.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
# Loopback only: the byte transport (btl) and the launcher's own channel (oob) on lo.
mpi=("$mpirun" --oversubscribe --bind-to none --mca btl self,tcp --mca btl_tcp_if_include lo
     --mca oob_tcp_if_include lo)
source "$(dirname "$0")/mpi_lib.sh"  # fail, same_losses

tiny=(--layers 1 --heads 2 --embd 16 --block 16 --batch 4 --eval-iters 2 --no-progress --sample-tokens 0 --threads 1)
# The run a signal to mpirun interrupts, however slow the machine: the signal reaches the
# ranks 1 s later. With --min-lr equal to --lr the schedule does not depend on --iters, so the
# stopped run resumes with --iters = the stop + 300, and is compared with a run of that length.
# It logs every 100 steps: the tiny model makes ~3000 steps/s, and while mpirun sleeps in its
# kill sequence it stops reading the ranks' output, so a rank 0 that logged every 10 steps
# filled the pipe within that second and blocked in write() until the SIGKILL.
endless=(--data "$corpus" "${tiny[@]}" --embd 32 --batch 8 --eval-every 1000000 --log-every 100 --lr 1e-3 --min-lr 1e-3)
# The run a signal to the ranks themselves interrupts: it lands at once.
short=(--data "$corpus" "${tiny[@]}" --embd 32 --batch 8 --iters 1500 --eval-every 1000 --log-every 10)

# Waits until the job has logged a step: its interrupt handlers are installed by then.
wait_first_step() {
  for _ in $(seq 300); do grep -q '^iter' "$1" && return; sleep 0.1; done
  fail "no step logged within 30 s"
}

# After a stop of the run "${run[@]}" in $work/run (log $work/np2.log): rank 0 says that every
# rank stopped after the same step (it says so only once all have, before any exits) with the
# signal $1, and the checkpoint is there. Sets stop to that step.
check_stopped() {
  grep -q "interrupted ($1) after iter [0-9]* on all 2 ranks; checkpoint written" "$work/np2.log" ||
    fail "rank 0 did not report a stop of every rank after the same step"
  grep -qi "exited on signal\|killed" "$work/np2.log" && fail "a rank was killed instead of stopping"
  stop=$(sed -n 's/.*after iter \([0-9]*\) on all.*/\1/p' "$work/np2.log")
  [ -f "$work/run/train_state.safetensors" ] || fail "no checkpoint"
  [ "$stop" -lt "$(sed -n 's/.*--iters \([0-9]*\).*/\1/p' <<<"${run[*]}")" ] || fail "the run ended before the signal (iter $stop)"
}

# Sends `kill "$@"` to the job of mpirun $pid and waits for it: mpirun must return 1 (ORTE's exit
# code for a job it was told to end, whatever the ranks return; each returns 130 here). Sets
# seconds to the time from the signal to mpirun's exit.
signal_mpirun() {
  local t0 status
  t0=$(date +%s.%N)
  kill "$@"
  wait $pid; status=$?
  seconds=$(python3 -c "import time; print(f'{time.time() - $t0:.2f}')")
  [ $status -eq 1 ] || fail "mpirun exited $status after kill $*; expected 1"
}

# Resumes $work/run to the end on $1 ranks: 2, or 1 with --grad-accum 2 (N -> M: the data order
# depends only on the step); more flags may follow.
resume() {
  local cmd=("$ag" train --resume "$work/run" --threads 1 --no-progress "${@:2}")
  if [ "$1" = 2 ]; then cmd=("${mpi[@]}" -np 2 "${cmd[@]}"); else cmd+=(--grad-accum 2); fi
  "${cmd[@]}" >"$work/resume.log" 2>&1 || fail "resume on $1 rank(s) failed"
  grep -q "resuming at iter $stop" "$work/resume.log" || fail "resume did not start at iter $stop"
}

# An endless run stopped at $stop: resumed on the same two ranks to $stop + 300, it logs every
# loss and evaluation bit for bit as an uninterrupted run of that length (the sum of two
# ranks' values does not depend on their order).
resume_np2_same_as_straight() {
  local end=$((stop + 300))
  resume 2 --iters $end
  "${mpi[@]}" -np 2 "$ag" train "${endless[@]}" --iters $end --out "$work/straight" >"$work/straight.log" 2>&1 ||
    fail "straight run failed"
  grep -q "run: batch 8, $end iters" "$work/straight.log" || fail "the straight run is not $end iters long"
  same_losses "$work/run/metrics.jsonl" "$work/straight/metrics.jsonl" 0
}

# Resumed on one process: every logged loss within 1e-5 of an uninterrupted -np 1
# --grad-accum 2 run, which adds the gradients in another order. (Not the weights to 1e-4
# after 1500 steps: the key bias of attention has an exactly zero gradient, and AdamW turns the
# rounding noise of its computed gradient, which differs with the summation order, into
# lr-sized steps; the model's outputs do not depend on it. See docs/distributed.md.) The
# rounding differences grow with the steps (from 4e-8 after 500 steps to 1e-5 after 2700 in
# one 6000-step run stopped at step 24), so this is for short runs.
same_as_straight_ga2() {
  "$ag" train "${run[@]}" --grad-accum 2 --out "$work/straight" >"$work/straight.log" 2>&1 || fail "straight run failed"
  same_losses "$work/run/metrics.jsonl" "$work/straight/metrics.jsonl"
}

case $scenario in
equivalence)
  run=(--data "$corpus" "${tiny[@]}" --iters 50 --eval-every 25 --log-every 1)
  "${mpi[@]}" -np 2 "$ag" train "${run[@]}" --out "$work/np2" >"$work/np2.log" 2>&1 || fail "mpirun -np 2 failed"
  grep -q "data parallel: 2 ranks x 1 micro-batches of 2 rows" "$work/np2.log" || fail "not 2 ranks"
  "$ag" train "${run[@]}" --grad-accum 2 --out "$work/ga2" >"$work/ga2.log" 2>&1 || fail "--grad-accum 2 failed"
  grep -q "data parallel: 1 rank x 2 micro-batches of 2 rows" "$work/ga2.log" || fail "not 2 micro-batches"
  same_losses "$work/np2/metrics.jsonl" "$work/ga2/metrics.jsonl"
  "$compare" --rtol 1e-4 "$work/np2/model.safetensors" "$work/ga2/model.safetensors" >"$work/compare.log" ||
    fail "final weights differ by more than 1e-4"
  # Only rank 0 writes: one header, one metrics file with each step once.
  [ "$(grep -c '^attograd train:' "$work/np2.log")" = 1 ] || fail "more than one rank printed"
  echo "PASS: equivalence ($(grep -c . "$work/np2/metrics.jsonl") metrics lines)"
  ;;
sigterm_mpirun)
  # SIGTERM to mpirun itself (what `kill`, a service manager or a scheduler sends it). mpirun
  # sends the ranks SIGTERM after odls_base_sigkill_timeout (1 s) and SIGKILL as soon as one of
  # them exits (or 1 s later): every rank stops after the same step, rank 0 checkpoints, and the
  # run resumed on the two ranks logs the same bits as an uninterrupted one.
  run=("${endless[@]}" --iters 1000000)
  "${mpi[@]}" -np 2 "$ag" train "${run[@]}" --out "$work/run" >"$work/np2.log" 2>&1 &
  pid=$!
  wait_first_step "$work/np2.log"
  signal_mpirun -TERM $pid
  check_stopped "signal 15"
  resume_np2_same_as_straight
  echo "PASS: SIGTERM to mpirun stopped both ranks after iter $stop in $seconds s (mpirun status 1), with a checkpoint; resumed on 2 ranks, bit-identical to the run without the stop"
  ;;
sigint_group)
  # Ctrl-C in a terminal: SIGINT to the foreground process group. mpirun runs in a session of
  # its own here (setsid), so the group is mpirun's; OpenMPI puts each rank in a process group
  # of its own, so only mpirun gets the SIGINT, and it sends the ranks SIGTERM.
  run=("${endless[@]}" --iters 1000000)
  setsid "${mpi[@]}" -np 2 "$ag" train "${run[@]}" --out "$work/run" >"$work/np2.log" 2>&1 &
  pid=$!
  wait_first_step "$work/np2.log"
  [ "$(ps -o pgid= -p $pid | tr -d ' ')" = "$pid" ] || fail "mpirun ($pid) does not lead its process group"
  signal_mpirun -INT -- -$pid
  check_stopped "signal 15"
  resume_np2_same_as_straight
  echo "PASS: SIGINT to mpirun's process group (Ctrl-C) stopped both ranks after iter $stop in $seconds s (mpirun status 1), with a checkpoint; resumed on 2 ranks, bit-identical to the run without the stop"
  ;;
interrupt)
  # SIGTERM to the ranks themselves, as a batch scheduler may send it to every process.
  run=("${short[@]}")
  "${mpi[@]}" -np 2 "$ag" train "${run[@]}" --out "$work/run" >"$work/np2.log" 2>&1 &
  pid=$!
  wait_first_step "$work/np2.log"
  pkill -TERM -P $pid -f "train"
  wait $pid; status=$?
  [ $status -eq 130 ] || fail "mpirun exited $status; every rank should have stopped with 130 (interrupted)"
  check_stopped "signal 15"
  resume 1
  same_as_straight_ga2
  echo "PASS: interrupt at iter $stop on 2 ranks, resumed on 1 rank, same run as without the stop"
  ;;
signal_one_rank)
  # A signal to any one rank is enough: the ranks agree on the stop flag every step.
  run=(--data "$corpus" "${tiny[@]}" --embd 32 --batch 8 --iters 1000000 --eval-every 1000000 --log-every 10)
  "${mpi[@]}" -np 2 "$ag" train "${run[@]}" --out "$work/run" >"$work/np2.log" 2>&1 &
  pid=$!
  wait_first_step "$work/np2.log"
  rank1=$(pgrep -P "$pid" -f "attograd train" | sort -n | tail -n 1)
  [ -n "$rank1" ] || fail "no rank process found under mpirun $pid"
  kill -TERM "$rank1"
  wait $pid; status=$?
  [ $status -eq 130 ] || fail "mpirun exited $status; every rank should have stopped with 130 (interrupted)"
  grep -q "interrupted (a signal to another rank) after iter [0-9]* on all 2 ranks" "$work/np2.log" ||
    fail "rank 0 did not stop with rank 1"
  [ -f "$work/run/train_state.safetensors" ] || fail "no checkpoint"
  echo "PASS: SIGTERM to one rank (pid $rank1) stopped both after the same step, with a checkpoint"
  ;;
rank_dies)
  run=(--data "$corpus" "${tiny[@]}" --embd 32 --batch 8 --iters 1000000 --eval-every 1000000 --log-every 10)
  "${mpi[@]}" -np 2 "$ag" train "${run[@]}" --out "$work/run" >"$work/np2.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do grep -q '^iter' "$work/np2.log" && break; sleep 0.1; done
  victim=$(pgrep -P "$pid" -f "attograd train" | sort -n | tail -n 1)
  [ -n "$victim" ] || fail "no rank process found under mpirun $pid"
  start=$(date +%s)
  kill -KILL "$victim"
  for _ in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then kill -KILL $pid; fail "the job still ran 30 s after a rank died"; fi
  wait $pid; status=$?
  [ $status -ne 0 ] || fail "mpirun exited 0 after a rank died"
  grep -Eq "rank [01].*(exited on signal 9|died)" "$work/np2.log" || fail "no message naming the dead rank"
  echo "PASS: rank (pid $victim) killed; the job ended in $(( $(date +%s) - start )) s with status $status: $(grep -Em1 "rank [01].*(exited on signal 9|died)" "$work/np2.log")"
  ;;
hung_peer)
  # A hung peer: rank 1 stopped (SIGSTOP stops its heartbeat thread too) at a random step.
  # Rank 0, waiting for it in the step's gradient allreduce, gives up after --comm-timeout
  # (5 s) and ends the job with status 75; mpirun kills the stopped rank.
  run=("${endless[@]}" --iters 1000000 --eval-every 100 --comm-timeout 5)
  "${mpi[@]}" -np 2 "$ag" train "${run[@]}" --out "$work/run" >"$work/np2.log" 2>&1 &
  pid=$!
  wait_first_step "$work/np2.log"
  for _ in $(seq 300); do grep -q '^eval  iter  *[1-9]' "$work/np2.log" && break; sleep 0.1; done  # a checkpoint after iter 0
  sleep "0.$((RANDOM % 10))"
  ranks=$(pgrep -P "$pid" -f "attograd train" | sort -n | tr '\n' ' ')
  rank1=$(pgrep -P "$pid" -f "attograd train" | sort -n | tail -n 1)
  [ -n "$rank1" ] || fail "no rank process found under mpirun $pid"
  t0=$(date +%s.%N)
  kill -STOP "$rank1"
  for _ in $(seq 150); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then kill -CONT "$rank1"; kill -KILL $pid; fail "the job still ran 15 s after rank 1 stopped"; fi
  wait $pid; status=$?
  seconds=$(seconds_since "$t0")
  [ $status -eq 75 ] || fail "mpirun exited $status; expected 75 (peer lost)"
  grep -q "peer lost: rank 0 (pid [0-9]* on [^)]*): lost rank 1 (pid $rank1 on [^)]*): no heartbeat for [0-9.]* s (--comm-timeout 5) while waiting in .* at iter [0-9]*; the last checkpoint in $work/run is intact" "$work/np2.log" ||
    fail "rank 0 did not name rank 1 and the step"
  # mpirun may return while a rank is still in its exit (closing files, MPI's teardown): each
  # rank has until the same 15 s bound to be gone.
  for p in $ranks; do
    while kill -0 "$p" 2>/dev/null && [ "$(seconds_since "$t0" | cut -d. -f1)" -lt 15 ]; do sleep 0.1; done
    kill -0 "$p" 2>/dev/null && { kill -CONT "$p"; kill -KILL "$p"; fail "rank pid $p was left running 15 s after rank 1 stopped"; }
  done
  # The last evaluation's checkpoint resumes (on one process): the steps since are redone.
  stop=$(python3 -c "import json,sys; print(max(r['iter'] for r in map(json.loads, open(sys.argv[1])) if r['val_loss'] is not None))" "$work/run/metrics.jsonl")
  resume 1 --iters $((stop + 50))
  echo "PASS: rank 1 (pid $rank1) stopped; the job ended in $seconds s with status 75, naming it: $(grep -o 'lost rank 1.*at iter [0-9]*' "$work/np2.log" | head -n 1); resumed at iter $stop"
  ;;
*) echo "unknown scenario $scenario"; exit 2 ;;
esac
