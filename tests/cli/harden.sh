#!/usr/bin/env bash
# Hostile inputs and signals against the attograd program (tests/cli_harden.cmake runs each case).
# usage: harden.sh CASE ATTOGRAD CORPUS WORKDIR       prints "PASS: CASE" when all is well
set -u
case_name=$1 ag=$2 corpus=$3 work=$4/$1
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
tiny=(--layers 1 --heads 2 --embd 16 --block 16 --batch 4 --eval-iters 1 --sample-tokens 0 --no-progress)
fail() { echo "FAIL: $*"; [ -f log ] && cat log; exit 1; }
# expect STATUS REGEX COMMAND...: runs it (stdout and stderr to ./log) and checks both
expect() {
  local want=$1 re=$2; shift 2
  "$@" >log 2>&1; local got=$?
  [ "$got" -eq "$want" ] || fail "exit status $got, want $want: $*"
  grep -Eq -- "$re" log || fail "output does not match '$re': $*"
  [ "$(wc -l <log)" -le 40 ] || fail "more than 40 lines of output: $*"
}
# A safetensors file whose header is 100,000 nested '[' (8-byte little-endian length first).
deep_json() {
  printf '\xa0\x86\x01\x00\x00\x00\x00\x00' >"$1"   # 100000
  head -c 100000 /dev/zero | tr '\0' '[' >>"$1"
}
small_run() { "$ag" train --data "$corpus" --out "$1" --iters 4 --eval-every 2 "${tiny[@]}" >/dev/null 2>&1 || fail "small run"; }

case $case_name in
memory_capped)
  # Under a 2 GB address-space cap nothing may allocate without bound: every hostile input
  # ends in a clear error (a bad_alloc or a kill by the cap would fail the status check).
  small_run run
  mkfifo fifo
  deep_json deep.safetensors
  ulimit -v 2000000
  expect 1 "corpus '/dev/zero': is a character device" "$ag" train --data /dev/zero --out r1
  expect 1 "corpus '/dev/urandom': is a character device" "$ag" train --data /dev/urandom --out r1
  expect 1 "is a FIFO" timeout 20 "$ag" train --data fifo --out r1
  expect 1 "/dev/zero: is a character device" "$ag" eval --checkpoint run --text-file /dev/zero
  expect 1 "is a directory" "$ag" eval --checkpoint run --text-file .
  expect 1 "is a FIFO" timeout 20 "$ag" eval --checkpoint run --text-file fifo
  expect 1 "nests deeper than 16 levels" "$ag" sample --checkpoint deep.safetensors
  expect 1 "nests deeper than 16 levels" "$ag" eval --checkpoint deep.safetensors --text-file "$corpus"
  expect 1 "nests deeper than 16 levels" "$ag" attention --in deep.safetensors --out x.safetensors
  cp deep.safetensors run/train_state.safetensors
  expect 1 "nests deeper than 16 levels" "$ag" train --resume run
  for flags in "--embd 4611686018427387904" "--embd 1000000000" "--layers 1000000000" "--batch 1000000000000"; do
    # shellcheck disable=SC2086
    expect 2 "(too large|needs about .* of memory).*lower --batch" \
      "$ag" train --data "$corpus" --out r2 $flags
  done
  expect 2 "larger than any corpus can serve" timeout 20 "$ag" train --data "$corpus" --out r2 --block 1000000000000000000
  ;;
threads)
  # Thread stacks of 500 MB under a 2 GB cap: only a few of 64 threads can start.
  expect 2 "--threads must be in 0..1024" "$ag" train --data "$corpus" --out r --threads -1
  expect 2 "--threads must be in 0..1024" "$ag" train --data "$corpus" --out r --threads 100000
  expect 2 "--sample-tokens must be ≥ 0" "$ag" train --data "$corpus" --out r --sample-tokens -5
  ulimit -v 2000000
  ulimit -s 500000
  expect 0 "could start only [0-9]+ of 64 threads" \
    "$ag" train --data "$corpus" --out r --iters 2 --eval-every 2 --threads 64 "${tiny[@]}"
  grep -q "done: 2 iters" log || fail "the run did not finish on fewer threads"
  ;;
run_folder)
  small_run run
  expect 2 "run already holds a run \(train_state.safetensors.*--resume run.*--overwrite" \
    "$ag" train --data "$corpus" --out run --iters 4 "${tiny[@]}"
  expect 2 "--overwrite cannot be combined with --resume" "$ag" train --resume run --overwrite
  # A stale temporary of a dead process goes; the run resumes (here: already complete).
  sh -c 'exit 0' & dead=$!; wait $dead
  echo junk >"run/model.safetensors.tmp.$dead"
  expect 0 "removed run/model.safetensors.tmp.$dead" "$ag" train --resume run --no-progress
  [ ! -e "run/model.safetensors.tmp.$dead" ] || fail "stale temporary still there"
  # Two runs at once: the second refuses, naming the first's pid; the first stops on SIGTERM (130).
  "$ag" train --data "$corpus" --out busy --overwrite --iters 100000 --eval-every 100000 --log-every 1 "${tiny[@]}" >first.log 2>&1 &
  first=$!
  for _ in $(seq 200); do grep -q '^iter' first.log && break; sleep 0.1; done
  grep -q '^iter' first.log || fail "the first run never started"
  expect 1 "busy: the run folder is in use by another attograd train \(pid $first\)" \
    "$ag" train --data "$corpus" --out busy --overwrite --iters 4 "${tiny[@]}"
  expect 1 "in use by another attograd train \(pid $first\)" "$ag" train --resume busy
  kill -TERM $first; wait $first; status=$?
  [ $status -eq 130 ] || fail "first run exited $status after SIGTERM, want 130"
  [ "$(grep -c '"iter"' busy/metrics.jsonl)" -ge 1 ] || fail "metrics lost"
  ;;
sample)
  small_run run
  expect 0 "generated 20 characters" "$ag" sample --checkpoint run --tokens 20 --temperature 1e-320 --prompt "to "
  head -1 log >tiny_t.txt
  expect 0 "generated 20 characters" "$ag" sample --checkpoint run --tokens 20 --temperature 0 --prompt "to "
  head -1 log >greedy.txt
  cmp -s tiny_t.txt greedy.txt || fail "temperature 1e-320 is not greedy"
  expect 2 "--tokens must be ≥ 0" "$ag" sample --checkpoint run --tokens -1
  grep -q "Try 'attograd sample --help'" log || fail "no --help hint"
  # A billion characters, streamed; Ctrl-C stops it cleanly with 130.
  "$ag" sample --checkpoint run --tokens 1000000000 >stream.txt 2>stream.err &
  pid=$!
  for _ in $(seq 200); do [ -s stream.txt ] && break; sleep 0.1; done
  sleep 0.3
  kill -INT $pid; wait $pid; status=$?
  [ $status -eq 130 ] || fail "sample exited $status after SIGINT, want 130"
  grep -Eq "interrupted \(signal 2\) after [0-9]+ characters" stream.err || fail "no interrupt message: $(cat stream.err)"
  [ "$(wc -c <stream.txt)" -gt 100 ] || fail "the text was not streamed"
  ;;
*) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
