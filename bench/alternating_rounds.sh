#!/usr/bin/env bash
# Alternating rounds of the training step, like with like: attograd fp32 on OpenBLAS, fp32 on
# oneDNN, bf16 on oneDNN (its gemm API, then its matmul primitive) and bf16 on OpenBLAS, then
# PyTorch fp32 and bf16 (torch.autocast("cpu", bfloat16)), eager and compile, configuration by
# configuration, ROUNDS times over; one JSON line each (with the load average before each
# attograd measurement). On a shared machine the load drifts: rounds
# that alternate the sides let their ratios be compared where single runs cannot.
#   bench/alternating_rounds.sh OUT.jsonl [ROUNDS=2] [THREADS=1] [TORCH_PYTHON=/path/to/python]
set -euo pipefail
out=${1:?usage: bench/alternating_rounds.sh OUT.jsonl [ROUNDS] [THREADS] [TORCH_PYTHON]}
rounds=${2:-2}
threads=${3:-1}
py=${4:-${TORCH_PYTHON:-python3}}
here=$(cd "$(dirname "$0")" && pwd)
ag=${ATTOGRAD:-$here/../build/attograd}
for round in $(seq 1 "$rounds"); do
  for cfg in default large; do
    secs=6; [ "$cfg" = large ] && secs=12
    # bf16 on oneDNN through each of its interfaces (--gemm-bf16: the gemm API, the matmul
    # primitive, AMX tiles where the CPU has them), and on OpenBLAS's portable path. A CPU
    # where the matmul primitive cannot run says so on stderr and the rounds go on.
    for spec in "fp32 openblas" "fp32 onednn" "bf16 onednn gemm" "bf16 onednn matmul" "bf16 openblas"; do
      set -- $spec
      echo "{\"round\":$round,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}" >> "$out"
      "$ag" bench train --config "$cfg" --threads "$threads" --seconds "$secs" --precision "$1" --gemm "$2" \
          --gemm-bf16 "${3:-auto}" --json >> "$out" || true
    done
    for prec in fp32 bf16; do
      for mode in eager compile; do
        OPENBLAS_NUM_THREADS=1 "$py" "$here/torch_baseline.py" --worker --config "$cfg" --mode "$mode" --precision "$prec" \
            --torch-threads "$threads" --steps 0 --seconds "$secs" --warmup 3 2>/dev/null |
          grep '^{' | tail -1 | sed "s/^{/{\"side\":\"torch\",\"round\":$round,/" >> "$out" || true
      done
    done
  done
done
