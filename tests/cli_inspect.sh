#!/usr/bin/env bash
# `plexus inspect`: statistics of the bundled Cora, JSON output, the balance report (with each
# layer's order and the blocks its roles cut), bad input.
# Usage: cli_inspect.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"

# Plain text: node count, edges, classes, split.
if "$plexus" inspect "$cora" >"$work/out" 2>&1 && grep -Eq "nodes +2708$" "$work/out" &&
   grep -Eq "stored edges +10556 " "$work/out" && grep -Eq "classes +7$" "$work/out" &&
   grep -q "train 140  val 500  test 1000" "$work/out"; then ok; else fail text; cat "$work/out"; fi

# JSON parses and carries the statistics and one balance entry per layer.
if "$plexus" inspect "$cora" --grid 2x2x2 --balance permute --layers 3 --json >"$work/j" 2>&1 &&
   $py -c "
import json, sys
d = json.load(open('$work/j'))
assert d['num_nodes'] == 2708 and d['stored_edges'] == 10556 and d['num_classes'] == 7, d
assert sum(d['label_counts'].values()) == 2708
assert sum(b['nodes'] for b in d['degree']['log2_histogram']) == 2708
b = d['balance']
assert b['grid'] == '2x2x2' and b['method'] == 'permute' and len(b['layers']) == 3, b
for l in b['layers']:
    assert l['nnz'] == 10556 + 2708 and 1.0 <= l['max_over_mean'] < 1.2, l
"; then ok; else fail json; cat "$work/j"; fi

# Each layer's order (as train chooses it: Cora 1433 -> 16 -> 16 -> 7 with --layer-order auto
# transforms first, aggregates first, transforms first) and the blocks its roles cut: on 2x3x1
# (rows over d x columns over o) aggregating first (X,Y,Z), (Z,X,Y), (Y,Z,X) give 1x2, 3x1, 2x3;
# auto's (X,Y,Z), (Z,Y,X), (X,Y,Z) give 1x2, 2x1, 1x2.
for o in auto aggregate-first; do
  if "$plexus" inspect "$cora" --grid 2x3x1 --layers 3 --hidden 16 --layer-order $o --json >"$work/o" 2>&1 &&
     $py -c "
import json, sys
T, A = 'transform-first', 'aggregate-first'
want = {'auto': ([T, A, T], ['1x2', '2x1', '1x2']), 'aggregate-first': ([A, A, A], ['1x2', '3x1', '2x3'])}['$o']
ls = json.load(open('$work/o'))['balance']['layers']
got = ([l['order'] for l in ls], [str(l['row_blocks']) + 'x' + str(l['col_blocks']) for l in ls])
assert got == want, got
"; then ok; else fail "layer-order-$o"; cat "$work/o"; fi
done
if "$plexus" inspect "$cora" --grid 2x3x1 --layers 2 >"$work/out" 2>&1 &&
   grep -Eq "^ +0 transform-first +1x2 " "$work/out" && grep -Eq "^ +1 transform-first +3x1 " "$work/out"; then ok
else fail "layer-order-text"; cat "$work/out"; fi

# The balance table for every method.
for m in none permute metis; do
  if "$plexus" inspect "$cora" --grid 2x1x2 --balance $m >"$work/out" 2>&1 &&
     grep -q "balance $m on grid 2x1x2" "$work/out" && grep -q "max/mean" "$work/out"; then ok; else fail "balance-$m"; cat "$work/out"; fi
done

# Bad input: exit 2, one line `plexus: error: ...`.
expect_error bad-grid "--grid" inspect "$cora" --grid 2x2
expect_error zero-grid "--grid" inspect "$cora" --grid 0x2x2
expect_error bad-balance "--balance: expected none, permute or metis" inspect "$cora" --grid 2x2x2 --balance random
expect_error bad-layers "--layers" inspect "$cora" --layers 0
expect_error bad-hidden "--hidden: must be at least 1" inspect "$cora" --hidden 0
expect_error bad-layer-order "--layer-order" inspect "$cora" --grid 2x2x2 --layer-order sideways
expect_error missing "$work/nope.h5: no such file" inspect "$work/nope.h5"
echo "hello" >"$work/text.h5"
expect_error not-hdf5 "$work/text.h5: not an HDF5 file" inspect "$work/text.h5"

echo "cli_inspect: $passed passed, $failures failed"
((failures == 0))
