#!/usr/bin/env bash
# 3D-parallel scaling study (a benchmark, not a test): for P = 1, 2, 4, 8 on one R-MAT graph,
# per-epoch communication bytes measured vs the analytic model (`plexus plan`), epoch, compute
# and comm seconds; then, at P = 8, the byte saving of the communication variants and the
# effect of blocked aggregation (--agg-chunks).
#   examples/bench/run_scaling.sh [--scale 20] [--hidden 64] [--epochs 3] [--grids "1x1x1 1x2x1 2x2x1 2x2x2"]
# On a 2-core machine the P > 2 runs are oversubscribed: read bytes, not speed-up.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PY=/usr/bin/python3
SCALE=20 HIDDEN=64 EPOCHS=3 GRIDS="1x1x1 1x2x1 2x2x1 2x2x2"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scale) SCALE="$2"; shift 2 ;;
    --hidden) HIDDEN="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --grids) GRIDS="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
DIR="$BUILD/bench"; mkdir -p "$DIR"
GRAPH="$DIR/rmat${SCALE}_ef16.h5"
[[ -f "$GRAPH" ]] || "$BUILD/plexus" generate rmat --scale "$SCALE" --edge-factor 16 --features 128 --classes 16 -o "$GRAPH"

run() {  # run NAME GRID EXTRA-ARGS...
  local name=$1 grid=$2; shift 2
  local p=$(( ${grid//x/*} ))
  local cmd=("$BUILD/plexus" train --grid "$grid" --data "$GRAPH" --hidden "$HIDDEN" --epochs "$EPOCHS" --quiet
             --metrics "$DIR/scaling-$name.jsonl" "$@")
  if [[ $p -eq 1 ]]; then "${cmd[@]}" >/dev/null; else mpirun -np "$p" "${cmd[@]}" >/dev/null; fi
  "$BUILD/plexus" plan --data "$GRAPH" --ranks "$p" --hidden "$HIDDEN" --json >"$DIR/plan-$p.json"
}

for g in $GRIDS; do run "$g" "$g"; done
run 2x2x2-rs-ag 2x2x2 --comm-variant rs-ag
run 2x2x2-rs-ag-reuse 2x2x2 --comm-variant rs-ag-reuse
run 2x2x2-chunks4 2x2x2 --agg-chunks 4
run 2x2x2-chunks8 2x2x2 --agg-chunks 8

"$PY" - "$DIR" "$GRIDS" <<'PY'
import json, sys, statistics
d, grids = sys.argv[1], sys.argv[2].split()
def load(name):
    rows = [json.loads(l) for l in open(f"{d}/scaling-{name}.jsonl")]
    return rows[:-1], rows[-1]
def med(rows, k): return statistics.median(r[k] for r in rows[1:] or rows)
print(f"{'grid':8} {'P':>2} {'epoch s':>8} {'compute s':>9} {'comm s':>7} {'bytes/epoch (measured)':>23} {'model':>14} {'x / y / z (MB)':>22} {'peak MB/rank':>12}")
for g in grids:
    rows, summ = load(g)
    p = summ["ranks"]
    plan = {e["grid"]: e for e in json.load(open(f"{d}/plan-{p}.json"))["grids"]}[g]
    b = rows[-1]["comm_bytes"]
    print(f"{g:8} {p:>2} {med(rows,'epoch_seconds'):8.3f} {med(rows,'compute_seconds'):9.3f} {med(rows,'comm_seconds'):7.3f} "
          f"{b['total']:23,.0f} {plan['bytes_steady']['total']:14,.0f} "
          f"{b['x']/1e6:7.1f}/{b['y']/1e6:6.1f}/{b['z']/1e6:6.1f} {summ['peak_tensor_bytes']/1e6:12.1f}")
base = load("2x2x2")[0][-1]["comm_bytes"]["total"]
for v in ("rs-ag", "rs-ag-reuse"):
    t = load(f"2x2x2-{v}")[0][-1]["comm_bytes"]["total"]
    print(f"2x2x2 --comm-variant {v}: {t:,.0f} bytes/epoch, {100*(1-t/base):.1f} % less than baseline")
for k in ("1", "4", "8"):
    rows = load("2x2x2" if k == "1" else f"2x2x2-chunks{k}")[0]
    print(f"2x2x2 --agg-chunks {k}: epoch {med(rows,'epoch_seconds'):.3f} s, comm {med(rows,'comm_seconds'):.3f} s")
PY
