#!/usr/bin/env bash
# One command: Plexus vs PyTorch (CPU) on the same R-MAT graph, in the same run.
#   examples/bench/run_gcn_bench.sh [--scale S] [--edge-factor K] [--epochs E] [--threads T] [--reps R]
# Default: scale 20, edge factor 17 -> 1,048,576 nodes and > 16M undirected edges.
# Env: BUILD (default build), PYTHON (default /usr/bin/python3: needs torch, h5py, scipy).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
SCALE=20 EDGE_FACTOR=17 EPOCHS=3 THREADS=2 REPS=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scale) SCALE="$2"; shift 2 ;;
    --edge-factor) EDGE_FACTOR="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x "$BUILD/plexus" && -x "$BUILD/examples/bench_gcn" ]] || {
  echo "build first: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2" >&2; exit 1; }
source "$ROOT/examples/bench/same_blas_kernels.sh" "$BUILD/plexus"
DIR="$BUILD/bench"; mkdir -p "$DIR"
GRAPH="$DIR/rmat${SCALE}_ef${EDGE_FACTOR}.h5"
if [[ ! -f "$GRAPH" ]]; then
  echo "== generating $GRAPH"
  "$BUILD/plexus" generate rmat --scale "$SCALE" --edge-factor "$EDGE_FACTOR" --feature-width 128 --classes 16 -o "$GRAPH"
fi
LOG="$DIR/run_$(date +%Y%m%d_%H%M%S)"
echo "== plexus (bench_gcn), threads=$THREADS"
"$BUILD/examples/bench_gcn" "$GRAPH" --epochs "$EPOCHS" --threads "$THREADS" --reps "$REPS" | tee "$LOG.plexus.txt"
echo "== torch peer, threads=$THREADS"
OMP_NUM_THREADS="$THREADS" "$PYTHON" -W ignore "$ROOT/examples/bench/torch_gcn_peer.py" "$GRAPH" \
  --epochs "$EPOCHS" --threads "$THREADS" --reps "$REPS" | tee "$LOG.torch.txt"
echo
"$PYTHON" - "$LOG.plexus.txt" "$LOG.torch.txt" <<'PY'
import json, sys
def rec(p):
    for line in open(p):
        if line.startswith("BENCH_JSON "):
            return json.loads(line[len("BENCH_JSON "):])
    sys.exit(f"no BENCH_JSON line in {p}")
px, tc = rec(sys.argv[1]), rec(sys.argv[2])
print(f"== side by side: N={px['num_nodes']}, nnz(A_hat)={px['nnz_a_hat']}, F=128, hidden={px['hidden']}, "
      f"layers={px['layers']}, threads={px['threads']}, torch {tc['torch_version']} ({tc['sparse_layout']} SpMM)")
rows = [("SpMM  A_hat*X(Nx128)  GB/s", px["spmm_gbs"], tc["spmm_gbs"], "{:.2f}"),
        ("SpMM  seconds", px["spmm_seconds"], tc["spmm_seconds"], "{:.4f}"),
        ("GEMM  (Nx128)(128x128) GFLOP/s", px["gemm_gflops"], tc["gemm_gflops"], "{:.2f}"),
        ("GEMM  (Nx128)^T(Nx128) GFLOP/s", px["gemm_tn_gflops"], tc["gemm_tn_gflops"], "{:.2f}"),
        ("GCN epoch seconds (median)", px["epoch_seconds_median"], tc["epoch_seconds_median"], "{:.3f}")]
print(f"{'':34s} {'plexus':>12s} {'torch':>12s} {'plexus/torch':>13s}")
for name, a, b, fmt in rows:
    print(f"{name:34s} {fmt.format(a):>12s} {fmt.format(b):>12s} {a / b:13.3f}")
ratio = px["epoch_seconds_median"] / tc["epoch_seconds_median"]
print(f"STREAM triad (this machine)        {px['triad_gbs']:.2f} GB/s")
print(f"SpMM fraction of triad bandwidth   plexus {100 * px['spmm_gbs'] / px['triad_gbs']:.1f}%   "
      f"torch {100 * tc['spmm_gbs'] / px['triad_gbs']:.1f}%")
print(f"epoch ratio plexus/torch = {ratio:.3f}  (issue 47's goal <= 0.2: {'MET' if ratio <= 0.2 else 'NOT MET'})")
roof = px.get("roofline", {})
print("roofline of a steady Plexus epoch (share of each family's bound: triad for SpMM and memory-bound, GEMM rate for GEMM):")
for fam, r in sorted(roof.items()):
    print(f"  {fam:8s} {r['seconds']:.4f} s  bound {r['bound_seconds']:.4f} s  {100 * r['fraction']:.1f}%")
if "epoch_roofline_fraction" in px:
    print(f"  epoch at {100 * px['epoch_roofline_fraction']:.1f}% of its roofline")
print("BENCH_JSON " + json.dumps({"impl": "side_by_side", "epoch_ratio": ratio,
      "spmm_fraction_of_triad": px["spmm_gbs"] / px["triad_gbs"], "plexus": px, "torch": tc}))
PY
