#!/usr/bin/env bash
# Issue 31 (reports): what was not evaluated is said so, never 0; generators and --split refuse
# graphs with an empty split; names that are not UTF-8 reach every JSON writer escaped; error
# lines name the right file and stay short. On one rank and under `mpirun -np 2`.
# Usage: cli_splits_and_names.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# A graph without validation nodes (made from a generated one: generators refuse to write it).
"$plexus" generate sbm --nodes 150 --classes 3 --feature-width 8 --seed 2 -o "$work/sbm.h5" >/dev/null || fail setup
$py -c "
import h5py
with h5py.File('$work/sbm.h5', 'r') as f, h5py.File('$work/noval.h5', 'w') as g:
    for k in f.attrs: g.attrs[k] = f.attrs[k]
    for name in ('graph/indptr', 'graph/indices', 'features', 'labels', 'masks/train', 'masks/test'):
        g[name] = f[name][...]
    g['masks/val'] = 0 * f['masks/val'][...]
    g['masks/test'][...] = f['masks/test'][...] | f['masks/val'][...]" || fail setup-noval

# metrics_ok FILE: every epoch's val_acc and val_loss null, train/test accuracies in [0, 1], the
# summary's best_val_acc null and best_epoch the last epoch.
metrics_ok() {
  $py -c "
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
epochs, s = [l for l in lines if 'epoch' in l], lines[-1]
assert epochs and all(e['val_acc'] is None and e['val_loss'] is None for e in epochs), epochs
assert all(0 <= e['train_acc'] <= 1 and 0 <= e['test_acc'] <= 1 for e in epochs), epochs
assert s['summary'] and s['best_val_acc'] is None and s['best_epoch'] == s['epochs_done'] == len(epochs), s
assert s['test_acc'] == epochs[-1]['test_acc'], s
" "$1"
}
said() { grep -q "$1" "$work/out"; }

# ---- not evaluated, on one rank and under MPI ----------------------------------------------------
if "$plexus" train --data "$work/noval.h5" --epochs 3 --threads 1 --metrics "$work/m1.jsonl" >"$work/out" 2>&1 &&
   said 'val not evaluated' && said 'best validation accuracy not evaluated (no validation node); last epoch 3' &&
   metrics_ok "$work/m1.jsonl"; then ok; else fail "train without validation nodes"; cat "$work/out"; fi
for grid in 2x1x1 1x2x1; do
  if timeout 120 mpirun -np 2 "$plexus" train --data "$work/noval.h5" --grid $grid --epochs 3 --threads 1 \
       --metrics "$work/m-$grid.jsonl" --save-model "$work/model-$grid.h5" >"$work/out" 2>&1 &&
     said 'last epoch 3' && metrics_ok "$work/m-$grid.jsonl"; then ok; else fail "mpi 2 $grid without validation nodes"; cat "$work/out"; fi
done
# The same figures on every grid (the accuracies are global).
if $py -c "
import json
a, b, c = ([json.loads(l) for l in open(f'$work/{n}.jsonl')][-1] for n in ('m1', 'm-2x1x1', 'm-1x2x1'))
assert abs(a['test_acc'] - b['test_acc']) < 1e-9 and abs(a['test_acc'] - c['test_acc']) < 1e-9, (a, b, c)
"; then ok; else fail "test accuracy differs by grid"; fi
# A checkpoint of such a run (NaN best figures) resumes; predict says what it cannot evaluate.
"$plexus" train --data "$work/noval.h5" --epochs 2 --threads 1 --quiet --checkpoint-dir "$work/ck" >/dev/null 2>&1 || fail ckpt
if "$plexus" train --data "$work/noval.h5" --epochs 4 --threads 1 --resume "$work/ck" --metrics "$work/r.jsonl" >"$work/out" 2>&1 &&
   said 'last epoch 4' && $py -c "
import json
s = [json.loads(l) for l in open('$work/r.jsonl')][-1]
assert s['best_epoch'] == 4 and s['best_val_acc'] is None and s['resumed_from'], s"; then ok; else fail resume; cat "$work/out"; fi
if "$plexus" predict --data "$work/noval.h5" --checkpoint "$work/model-2x1x1.h5" -o "$work/p.h5" >"$work/out" 2>&1 &&
   grep -Eq 'accuracy train [0-9.]+  val not evaluated  test [0-9.]+$' "$work/out"; then ok; else fail predict; cat "$work/out"; fi

# ---- generators and --split refuse graphs with an empty split --------------------------------------
g="generate sbm --nodes 200 --classes 3 --feature-width 8"
expect_error sbm-no-val "--val-fraction: the validation split of the 200 nodes generated is empty" \
  $g --val-fraction 0 -o "$work/x.h5"
expect_error sbm-tiny-train "--train-fraction: the training split of the 200 nodes generated is empty" \
  $g --train-fraction 1e-9 -o "$work/x.h5"
expect_error sbm-no-test "--train-fraction: the test split" $g --train-fraction 0.7 --val-fraction 0.3 -o "$work/x.h5"
expect_error sbm-few-nodes "--val-fraction: the validation split of the 5 nodes" \
  generate sbm --nodes 5 --classes 2 --feature-width 4 --val-fraction 0.05 -o "$work/x.h5"
expect_error rmat-tiny "--scale: the validation split of the 2 nodes generated is empty" \
  generate rmat --scale 1 --edge-factor 2 --feature-width 4 --classes 2 -o "$work/x.h5"
printf '0 1\n1 2\n2 0\n' >"$work/tri.txt"
printf 'id,label\n0,0\n1,1\n2,2\n' >"$work/nodes.csv"
expect_error split-rounds-to-nothing "--split: the validation split of 3 labelled nodes is empty" \
  convert edgelist "$work/tri.txt" --nodes "$work/nodes.csv" --split 0.6,0.2,0.2 -o "$work/x.h5"
[[ -e $work/x.h5 ]] && fail "a refused graph was written" || ok
if "$plexus" convert edgelist "$work/tri.txt" --nodes "$work/nodes.csv" --split 1,0,0 -o "$work/all-train.h5" >/dev/null 2>&1
then ok; else fail "--split 1,0,0 (no validation asked for)"; fi

# ---- names that are not UTF-8 in every JSON writer -------------------------------------------------
bad=$'d\xff'
mkdir -p "$work/$bad"
cp "$cora" "$work/$bad/c"$'\xfe'".h5"
f="$work/$bad/c"$'\xfe'".h5"
json_has() {  # json_has FILE [lines]: parses; a string in it ends with the escaped name
  $py -c "
import json, sys
text = open(sys.argv[1], encoding='utf-8').read()
docs = [json.loads(l) for l in text.splitlines()] if len(sys.argv) > 2 else [json.loads(text)]
def strings(x):
    if isinstance(x, str): yield x
    elif isinstance(x, dict):
        for v in x.values(): yield from strings(v)
    elif isinstance(x, list):
        for v in x: yield from strings(v)
want = 'd' + chr(92) + 'xFF/c' + chr(92) + 'xFE.h5'
assert docs and any(s.endswith(want) for d in docs for s in strings(d)), text[:300]" "$@"
}
if "$plexus" inspect --json "$f" >"$work/i.json" 2>"$work/err" && json_has "$work/i.json"; then ok; else fail "inspect --json"; cat "$work/err"; fi
if "$plexus" train --data "$f" --epochs 2 --threads 1 --quiet --metrics "$work/$bad/m"$'\xfa'".jsonl" >/dev/null 2>"$work/err" &&
   json_has "$work/$bad/m"$'\xfa'".jsonl" lines; then ok; else fail "train --metrics"; cat "$work/err"; fi
if timeout 120 mpirun -np 2 "$plexus" train --data "$f" --grid 1x1x2 --epochs 2 --threads 1 --quiet \
     --metrics "$work/$bad/mpi"$'\xfa'".jsonl" >/dev/null 2>"$work/err" &&
   json_has "$work/$bad/mpi"$'\xfa'".jsonl" lines; then ok; else fail "mpi 2 train --metrics"; cat "$work/err"; fi
head -c 4000 "$src/data/tinyshakespeare.txt" >"$work/$bad/t.txt"
if "$plexus" gpt train --data "$work/$bad/t.txt" --iters 2 --layers 1 --heads 2 --embed 16 --block 16 --batch 2 \
     --threads 1 --quiet --metrics "$work/$bad/g.jsonl" >/dev/null 2>"$work/err" &&
   $py -c "
import json, sys
r = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
assert r[0]['data'].endswith('d' + chr(92) + 'xFF/t.txt'), r[0]" "$work/$bad/g.jsonl"; then ok; else fail "gpt train --metrics"; cat "$work/err"; fi

# ---- messages -----------------------------------------------------------------------------------
$py -c "
import struct
def tok(path, n):
    h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = n
    open(path, 'wb').write(struct.pack('<256i', *h) + struct.pack('<%dH' % n, *([1] * n)))
tok('$work/train.bin', 4000); tok('$work/val.bin', 9)"
expect_error short-val-data "$work/val.bin: --val-data has 9 tokens, fewer than --block + 1 = 17" \
  gpt train --data "$work/train.bin" --val-data "$work/val.bin" --vocab 50 --iters 1 --block 16 --embed 16 --heads 2 --layers 1
$py -c "print('k' * 1000000 + ' = 1')" >"$work/big.toml"
expect_error long-toml-key "big.toml: unknown key 'kkkk" train --config "$work/big.toml"
if [[ $(wc -c <"$work/err") -lt 300 ]] && grep -q "kkk\.\.\.kk*'$" "$work/err"; then ok; else fail "long key not shortened"; fi
$py -c "print('\"' + 'a b ' * 200000 + '\" = 1')" >"$work/spaced.toml"
expect_error long-spaced-key "spaced.toml: unknown key" train --config "$work/spaced.toml"
if [[ $(wc -c <"$work/err") -lt 1100 ]]; then ok; else fail "long line not shortened"; fi

echo "cli_splits_and_names: $passed passed, $failures failed"
((failures == 0))
