#!/usr/bin/env bash
# Ranks of one job started with different configurations (issue 23, class 7). mpirun's
# `-np 1 A : -np 1 B` starts two ranks with different command lines; before, they waited for
# each other forever in an allreduce (--iters, --layers) or trained silently wrong (--seed).
# Now every rank compares its configuration with rank 0's at the start and the job ends at
# once with the differing fields named. Scenarios: iters, layers, seed (they differ) and agree
# (same flags, different --out and --threads: trains).
# usage: mpi_agree.sh SCENARIO ATTOGRAD CORPUS WORKDIR MPIRUN      prints "PASS: SCENARIO"
set -u
scenario=$1 ag=$2 corpus=$3 work=$4 mpirun=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
mpi=("$mpirun" --oversubscribe --bind-to none --mca btl self,tcp --mca btl_tcp_if_include lo
     --mca oob_tcp_if_include lo)
fail() { echo "FAIL: $*"; tail -n 30 job.log; exit 1; }
base=(train --data "$corpus" --layers 1 --heads 2 --embd 16 --block 16 --batch 4 --eval-iters 2 --eval-every 10
      --sample-tokens 0 --no-progress --threads 1)
case $scenario in
iters) a=(--iters 20) b=(--iters 40) field="--iters (rank 0: 20" ;;
layers) a=(--iters 20 --layers 1) b=(--iters 20 --layers 2) field="--layers (rank 0: 1" ;;
seed) a=(--iters 20) b=(--iters 20 --seed 7) field="--seed (rank 0: 1337" ;;
agree) a=(--iters 20) b=(--iters 20 --threads 2 --out other) field="" ;;
*) fail "unknown scenario $scenario" ;;
esac
start=$(date +%s)
timeout 90 "${mpi[@]}" -np 1 "$ag" "${base[@]}" --out run "${a[@]}" : -np 1 "$ag" "${base[@]}" --out run "${b[@]}" \
  >job.log 2>&1
status=$?
took=$(($(date +%s) - start))
if [ "$scenario" = agree ]; then
  [ $status -eq 0 ] || fail "the same configuration did not train: status $status"
  grep -q "done: 20 iters" job.log || fail "no end of run"
else
  [ $status -ne 124 ] || fail "the job hung (killed by the 90 s timeout)"
  [ $status -ne 0 ] || fail "the job succeeded"
  grep -qF -- "the ranks of this job were started with different configurations: $field" job.log ||
    fail "no message naming the field"
  [ "$took" -le 60 ] || fail "took $took s"
fi
echo "PASS: $scenario"
