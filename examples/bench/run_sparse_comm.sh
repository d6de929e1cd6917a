#!/usr/bin/env bash
# Row-sparse sums against their dense form (issue 47, acceptance 2, measured part): for each
# graph and 8-rank grid, 4 epochs of a GCN (hidden 32) with --sparse-comm dense and then auto,
# on the same file in the same run; prints each run's bytes per steady epoch (all axes, all
# ranks: the metrics' comm_bytes), the median epoch seconds of epochs 2 on, and auto's ratios.
# The losses of the two runs must agree to the bit: the script says so or fails. A third run
# puts --wire int8 on top of auto (docs/communication.md, "Low-bit wire"): its bytes and seconds
# against dense's too; a fourth, --sparse-comm off (MPI's own all-reduce, the sums before the
# row-sparse forms), gives the seconds auto is to beat. EPOCHS (default 4) sets the epochs a run.
#   examples/bench/run_sparse_comm.sh BUILD_DIR [GRID...]          (default grids 2x2x2 8x1x1 1x1x8)
# Graphs (env): ROAD_NODES (default 1,000,000; `plexus generate road`, its own order: local),
# RMAT_SCALE (default 18; --balance permute), SBM_NODES (default 200,000; --balance metis, and
# --balance locality: METIS parts dealt one to a block of each grid). SPECS="graph balance,..."
# picks some of them (default "road none,rmat permute,sbm metis,sbm locality").
# A benchmark, not a test: it asserts only that the two forms train alike.
set -euo pipefail
build=${1:?usage: run_sparse_comm.sh BUILD_DIR [GRID...]}
shift
grids=("$@")
[ ${#grids[@]} -gt 0 ] || grids=(2x2x2 8x1x1 1x1x8)
plexus=$(cd "$build" && pwd)/plexus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
case "${SPECS:-road}" in *road*) "$plexus" generate road --nodes "${ROAD_NODES:-1000000}" --feature-width 32 -o road.h5 >/dev/null ;; esac
case "${SPECS:-rmat}" in *rmat*) "$plexus" generate rmat --scale "${RMAT_SCALE:-18}" --feature-width 32 -o rmat.h5 >/dev/null ;; esac
case "${SPECS:-sbm}" in *sbm*) "$plexus" generate sbm --nodes "${SBM_NODES:-200000}" --feature-width 32 -o sbm.h5 >/dev/null ;; esac
printf '%-6s %-7s %8s %14s %14s %7s %9s %9s %7s %14s %7s %9s %9s %7s\n' graph grid balance "dense B/epoch" "auto B/epoch" \
  ratio "dense s" "auto s" ratio "+int8 B/epoch" ratio "+int8 s" "off s" "auto/off"
IFS=, read -r -a specs <<<"${SPECS:-road none,rmat permute,sbm metis,sbm locality}"
for spec in "${specs[@]}"; do
  read -r graph balance <<<"$spec"
  for g in "${grids[@]}"; do
    for sums in dense auto int8 off; do
      opts=(--sparse-comm "$sums")
      [ "$sums" = int8 ] && opts=(--sparse-comm auto --wire int8)
      mpirun -np 8 "$plexus" train --data "$graph.h5" --grid "$g" --balance "$balance" --epochs "${EPOCHS:-4}" --hidden 32 \
        "${opts[@]}" --threads 1 --quiet --metrics "m.$sums.jsonl" >/dev/null
    done
    /usr/bin/python3 - "$graph" "$g" "$balance" <<'PY'
import json, statistics, sys
def epochs(path):
    rows = [json.loads(l) for l in open(path)]
    return [r for r in rows if "epoch" in r and "loss" in r]
d, a, q, o = epochs("m.dense.jsonl"), epochs("m.auto.jsonl"), epochs("m.int8.jsonl"), epochs("m.off.jsonl")
if [r["loss"] for r in d] != [r["loss"] for r in a]:
    sys.exit(f"{sys.argv[1]} {sys.argv[2]}: the losses differ: {[r['loss'] for r in d]} vs {[r['loss'] for r in a]}")
db, ab = d[-1]["comm_bytes"]["total"], a[-1]["comm_bytes"]["total"]
ds = statistics.median(r["epoch_seconds"] for r in d[1:])
as_ = statistics.median(r["epoch_seconds"] for r in a[1:])
qb, qs = q[-1]["comm_bytes"]["total"], statistics.median(r["epoch_seconds"] for r in q[1:])
os_ = statistics.median(r["epoch_seconds"] for r in o[1:])
print(f"{sys.argv[1]:<6} {sys.argv[2]:<7} {sys.argv[3]:>8} {db:>14.0f} {ab:>14.0f} {ab / db:>7.3f} {ds:>9.3f} {as_:>9.3f} {as_ / ds:>7.3f}"
      f" {qb:>14.0f} {qb / db:>7.3f} {qs:>9.3f} {os_:>9.3f} {as_ / os_:>7.3f}")
PY
  done
done
