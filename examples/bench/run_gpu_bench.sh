#!/usr/bin/env bash
# One command on a GPU machine: Plexus (CUDA backend) against PyTorch Geometric's GCNConv on the
# same GPU, the same file and the same math, in the same run; then the SpMM/GEMM kernels alone
# against cuSPARSE/cuBLAS and the GPU's copy bandwidth (examples/bench/bench_spmm_cuda.cpp).
#   examples/bench/run_gpu_bench.sh [--nodes N] [--avg-degree D] [--features F] [--classes C]
#                                   [--epochs E] [--layers L] [--hidden H] [--models "sage gat"]
#                                   [--skip-gcn]
# Default: a graph shaped like ogbn-products (2,449,029 nodes, ~62M undirected edges, 100
# features, 47 classes, 8 % train), 3 layers, hidden 128. --models: the other GNNs too, each
# against examples/bench/pyg_gnn_peer.py --device cuda (SAGEConv, GATConv with 8 heads) on the
# same file. Env: BUILD (default build), PYTHON, PYG_ADJ (the GCN peer's --adj: csr, edge_index
# or both, the default).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-python3}"
NODES=2449029 DEG=50.6 FEATURES=100 CLASSES=47 EPOCHS=10 LAYERS=3 HIDDEN=128 MODELS="" GCN=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes) NODES="$2"; shift 2 ;;
    --avg-degree) DEG="$2"; shift 2 ;;
    --features) FEATURES="$2"; shift 2 ;;
    --classes) CLASSES="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --layers) LAYERS="$2"; shift 2 ;;
    --hidden) HIDDEN="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --skip-gcn) GCN=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x "$BUILD/plexus" ]] || { echo "build first: cmake -S . -B build && cmake --build build -j" >&2; exit 1; }
DIR="$BUILD/bench"; mkdir -p "$DIR"
GRAPH="$DIR/sbm_n${NODES}_d${DEG}_f${FEATURES}_c${CLASSES}.h5"
if [[ ! -f "$GRAPH" ]]; then
  echo "== generating $GRAPH"
  "$BUILD/plexus" generate sbm --nodes "$NODES" --avg-degree "$DEG" --feature-width "$FEATURES" --classes "$CLASSES" \
    --train-fraction 0.08 --val-fraction 0.016 -o "$GRAPH"
fi
LOG="$DIR/gpu_$(date +%Y%m%d_%H%M%S)"
for m in $MODELS; do
  echo "== $m: plexus train --backend cuda, then pyg_gnn_peer.py --device cuda"
  "$BUILD/plexus" train --model "$m" --backend cuda --data "$GRAPH" --layers "$LAYERS" --hidden "$HIDDEN" \
    --epochs "$EPOCHS" --metrics "$LOG.$m.plexus.jsonl" | tail -2 || echo "plexus $m failed"
  PYTHONUNBUFFERED=1 "$PYTHON" -W ignore "$ROOT/examples/bench/pyg_gnn_peer.py" "$GRAPH" --fresh --model "$m" \
    --layers "$LAYERS" --hidden "$HIDDEN" --epochs "$EPOCHS" --time --device cuda --json > "$LOG.$m.pyg.json" \
    || echo "pyg $m failed"
  "$PYTHON" - "$m" "$LOG.$m.plexus.jsonl" "$LOG.$m.pyg.json" <<'PY' || true
import json, statistics, sys
m, px_file, pyg_file = sys.argv[1:]
rows = [json.loads(l) for l in open(px_file)]
ep = [r for r in rows if "epoch" in r and "summary" not in r]
px = statistics.median(r["train_seconds"] for r in (ep[1:] if len(ep) > 1 else ep))
pyg = json.load(open(pyg_file))
t = pyg["runs"][0]["train_seconds_median"]
print(f"{m}: train step plexus {px * 1e3:.1f} ms, PyG {t * 1e3:.1f} ms (torch {pyg['torch']}, PyG "
      f"{pyg['torch_geometric']}): ratio plexus/pyg {px / t:.3f}")
print("BENCH_JSON " + json.dumps({"impl": "gpu_gnn_side_by_side", "model": m, "plexus_train_seconds": px,
                                  "pyg_train_seconds": t}))
PY
done
((GCN)) || exit 0
echo "== plexus train --backend cuda"
"$BUILD/plexus" train --backend cuda --data "$GRAPH" --layers "$LAYERS" --hidden "$HIDDEN" --epochs "$EPOCHS" \
  --metrics "$LOG.plexus.jsonl" | tail -3
echo "== PyG peer"
PYTHONUNBUFFERED=1 "$PYTHON" -W ignore "$ROOT/examples/bench/pyg_gcn_peer.py" "$GRAPH" --epochs "$EPOCHS" \
  --layers "$LAYERS" --hidden "$HIDDEN" --adj "${PYG_ADJ:-both}" | tee "$LOG.pyg.txt"
"$PYTHON" - "$LOG.plexus.jsonl" "$LOG.pyg.txt" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ep = [r for r in rows if "epoch" in r and "summary" not in r]
timed = ep[1:] if len(ep) > 1 else ep
px = {k: statistics.median(r[k] for r in timed) for k in ("train_seconds", "epoch_seconds")}
tc = next(json.loads(l[len("BENCH_JSON "):]) for l in open(sys.argv[2]) if l.startswith("BENCH_JSON "))
print(f"\n== side by side: {tc['device']}, N={tc['num_nodes']}, nnz(A_hat)={tc['nnz_a_hat']}, layers={tc['layers']}, "
      f"hidden={tc['hidden']}; PyG {tc['pyg_version']} (adj={tc['best_adj']}), torch {tc['torch_version']}")
print(f"{'median over epochs 2..E':40s} {'plexus':>10s} {'pyg':>10s} {'plexus/pyg':>11s}")
for k, name in (("train_seconds", "train step (fwd+loss+bwd+Adam), ms"), ("epoch_seconds", "epoch (+ eval forward), ms")):
    a, b = px[k], tc[k + "_median"]
    print(f"{name:40s} {a * 1e3:10.1f} {b * 1e3:10.1f} {a / b:11.3f}")
print(f"final training loss: plexus {ep[-1]['loss']:.4f}, pyg {[r for r in tc['runs'] if r['adj'] == tc['best_adj']][0]['losses'][-1]:.4f}")
ratio = px["train_seconds"] / tc["train_seconds_median"]
print(f"train-step ratio plexus/pyg = {ratio:.3f} (goal <= 0.5: {'MET' if ratio <= 0.5 else 'NOT MET'})")
print("BENCH_JSON " + json.dumps({"impl": "gpu_side_by_side", "ratio_train": ratio, "plexus": px, "pyg": tc}))
PY
echo "== SpMM / GEMM kernels: plexus CUDA backend vs cuSPARSE / cuBLAS"
[[ -x "$BUILD/examples/bench_spmm_cuda" ]] || { echo "build it first: cmake --build $BUILD --target bench_spmm_cuda" >&2; exit 1; }
"$BUILD/examples/bench_spmm_cuda" "$GRAPH" --features "$FEATURES" --hidden "$HIDDEN" --classes "$CLASSES" | tee "$LOG.spmm_cuda.txt"
