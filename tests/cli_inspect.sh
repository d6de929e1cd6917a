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
assert d['num_edge_features'] == 0, d
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
for m in none permute metis locality; do
  if "$plexus" inspect "$cora" --grid 2x1x2 --balance $m >"$work/out" 2>&1 &&
     grep -q "balance $m on grid 2x1x2" "$work/out" && grep -q "max/mean" "$work/out"; then ok; else fail "balance-$m"; cat "$work/out"; fi
done

# Bad input: exit 2, one line `plexus: error: ...`.
expect_error bad-grid "--grid" inspect "$cora" --grid 2x2
expect_error zero-grid "--grid" inspect "$cora" --grid 0x2x2
expect_error bad-balance "--balance: expected none, permute, metis or locality" inspect "$cora" --grid 2x2x2 --balance random
expect_error bad-layers "--layers" inspect "$cora" --layers 0
expect_error bad-hidden "--hidden: must be at least 1" inspect "$cora" --hidden 0
expect_error bad-layer-order "--layer-order" inspect "$cora" --grid 2x2x2 --layer-order sideways
expect_error missing "$work/nope.h5: no such file" inspect "$work/nope.h5"
echo "hello" >"$work/text.h5"
expect_error not-hdf5 "$work/text.h5: not an HDF5 file" inspect "$work/text.h5"

# A GNN model file: its kind and options, widths, epochs and training options, as text and JSON.
# Copies marked as GraphSAGE's, GIN's and GAT's (the /options attributes the trainer writes,
# docs/gcn-model.md) show each kind's options without training one.
"$plexus" train --epochs 2 --hidden 8 --threads 1 --quiet --save-model "$work/m.h5" >/dev/null 2>&1 || fail "train --save-model"
if "$plexus" inspect "$work/m.h5" >"$work/out" 2>&1 && grep -q "^$work/m.h5: GNN model file$" "$work/out" &&
   grep -Eq "^  model +gcn$" "$work/out" && grep -Eq "^  layers +2 \(widths 1433 8 7\)$" "$work/out" &&
   grep -Eq "^  trained +2 epochs on a graph of 2708 nodes$" "$work/out" &&
   grep -q -- "--hidden 8 --lr 0.01 --weight-decay 0.0005 --dropout 0.5 --seed 42$" "$work/out"; then ok; else fail model-text; cat "$work/out"; fi
cp "$work/m.h5" "$work/sage.h5"
cp "$work/m.h5" "$work/gin.h5"
cp "$work/m.h5" "$work/gat.h5"
$py -c "
import h5py, numpy as np
with h5py.File('$work/sage.h5', 'r+') as f:
    f['options'].attrs['model'] = 'sage'; f['options'].attrs['aggregator'] = 'sum'; f['options'].attrs['normalize'] = np.uint8(1)
with h5py.File('$work/gin.h5', 'r+') as f:
    f['options'].attrs['model'] = 'gin'; f['options'].attrs['gin_eps'] = np.float32(0.25); f['options'].attrs['train_eps'] = np.uint8(0)
with h5py.File('$work/gat.h5', 'r+') as f:
    o = f['options'].attrs
    o['model'] = 'gat'; o['heads'] = np.int32(4); o['out_heads'] = np.int32(1)
    o['attn_dropout'] = np.float32(0.6); o['negative_slope'] = np.float32(0.2)
" || fail "mark model files"
if "$plexus" inspect "$work/sage.h5" >"$work/sage" 2>&1 && grep -Eq "^  model +sage \(aggregator sum, normalize on\)$" "$work/sage" &&
   "$plexus" inspect "$work/gin.h5" >"$work/gin" 2>&1 && grep -Eq "^  model +gin \(gin-eps 0.25, train-eps off\)$" "$work/gin" &&
   "$plexus" inspect "$work/gat.h5" >"$work/gat" 2>&1 &&
   grep -Eq "^  model +gat \(heads 4, out-heads 1, attn-dropout 0.6, negative-slope 0.2, edge-features off\)$" "$work/gat"; then ok
else fail model-kinds; cat "$work/sage" "$work/gin" "$work/gat"; fi
if "$plexus" inspect "$work/m.h5" --json >"$work/j" 2>&1 && "$plexus" inspect "$work/sage.h5" --json >"$work/js" 2>&1 &&
   "$plexus" inspect "$work/gin.h5" --json >"$work/jg" 2>&1 && "$plexus" inspect "$work/gat.h5" --json >"$work/jt" 2>&1 && $py -c "
import json
d = json.load(open('$work/j'))
assert d['format'] == 'plexus-gcn' and d['model'] == 'gcn' and 'aggregator' not in d and 'gin_eps' not in d, d
assert d['dims'] == [1433, 8, 7] and d['layers'] == 2 and d['epochs_done'] == 2 and d['num_nodes'] == 2708, d
assert d['options'] == {'hidden': 8, 'lr': 0.01, 'weight_decay': 0.0005, 'adamw': False, 'dropout': 0.5, 'seed': 42}, d
s, g = json.load(open('$work/js')), json.load(open('$work/jg'))
assert (s['model'], s['aggregator'], s['normalize']) == ('sage', 'sum', True) and 'gin_eps' not in s, s
assert (g['model'], g['gin_eps'], g['train_eps']) == ('gin', 0.25, False) and 'aggregator' not in g, g
t = json.load(open('$work/jt'))
assert [(k, t[k]) for k in ('model', 'heads', 'out_heads', 'attn_dropout', 'negative_slope')] == \\
    [('model', 'gat'), ('heads', 4), ('out_heads', 1), ('attn_dropout', 0.6), ('negative_slope', 0.2)], t
assert 'gin_eps' not in t and 'aggregator' not in t, t
"; then ok; else fail model-json; cat "$work/j" "$work/js" "$work/jg" "$work/jt"; fi
# A GAT file whose heads do not divide its hidden width (8) is refused naming the attribute.
cp "$work/gat.h5" "$work/gat-bad.h5"
$py -c "
import h5py, numpy as np
with h5py.File('$work/gat-bad.h5', 'r+') as f:
    f['options'].attrs['heads'] = np.int32(3)
" || fail "mark gat-bad.h5"
expect_error gat-heads "gat-bad.h5: /options: --hidden: must be a multiple of --heads (3)" inspect "$work/gat-bad.h5"
expect_error model-grid "--grid: $work/m.h5 is a GNN model file: it has no layout" inspect "$work/m.h5" --grid 2x1x1
"$plexus" gpt train --layers 1 --heads 1 --embed 8 --block 8 --batch 2 --iters 0 --threads 1 --quiet \
  --save "$work/gpt.h5" >/dev/null 2>&1 || fail "gpt train --save"
expect_error gpt-model "gpt.h5: is a GPT model file (plexus gpt train --save or --checkpoint-dir); plexus inspect reads graphs and GNN model files" \
  inspect "$work/gpt.h5"

# A graph with edge features says their width (docs/format-v1.md).
$py - "$cora" "$work/ef.h5" <<'PY' || fail "edge features: h5py"
import shutil, sys
import h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    f["graph/edge_features"] = np.ones((f["graph/indices"].shape[0], 4), np.float32)
PY
if "$plexus" inspect "$work/ef.h5" >"$work/ef.txt" 2>&1 && grep -q "edge features  4 per stored edge" "$work/ef.txt" &&
   "$plexus" inspect "$work/ef.h5" --json | $py -c "import json, sys; assert json.load(sys.stdin)['num_edge_features'] == 4"; then
  ok
else
  fail "edge features"; cat "$work/ef.txt"
fi

echo "cli_inspect: $passed passed, $failures failed"
((failures == 0))
