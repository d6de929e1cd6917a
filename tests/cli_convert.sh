#!/usr/bin/env bash
# `plexus convert edgelist|mtx|ogb` and `plexus generate sbm`: good fixtures convert and train;
# bad input ends with exit code 2 and exactly one line `plexus: error: <file>:<line>: <what>`,
# leaving no output file.
# Usage: cli_convert.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
fx=$2/tests/fixtures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passed=0

expect_ok() {
  local name=$1; shift
  if ! "$plexus" "$@" >"$work/out" 2>"$work/err"; then
    echo "FAIL [$name]: exit $?"; cat "$work/err"; failures=$((failures + 1))
  else
    passed=$((passed + 1))
  fi
}

# expect_error NAME EXPECTED_SUBSTRING -- ARGS...
expect_error() {
  local name=$1 want=$2; shift 3
  rm -f "$work/o.h5"
  "$plexus" "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(wc -l <"$work/err")
  if [[ $rc -ne 2 || $lines -ne 1 ]] || ! grep -qF "plexus: error: $want" "$work/err"; then
    echo "FAIL [$name]: rc=$rc, $lines stderr lines, wanted 'plexus: error: $want':"; cat "$work/err"
    failures=$((failures + 1))
  elif [[ -e "$work/o.h5" ]]; then
    echo "FAIL [$name]: an output file was left behind"; failures=$((failures + 1))
  else
    passed=$((passed + 1))
  fi
}

expect_ok edgelist convert edgelist "$fx/edges_snap.txt.gz" -o "$work/snap.h5"
grep -q "5 nodes, 10 edges" "$work/out" || { echo "FAIL [edgelist-summary]: $(cat "$work/out")"; failures=$((failures + 1)); }
expect_ok edgelist-random convert edgelist "$fx/edges_weighted.csv" --synthetic-features random --feature-width 4 -o "$work/w.h5"
expect_ok mtx convert mtx "$fx/graph_symmetric.mtx" -o "$work/m.h5"
expect_ok ogb convert ogb "$fx/ogb_tiny" -o "$work/ogb.h5"
expect_ok ogb-train train --data "$work/ogb.h5" --epochs 2 --quiet
expect_ok sbm generate sbm --nodes 500 --classes 3 --feature-width 8 -o "$work/sbm.h5"
expect_ok sbm-train train --data "$work/sbm.h5" --epochs 2 --quiet

expect_error bad-token "$fx/bad_token.txt:3: expected an integer node id, got 'x2'" -- \
  convert edgelist "$fx/bad_token.txt" -o "$work/o.h5"
expect_error num-nodes "$fx/edges_snap.txt:4: node id 10 out of range" -- \
  convert edgelist "$fx/edges_snap.txt" --num-nodes 5 -o "$work/o.h5"
head -c 100 "$fx/edges_snap.txt.gz" >"$work/cut.gz"
expect_error truncated-gzip "$work/cut.gz:" -- convert edgelist "$work/cut.gz" -o "$work/o.h5"
expect_error missing "$work/nope.txt: no such file" -- convert edgelist "$work/nope.txt" -o "$work/o.h5"
expect_error mtx-header "$fx/bad_header.mtx:1: unsupported format 'array'" -- convert mtx "$fx/bad_header.mtx" -o "$work/o.h5"
expect_error mtx-count "$fx/bad_count.mtx:5: expected 4 entries, found 3" -- convert mtx "$fx/bad_count.mtx" -o "$work/o.h5"
expect_error ogb-missing "$work/none: no such directory" -- convert ogb "$work/none" -o "$work/o.h5"
expect_error ogb-split "$fx/ogb_tiny/split/nope: no such split directory" -- \
  convert ogb "$fx/ogb_tiny" --split nope -o "$work/o.h5"
expect_error sbm-homophily "--homophily: must be in [0, 1]" -- generate sbm --homophily 2 -o "$work/o.h5"

echo "cli_convert: $passed passed, $failures failed"
((failures == 0))
