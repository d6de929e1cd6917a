#!/usr/bin/env bash
# `plexus plan prepare` (a dry run of every rank's prepare in one process) against `mpirun -np P
# plexus prepare --cost-json` (what the ranks measure): each rank's bytes moved, collectives and
# peak of its arrays are equal, exactly, on 1, 3 and 4 ranks (acceptance 4 of issue 44), for a
# small messy graph (37 nodes: no rank count divides it), for Cora, symmetrized and directed, and
# in exchange rounds of a few entries. Bad options end with one line.
# Usage: cli_prepare_plan.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

make_small_graphs

# case NAME INPUT RANKS [prepare options...]: the plan's figures equal the measured ones.
case_() {
  local name=$1 input=$2 ranks=$3; shift 3
  rm -f "$work/out.h5" "$work/measured.json"
  if ! "$plexus" plan prepare "$input" --ranks "$ranks" --json "$@" >"$work/planned.json" 2>"$work/err"; then
    fail "$name: plan on $ranks ranks"; cat "$work/err"; return
  fi
  local launch=()
  [ "$ranks" -gt 1 ] && launch=(timeout 120 mpirun -np "$ranks")
  if ! "${launch[@]}" "$plexus" prepare "$input" -o "$work/out.h5" -q --cost-json "$work/measured.json" "$@" \
      >"$work/run" 2>&1; then
    fail "$name: prepare on $ranks ranks"; tail -n 5 "$work/run"; return
  fi
  if $py - "$work/planned.json" "$work/measured.json" "$ranks" <<'PY'; then ok; else fail "$name: $ranks ranks: plan != measured"; fi
import json, sys
planned, measured, ranks = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
assert planned["ranks"] == measured["ranks"] == ranks, (planned["ranks"], measured["ranks"])
bad = []
for p, m in zip(planned["per_rank"], measured["per_rank"]):
    for k in ("rows", "bytes", "calls", "peak_array_bytes"):
        if p[k] != m[k]: bad.append(f"rank {p['rank']} {k}: planned {p[k]}, measured {m[k]}")
    if m["peak_array_bytes"] <= 0 or m["peak_rss_bytes"] <= 0: bad.append(f"rank {p['rank']}: nothing measured")
    if ranks > 1 and m["bytes"] <= 0: bad.append(f"rank {p['rank']}: moved nothing")
if bad: print("\n".join(bad)); sys.exit(1)
PY
}
for r in 1 3 4; do case_ "small permute" "$work/small.h5" $r --balance permute; done
case_ "small none directed" "$work/small_directed.h5" 3 --balance none --directed
PLEXUS_PREPARE_ROUND=3 case_ "small in rounds of 3" "$work/small.h5" 4 --balance permute
for r in 1 3 4; do case_ "cora permute" "$cora" $r --balance permute; done
case_ "cora directed, rounds under --memory-per-rank" "$cora" 3 --directed --memory-per-rank 64M

# The text table names every rank and the largest.
"$plexus" plan prepare "$cora" --ranks 3 >"$work/table" 2>&1 && grep -q "largest rank: .* moved, .* of arrays at its peak" "$work/table" &&
  [ "$(grep -c '^ *[0-2] ' "$work/table")" -eq 3 ] && ok || { fail "plan prepare table"; cat "$work/table"; }

expect_error "plan prepare without --ranks" "--ranks: is required" plan prepare "$cora"
expect_error "plan prepare on 0 ranks" "--ranks: must be between 1 and" plan prepare "$cora" --ranks 0
expect_error "plan prepare metis" "--balance: metis partitions the whole graph" plan prepare "$cora" --ranks 2 --balance metis --grid 2x1x1
expect_error "plan prepare of a missing file" "nothing.h5" plan prepare "$work/nothing.h5" --ranks 2
expect_error "cost-json with passes" "--cost-json: reports the ranks" prepare "$cora" -o "$work/x.h5" --cost-json "$work/c.json" --memory-per-rank 64M --scratch "$work"

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
