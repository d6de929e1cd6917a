#!/usr/bin/env bash
# `plexus prepare --memory-per-rank M --scratch DIR` (prepare_graph_in_passes): one process in
# passes makes the one-process prepare's file, dataset for dataset and attribute for attribute
# (tests/h5_same_datasets.py), for Cora and a small weighted graph with duplicates, self-loops,
# isolated nodes, ids, class names and node weights, with balance none and permute, symmetrized
# and --directed, bf16 features, in 2 to more-than-N passes and runs of a few entries. Its peak
# memory stays within the budget (R-MAT scale 17); errors, a full scratch disk and SIGTERM leave
# no output, no temporary file and nothing in DIR.
# Usage: cli_prepare_passes.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"
mkdir -p "$work/scratch"

make_small_graphs

# case NAME INPUT PASSES [prepare options...]: one process in memory vs in PASSES passes.
case_() {
  local name=$1 input=$2 passes=$3; shift 3
  rm -f "$work/one.h5" "$work/passes.h5"
  if ! "$plexus" prepare "$input" -o "$work/one.h5" -q "$@" 2>"$work/err"; then fail "$name: in memory"; cat "$work/err"; return; fi
  if ! PLEXUS_PREPARE_PASSES=$passes "$plexus" prepare "$input" -o "$work/passes.h5" --memory-per-rank 1G \
       --scratch "$work/scratch" "$@" >"$work/out" 2>&1; then
    fail "$name: $passes passes"; tail -n 5 "$work/out"; return
  fi
  grep -q "; $passes passes" "$work/out" || grep -q "; 37 passes" "$work/out" || { fail "$name: summary"; cat "$work/out"; }
  if same_datasets "$work/one.h5" "$work/passes.h5" >"$work/diff"; then ok; else fail "$name: $passes passes differ"; head -n 8 "$work/diff"; fi
}
for k in 2 3 5 37 50; do case_ "small permute" "$work/small.h5" $k --balance permute; done
case_ "small none" "$work/small.h5" 3 --balance none
case_ "small directed permute" "$work/small_directed.h5" 4 --balance permute --directed
case_ "small one-way edges symmetrized" "$work/small_directed.h5" 3 --balance permute
PLEXUS_PREPARE_ROUND=3 case_ "small in runs of 3" "$work/small.h5" 6 --balance permute --balance-seed 9
case_ "cora permute" "$cora" 4 --balance permute
case_ "cora none" "$cora" 2 --balance none
PLEXUS_PREPARE_ROUND=500 case_ "cora runs of 500, directed" "$cora" 3 --balance permute --directed
case_ "cora bf16 features" "$cora" 3 --balance permute --feature-precision bf16
scratch_empty "after the cases"

# The budget decides the passes: Cora (15.5 MB of features) in 40 MiB takes several, in 1 GiB one.
if "$plexus" prepare "$cora" -o "$work/b.h5" --memory-per-rank 40M --scratch "$work/scratch" >"$work/out" 2>&1 &&
   grep -Eq "; ([2-9]|[1-9][0-9]) passes" "$work/out"; then ok; else fail "40M: several passes"; cat "$work/out"; fi
if "$plexus" prepare "$cora" -o "$work/b.h5" --memory-per-rank 1G --scratch "$work/scratch" >"$work/out" 2>&1 &&
   grep -q "; 1 passes" "$work/out"; then ok; else fail "1G: one pass"; cat "$work/out"; fi

# Errors: one line, exit 2, the existing output untouched, no temporary file, DIR empty.
echo "keep me" >"$work/existing.h5"
expect_error "scratch without a budget" "--scratch: needs --memory-per-rank" prepare "$cora" -o "$work/existing.h5" --scratch "$work/scratch"
expect_error "budget needing passes without scratch" "give --scratch DIR" prepare "$cora" -o "$work/existing.h5" --memory-per-rank 40M
expect_error "budget too small" "too small to prepare 2708 nodes" prepare "$cora" -o "$work/existing.h5" --memory-per-rank 1M --scratch "$work/scratch"
expect_error "missing scratch directory" "scratch directory: No such file" prepare "$cora" -o "$work/existing.h5" --memory-per-rank 40M --scratch "$work/nowhere"
expect_error "scratch is a file" "not a directory" prepare "$cora" -o "$work/existing.h5" --memory-per-rank 40M --scratch "$work/existing.h5"
expect_error "metis in passes" "metis partitions the whole graph" prepare "$cora" -o "$work/existing.h5" --memory-per-rank 40M --scratch "$work/scratch" --balance metis --grid 2x2x1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi_error "scratch on 4 ranks" "--scratch: the passes run in one process" prepare "$cora" -o "$work/existing.h5" --memory-per-rank 1G --scratch "$work/scratch"
cp "$work/small.h5" "$work/bad.h5"
$py -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    idx = f['graph/indices']
    idx[len(idx) - 1] = 10**9
" "$work/bad.h5"
PLEXUS_PREPARE_PASSES=4 expect_error "bad column in the last pass" "/graph/indices" prepare "$work/bad.h5" -o "$work/existing.h5" --memory-per-rank 1G --scratch "$work/scratch"
[ "$(cat "$work/existing.h5")" = "keep me" ] && ok || fail "existing output overwritten"
ls "$work" | grep -q '\.tmp' && fail "temporary files left: $(ls "$work" | grep '\.tmp')" || ok
scratch_empty "after the errors"

# A full scratch disk (a file size limit: writes past it fail with EFBIG, as on a full disk).
(trap '' XFSZ; ulimit -f 200; PLEXUS_PREPARE_PASSES=3 exec "$plexus" prepare "$cora" -o "$work/full.h5" \
  --memory-per-rank 1G --scratch "$work/scratch") >"$work/out" 2>"$work/err"
rc=$?
if [[ $rc -eq 2 && $(wc -l <"$work/err") -eq 1 ]] && grep -q "^plexus: error: .*cannot write" "$work/err" && [ ! -e "$work/full.h5" ]; then ok
else fail "full scratch disk: rc=$rc"; cat "$work/err"; fi
ls "$work" | grep -q '\.tmp' && fail "full disk left $(ls "$work" | grep '\.tmp')" || ok
scratch_empty "after the full disk"

# Memory: within the budget, net of the process itself (a prepare of the small graph), and
# below the in-memory prepare's peak (R-MAT scale 17).
"$plexus" generate rmat --scale 17 -o "$work/r17.h5" >/dev/null
/usr/bin/time -f "%M" -o "$work/rss_one" "$plexus" prepare "$work/r17.h5" -o "$work/r17_one.h5" -q
/usr/bin/time -f "%M" -o "$work/rss_base" "$plexus" prepare "$work/small.h5" -o "$work/small_base.h5" -q
budget=$(( $(tail -n 1 "$work/rss_one") / 3 ))  # KiB
/usr/bin/time -f "%M" -o "$work/rss_passes" "$plexus" prepare "$work/r17.h5" -o "$work/r17_passes.h5" \
  --memory-per-rank "${budget}K" --scratch "$work/scratch" >"$work/out"
if $py - "$work" "$budget" <<'PY'
import sys
w, budget = sys.argv[1], int(sys.argv[2]) * 1024
kib = lambda name: int(open(f"{w}/{name}").read().split()[-1]) * 1024
one, base, passes = kib("rss_one"), kib("rss_base"), kib("rss_passes")
print(f"in memory {one / 2**20:.0f} MiB, passes {passes / 2**20:.0f} MiB (base {base / 2**20:.0f}, budget {budget / 2**20:.0f})")
sys.exit(0 if passes - base <= budget else 1)
PY
then ok; else fail "memory in passes"; cat "$work/out"; fi
same_datasets "$work/r17_one.h5" "$work/r17_passes.h5" >/dev/null && ok || fail "R-MAT scale 17 in passes differs"
scratch_empty "after R-MAT"

# SIGTERM while it prepares: no output, no temporary file, nothing in DIR.
"$plexus" generate sbm --nodes 120000 --avg-degree 16 --feature-width 32 --seed 3 -o "$work/big.h5" >/dev/null
PLEXUS_PREPARE_PASSES=6 "$plexus" prepare "$work/big.h5" -o "$work/stopped.h5" --memory-per-rank 1G --scratch "$work/scratch" \
  >"$work/stop.out" 2>&1 &
runner=$!
for _ in $(seq 1 300); do grep -q "preparing" "$work/stop.out" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
kill -TERM $runner
wait $runner
rc=$?
if [[ $rc -ne 0 && ! -e "$work/stopped.h5" ]]; then ok; else fail "SIGTERM: rc=$rc, output $(ls "$work" | grep stopped)"; fi
ls "$work" | grep -q '\.tmp' && fail "SIGTERM left $(ls "$work" | grep '\.tmp')" || ok
scratch_empty "after SIGTERM"

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
