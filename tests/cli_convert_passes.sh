#!/usr/bin/env bash
# `plexus convert edgelist|mtx --memory-per-rank M --scratch DIR` (read_edge_list_in_passes,
# read_matrix_market_in_passes): one process in passes makes the one-process conversion's file,
# dataset for dataset (tests/h5_same_datasets.py), in 1 to 9 passes: ids relabelled (12-digit,
# skewed) or kept (--num-nodes, --base 1), weighted and not, symmetrized and --directed, each
# synthetic feature kind, comments, CRLF endings, lines straddling the passes' byte ranges, runs
# of a few items; the converted file prepares to the same file. Bad lines name their file and
# line; what passes cannot do is refused with one line; nothing is left in DIR.
# Usage: cli_convert_passes.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"
mkdir -p "$work/scratch"
make_text_graphs

# case KIND NAME PASSES INPUT [convert options...]: one process in memory vs in PASSES passes.
case_() {
  local kind=$1 name=$2 passes=$3 input=$4; shift 4
  rm -f "$work/one.h5" "$work/passes.h5"
  if ! "$plexus" convert "$kind" "$input" -o "$work/one.h5" "$@" >/dev/null 2>"$work/err"; then fail "$name: in memory"; cat "$work/err"; return; fi
  if ! PLEXUS_CONVERT_PASSES=$passes "$plexus" convert "$kind" "$input" -o "$work/passes.h5" --memory-per-rank 1G \
       --scratch "$work/scratch" "$@" >"$work/out" 2>&1; then
    fail "$name: $passes passes"; tail -n 5 "$work/out"; return
  fi
  grep -q "; $passes passes" "$work/out" || { fail "$name: summary"; cat "$work/out"; }
  if same_datasets "$work/one.h5" "$work/passes.h5" >"$work/diff"; then ok; else fail "$name: $passes passes differ"; head -n 8 "$work/diff"; fi
}
for k in 1 2 3 5 9; do case_ edgelist "weighted relabelled" $k "$work/weighted.txt"; done
case_ edgelist "weighted directed random features" 3 "$work/weighted.txt" --directed --synthetic-features random --feature-width 5
case_ edgelist "dense 1-based" 4 "$work/dense.txt" --num-nodes 300 --base 1
case_ edgelist "dense relabelled ones" 2 "$work/dense.txt" --synthetic-features ones --classes 3
PLEXUS_PREPARE_ROUND=3 case_ edgelist "runs of 3" 3 "$work/weighted.txt"
PLEXUS_PREPARE_ROUND=1 case_ edgelist "runs of 1, directed" 4 "$work/dense.txt" --directed
for k in 2 4; do case_ mtx "mtx general" $k "$work/general.mtx"; done
case_ mtx "mtx general directed" 3 "$work/general.mtx" --directed
case_ mtx "mtx symmetric pattern" 7 "$work/sym.mtx" --directed
case_ mtx "mtx integer" 3 "$work/int.mtx" --synthetic-features random --feature-width 3
PLEXUS_PREPARE_ROUND=2 case_ mtx "mtx runs of 2" 4 "$work/general.mtx"
scratch_empty "after the cases"

# Converted and prepared in passes: the file one process makes in memory.
"$plexus" convert edgelist "$work/weighted.txt" -o "$work/c1.h5" >/dev/null &&
  "$plexus" prepare "$work/c1.h5" -o "$work/p1.h5" -q &&
  PLEXUS_CONVERT_PASSES=4 "$plexus" convert edgelist "$work/weighted.txt" -o "$work/c4.h5" --memory-per-rank 1G --scratch "$work/scratch" >/dev/null &&
  PLEXUS_PREPARE_PASSES=3 "$plexus" prepare "$work/c4.h5" -o "$work/p3.h5" -q --memory-per-rank 1G --scratch "$work/scratch" &&
  same_datasets "$work/p1.h5" "$work/p3.h5" >/dev/null && ok || fail "convert in 4 passes, prepare in 3"

# The budget decides: 1 GiB takes one pass for these small files.
"$plexus" convert edgelist "$work/weighted.txt" -o "$work/b.h5" --memory-per-rank 1G --scratch "$work/scratch" >"$work/out" 2>&1 &&
  grep -q "; 1 passes" "$work/out" && ok || { fail "1G: one pass"; cat "$work/out"; }

# Errors: one line, exit 2, no output, nothing in DIR.
sed 's/^211 211 700$/211 211 699/' "$work/int.mtx" >"$work/more.mtx"
PLEXUS_CONVERT_PASSES=3 expect_error "mtx more entries" "more.mtx:702: more entries than the 699 announced" convert mtx "$work/more.mtx" -o "$work/more.h5" --memory-per-rank 1G --scratch "$work/scratch"
sed 's/^211 211 700$/211 211 701/' "$work/int.mtx" >"$work/fewer.mtx"
PLEXUS_CONVERT_PASSES=3 expect_error "mtx fewer entries" "fewer.mtx:702: expected 701 entries, found 700" convert mtx "$work/fewer.mtx" -o "$work/fewer.h5" --memory-per-rank 1G --scratch "$work/scratch"
cp "$work/dense.txt" "$work/bad.txt"
printf '12 x\n' >>"$work/bad.txt"
lines=$(wc -l <"$work/bad.txt")
PLEXUS_CONVERT_PASSES=4 expect_error "bad line in the last pass" "bad.txt:$lines: " convert edgelist "$work/bad.txt" -o "$work/bad.h5" --memory-per-rank 1G --scratch "$work/scratch"
{ echo "1 2"; for i in $(seq 1 400); do echo "$i $((i + 1)) 0.5"; done; } >"$work/mixed.txt"
PLEXUS_CONVERT_PASSES=3 expect_error "columns differ across passes" "expected 2 columns like the first edge line, got 3" convert edgelist "$work/mixed.txt" -o "$work/mixed.h5" --memory-per-rank 1G --scratch "$work/scratch"
gzip -c "$work/dense.txt" >"$work/dense.txt.gz"
expect_error "gzip in passes" "a gzip file cannot be split into passes" convert edgelist "$work/dense.txt.gz" -o "$work/gz.h5" --memory-per-rank 1G --scratch "$work/scratch"
expect_error "node file in passes" "--nodes: a node file is read whole" convert edgelist "$work/dense.txt" --nodes "$work/dense.txt" -o "$work/n.h5" --memory-per-rank 1G --scratch "$work/scratch"
expect_error "scratch without a budget" "--scratch: needs --memory-per-rank" convert edgelist "$work/dense.txt" -o "$work/n.h5" --scratch "$work/scratch"
expect_error "budget too small" "too small to convert in passes" convert edgelist "$work/dense.txt" -o "$work/n.h5" --memory-per-rank 1M --scratch "$work/scratch"
expect_error "missing scratch directory" "scratch directory: No such file" convert edgelist "$work/dense.txt" -o "$work/n.h5" --memory-per-rank 1G --scratch "$work/nowhere"
for f in more fewer bad mixed gz n; do [ -e "$work/$f.h5" ] && fail "output $f.h5 left"; done
ls "$work" | grep -q '\.tmp' && fail "temporary files left" || ok
scratch_empty "after the errors"

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
