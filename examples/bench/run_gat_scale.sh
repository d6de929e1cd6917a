#!/usr/bin/env bash
# The largest graph one process trains a GAT on within a memory budget: Plexus against the
# PyTorch Geometric peer (GATConv, examples/bench/pyg_gnn_peer.py), on the same R-MAT graphs
# (2^scale nodes, edge factor 16, 64 features, 16 classes), in the same run.
#   examples/bench/run_gat_scale.sh [--budget 16G] [--from 16] [--to 22] [--epochs 2]
#                                   [--heads 8] [--hidden 64] [--threads 2] [--timeout 1800]
# Scales are tried in turn; a side stops at its first failure (the next scale needs more). A
# scale passes when the side finishes --epochs epochs (forward, loss, backward, Adam) of a
# 2-layer GAT (--heads heads of hidden/heads features, 1 output head).
#   Plexus: `plexus train --memory-per-rank BUDGET` (refuses a tensor past the budget) under
#           `ulimit -v BUDGET`; the peer: under `ulimit -v BUDGET` (its only limit).
# A run that does not end within --timeout seconds fails (PyTorch can hang, rather than fail,
# when the limit leaves it too little address space to start its threads).
# Prints a table (peak resident memory, seconds per epoch) and one `BENCH_JSON {...}` line per
# side with its largest scale. Env: BUILD (default build), PYTHON (default /usr/bin/python3).
# Graphs are kept in $BUILD/bench (scale 21: about 0.9 GB).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
source "$ROOT/examples/bench/same_blas_kernels.sh" "$BUILD/plexus"
PYTHON="${PYTHON:-/usr/bin/python3}"
BUDGET=16G FROM=16 TO=22 EPOCHS=2 HEADS=8 HIDDEN=64 THREADS=2 TIMEOUT=1800
while [[ $# -gt 0 ]]; do
  case "$1" in
    --budget) BUDGET="$2"; shift 2 ;;
    --from) FROM="$2"; shift 2 ;;
    --to) TO="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --heads) HEADS="$2"; shift 2 ;;
    --hidden) HIDDEN="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x "$BUILD/plexus" ]] || { echo "build first: cmake -S . -B build && cmake --build build -j2" >&2; exit 1; }
kib=$("$PYTHON" -c "import sys; s = sys.argv[1]; u = {'K': 1, 'M': 2**10, 'G': 2**20}; \
print(int(float(s[:-1]) * u[s[-1].upper()]) if s[-1].upper() in u else int(s) // 1024)" "$BUDGET") ||
  { echo "bad --budget $BUDGET (e.g. 16G)" >&2; exit 2; }
DIR="$BUILD/bench"
mkdir -p "$DIR"
log="$DIR/gat_scale.log"
: >"$log"
best_plexus=0 best_pyg=0 plexus_on=1 pyg_on=1
printf "%-5s %-7s %10s %12s %12s\n" scale side result "peak RSS" "s/epoch"
for ((scale = FROM; scale <= TO; ++scale)); do
  ((plexus_on || pyg_on)) || break
  graph="$DIR/rmat${scale}_ef16_f64.h5"
  [[ -f "$graph" ]] || "$BUILD/plexus" generate rmat --scale "$scale" --edge-factor 16 --feature-width 64 --classes 16 \
    -o "$graph" >>"$log" 2>&1 || { echo "generate rmat scale $scale failed (see $log)" >&2; exit 1; }
  if ((plexus_on)); then
    metrics="$DIR/gat_scale_plexus_s${scale}.jsonl"
    rm -f "$metrics"
    (ulimit -v "$kib" && timeout "$TIMEOUT" /usr/bin/time -f "PEAK_KB %M" "$BUILD/plexus" train --data "$graph" --model gat --heads "$HEADS" \
      --hidden "$HIDDEN" --epochs "$EPOCHS" --threads "$THREADS" --memory-per-rank "$BUDGET" --quiet \
      --metrics "$metrics") >"$DIR/gat_scale_plexus.out" 2>&1
    rc=$?
    cat "$DIR/gat_scale_plexus.out" >>"$log"
    peak=$(grep -o 'PEAK_KB [0-9]*' "$DIR/gat_scale_plexus.out" | cut -d' ' -f2)
    if ((rc == 0)); then
      best_plexus=$scale
      secs=$("$PYTHON" -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; \
e=[x['train_seconds'] for x in r if 'epoch' in x]; print(f'{sum(e)/len(e):.2f}')" "$metrics")
      printf "%-5s %-7s %10s %10.2f G %12s\n" "$scale" plexus ok "$(awk -v k="${peak:-0}" 'BEGIN { print k / 1048576 }')" "$secs"
    else
      plexus_on=0
      why=$( ((rc == 124)) && echo "no end within ${TIMEOUT} s" || grep -m1 'error' "$DIR/gat_scale_plexus.out" | cut -c1-90)
      printf "%-5s %-7s %10s   (%s)\n" "$scale" plexus failed "$why"
    fi
  fi
  if ((pyg_on)); then
    (ulimit -v "$kib" && OMP_NUM_THREADS="$THREADS" timeout "$TIMEOUT" /usr/bin/time -f "PEAK_KB %M" "$PYTHON" -W ignore \
      "$ROOT/examples/bench/pyg_gnn_peer.py" "$graph" --fresh --model gat --heads "$HEADS" --hidden "$HIDDEN" \
      --epochs "$EPOCHS" --seeds 0 --time --threads "$THREADS" --json) >"$DIR/gat_scale_pyg.out" 2>&1
    rc=$?
    cat "$DIR/gat_scale_pyg.out" >>"$log"
    peak=$(grep -o 'PEAK_KB [0-9]*' "$DIR/gat_scale_pyg.out" | cut -d' ' -f2)
    if ((rc == 0)); then
      best_pyg=$scale
      secs=$(grep '^{' "$DIR/gat_scale_pyg.out" | "$PYTHON" -c "import json,sys; r=json.loads(sys.stdin.read())['runs'][0]; \
print(f\"{r['train_seconds_mean'] if 'train_seconds_mean' in r else r['train_seconds_median']:.2f}\")")
      printf "%-5s %-7s %10s %10.2f G %12s\n" "$scale" pyg ok "$(awk -v k="${peak:-0}" 'BEGIN { print k / 1048576 }')" "$secs"
    else
      pyg_on=0
      why=$( ((rc == 124)) && echo "no end within ${TIMEOUT} s" || grep -m1 -iE 'error|memory' "$DIR/gat_scale_pyg.out" | cut -c1-90)
      printf "%-5s %-7s %10s   (%s)\n" "$scale" pyg failed "$why"
    fi
  fi
done
for side in plexus pyg; do
  best=best_$side
  echo "BENCH_JSON {\"side\": \"$side\", \"budget\": \"$BUDGET\", \"largest_scale\": ${!best}, \"heads\": $HEADS, \"hidden\": $HIDDEN, \"tried\": [$FROM, $TO]}"
done
