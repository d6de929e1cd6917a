#!/usr/bin/env bash
# `mpirun -np P plexus convert edgelist` (read_edge_list_on_ranks): the file equals the one-process
# conversion's, dataset for dataset (tests/h5_same_datasets.py), on 2, 3, 4 and 8 ranks: ids
# relabelled (12-digit, skewed) or kept (--num-nodes, --base 1), weighted and not, symmetrized
# and --directed, each synthetic feature kind; comments, blank lines, CRLF endings and lines
# that straddle the ranks' byte ranges; exchanges in rounds of a few items. A bad line names its
# file and line number (counted across the ranks); a gzip input, a node file and a
# one-process-only option are refused with one line.
# Usage: cli_convert_ranks.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

make_text_graphs

# case NAME RANKS INPUT [convert options...]: one process vs RANKS ranks.
case_() {
  local name=$1 ranks=$2 input=$3; shift 3
  rm -f "$work/one.h5" "$work/many.h5"
  if ! "$plexus" convert edgelist "$input" -o "$work/one.h5" "$@" >/dev/null 2>"$work/err"; then fail "$name: one process"; cat "$work/err"; return; fi
  if ! timeout 120 mpirun -np "$ranks" "$plexus" convert edgelist "$input" -o "$work/many.h5" "$@" >"$work/out" 2>&1; then
    fail "$name: $ranks ranks"; tail -n 5 "$work/out"; return
  fi
  if same_datasets "$work/one.h5" "$work/many.h5" >"$work/diff"; then ok; else fail "$name: $ranks ranks differ"; head -n 8 "$work/diff"; fi
}
for r in 2 3 4 8; do case_ "weighted relabelled" $r "$work/weighted.txt"; done
case_ "weighted directed random features" 3 "$work/weighted.txt" --directed --synthetic-features random --feature-width 5
case_ "dense 1-based" 4 "$work/dense.txt" --num-nodes 300 --base 1
case_ "dense relabelled ones" 2 "$work/dense.txt" --synthetic-features ones --classes 3
PLEXUS_PREPARE_ROUND=3 case_ "rounds of 3" 3 "$work/weighted.txt"
PLEXUS_PREPARE_ROUND=1 case_ "rounds of 1, directed" 4 "$work/dense.txt" --directed
# Small graphs on many ranks (most ranks hold no row, a dataset may be empty): what one process
# accepts, P ranks accept and write alike (they failed with a false "write failed (disk full?)").
printf "0 0\n1 1\n2 2\n" >"$work/loops.txt"
printf "5 5\n" >"$work/one_node.txt"
for r in 2 3 8; do case_ "self-loops only" $r "$work/loops.txt"; done
case_ "one node" 4 "$work/one_node.txt"

# mtx_case NAME RANKS INPUT [options...]
mtx_case() {
  local name=$1 ranks=$2 input=$3; shift 3
  rm -f "$work/one.h5" "$work/many.h5"
  "$plexus" convert mtx "$input" -o "$work/one.h5" "$@" >/dev/null 2>"$work/err" || { fail "$name: one process"; cat "$work/err"; return; }
  timeout 120 mpirun -np "$ranks" "$plexus" convert mtx "$input" -o "$work/many.h5" "$@" >"$work/out" 2>&1 ||
    { fail "$name: $ranks ranks"; tail -n 5 "$work/out"; return; }
  if same_datasets "$work/one.h5" "$work/many.h5" >"$work/diff"; then ok; else fail "$name: $ranks ranks differ"; head -n 8 "$work/diff"; fi
}
for r in 2 4; do mtx_case "mtx general" $r "$work/general.mtx"; done
mtx_case "mtx general directed" 3 "$work/general.mtx" --directed
mtx_case "mtx symmetric pattern" 8 "$work/sym.mtx" --directed
mtx_case "mtx integer" 3 "$work/int.mtx" --synthetic-features random --feature-width 3
PLEXUS_PREPARE_ROUND=2 mtx_case "mtx rounds of 2" 4 "$work/general.mtx"
# Entry counts against the size line: one more (named at its line), one fewer.
sed 's/^211 211 700$/211 211 699/' "$work/int.mtx" >"$work/more.mtx"
mpi_error "mtx more entries" "more.mtx:702: more entries than the 699 announced" convert mtx "$work/more.mtx" -o "$work/more.h5"
sed 's/^211 211 700$/211 211 701/' "$work/int.mtx" >"$work/fewer.mtx"
mpi_error "mtx fewer entries" "fewer.mtx:702: expected 701 entries, found 700" convert mtx "$work/fewer.mtx" -o "$work/fewer.h5"

# Convert on 4 ranks, prepare on 3: the file equals convert and prepare in one process.
"$plexus" convert edgelist "$work/weighted.txt" -o "$work/c1.h5" >/dev/null &&
  "$plexus" prepare "$work/c1.h5" -o "$work/p1.h5" -q &&
  timeout 120 mpirun -np 4 "$plexus" convert edgelist "$work/weighted.txt" -o "$work/c4.h5" >/dev/null &&
  timeout 120 mpirun -np 3 "$plexus" prepare "$work/c4.h5" -o "$work/p3.h5" -q &&
  same_datasets "$work/p1.h5" "$work/p3.h5" >/dev/null && ok || fail "convert on 4 ranks, prepare on 3"

# A bad line in the last rank's bytes: its file and global line number, one line, no output.
cp "$work/dense.txt" "$work/bad.txt"
printf '12 x\n' >>"$work/bad.txt"
lines=$(wc -l <"$work/bad.txt")
mpi_error "bad line" "bad.txt:$lines: " convert edgelist "$work/bad.txt" -o "$work/bad.h5"
[ -e "$work/bad.h5" ] && fail "output left after a bad line" || ok
# Two columns in the file's first edge line, three later on another rank: named at its line.
{ echo "1 2"; for i in $(seq 1 400); do echo "$i $((i + 1)) 0.5"; done; } >"$work/mixed.txt"
mpi_error "columns differ across ranks" "expected 2 columns like the first edge line, got 3" convert edgelist "$work/mixed.txt" -o "$work/mixed.h5"
gzip -c "$work/dense.txt" >"$work/dense.txt.gz"
mpi_error "gzip on ranks" "a gzip file cannot be split among ranks" convert edgelist "$work/dense.txt.gz" -o "$work/gz.h5"
mpi_error "node file on ranks" "--nodes: a node file is read on one rank" convert edgelist "$work/dense.txt" --nodes "$work/dense.txt" -o "$work/n.h5"
ls "$work" | grep -q '\.tmp' && fail "temporary files left" || ok

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
