#!/usr/bin/env bash
# --wire int8|int4 against fp32 (docs/communication.md, "Low-bit wire"): the test accuracy at the
# best-validation epoch, SEEDS seeds each, the same seed, grid and options on every side; prints
# per wire the mean, standard deviation, min and max, the difference of the means in points, and
# the bytes of a steady epoch (every collective, all axes and ranks) and of its activation sums
# (the metrics' activation_bytes: what the wire shrinks) against fp32's.
#   examples/bench/run_wire_accuracy.sh [--seeds N] [--epochs E] [--grid XxYxZ] [--data FILE]
#                                       [--wires "fp32 int8 int4"] [-- TRAIN OPTIONS...]
# Default: the bundled Cora, GCN with Kipf & Welling's defaults, 10 seeds of 200 epochs on 2x2x1.
# Env: BUILD, PYTHON.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
SEEDS=10 EPOCHS=200 GRID=2x2x1 DATA="$ROOT/data/cora.h5" WIRES="fp32 int8 int4"
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seeds) SEEDS="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --grid) GRID="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --wires) WIRES="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
IFS=x read -r gx gy gz <<<"$GRID"
np=$((gx * gy * gz))
DIR="$BUILD/bench/wire_accuracy/$(basename "$DATA" .h5)"
mkdir -p "$DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for w in $WIRES; do
  for s in $(seq 0 $((SEEDS - 1))); do
    mpirun -np "$np" "$BUILD/plexus" train --data "$DATA" --grid "$GRID" --wire "$w" --epochs "$EPOCHS" --seed "$s" \
      --threads 1 --quiet --metrics "$DIR/${w}_$s.jsonl" "${extra[@]}" >/dev/null
  done
done
"$PYTHON" - "$DIR" "$SEEDS" "$GRID" $WIRES <<'PY'
import json, statistics, sys
d, seeds, grid, wires = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print(f"test accuracy at the best-validation epoch, {seeds} seeds on {grid} (mean ± sd, min-max); bytes of a steady epoch, all and the activation sums'")
res, byts, act = {}, {}, {}
for w in wires:
    runs = [[json.loads(l) for l in open(f"{d}/{w}_{s}.jsonl")] for s in range(seeds)]
    res[w] = [100 * r[-1]["test_acc"] for r in runs]
    epochs = [x for x in runs[0] if "epoch" in x and "comm_bytes" in x]
    byts[w] = epochs[-1]["comm_bytes"]["total"]
    act[w] = epochs[-1]["activation_bytes"]  # of them, the activation sums'
base = wires[0]
for w in wires:
    a = res[w]
    diff = statistics.mean(a) - statistics.mean(res[base])
    print(f"{w:5s} {statistics.mean(a):6.2f} ± {statistics.pstdev(a):.2f} ({min(a):.1f}-{max(a):.1f})  "
          f"{diff:+6.2f} points  {byts[w]:.0f} bytes/epoch ({byts[w] / byts[base]:.3f}x {base}), "
          f"activation sums {act[w]:.0f} ({act[w] / act[base]:.3f}x)")
    print("BENCH_JSON " + json.dumps({"wire": w, "grid": grid, "seeds": seeds, "test_acc": a, "points": diff,
                                      "bytes_per_epoch": byts[w], "bytes_ratio": byts[w] / byts[base],
                                      "activation_bytes": act[w], "activation_ratio": act[w] / act[base]}))
PY
