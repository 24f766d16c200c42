#!/usr/bin/env bash
# Two builds' training steps profiled in turn, pair by pair, so that a change's effect on one op
# can be told from the machine's drift (which moves whole steps by 10-20% between minutes here):
#   bench/paired_profiles.sh OUT_DIR CONFIG PRECISION PAIRS BUILD_A/attograd BUILD_B/attograd
# Prints each profile's step time and its totals (bench/trace_ops.py), and keeps each table in
# OUT_DIR/<config>_<precision>_<A|B>_<pair>/ops.txt beside its trace.
set -euo pipefail
out=${1:?usage: bench/paired_profiles.sh OUT_DIR CONFIG PRECISION PAIRS BIN_A BIN_B}
cfg=$2 prec=$3 pairs=$4 a=$5 b=$6
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for i in $(seq 1 "$pairs"); do
  for side in A B; do
    bin=$a; [ "$side" = B ] && bin=$b
    d=$out/${cfg}_${prec}_${side}_$i
    "$bin" bench train --config "$cfg" --threads 2 --seconds 2 --precision "$prec" --gemm onednn --profile="$d" > /dev/null 2>&1
    python3 "$here/trace_ops.py" "$d/trace.json" > "$d/ops.txt"
    echo "$side $i: step $(head -1 "$d/ops.txt" | awk '{print $5}') ms;" \
         "$(grep TOTAL "$d/ops.txt" | awk '{print "GEMMs "$3", outside GEMMs "$5" thread-ms"}')"
  done
done
