#!/usr/bin/env bash
# --precision bf16 against fp32 (docs/precision.md): the test accuracy at the best-validation
# epoch on the bundled Cora, SEEDS seeds each, the same seed, grid and options on both sides, for
# each GNN kind of --model; prints per kind the mean, standard deviation, min and max per
# precision, the difference of the means in points, and the peak tensor bytes per rank of the
# largest rank.
#   examples/bench/run_bf16_accuracy.sh [--model "gcn sage gin gat"] [--seeds N] [--epochs E]
#                                       [--grid XxYxZ] [--data FILE]
# Each kind trains with its usual Cora settings (KIND_OPTIONS below: run_gnn_quality.sh's hidden
# width for SAGE and GIN, PyG's GAT example for GAT; the GCN Kipf & Welling's defaults). A grid
# of several ranks runs under mpirun (the bf16 all-reduces then round); on one rank only the
# stored tensors are rounded. Env: BUILD, PYTHON.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
SEEDS=10 EPOCHS=200 GRID=2x2x1 DATA="$ROOT/data/cora.h5" MODELS=gcn
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) MODELS="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --grid) GRID="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
declare -A KIND_OPTIONS=(
  [gcn]=""
  [sage]="--hidden 64"
  [gin]="--hidden 64"
  [gat]="--hidden 64 --heads 8 --dropout 0.6 --attn-dropout 0.6 --lr 0.005"
)
IFS=x read -r gx gy gz <<<"$GRID"
np=$((gx * gy * gz))
DIR="$BUILD/bench/bf16_accuracy"
mkdir -p "$DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for model in ${MODELS//,/ }; do
  [[ -v "KIND_OPTIONS[$model]" ]] || { echo "unknown model $model" >&2; exit 2; }
  read -ra extra <<<"${KIND_OPTIONS[$model]}"
  for p in fp32 bf16; do
    for s in $(seq 0 $((SEEDS - 1))); do
      mpirun -np "$np" "$BUILD/plexus" train --data "$DATA" --grid "$GRID" --model "$model" "${extra[@]}" \
        --precision "$p" --epochs "$EPOCHS" --seed "$s" --threads 1 --quiet --metrics "$DIR/${model}_${p}_$s.jsonl" >/dev/null
    done
  done
done
"$PYTHON" - "$DIR" "$SEEDS" "$GRID" ${MODELS//,/ } <<'PY'
import json, statistics, sys
d, seeds, grid, models = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print(f"Cora test accuracy at the best-validation epoch, {seeds} seeds on {grid} (mean ± sd, min-max):")
print(f"{'kind':5s} {'fp32':>24s} {'bf16':>24s} {'bf16-fp32':>10s}  peak tensor bytes fp32 / bf16")
for model in models:
    res, peak = {}, {}
    for p in ("fp32", "bf16"):
        ends = [json.loads(open(f"{d}/{model}_{p}_{s}.jsonl").read().splitlines()[-1]) for s in range(seeds)]
        res[p] = [100 * e["test_acc"] for e in ends]
        peak[p] = ends[0]["peak_tensor_bytes"]
    cell = lambda a: f"{statistics.mean(a):.2f} ± {statistics.pstdev(a):.2f} ({min(a):.1f}-{max(a):.1f})"
    diff = statistics.mean(res["bf16"]) - statistics.mean(res["fp32"])
    print(f"{model:5s} {cell(res['fp32']):>24s} {cell(res['bf16']):>24s} {diff:+10.2f}  "
          f"{peak['fp32']} / {peak['bf16']} ({peak['bf16'] / peak['fp32']:.3f})")
    print("BENCH_JSON " + json.dumps({"model": model, "grid": grid, "seeds": seeds, "fp32": res["fp32"],
                                      "bf16": res["bf16"], "points": diff,
                                      "peak_fp32": peak["fp32"], "peak_bf16": peak["bf16"]}))
PY
