#!/usr/bin/env bash
# `attograd train` across hosts: the test bed of testbed.sh (network namespaces on a bridge,
# shaped links, mpirun on a login host through an rsh agent). One scenario per call:
#   equivalence N RATE  N hosts equal one process with --grad-accum N: per-step losses within 1e-5
#                relative, final weights within 1e-4 (summation order only; see docs/distributed.md)
#   ctrl_c       Ctrl-C on mpirun (SIGINT to its process group) stops every host's rank after the
#                same step with a checkpoint, nothing is left running on any host; the run then
#                resumes on 2 of the 4 hosts (N -> M) and its losses match an uninterrupted
#                one-process run of the same micro-batches to 1e-5
#   partition    a link cut (ip link set ... down) at a random step of a 4-host run with
#                --comm-timeout 5: mpirun exits 75 (peer lost) within 15 s, rank 0 names the cut
#                host's rank and the step, no process is left on any host, and the run folder
#                resumes on the 3 hosts left
#   blackhole    the same with the link up but every packet lost (a failed switch port)
#   partition_h0 the same on 2 hosts with rank 0's own host cut (rank 1 reports)
#   hung_peer    SIGSTOP of one host's rank: the same
#   fault FAULT HOST HOSTS  any of these: FAULT cut, blackhole or stop; HOST a number or random
#   elastic      scripts/elastic-train on 3 hosts loses one mid-run and finishes on 2; its final
#                loss equals that of a run resumed from the same checkpoint on 2 hosts by hand
# usage: multihost_train.sh SCENARIO ATTOGRAD CORPUS WORKDIR COMPARE_SAFETENSORS [ARGS]
# Exits 77 (ctest: skipped) with the reason when the machine cannot make the test bed.
set -u
scenario=$1 ag=$2 corpus=$3 work=$4 compare=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
source "$here/testbed.sh"
source "$here/../cli/mpi_lib.sh"  # fail, same_losses, seconds_since
why=$(bed_unavailable)
if [ -n "$why" ]; then echo "SKIP: the multi-host test bed cannot run here: $why"; exit 77; fi
rm -rf "$work" && mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1

tiny=(--data "$corpus" --layers 1 --heads 2 --embd 16 --block 16 --eval-iters 2 --no-progress --sample-tokens 0 --threads 1)
# A run that goes on until something stops it; with --min-lr = --lr the schedule does not depend
# on --iters, so it may be resumed with any --iters. Logs every 100 steps (see mpi_train.sh:
# while mpirun stops a job it does not read the ranks' output).
endless=("${tiny[@]}" --embd 32 --iters 1000000 --log-every 100 --lr 1e-3 --min-lr 1e-3)

# Until $1 logs a step (its interrupt handlers are installed by then).
wait_first_step() {
  for _ in $(seq 600); do grep -q '^iter' "$1" && return; sleep 0.1; done
  fail "no step logged within 60 s"
}

# Waits up to $2 seconds after t0 for process $1 to end; sets status and seconds (since t0).
wait_for_end() {
  local deadline; deadline=$(python3 -c "print($t0 + $2)")
  while kill -0 "$1" 2>/dev/null && python3 -c "import sys, time; sys.exit(time.time() >= $deadline)"; do sleep 0.1; done
  if kill -0 "$1" 2>/dev/null; then
    local where; where=$(leftovers)
    kill -KILL "$1"
    fail "the job still ran $2 s after the fault; processes: $where"
  fi
  wait "$1"; status=$?
  seconds=$(seconds_since "$t0")
}

# The processes still running on the login host and the compute hosts ("" when none).
leftovers() {
  local h out=""
  for h in login $BED_HOSTS; do
    local pids; pids=$(bed_pids "$h" | tr '\n' ' ')
    [ -n "$pids" ] && out+="$h: $(ps -o pid=,stat=,comm= -p $pids | tr -s ' \n' ' '); "
  done
  echo "$out"
}
no_leftovers() {
  for _ in $(seq 30); do [ -z "$(leftovers)" ] && return; sleep 0.1; done
  fail "processes left behind: $(leftovers)"
}

# The iteration of the last evaluation in a run folder: what its checkpoint holds.
last_checkpoint() {
  python3 -c "import json,sys; print(max(r['iter'] for r in map(json.loads, open(sys.argv[1])) if r['val_loss'] is not None))" "$1/metrics.jsonl"
}

# A fault at a random step of an N-host run with --comm-timeout 5; $1: the fault (cut,
# blackhole, stop), $2: the host it hits (a number; "random": one of h1..h(N-1)), $3: N (4).
# The job must end with 75 within 15 s, naming the lost rank.
fault_ends_job() {
  local fault=$1 hosts=${3:-4}
  local vrank=$2 reporter=0
  [ "$vrank" = random ] && vrank=$((1 + RANDOM % (hosts - 1)))
  local victim=h$vrank
  [ "$vrank" = 0 ] && reporter=1
  bed_up "$hosts" 1gbit || fail "cannot make the test bed"
  bed_mpirun -np "$hosts" "$ag" train "${endless[@]}" --batch 12 --eval-every 100 --comm-timeout 5 --out "$work/run" \
    >"$work/job.log" 2>&1 &
  local pid=$!
  wait_first_step "$work/job.log"
  for _ in $(seq 600); do grep -q '^eval  iter  *[1-9]' "$work/job.log" && break; sleep 0.1; done  # a checkpoint after iter 0
  sleep "$((RANDOM % 2)).$((RANDOM % 10))"
  local rank_pid; rank_pid=$(bed_pids "$victim" | xargs -r ps -o pid=,comm= -p | awk '$2 == "attograd" {print $1}')
  # (By its name: the program once re-executed itself to choose OpenBLAS's kernels, which renamed
  # every rank "exe" on CPUs newer than OpenBLAS; the processes are listed when none is found.)
  [ -n "$rank_pid" ] || fail "no attograd process on $victim; processes: $(leftovers)"
  t0=$(date +%s.%N)
  case $fault in
    cut) bed_cut "$victim" ;;
    blackhole) bed_blackhole "$victim" ;;
    stop) kill -STOP "$rank_pid" ;;
  esac
  wait_for_end $pid 15
  [ $status -eq 75 ] || fail "mpirun exited $status after the $fault of $victim; expected 75 (peer lost)"
  grep -q "peer lost: rank $reporter (pid [0-9]* on h$reporter): lost rank $vrank (pid $rank_pid on $victim): no heartbeat for [0-9.]* s (--comm-timeout 5) while waiting in .* at iter [0-9]*; the last checkpoint in $work/run is intact" "$work/job.log" ||
    fail "rank $reporter did not name rank $vrank ($victim) and the step"
  no_leftovers
  # The run folder resumes on the hosts left: from its last evaluation's checkpoint, or from a
  # later step's when rank 0 could still finish that step (a stopped rank 0 that mpirun's
  # SIGCONT and SIGTERM let complete its step writes the checkpoint of a stop: a whole step,
  # the same on every rank).
  local left eval_iter lost_iter resumed
  left=$(echo $BED_HOSTS | tr ' ' '\n' | grep -vx "$victim" | tr '\n' ' ')
  eval_iter=$(last_checkpoint "$work/run")
  lost_iter=$(sed -n 's/.*: peer lost: .* at iter \([0-9]*\);.*/\1/p' "$work/job.log" | head -n 1)
  bed_hostfile $left
  bed_mpirun -np $((hosts - 1)) "$ag" train --resume "$work/run" --iters $((lost_iter + 30)) --threads 1 --no-progress \
    >"$work/resume.log" 2>&1 || fail "the run did not resume on $left"
  resumed=$(sed -n 's/^resuming at iter \([0-9]*\)$/\1/p' "$work/resume.log")
  [ -n "$resumed" ] && [ "$resumed" -ge "$eval_iter" ] && [ "$resumed" -le $((lost_iter + 1)) ] ||
    fail "the resume started at iter '$resumed', not between the last evaluation ($eval_iter) and the loss ($lost_iter)"
  no_leftovers
  echo "PASS: $fault of $victim ($hosts hosts): the job ended in $seconds s with status 75; $(grep -o "rank $reporter (pid [0-9]* on h$reporter): lost rank $vrank.*at iter [0-9]*" "$work/job.log" | head -n 1); nothing left running; resumed at iter $resumed on $left"
}

case $scenario in
equivalence)
  hosts=$1 rate=$2
  bed_up "$hosts" "$rate" || fail "cannot make the test bed"
  run=("${tiny[@]}" --batch 8 --iters 30 --eval-every 15 --log-every 1)
  bed_mpirun -np "$hosts" "$ag" train "${run[@]}" --out "$work/hosts" >"$work/hosts.log" 2>&1 || fail "the $hosts-host run failed"
  grep -q "data parallel: $hosts ranks x 1 micro-batches of $((8 / hosts)) rows" "$work/hosts.log" || fail "not $hosts ranks"
  for h in $BED_HOSTS; do grep -q "on $h" <<<"$(bed_mpirun -np "$hosts" hostname | sed 's/^/on /')" || fail "no rank on $h"; done
  "$ag" train "${run[@]}" --grad-accum "$hosts" --out "$work/ga" >"$work/ga.log" 2>&1 || fail "--grad-accum $hosts failed"
  same_losses "$work/hosts/metrics.jsonl" "$work/ga/metrics.jsonl"
  "$compare" --rtol 1e-4 "$work/hosts/model.safetensors" "$work/ga/model.safetensors" >"$work/compare.log" ||
    fail "final weights differ by more than 1e-4"
  no_leftovers
  echo "PASS: $hosts hosts at $rate equal one process with --grad-accum $hosts ($(same_losses "$work/hosts/metrics.jsonl" "$work/ga/metrics.jsonl"))"
  ;;
ctrl_c)
  bed_up 4 10gbit || fail "cannot make the test bed"
  # Ctrl-C in a terminal: SIGINT to mpirun's process group (mpirun leads one of its own here).
  setsid ip netns exec "$BED-login" mpirun $BED_MPIRUN_FLAGS --hostfile "$BED_HOSTFILE" -np 4 "$ag" train \
    "${endless[@]}" --batch 8 --eval-every 1000000 --out "$work/run" >"$work/job.log" 2>&1 &
  pid=$!
  wait_first_step "$work/job.log"
  t0=$(date +%s.%N)
  kill -INT -- -$pid
  wait_for_end $pid 30
  [ $status -eq 1 ] || fail "mpirun exited $status after Ctrl-C; expected 1 (a job it was told to end)"
  grep -q "interrupted (signal 15) after iter [0-9]* on all 4 ranks; checkpoint written" "$work/job.log" ||
    fail "rank 0 did not report a stop of every rank after the same step"
  grep -qi "exited on signal\|killed" "$work/job.log" && fail "a rank was killed instead of stopping"
  stop=$(sed -n 's/.*after iter \([0-9]*\) on all.*/\1/p' "$work/job.log")
  no_leftovers
  # N -> M: resumed on 2 of the hosts with 2 micro-batches each (the same 2-row micro-batches
  # as 4 ranks), to 60 steps past the stop; the same losses as one process with 4 micro-batches.
  bed_hostfile h1 h3
  end=$((stop + 60))
  bed_mpirun -np 2 "$ag" train --resume "$work/run" --iters $end --grad-accum 2 --threads 1 --no-progress \
    >"$work/resume.log" 2>&1 || fail "resume on 2 hosts failed"
  grep -q "resuming at iter $stop" "$work/resume.log" || fail "resume did not start at iter $stop"
  "$ag" train "${endless[@]}" --batch 8 --eval-every 1000000 --iters $end --grad-accum 4 --out "$work/straight" \
    >"$work/straight.log" 2>&1 || fail "the one-process run failed"
  same_losses "$work/run/metrics.jsonl" "$work/straight/metrics.jsonl"
  no_leftovers
  echo "PASS: Ctrl-C stopped the 4 hosts' ranks after iter $stop in $seconds s (mpirun status 1) with a checkpoint, nothing left running; resumed on 2 hosts to iter $end, the same losses as one process"
  ;;
elastic)
  # scripts/elastic-train on 3 hosts; one host's link is cut at a random step after the first
  # checkpoint past iter 0; the supervisor drops it and finishes the run on the other 2.
  bed_up 3 1gbit || fail "cannot make the test bed"
  # A log line at every checkpoint (--log-every = --eval-every): the run by hand ends at the
  # checkpoint, and a run logs its last iter whatever --log-every says. 3000 steps: the cut must
  # land mid-run (this model takes about 2 ms a step on an idle machine; 300 steps had ended
  # before the cut, and mpirun's teardown then hung on the cut link).
  end=3000
  run=("${endless[@]}" --batch 12 --eval-every 50 --log-every 50 --comm-timeout 5 --iters $end)
  python3 "$here/../../scripts/elastic-train" --hostfile "$BED_HOSTFILE" --min-hosts 2 --max-restarts 2 \
    --probe-timeout 5 --mpirun "ip netns exec $BED-login mpirun $BED_MPIRUN_FLAGS" -- \
    "$ag" train "${run[@]}" --out "$work/run" >"$work/elastic.log" 2>&1 &
  epid=$!
  wait_first_step "$work/elastic.log"
  for _ in $(seq 600); do grep -q '^eval  iter  *[1-9]' "$work/elastic.log" && break; sleep 0.1; done
  sleep "0.$((RANDOM % 10))"
  victim=h$((1 + RANDOM % 2))
  t0=$(date +%s.%N)
  bed_cut "$victim"
  wait_for_end $epid 240
  [ $status -eq 0 ] || fail "elastic-train exited $status; expected 0 (the run finished on 2 hosts)"
  grep -q "elastic-train: hosts that answer: .*; dropped: $victim$" "$work/elastic.log" || fail "$victim was not dropped"
  grep -q "elastic-train: restart 1 of at most 2 on 2 hosts" "$work/elastic.log" || fail "no restart on 2 hosts"
  grep -q "^done: $end iters" "$work/elastic.log" || fail "the run did not finish"
  stop=$(sed -n 's/^resuming at iter \([0-9]*\)$/\1/p' "$work/elastic.log")
  [ -n "$stop" ] || fail "the restart did not resume"
  # By hand: the same checkpoint (the 3 hosts to iter $stop, bit for bit the elastic run's first
  # part), resumed on the same 2 hosts to the end.
  bed_heal "$victim" || fail "$victim did not come back after its link was healed"
  bed_hostfile h0 h1 h2
  bed_mpirun -np 3 "$ag" train "${run[@]}" --iters "$stop" --out "$work/hand" >"$work/hand3.log" 2>&1 ||
    fail "the 3-host run to iter $stop failed"
  bed_hostfile $(echo h0 h1 h2 | tr ' ' '\n' | grep -vx "$victim")
  bed_mpirun -np 2 "$ag" train --resume "$work/hand" --iters $end --threads 1 --no-progress --comm-timeout 5 \
    >"$work/hand2.log" 2>&1 || fail "the resume by hand on 2 hosts failed"
  same_losses "$work/run/metrics.jsonl" "$work/hand/metrics.jsonl" 0
  final=$(sed -n "s/^done: $end iters.*val loss \([0-9.]*\),.*/\1/p" "$work/elastic.log")
  [ "$final" = "$(sed -n "s/^done: $end iters.*val loss \([0-9.]*\),.*/\1/p" "$work/hand2.log")" ] || fail "final losses differ"
  echo "PASS: elastic-train lost $victim after iter $stop's checkpoint, restarted on the other 2 hosts and finished (val loss $final), every loss bit for bit that of a resume by hand; $(grep -c '' "$work/run/metrics.jsonl") metrics lines"
  ;;
# FAULT [HOST [HOSTS]]: any fault, host and size (scripts/partition-soak draws them)
fault) fault_ends_job "$@" ;;
partition) fault_ends_job cut random 4 ;;
blackhole) fault_ends_job blackhole random 4 ;;
partition_h0) fault_ends_job cut 0 2 ;;
hung_peer) fault_ends_job stop random 4 ;;
*) echo "unknown scenario $scenario"; exit 2 ;;
esac
