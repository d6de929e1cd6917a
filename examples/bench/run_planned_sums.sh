#!/usr/bin/env bash
# Planned bytes of the row-sparse and low-bit sums at scale (issue 47, acceptance 2, planned
# part): for each graph, `plexus plan --json` at each rank count with --sparse-comm dense, auto,
# and auto + --wire int8, from the held rows its prepared file stores (exact where the table cuts
# the grid: axis sizes among 1–16, 32, 64; docs/dry-run.md). Prints, per graph and rank count,
# the steady epoch's bytes (all axes, all ranks) of dense's best grid, auto's and auto+int8's on
# that grid and on their own best grids, and the ratios to dense ('*': an upper bound, some sum or
# gather planned dense where the table does not cut it).
#   examples/bench/run_planned_sums.sh BUILD_DIR [RANKS...]        (default 64 512 4096)
# Graphs (env): ROAD_NODES (default 1,000,000; `generate road`, its own local order, none),
# RMAT_SCALE (default 20; --balance permute), SBM_NODES (default 2,000,000; 8 classes, and
# SBM_COMMUNITIES planted communities, default generate's one a class: 250,000 nodes each; --balance metis,
# prepared for the grid METIS_GRID, default 64x1x1: 64 parts; and the same SBM with --balance
# locality for the grid LOCALITY_GRID, default 4x1x16: 64 parts, one to a block of layer 0; road-loc
# the road graph so); FEATURES (32), HIDDEN (32), LAYERS (2). GRAPHS picks some (default "road rmat
# sbm sbm-loc road-loc"). RANKS_PER_NODE (default 8): the ranks span nodes, where auto takes the
# rows form wherever it moves fewer bytes (on one node it weighs its copies too: docs/communication.md).
# Or KEEP=DIR keeps (and reuses) the prepared files there.
# A benchmark, not a test.
set -euo pipefail
build=${1:?usage: run_planned_sums.sh BUILD_DIR [RANKS...]}
shift
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(64 512 4096)
plexus=$(cd "$build" && pwd)/plexus
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  work=$(cd "$KEEP" && pwd)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
cd "$work"
f=${FEATURES:-32}
prepare() {  # name balance generate-args...
  local name=$1 balance=$2
  shift 2
  [ -s "$name.prep.h5" ] && return
  "$plexus" generate "$@" --feature-width "$f" -o "$name.h5" >/dev/null
  local extra=()
  [ "$balance" = metis ] && extra=(--grid "${METIS_GRID:-64x1x1}")
  [ "$balance" = locality ] && extra=(--grid "${LOCALITY_GRID:-4x1x16}")
  "$plexus" prepare "$name.h5" -o "$name.prep.h5" --balance "$balance" "${extra[@]}" -q >/dev/null
  rm -f "$name.h5"
}
read -r -a graphs <<<"${GRAPHS:-road rmat sbm sbm-loc road-loc}"
for graph in "${graphs[@]}"; do
  case $graph in
    road) prepare road none road --nodes "${ROAD_NODES:-1000000}" ;;
    rmat) prepare rmat permute rmat --scale "${RMAT_SCALE:-20}" ;;
    sbm) prepare sbm metis sbm --nodes "${SBM_NODES:-2000000}" --communities "${SBM_COMMUNITIES:-0}" ;;
    sbm-loc) prepare sbm-loc locality sbm --nodes "${SBM_NODES:-2000000}" --communities "${SBM_COMMUNITIES:-0}" ;;
    road-loc) prepare road-loc locality road --nodes "${ROAD_NODES:-1000000}" ;;
    *) echo "run_planned_sums.sh: unknown graph $graph" >&2; exit 2 ;;
  esac
done
printf '%-5s %5s %-9s %14s %-9s %8s %8s %-9s %8s %8s\n' graph ranks "dense" "B/epoch" "auto" "same" "own" "+int8" "same" "own"
for graph in "${graphs[@]}"; do
  for r in "${ranks[@]}"; do
    for mode in dense auto int8; do
      opts=(--sparse-comm "$mode")
      [ "$mode" = int8 ] && opts=(--sparse-comm auto --wire int8)
      "$plexus" plan --json --data "$graph.prep.h5" --ranks "$r" --ranks-per-node "${RANKS_PER_NODE:-8}" \
        --layers "${LAYERS:-2}" --hidden "${HIDDEN:-32}" \
        "${opts[@]}" >"plan.$mode.json"
    done
    /usr/bin/python3 - "$graph" "$r" <<'PY'
import json, sys
def grids(mode):
    return json.load(open(f"plan.{mode}.json"))["grids"]
def total(g):
    return g["bytes_steady"]["total"]
def bound(g):  # '*': some sum or gather planned dense for want of the held rows (an upper bound)
    return "*" if g.get("sums", {}).get("dense_unknown", 0) > 0 else " "
dense = grids("dense")
best = min(dense, key=total)  # dense's fewest bytes (the plans rank by time; bytes are asked here)
row = [f"{sys.argv[1]:<5} {sys.argv[2]:>5} {best['grid']:<9} {total(best):>14.0f}"]
for mode in ("auto", "int8"):
    gs = grids(mode)
    same = next(g for g in gs if g["grid"] == best["grid"])
    own = min(gs, key=total)
    row.append(f"{own['grid']:<9} {total(same) / total(best):>7.4f}{bound(same)} {total(own) / total(best):>7.4f}{bound(own)}")
print(" ".join(row))
PY
  done
done
