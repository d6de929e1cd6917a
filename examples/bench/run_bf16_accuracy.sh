#!/usr/bin/env bash
# --precision bf16 against fp32 (docs/precision.md): the GCN's test accuracy at the
# best-validation epoch on the bundled Cora, SEEDS seeds each, the same seed, grid and options on
# both sides; prints mean, standard deviation, min and max per precision, the difference of the
# means in points, and the peak tensor bytes per rank of the largest rank.
#   examples/bench/run_bf16_accuracy.sh [--seeds N] [--epochs E] [--grid XxYxZ] [--data FILE]
# A grid of several ranks runs under mpirun (the bf16 all-reduces then round); on one rank only
# the features are rounded (Cora's are 0/1: exact). Env: BUILD, PYTHON.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
SEEDS=10 EPOCHS=200 GRID=2x2x1 DATA="$ROOT/data/cora.h5"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seeds) SEEDS="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --grid) GRID="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
IFS=x read -r gx gy gz <<<"$GRID"
np=$((gx * gy * gz))
DIR="$BUILD/bench/bf16_accuracy"
mkdir -p "$DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for p in fp32 bf16; do
  for s in $(seq 0 $((SEEDS - 1))); do
    mpirun -np "$np" "$BUILD/plexus" train --data "$DATA" --grid "$GRID" --precision "$p" --epochs "$EPOCHS" \
      --seed "$s" --threads 1 --quiet --metrics "$DIR/${p}_$s.jsonl" >/dev/null
  done
done
"$PYTHON" - "$DIR" "$SEEDS" "$GRID" <<'PY'
import json, statistics, sys
d, seeds, grid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
res = {}
for p in ("fp32", "bf16"):
    ends = [json.loads(open(f"{d}/{p}_{s}.jsonl").read().splitlines()[-1]) for s in range(seeds)]
    accs = [100 * e["test_acc"] for e in ends]
    res[p] = accs
    print(f"{p}: test accuracy {statistics.mean(accs):.2f} ± {statistics.pstdev(accs):.2f} "
          f"(min {min(accs):.1f}, max {max(accs):.1f}) over {seeds} seeds on {grid}; "
          f"peak tensor bytes of the largest rank {ends[0]['peak_tensor_bytes']}")
diff = statistics.mean(res["bf16"]) - statistics.mean(res["fp32"])
print(f"bf16 - fp32: {diff:+.2f} points")
print("BENCH_JSON " + json.dumps({"grid": grid, "seeds": seeds, "fp32": res["fp32"], "bf16": res["bf16"], "points": diff}))
PY
