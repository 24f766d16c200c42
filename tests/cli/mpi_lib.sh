# Shared by the scripts of the MPI tests (mpi_train.sh over loopback, tests/multihost/ on
# network namespaces); sourced. They set $work, the folder of the test's files and logs.

fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "---- $f"; tail -n 30 "$f"; done; exit 1; }

# Per-step train losses of two metrics.jsonl files agree to $3 relative (default 1e-5; 0:
# bit-identical), and the same steps are logged.
same_losses() {
  python3 - "$1" "$2" "${3:-1e-5}" <<'PY' || fail "train losses differ by more than ${3:-1e-5}: $1 vs $2"
import json, sys
a, b = ([json.loads(l) for l in open(p) if l.strip()] for p in sys.argv[1:3])
tol = float(sys.argv[3])
ka = [(r["iter"], r["val_loss"] is None) for r in a]
kb = [(r["iter"], r["val_loss"] is None) for r in b]
assert ka == kb, f"different lines logged: {len(a)} vs {len(b)}"
worst = 0.0
for ra, rb in zip(a, b):
    for key in ("train_loss", "val_loss"):
        if ra[key] is not None:
            worst = max(worst, abs(ra[key] - rb[key]) / abs(rb[key]))
print(f"{len(a)} metrics lines, max relative loss difference {worst:.2e}")
sys.exit(0 if worst <= tol else 1)
PY
}

# Seconds since the date +%s.%N in $1, to 0.1 s.
seconds_since() { python3 -c "import time; print(f'{time.time() - $1:.1f}')"; }
