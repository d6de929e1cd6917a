#!/usr/bin/env bash
# One command: Plexus's GNNs against the PyTorch Geometric peer (examples/bench/pyg_gnn_peer.py)
# on the CPU, on the same R-MAT graph, in the same run, the same threads and the same math.
#   examples/bench/run_gnn_bench.sh [--scale S] [--edge-factor K] [--epochs E] [--threads T]
#                                   [--models "sage gin gcn gat"] [--layers L] [--hidden H]
#                                   [--features F] [--heads N]
# Default: scale 17 (131,072 nodes), edge factor 16, 128 features, 3 layers of 128, 6 epochs,
# 2 threads; GAT with 8 heads (hidden = heads × per-head width, 1 output head). Timed: one epoch's forward + loss + backward + Adam step (Plexus's train_seconds,
# the peer's --time), the median over the epochs after the first. Prints a table and one
# `BENCH_JSON {...}` line per model. Env: BUILD (default build), PYTHON (default /usr/bin/python3).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
SCALE=17 EDGE_FACTOR=16 EPOCHS=6 THREADS=2 MODELS="sage gin" LAYERS=3 HIDDEN=128 FEATURES=128 HEADS=8
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scale) SCALE="$2"; shift 2 ;;
    --edge-factor) EDGE_FACTOR="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --layers) LAYERS="$2"; shift 2 ;;
    --hidden) HIDDEN="$2"; shift 2 ;;
    --features) FEATURES="$2"; shift 2 ;;
    --heads) HEADS="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x "$BUILD/plexus" ]] || { echo "build first: cmake -S . -B build && cmake --build build -j2" >&2; exit 1; }
source "$ROOT/examples/bench/same_blas_kernels.sh" "$BUILD/plexus"
DIR="$BUILD/bench"
mkdir -p "$DIR"
GRAPH="$DIR/rmat${SCALE}_ef${EDGE_FACTOR}$([[ $FEATURES == 128 ]] || echo "_f$FEATURES").h5"
[[ -f "$GRAPH" ]] || "$BUILD/plexus" generate rmat --scale "$SCALE" --edge-factor "$EDGE_FACTOR" \
  --feature-width "$FEATURES" --classes 16 -o "$GRAPH"
printf "%-6s %14s %14s %8s\n" model "plexus ms" "pyg ms" ratio
for model in $MODELS; do
  metrics="$DIR/gnn_${model}_s${SCALE}.jsonl"
  kind=()
  [[ $model == gat ]] && kind=(--heads "$HEADS")
  "$BUILD/plexus" train --data "$GRAPH" --model "$model" "${kind[@]}" --layers "$LAYERS" --hidden "$HIDDEN" \
    --epochs "$EPOCHS" --threads "$THREADS" --quiet --metrics "$metrics" >/dev/null
  peer=$(OMP_NUM_THREADS="$THREADS" "$PYTHON" -W ignore "$ROOT/examples/bench/pyg_gnn_peer.py" "$GRAPH" --fresh \
    --model "$model" "${kind[@]}" --layers "$LAYERS" --hidden "$HIDDEN" --epochs "$EPOCHS" --seeds 0 --time \
    --threads "$THREADS" --json)
  "$PYTHON" - "$metrics" "$model" "$THREADS" "$SCALE" <<PY
import json, statistics, sys
metrics, model, threads, scale = sys.argv[1:5]
rows = [json.loads(l) for l in open(metrics)]
train = [r["train_seconds"] for r in rows if "epoch" in r][1:]
ours = statistics.median(train)
peer = json.loads('''$peer''')["runs"][0]["train_seconds_median"]
print(f"{model:6s} {ours * 1e3:14.1f} {peer * 1e3:14.1f} {ours / peer:8.3f}")
print("BENCH_JSON " + json.dumps({"model": model, "scale": int(scale), "threads": int(threads),
      "plexus_train_seconds": ours, "pyg_train_seconds": peer, "ratio": ours / peer}))
PY
done
