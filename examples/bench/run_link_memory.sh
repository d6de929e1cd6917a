#!/usr/bin/env bash
# The link task's pair memory on the grid (issue 46, acceptance 5): a GCN link model (64 -> 32, dot
# decoder, the default split) on an R-MAT graph of SCALE (default 16: 65,536 nodes). Prints, for
# one rank and every grid of 8, the largest rank's peak of the `pairs` memory kind (the pairs'
# node ids, scores, gradients and one chunk) as `plexus plan --task link` predicts it, and, for the
# grids named (default 1x1x1 and 2x2x2), as two epochs of `plexus train` measure it; then each
# grid's ratio to one rank's.
#   examples/bench/run_link_memory.sh BUILD_DIR [SCALE] [GRID...]
# BALANCE=permute (or none, the default) orders the graph in memory for the plan and the runs
# alike: R-MAT's hubs otherwise crowd the first row blocks, and their pairs with them.
set -euo pipefail
build=${1:?usage: run_link_memory.sh BUILD_DIR [SCALE] [GRID...]}
scale=${2:-16}
shift $(($# < 2 ? $# : 2))
grids=("$@")
[ ${#grids[@]} -gt 0 ] || grids=(1x1x1 2x2x2)
plexus=$(cd "$build" && pwd)/plexus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
"$plexus" generate rmat --scale "$scale" --feature-width 32 -o g.h5 >/dev/null
model=(--data g.h5 --task link --hidden 64 --embedding-width 32 --balance "${BALANCE:-none}")
"$plexus" plan --json --ranks 1 "${model[@]}" >plan1.json
"$plexus" plan --json --ranks 8 "${model[@]}" >plan8.json
for g in "${grids[@]}"; do
  np=$(awk -Fx '{print $1 * $2 * $3}' <<<"$g")
  launch=()
  [ "$np" -gt 1 ] && launch=(mpirun -np "$np")
  "${launch[@]}" "$plexus" train "${model[@]}" --grid "$g" --epochs 2 --threads 1 --quiet --metrics "m.$g.jsonl" >/dev/null
done
/usr/bin/python3 - "${grids[@]}" <<'PY'
import json, sys
plans = {g["grid"]: g for f in ("plan1.json", "plan8.json") for g in json.load(open(f))["grids"]}
measured = {}
for g in sys.argv[1:]:
    measured[g] = json.loads(open(f"m.{g}.jsonl").read().splitlines()[-1])["memory_by_kind"]["pairs"]
one = plans["1x1x1"]["memory_by_kind"]["pairs"]
print(f"{'grid':<8} {'plan pairs B':>14} {'measured B':>12} {'ratio to 1 rank':>16}")
for name, g in sorted(plans.items(), key=lambda kv: (kv[0] != "1x1x1", kv[1]["memory_by_kind"]["pairs"])):
    p = g["memory_by_kind"]["pairs"]
    m = measured.get(name)
    print(f"{name:<8} {p:>14.0f} {'' if m is None else m:>12} {p / one:>16.4f}" + ("" if m is None or m == p else "  (plan != measured)"))
print(f"target at 8 ranks: {1.1 / 8:.4f}")
PY
