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
  # (until more than 100 characters have streamed: the state the check below needs, not a pause)
  for _ in $(seq 300); do [ "$(wc -c <stream.txt)" -gt 100 ] && break; sleep 0.1; done
  kill -INT $pid; wait $pid; status=$?
  [ $status -eq 130 ] || fail "sample exited $status after SIGINT, want 130"
  grep -Eq "interrupted \(signal 2\) after [0-9]+ characters" stream.err || fail "no interrupt message: $(cat stream.err)"
  [ "$(wc -c <stream.txt)" -gt 100 ] || fail "the text was not streamed"
  ;;
inputs)
  # Round two, 1: every input is opened the same way: a FIFO, /dev/zero or a folder is refused
  # by name (a FIFO used to block forever, --config DIR trained the default model).
  small_run run
  mkfifo fifo
  mkdir folder
  for bad in fifo /dev/zero folder; do
    kind="is a (FIFO|character device|directory)"
    expect 1 "$bad: $kind" timeout 20 "$ag" train --config "$bad" --data "$corpus" --out r1
    expect 1 "$bad: $kind" timeout 20 "$ag" sample --checkpoint run --prompt-file "$bad"
    expect 1 "$bad: $kind" timeout 20 "$ag" attend --checkpoint run --text-file "$bad" --out att
    expect 1 "$bad: $kind" timeout 20 "$ag" attention --in "$bad" --out x.safetensors
    [ "$bad" = folder ] || expect 1 "$bad: $kind" timeout 20 "$ag" plot "$bad"  # plot DIR reads DIR/metrics.jsonl
  done
  expect 1 "fifo: is a FIFO" timeout 20 "$ag" sample --checkpoint fifo
  expect 1 "/dev/zero: is a character device" timeout 20 "$ag" eval --checkpoint /dev/zero --text-file "$corpus"
  rm run/train_state.safetensors && mkfifo run/train_state.safetensors
  expect 1 "run/train_state.safetensors: is a FIFO" timeout 20 "$ag" train --resume run
  rm run/train_state.safetensors && mkfifo run/metrics.jsonl.x && mv run/metrics.jsonl.x run/metrics.jsonl
  expect 1 "run/metrics.jsonl: is a FIFO" timeout 20 "$ag" plot run
  ;;
toml_deep)
  # Round two, 2: a dotted key 300,000 levels deep overflowed the stack (a crash).
  python3 -c "print('a.' * 300000 + 'a = 1')" >deep.toml
  expect 1 "deep.toml:1: nests deeper than 64 levels" timeout 20 "$ag" train --config deep.toml --data "$corpus" --out r
  python3 -c "print('a.' * 1100000 + 'a = 1')" >huge.toml
  expect 1 "huge.toml: is too large: 2200006 bytes" timeout 20 "$ag" train --config huge.toml --data "$corpus" --out r
  ;;
links)
  # Round two, 3: a run folder made by someone else, whose files are links to the user's files:
  # refused by name, and the file linked to is never written.
  echo precious >victim
  for f in attograd.lock config.toml metrics.jsonl grad_report_iter2.txt; do
    mkdir "run_$f" && ln -s ../victim "run_$f/$f"
    expect 1 "run_$f/$f: is a symbolic link" "$ag" train --data "$corpus" --out "run_$f" --iters 2 --grad-report "${tiny[@]}"
    expect 1 "run_$f/$f: is a symbolic link" "$ag" train --data "$corpus" --out "run_$f" --overwrite --iters 2 "${tiny[@]}"
  done
  [ "$(cat victim)" = precious ] || fail "the linked file was written: $(head -c 200 victim)"
  # Outputs named on the command line are replaced, never written through.
  small_run run
  ln -s victim loss.png
  expect 0 "wrote loss.png" "$ag" plot run --out loss.png
  [ ! -L loss.png ] && [ "$(cat victim)" = precious ] || fail "plot wrote through the link"
  ;;
writes)
  # Round two, 4 and 5: a full disk or a file-size limit is a clear error, never a silent gap,
  # a core dump (SIGXFSZ) or a temporary left behind; the last good checkpoint stays.
  small_run run
  sh -c "\"$ag\" sample --checkpoint run --tokens 50 >/dev/full" >log 2>&1; st=$?
  [ $st -eq 1 ] || fail "sample to a full disk exited $st, want 1"
  grep -q "standard output: cannot write" log || fail "no message for a full stdout: $(cat log)"
  sh -c "\"$ag\" eval --checkpoint run --text-file \"$corpus\" >/dev/full" >log 2>&1; st=$?
  [ $st -eq 1 ] && grep -q "cannot write standard output" log || fail "eval to a full disk exited $st: $(cat log)"
  sh -c "\"$ag\" train --resume run --iters 8 --no-progress >/dev/full" >log 2>&1; st=$?
  [ $st -eq 1 ] && grep -q "standard output: cannot write.*checkpoint is in run" log || fail "train to a full disk exited $st: $(cat log)"
  # A train state larger than ulimit -f: exit 1 naming the limit, the old checkpoint kept.
  "$ag" train --data "$corpus" --out big --iters 2 --eval-every 2 "${tiny[@]}" --embd 64 >/dev/null 2>&1 || fail "big run"
  cp big/train_state.safetensors old_state
  (ulimit -f 100; exec "$ag" train --resume big --iters 4 --no-progress) >log 2>&1; st=$?
  [ $st -eq 1 ] || fail "under ulimit -f the run exited $st, want 1: $(cat log)"
  grep -q "train_state.safetensors: cannot save: write to .* failed: File too large (the file-size limit, ulimit -f, is 102400 bytes)" log ||
    fail "no clear message: $(cat log)"
  cmp -s old_state big/train_state.safetensors || fail "the old checkpoint was not kept"
  ls big | grep -q '\.tmp\.' && fail "a temporary was left: $(ls big)"
  [ ! -e core ] || fail "a core file"
  # TensorBoard events past the limit: a clear error naming the event file.
  (ulimit -f 100; exec "$ag" train --data "$corpus" --out tb --iters 200 --eval-every 2 "${tiny[@]}" --tensorboard) >log 2>&1; st=$?
  [ $st -eq 1 ] && grep -q "tb/events.out.tfevents.*: write failed: File too large" log || fail "tensorboard under ulimit -f exited $st: $(cat log)"
  ;;
signals)
  # Round two, 5: SIGHUP stops like SIGTERM (checkpoint, 130), unless nohup ignores it.
  long=(--iters 100000 --eval-every 100000 --log-every 1 "${tiny[@]}")
  "$ag" train --data "$corpus" --out hup "${long[@]}" >hup.log 2>&1 &
  pid=$!
  for _ in $(seq 200); do grep -q '^iter' hup.log && break; sleep 0.1; done
  kill -HUP $pid; wait $pid; st=$?
  [ $st -eq 130 ] || fail "SIGHUP: exit $st, want 130: $(tail -3 hup.log)"
  grep -q "interrupted (signal 1)" hup.log || fail "SIGHUP: no stop message: $(tail -3 hup.log)"
  [ -f hup/train_state.safetensors ] || fail "SIGHUP: no checkpoint"
  # `attograd train | head -1`: the reader exits after one line; the run stops with its
  # checkpoint and says so on stderr (it used to die of SIGPIPE, status 141).
  "$ag" train --data "$corpus" --out pipe "${long[@]}" 2>pipe.err | head -1 >first.txt
  st=${PIPESTATUS[0]}
  [ $st -eq 130 ] || fail "| head -1: exit $st, want 130: $(cat pipe.err)"
  grep -q "standard output is a closed pipe" pipe.err || fail "| head -1: no message: $(cat pipe.err)"
  grep -q "resume with: attograd train --resume pipe" pipe.err || fail "| head -1: no resume hint: $(cat pipe.err)"
  [ -f pipe/train_state.safetensors ] || fail "| head -1: no checkpoint"
  taken=$(sed -n 's/.*stopped after iter \([0-9]*\);.*/\1/p' pipe.err)
  [ -n "$taken" ] || fail "| head -1: where did it stop? $(cat pipe.err)"
  expect 0 "done: $((taken + 2)) iters" "$ag" train --resume pipe --iters $((taken + 2)) --no-progress
  # Ctrl-C on `attograd train | tee log`: the reader dies first, then the run gets SIGINT and
  # its next line meets a closed pipe. It must still write its checkpoint and exit 130.
  mkfifo out.fifo
  "$ag" train --data "$corpus" --out tee "${long[@]}" >out.fifo 2>tee.err &
  pid=$!
  exec 3<out.fifo
  read -r line <&3 || fail "| tee: no first line"
  exec 3<&-  # the reader is gone
  kill -INT $pid; wait $pid; st=$?
  [ $st -eq 130 ] || fail "| tee + Ctrl-C: exit $st, want 130: $(cat tee.err)"
  [ -f tee/train_state.safetensors ] || fail "| tee + Ctrl-C: no checkpoint"
  grep -q "resume with: attograd train --resume tee" tee.err || fail "| tee + Ctrl-C: no resume hint: $(cat tee.err)"
  ;;
address_space)
  # Round two, 6: under ulimit -v OpenBLAS cannot map its buffers and used to spin forever;
  # now a clear refusal with the estimate and the limit, at once.
  small_run run
  # No room for even one buffer: refused at once with the buffer's size and the limit.
  (ulimit -v 150000; exec timeout 30 "$ag" sample --checkpoint run --tokens 5) >log 2>&1; st=$?
  [ $st -eq 1 ] || fail "sample under ulimit -v 150000: exit $st, want 1: $(cat log)"
  grep -q "OpenBLAS needs a work buffer of 134 MB of address space for each thread that calls it, but the address-space limit (ulimit -v 150000) leaves only" log ||
    fail "no estimate: $(cat log)"
  # Room for one buffer of two: it runs on one thread, and says so.
  (ulimit -v 250000; exec timeout 30 "$ag" sample --checkpoint run --tokens 5) >log 2>&1; st=$?
  [ $st -eq 0 ] || fail "sample under ulimit -v 250000: exit $st, want 0: $(cat log)"
  grep -q "leaves room for the OpenBLAS work buffers (134 MB each) of only 1 of 2 threads; running on 1" log ||
    [ "$(nproc)" -eq 1 ] || fail "no note: $(cat log)"
  # Training: the buffers first, then the model's estimate in what is left.
  (ulimit -v 600000; exec timeout 30 "$ag" train --data "$corpus" --out r --iters 2 --batch 64 --no-progress) >log 2>&1; st=$?
  [ $st -eq 2 ] && grep -q "on batch 64 needs about .* of address space, more than the .* the address-space limit (ulimit -v 600000) leaves" log ||
    fail "train under ulimit -v 600000: exit $st: $(cat log)"
  # Out of memory anywhere: one line, exit 1, the process ends (it used to hang on exit).
  python3 -c "import sys; sys.stdout.write(('to be or not to be ' * 64 + '\n') * 60000)" >big.txt
  (ulimit -v 900000; exec timeout 60 "$ag" eval --checkpoint run --text-file big.txt) >log 2>&1; st=$?
  [ $st -eq 1 ] || fail "bad_alloc: exit $st, want 1: $(cat log)"
  grep -q "error: out of memory (std::bad_alloc): this process may use .* (the address-space limit (ulimit -v))" log ||
    fail "bad_alloc: not the one-line error: $(cat log)"
  [ "$(wc -l <log)" -eq 1 ] || fail "bad_alloc: more than one line: $(cat log)"
  ;;
dead_end)
  # Round two, 8: killed after metrics.jsonl exists but before the first checkpoint: --resume
  # says what happened, and the same command starts over (it used to need --overwrite).
  "$ag" train --data "$corpus" --out dead --iters 4 --eval-every 2 "${tiny[@]}" --eval-iters 5000000 >dead.log 2>&1 &
  pid=$!
  for _ in $(seq 300); do [ -e dead/config.toml ] && break; sleep 0.1; done
  kill -KILL $pid; wait $pid 2>/dev/null
  [ -e dead/metrics.jsonl ] && [ ! -e dead/train_state.safetensors ] || fail "not the state wanted: $(ls dead)"
  expect 1 "stopped before its first checkpoint, so there is nothing to resume; start it again with attograd train --config dead/config.toml" \
    "$ag" train --resume dead
  expect 0 "removed dead/metrics.jsonl" "$ag" train --data "$corpus" --out dead --iters 4 --eval-every 2 "${tiny[@]}"
  # The config.toml of an --init-from run goes back to --config, as the docs say.
  expect 0 "initialized from" "$ag" train --data "$corpus" --init-from dead --out ft --iters 2 --eval-every 2 \
    --batch 4 --eval-iters 1 --sample-tokens 0 --no-progress
  expect 0 "initialized from" "$ag" train --config ft/config.toml --out ft2
  ;;
exit_codes)
  # Round two, 9: one exit status per class (docs/checkpoints.md): a flag value that cannot
  # work is 2, with --resume as without.
  small_run run
  expect 2 "--iters must be ≥ 0" "$ag" train --data "$corpus" --out r --iters -1
  expect 2 "--iters must be ≥ 0" "$ag" train --resume run --iters -1
  expect 2 "--iters 1: the run in run has already taken 4 steps" "$ag" train --resume run --iters 1
  expect 2 "--eval-iters 1000000000000000: the losses of each evaluation .* would need" \
    "$ag" train --data "$corpus" --out r --eval-iters 1000000000000000
  ulimit -v 2000000
  expect 2 "--eval-iters 1000000000: the losses of each evaluation" "$ag" train --data "$corpus" --out r --eval-iters 1000000000
  # An attention case of 180 KB asking for gigabytes: refused, naming the file.
  python3 - <<'PY'
import json, struct
L = 15000
def t(shape): return {"dtype": "F32", "shape": shape}
tensors = [("query", [L, 1, 1]), ("key", [L, 1, 1]), ("value", [L, 1, 1]), ("in_proj_weight", [3, 1]), ("out_proj.weight", [1, 1])]
header, off = {"__metadata__": {"num_heads": "1"}}, 0
for name, shape in tensors:
    n = 4
    for s in shape: n *= s
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + n]}
    off += n
h = json.dumps(header).encode()
h += b" " * ((8 - len(h) % 8) % 8)
open("big_case.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"\0" * off)
PY
  expect 1 "big_case.safetensors: running this case needs about 7.2 GB" "$ag" attention --in big_case.safetensors --out r.safetensors
  ;;
plot_extremes)
  # Round two, 10: large, close values used to make the tick loop grow until memory ran out.
  mkdir -p e1 e2
  printf '%s\n' '{"iter":9000000000000000000,"train_loss":2.0,"val_loss":null,"lr":0.001}' \
    '{"iter":9000000000000001024,"train_loss":1.9,"val_loss":null,"lr":0.001}' >e1/metrics.jsonl
  printf '%s\n' '{"iter":0,"train_loss":1e17,"val_loss":1e17,"lr":0.001}' \
    '{"iter":10,"train_loss":1.00000000000000064e17,"val_loss":1.00000000000000064e17,"lr":0.001}' >e2/metrics.jsonl
  ulimit -v 2000000
  expect 0 "wrote e1/loss.png" timeout 20 "$ag" plot e1
  expect 0 "wrote e2/loss.png" timeout 20 "$ag" plot e2
  ;;
*) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
