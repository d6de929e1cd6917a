#!/usr/bin/env bash
# Data parallelism and ZeRO on this machine: the baby GPT (4 layers, 4 heads, embed 128,
# block 64, global batch 12) on P = 1, 2, 4, 8 ranks over a few (D, X×Y×Z, ZeRO stage) choices.
# Per choice: the median step time (steps 2..S), the data-parallel gradient reduction's span and
# the part of it the backward pass waited for (rank 0; the rest overlapped compute), the bytes
# per axis of one step (summed over ranks, as the metrics count them) and the largest memory per
# rank by kind. On a machine with
# fewer cores than ranks read the bytes and the memory, not the time.
#   examples/bench/run_dp_scaling.sh [--steps S] [-- MODEL OPTIONS...]   (e.g. -- --precision bf16)
# Env: BUILD (default build), PYTHON (default /usr/bin/python3).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
STEPS=6
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) STEPS="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
MODEL=(--layers 4 --heads 4 --embed 128 --block 64 --batch 12 "$@")
export OMPI_MCA_rmaps_base_oversubscribe=1
DIR="$BUILD/bench/dp_$(date +%Y%m%d_%H%M%S)"; mkdir -p "$DIR"
[[ -x "$BUILD/plexus" ]] || { echo "build first: cmake --build build -j" >&2; exit 1; }

# P D GRID STAGE
CHOICES=(
  "1 1 1x1x1 0"
  "2 2 1x1x1 0" "2 2 1x1x1 1" "2 2 1x1x1 2" "2 2 1x1x1 3" "2 1 2x1x1 0"
  "4 4 1x1x1 0" "4 4 1x1x1 3" "4 2 2x1x1 0" "4 2 2x1x1 2" "4 2 1x2x1 3" "4 1 2x2x1 0"
  "8 8 1x1x1 0" "8 8 1x1x1 1" "8 8 1x1x1 2" "8 8 1x1x1 3" "8 2 2x2x1 1" "8 4 2x1x1 3" "8 1 2x2x2 0"
)
for c in "${CHOICES[@]}"; do
  read -r P D G S <<<"$c"
  echo "== P=$P D=$D grid $G ZeRO-$S"
  mpirun -np "$P" "$BUILD/plexus" gpt train --data "$ROOT/data/tinyshakespeare.txt" "${MODEL[@]}" --iters "$STEPS" \
    --eval-every 0 --threads 1 -q --grid "$G" --dp "$D" --zero "$S" --metrics "$DIR/P${P}_D${D}_${G}_z$S.jsonl" >/dev/null
done
"$PYTHON" - "$DIR" "${CHOICES[@]}" <<'PY' | tee "$DIR/table.md"
import json, statistics, sys
d = sys.argv[1]
print("| P | D | grid | ZeRO | step ms | d reduce ms (exposed) | x MB | y MB | z MB | d MB | param MB | grad MB | optimizer MB | activation MB | workspace MB | peak MB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for c in sys.argv[2:]:
    P, D, G, S = c.split()
    rows = [json.loads(l) for l in open(f"{d}/P{P}_D{D}_{G}_z{S}.jsonl")]
    steps, s = [r for r in rows if "iter" in r], rows[-1]
    t = statistics.median(r["step_seconds"] for r in steps[1:]) * 1e3
    red = [r["dp_reduce"] for r in steps[1:] if "dp_reduce" in r]
    reduce = (f"{statistics.median(x['seconds'] for x in red) * 1e3:.1f} "
              f"({statistics.median(x['exposed_seconds'] for x in red) * 1e3:.1f})") if red else "-"
    b = steps[-1]["comm_bytes"]
    m = s["memory"]
    mb = lambda v: f"{v / 1e6:.2f}"
    print(f"| {P} | {D} | {G} | {S} | {t:.1f} | {reduce} | {mb(b['x'])} | {mb(b['y'])} | {mb(b['z'])} | {mb(b['d'])} | "
          f"{mb(m['param_bytes'])} | {mb(m['grad_bytes'])} | {mb(m['optimizer_bytes'])} | {mb(m['activation_bytes'])} | "
          f"{mb(m['workspace_bytes'])} | {mb(s['peak_tensor_bytes'])} |")
PY
echo "logs: $DIR"
