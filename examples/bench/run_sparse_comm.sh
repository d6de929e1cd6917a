#!/usr/bin/env bash
# Row-sparse sums against their dense form (issue 47, acceptance 2, measured part): for each
# graph and 8-rank grid, 4 epochs of a GCN (hidden 32) with --sparse-comm dense, rows (the rows
# form wherever it moves fewer bytes) and auto (on one node: where it costs less counting its
# copies), on the same file in the same run; prints each run's bytes per steady epoch (all axes,
# all ranks: the metrics' comm_bytes), the epoch seconds of epochs 2 on — the fastest (STAT=min,
# the default: 8 ranks on a few cores swing ±10 % epoch to epoch, run to run) or the median
# (STAT=median) — and the ratios.
# The losses of the three runs must agree to the bit: the script says so or fails. A fourth run
# puts --wire int8 on top of auto (docs/communication.md, "Low-bit wire"): its bytes against
# dense's; a fifth, --sparse-comm off (MPI's own all-reduce, the sums before the row-sparse
# forms), gives the seconds auto is to beat too. EPOCHS (default 4) sets the epochs a run.
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
printf '%-6s %-7s %8s %14s %7s %7s %8s %8s %8s %8s %10s %8s %10s %7s\n' graph grid balance "dense B/epoch" "rows" \
  "auto" "dense s" "rows s" "auto s" "off s" "auto/dense" "auto/off" "+int8 B" ratio
IFS=, read -r -a specs <<<"${SPECS:-road none,rmat permute,sbm metis,sbm locality}"
for spec in "${specs[@]}"; do
  read -r graph balance <<<"$spec"
  for g in "${grids[@]}"; do
    for sums in dense rows auto int8 off; do
      opts=(--sparse-comm "$sums")
      [ "$sums" = int8 ] && opts=(--sparse-comm auto --wire int8)
      mpirun -np 8 "$plexus" train --data "$graph.h5" --grid "$g" --balance "$balance" --epochs "${EPOCHS:-4}" --hidden 32 \
        "${opts[@]}" --threads 1 --quiet --metrics "m.$sums.jsonl" >/dev/null
    done
    /usr/bin/python3 - "$graph" "$g" "$balance" <<'PY'
import json, os, statistics, sys
def epochs(path):
    rows = [json.loads(l) for l in open(path)]
    return [r for r in rows if "epoch" in r and "loss" in r]
runs = {k: epochs(f"m.{k}.jsonl") for k in ("dense", "rows", "auto", "int8", "off")}
for k in ("rows", "auto"):
    if [r["loss"] for r in runs[k]] != [r["loss"] for r in runs["dense"]]:
        sys.exit(f"{sys.argv[1]} {sys.argv[2]}: {k}'s losses differ from dense's")
b = {k: v[-1]["comm_bytes"]["total"] for k, v in runs.items()}
stat = min if os.environ.get("STAT", "min") == "min" else statistics.median
t = {k: stat(r["epoch_seconds"] for r in v[1:]) for k, v in runs.items()}
d = b["dense"]
print(f"{sys.argv[1]:<6} {sys.argv[2]:<7} {sys.argv[3]:>8} {d:>14.0f} {b['rows'] / d:>7.3f} {b['auto'] / d:>7.3f}"
      f" {t['dense']:>8.3f} {t['rows']:>8.3f} {t['auto']:>8.3f} {t['off']:>8.3f} {t['auto'] / t['dense']:>10.3f}"
      f" {t['auto'] / t['off']:>8.3f} {b['int8']:>10.0f} {b['int8'] / d:>7.3f}")
PY
  done
done
