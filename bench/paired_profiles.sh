#!/usr/bin/env bash
# Two builds' training steps profiled in turn, pair by pair, so that a change's effect on one op
# can be told from the machine's drift (which moves whole steps by 10-20% between minutes here):
#   bench/paired_profiles.sh OUT_DIR CONFIG PRECISION PAIRS BUILD_A/attograd BUILD_B/attograd
# (GEMM=openblas in the environment profiles that provider; oneDNN otherwise)
# Prints each profile's step time and its totals (bench/trace_ops.py), and the two threads' round
# trip that each of the run's timed rounds began with (on a VM it tells where the host placed
# them: bench/README.md); keeps each table in OUT_DIR/<config>_<precision>_<A|B>_<pair>/ops.txt
# beside its trace and the run's JSON line (bench.json).
set -euo pipefail
out=${1:?usage: bench/paired_profiles.sh OUT_DIR CONFIG PRECISION PAIRS BIN_A BIN_B}
cfg=$2 prec=$3 pairs=$4 a=$5 b=$6
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for i in $(seq 1 "$pairs"); do
  for side in A B; do
    bin=$a; [ "$side" = B ] && bin=$b
    d=$out/${cfg}_${prec}_${side}_$i
    mkdir -p "$d"
    "$bin" bench train --config "$cfg" --threads 2 --seconds 2 --precision "$prec" --gemm "${GEMM:-onednn}" --profile="$d" \
        --json > "$d/bench.json" 2> /dev/null
    python3 "$here/trace_ops.py" "$d/trace.json" > "$d/ops.txt"
    # the two threads' round trip before each timed round (bench train's placement probe)
    trips=$(python3 -c 'import json, sys
print(" ".join("%.0f" % v if v is not None else "-"
               for v in json.load(open(sys.argv[1])).get("core_round_trip_ns_rounds", [])))' "$d/bench.json")
    echo "$side $i: step $(head -1 "$d/ops.txt" | awk '{print $5}') ms;" \
         "$(grep TOTAL "$d/ops.txt" | awk '{print "GEMMs "$3", outside GEMMs "$5" thread-ms"}');" \
         "round trips ${trips:-?} ns"
  done
done
