#!/usr/bin/env bash
# `plexus prepare` and training with balanced orders (--balance none|permute|metis|locality):
#  - a prepared `none` file trains bit-identically to the plain file; the in-memory
#    `train --balance permute` bit-identically to the prepared permute file;
#  - a prepared permute file on MPI grids (uneven blocks, 3 layers) matches 1x1x1 (more grids
#    in-process, permuted in memory: mpi_test_layer_order);
#  - Cora accuracy is unchanged by balancing (3 seeds per method);
#  - inspect reports the stored layout; bad input exits 2 with one line.
# Usage: cli_prepare.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# losses FILE: the per-epoch losses of a metrics file, one per line, as printed by Python.
losses() { $py -c "import json,sys; [print(repr(json.loads(l)['loss'])) for l in open(sys.argv[1]) if '\"epoch\"' in l]" "$1"; }
# close A B TOL: every epoch's loss within TOL relative.
close() {
  $py -c "
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if '\"epoch\"' in l]
b = [json.loads(l) for l in open(sys.argv[2]) if '\"epoch\"' in l]
assert len(a) == len(b) and a, (len(a), len(b))
worst = max(abs(x['loss'] - y['loss']) / abs(x['loss']) for x, y in zip(a, b))
assert worst <= float(sys.argv[3]), worst
assert [x['test_acc'] for x in a] == [y['test_acc'] for y in b]
" "$1" "$2" "$3"
}

for m in none permute; do
  if "$plexus" prepare "$cora" -o "$work/cora_$m.h5" --balance $m >"$work/out" 2>&1 &&
     grep -q "balance $m" "$work/out" && grep -q "peak RSS" "$work/out"; then ok; else fail "prepare-$m"; cat "$work/out"; fi
done
if "$plexus" prepare "$cora" -o "$work/cora_metis.h5" --balance metis --grid 2x2x1 >"$work/out" 2>&1 &&
   grep -q "balance metis (2 parts)" "$work/out"; then ok; else fail prepare-metis; cat "$work/out"; fi
if "$plexus" prepare "$cora" -o "$work/cora_locality.h5" --balance locality --grid 2x1x2 >"$work/out" 2>&1 &&
   grep -q "balance locality (4 parts)" "$work/out" && grep -q "(Â1 and Â2)" "$work/out"; then ok
else fail prepare-locality; cat "$work/out"; fi
ls "$work" | grep -q '\.tmp\.' && fail "temporary files left" || ok

# The file: v1 part readable with h5py, /prepared as documented.
if $py -c "
import h5py, numpy as np, sys
with h5py.File(sys.argv[1]) as f:
    p = f['prepared']
    assert p.attrs['balance'] == 'permute' and int(p.attrs['two_orders']) == 1
    n = int(f.attrs['num_nodes'])
    for a in ('a1', 'a2'):
        ip = p[a + '/indptr'][...]
        assert len(ip) == n + 1 and ip[-1] == len(p[a + '/indices']) == 10556 + n
    assert sorted(p['node_id_p'][...]) == list(range(n)) and sorted(p['node_id_p2'][...]) == list(range(n))
    # features in P2 order: row i is original node node_id_p2[i]
    with h5py.File(sys.argv[2]) as g:
        x = g['features'][...]
        assert np.array_equal(f['features'][...], x[p['node_id_p2'][...]])
        assert np.array_equal(p['labels_p'][...], g['labels'][...][p['node_id_p'][...]])
" "$work/cora_permute.h5" "$cora"; then ok; else fail h5py-layout; fi

# Bit-identical: plain file vs prepared none; in-memory --balance permute vs prepared permute.
common=(--epochs 20 --threads 2 -q)
"$plexus" train --data "$cora" "${common[@]}" --metrics "$work/plain.jsonl" >/dev/null &&
"$plexus" train --data "$work/cora_none.h5" "${common[@]}" --metrics "$work/none.jsonl" >/dev/null &&
"$plexus" train --data "$cora" --balance permute "${common[@]}" --metrics "$work/mem.jsonl" >/dev/null &&
"$plexus" train --data "$work/cora_permute.h5" "${common[@]}" --metrics "$work/perm.jsonl" >/dev/null || fail train-runs
if [[ -s $work/plain.jsonl && "$(losses "$work/plain.jsonl")" == "$(losses "$work/none.jsonl")" ]]; then ok; else fail none-bit-identical; fi
if [[ -s $work/mem.jsonl && "$(losses "$work/mem.jsonl")" == "$(losses "$work/perm.jsonl")" ]]; then ok; else fail in-memory-vs-prepared; fi
# Without dropout the balanced orders compute the same model (summation order aside).
for m in permute metis locality; do
  "$plexus" train --data "$cora" "${common[@]}" --dropout 0 --metrics "$work/d0.jsonl" >/dev/null
  "$plexus" train --data "$work/cora_$m.h5" "${common[@]}" --dropout 0 --metrics "$work/d0_$m.jsonl" >/dev/null
  if close "$work/d0.jsonl" "$work/d0_$m.jsonl" 1e-5; then ok; else fail "no-dropout-$m"; fi
done

# MPI grids on the prepared permute file (2708 = uneven over 3), 3 layers, vs 1x1x1.
"$plexus" train --data "$work/cora_permute.h5" --layers 3 --epochs 8 --threads 1 -q --metrics "$work/g1.jsonl" >/dev/null
for grid in 2x2x2 2x1x3; do
  p=$(( ${grid//x/*} ))
  if mpirun -np $p "$plexus" train --data "$work/cora_permute.h5" --layers 3 --epochs 8 --threads 1 -q --grid $grid \
       --metrics "$work/g.jsonl" >/dev/null 2>"$work/err" && close "$work/g1.jsonl" "$work/g.jsonl" 1e-5; then ok
  else fail "grid-$grid"; cat "$work/err"; fi
done
# The locality file on the grid it was cut for, row-sparse sums and gathers on, vs 1x1x1.
"$plexus" train --data "$work/cora_locality.h5" --epochs 8 --threads 1 -q --metrics "$work/g1.jsonl" >/dev/null
if mpirun -np 4 "$plexus" train --data "$work/cora_locality.h5" --epochs 8 --threads 1 -q --grid 2x1x2 --sparse-comm auto \
     --metrics "$work/g.jsonl" >/dev/null 2>"$work/err" && close "$work/g1.jsonl" "$work/g.jsonl" 1e-5; then ok
else fail grid-locality; cat "$work/err"; fi
# 4 layers (Â1, Â2, Â1, Â2 over three rotations) on a prepared file written for that.
"$plexus" train --data "$work/cora_permute.h5" --layers 4 --epochs 5 --threads 1 -q --metrics "$work/g1.jsonl" >/dev/null
if mpirun -np 4 "$plexus" train --data "$work/cora_permute.h5" --layers 4 --epochs 5 --threads 1 -q --grid 2x1x2 \
     --metrics "$work/g.jsonl" >/dev/null && close "$work/g1.jsonl" "$work/g.jsonl" 1e-5; then ok; else fail grid-4layers; fi

# A graph without edges (zero-length /graph/indices) loads under MPI-IO, plain and prepared.
$py -c "
import h5py, numpy as np, sys
n = 5
with h5py.File(sys.argv[1], 'w') as h:
    h.attrs['format'] = 'plexus-graph'; h.attrs['format_version'] = np.int32(1)
    h.attrs['num_nodes'] = np.int64(n); h.attrs['num_features'] = np.int64(2)
    h.attrs['num_classes'] = np.int32(2); h.attrs['directed'] = np.uint8(0)
    h['graph/indptr'] = np.zeros(n + 1, np.int64); h['graph/indices'] = np.zeros(0, np.int64)
    h['features'] = np.ones((n, 2), np.float32); h['labels'] = np.zeros(n, np.int32)
    for m in ('train', 'val', 'test'): h['masks/' + m] = np.ones(n, np.uint8)
" "$work/edgeless.h5"
"$plexus" prepare "$work/edgeless.h5" -o "$work/edgeless_p.h5" -q || fail edgeless-prepare
for f in edgeless edgeless_p; do
  if mpirun -np 4 "$plexus" train --grid 2x2x1 --data "$work/$f.h5" --epochs 2 --threads 1 -q >/dev/null 2>"$work/err"; then ok
  else fail "mpi-$f"; cat "$work/err"; fi
done

# Accuracy unchanged by balancing: over seeds 1-3, each method's mean test accuracy within one
# point of none's, and every run >= 79%. (Without dropout the orders train the same model: above.)
for m in none permute metis; do
  for s in 1 2 3; do
    "$plexus" train --data "$work/cora_$m.h5" --seed $s --threads 2 -q | grep -o 'test accuracy [0-9.]*' | awk -v m=$m '{print m, $3}'
  done
done >"$work/acc"
if $py -c "
import sys, collections
acc = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m, a = line.split(); acc[m].append(float(a))
assert all(len(v) == 3 for v in acc.values()) and len(acc) == 3, dict(acc)
mean = {m: sum(v) / 3 for m, v in acc.items()}
print('cora test accuracy, mean of 3 seeds:', {m: round(v, 4) for m, v in mean.items()})
for m in ('permute', 'metis'):
    assert abs(mean[m] - mean['none']) <= 0.01, (m, mean)
    assert min(acc[m]) >= 0.79, (m, acc[m])
" "$work/acc"; then ok; else fail accuracy; cat "$work/acc"; fi

# inspect reports the layout stored in the file.
if "$plexus" inspect "$work/cora_permute.h5" --grid 2x2x2 --layers 2 >"$work/out" 2>&1 &&
   grep -q "balance permute (as prepared in the file) on grid 2x2x2" "$work/out"; then ok; else fail inspect; cat "$work/out"; fi

# Bad input: exit 2, one line `plexus: error: ...`, no output file.
expect_error metis-no-grid "--grid: --balance metis needs" prepare "$cora" -o "$work/x.h5" --balance metis
expect_error locality-no-grid "--grid: --balance locality needs" prepare "$cora" -o "$work/x.h5" --balance locality
expect_error missing-input "$work/nope.h5: no such file" prepare "$work/nope.h5" -o "$work/x.h5"
expect_error no-dir "does not exist" prepare "$cora" -o "$work/no/such/dir/x.h5"
[[ -e $work/x.h5 ]] && fail "output written on error" || ok
expect_error conflicting "prepared with --balance permute" train --data "$work/cora_permute.h5" --balance metis --epochs 1
expect_error bad-balance "--balance" train --balance random --epochs 1
cp "$work/cora_permute.h5" "$work/bad.h5"
$py -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    del f['prepared/a2/values']
" "$work/bad.h5"
expect_error missing-a2-values "/prepared/a2/values: missing dataset" train --data "$work/bad.h5" --epochs 1
cp "$work/cora_permute.h5" "$work/bad2.h5"
$py -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    ix = f['prepared/a1/indices'][...]; ix[5] = 999999; f['prepared/a1/indices'][...] = ix
" "$work/bad2.h5"
expect_error bad-a1-index "/prepared/a1/indices: column index 999999 out of range" train --data "$work/bad2.h5" --epochs 1

echo "cli_prepare: $passed passed, $failures failed"
((failures == 0))
