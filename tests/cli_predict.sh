#!/usr/bin/env bash
# plexus predict (docs/predictions.md): a model written by plexus train --save-model, applied to
# every node of Cora on 1 rank and under MPI (2x2x1, 3x1x1, 1x1x3: the classes split over the
# last layer's o axis) and on a prepared (permuted) copy, gives one file whose row k is node k:
# node_id == arange(N), class == argmax(logits), the same logits on every grid (1e-4 relative),
# and the test accuracy of `class` equals the last epoch's test_acc of the training run. The
# model's layers and widths come from its file; bad inputs end with exit 2 and one line.
# Usage: cli_predict.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"

# mpi_predict NAME NP GRID ARGS...: plexus predict on NP ranks, output $work/NAME.h5.
mpi_predict() {
  local name=$1 np=$2 grid=$3; shift 3
  if ! timeout 120 mpirun -np "$np" "$plexus" predict --grid "$grid" --threads 1 --quiet -o "$work/$name.h5" "$@" \
       >"$work/$name.out" 2>&1; then
    fail "predict on $np ranks ($grid)"; cat "$work/$name.out"
  else ok; fi
}

if "$plexus" train --epochs 5 --threads 1 --quiet --save-model "$work/m.h5" --metrics "$work/m.jsonl" >"$work/train.out" 2>&1; then
  ok
else
  fail "train --save-model"; cat "$work/train.out"
fi

if "$plexus" predict --checkpoint "$work/m.h5" -o "$work/p1.h5" --threads 1 >"$work/p1.out" 2>&1 &&
   grep -q "^wrote $work/p1.h5 (2708 nodes x 7 classes)" "$work/p1.out"; then
  ok
else
  fail "predict on 1 rank"; cat "$work/p1.out"
fi
mpi_predict p4 4 2x2x1 --checkpoint "$work/m.h5"
mpi_predict p3 3 3x1x1 --checkpoint "$work/m.h5"
mpi_predict p3z 3 1x1x3 --checkpoint "$work/m.h5"
# A prepared file stores its nodes permuted: the rows are still the original node ids.
if "$plexus" prepare "$cora" -o "$work/prep.h5" --balance permute >"$work/prep.out" 2>&1; then
  "$plexus" predict --data "$work/prep.h5" --checkpoint "$work/m.h5" -o "$work/pp1.h5" --threads 1 --quiet \
    >"$work/pp1.out" 2>&1 || { fail "predict on a prepared file"; cat "$work/pp1.out"; }
  mpi_predict pp4 4 2x2x1 --data "$work/prep.h5" --checkpoint "$work/m.h5"
else
  fail "prepare"; cat "$work/prep.out"
fi

if $py - "$cora" "$work/m.jsonl" "$work"/p1.h5 "$work"/p4.h5 "$work"/p3.h5 "$work"/p3z.h5 "$work"/pp1.h5 "$work"/pp4.h5 <<'PY'; then ok; else fail "prediction files"; fi
import json, sys, h5py, numpy as np
data, metrics, files = sys.argv[1], sys.argv[2], sys.argv[3:]
with h5py.File(data, "r") as g:
    labels, test = g["labels"][()], g["masks/test"][()].astype(bool)
n, c = labels.shape[0], 7
epochs = [r for r in map(json.loads, open(metrics)) if "epoch" in r]  # not the header and summary
last_test_acc = epochs[-1]["test_acc"]
assert len(epochs) == 5, len(epochs)
ref = None
for path in files:
    with h5py.File(path, "r") as f:
        fmt = f.attrs["format"]
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        assert fmt == "plexus-predictions", (path, fmt)
        assert int(f.attrs["version"]) == 1 and f.attrs["version"].dtype == np.int32, path
        for name, want in (("num_nodes", n), ("num_classes", c), ("epochs_done", 5)):
            assert int(f.attrs[name]) == want and f.attrs[name].dtype == np.int64, (path, name, f.attrs[name])
        assert sorted(f.keys()) == ["class", "logits", "node_id"], (path, list(f.keys()))
        ids, cls, logits = f["node_id"][()], f["class"][()], f["logits"][()]
    assert ids.dtype == np.int64 and cls.dtype == np.int32 and logits.dtype == np.float32, path
    assert ids.shape == (n,) and cls.shape == (n,) and logits.shape == (n, c), (path, ids.shape, cls.shape, logits.shape)
    assert np.array_equal(ids, np.arange(n)), path  # every node once, row k = node k
    assert np.all(np.isfinite(logits)), path
    assert np.array_equal(cls, np.argmax(logits, axis=1)), path
    acc = float(np.mean(cls[test] == labels[test]))
    assert abs(acc - last_test_acc) <= 1e-6, (path, acc, last_test_acc)
    if ref is None:
        ref = logits
        continue
    err = np.max(np.abs(logits - ref) / np.maximum(1e-2, np.abs(ref)))
    assert err <= 1e-4, (path, err)
PY

# A graph without labels or masks (every label -1, every mask 0: a snapshot to score) is scored
# all the same, with its embeddings, on one rank and four: every node's class and logits are
# those of the labelled graph, and no accuracy is reported (there is nothing to evaluate).
cp "$cora" "$work/unlabelled.h5"
$py -c "
import h5py, numpy as np
with h5py.File('$work/unlabelled.h5', 'r+') as f:
    f['labels'][...] = -1
    for m in ('train', 'val', 'test'): f['masks/' + m][...] = 0
" || fail "unlabel a copy of Cora"
if "$plexus" predict --data "$work/unlabelled.h5" --checkpoint "$work/m.h5" --embeddings -o "$work/u1.h5" --threads 1 \
     >"$work/u1.out" 2>&1 &&
   grep -q "accuracy train not evaluated  val not evaluated  test not evaluated" "$work/u1.out"; then
  ok
else
  fail "predict on a graph without labels or masks"; cat "$work/u1.out"
fi
mpi_predict u4 4 2x1x2 --data "$work/unlabelled.h5" --checkpoint "$work/m.h5" --embeddings
if $py - "$work/p1.h5" "$work/u1.h5" "$work/u4.h5" <<'PY'; then ok; else fail "predictions of the unlabelled graph"; fi
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    want = f["logits"][()]
for path in sys.argv[2:]:
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["node_id"][()], np.arange(2708)), path
        assert np.array_equal(f["class"][()], np.argmax(want, axis=1)), path
        assert np.max(np.abs(f["logits"][()] - want)) <= 1e-4 * max(1.0, np.max(np.abs(want))), path
        e = f["embeddings/layer0"][()]
        assert e.shape == (2708, 16) and np.all(np.isfinite(e)) and np.all(e >= 0), (path, e.shape)  # after the ReLU
PY

# The model's layers and hidden width come from its file, not from options.
if "$plexus" train --epochs 2 --layers 3 --hidden 8 --threads 1 --quiet --save-model "$work/h8.h5" >"$work/h8.out" 2>&1 &&
   "$plexus" predict --checkpoint "$work/h8.h5" -o "$work/ph8.h5" --threads 1 --quiet >>"$work/h8.out" 2>&1 &&
   $py - "$work/ph8.h5" <<'PY'; then ok; else fail "model with --layers 3 --hidden 8"; cat "$work/h8.out"; fi
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    assert f["logits"].shape == (2708, 7) and int(f.attrs["epochs_done"]) == 2
    assert np.array_equal(f["class"][()], np.argmax(f["logits"][()], axis=1))
PY

# Bad inputs: one line, exit 2, before anything is written.
cp "$cora" "$work/g.h5"
"$plexus" generate sbm --nodes 200 --classes 7 --feature-width 20 -o "$work/f20.h5" >/dev/null 2>&1 || fail "generate sbm"
"$plexus" generate sbm --nodes 200 --classes 4 --feature-width 1433 -o "$work/c4.h5" >/dev/null 2>&1 || fail "generate sbm"
expect_error "missing checkpoint" "$work/none.h5: no such file" predict --checkpoint "$work/none.h5" -o "$work/x.h5"
expect_error "checkpoint not a model" "g.h5: is a graph (Plexus format v1), not a GNN model file" \
  predict --data "$work/g.h5" --checkpoint "$work/g.h5" -o "$work/x.h5"
expect_error "feature width" "m.h5: a model of 1433 features and 7 classes does not fit .*f20.h5 (20 features" \
  predict --data "$work/f20.h5" --checkpoint "$work/m.h5" -o "$work/x.h5"
expect_error "class count" "does not fit .*c4.h5 (1433 features, 4 classes)" \
  predict --data "$work/c4.h5" --checkpoint "$work/m.h5" -o "$work/x.h5"
expect_error "output over the data" "is the same file as the input" predict --data "$work/g.h5" --checkpoint "$work/m.h5" -o "$work/g.h5"
expect_error "output over the model" "is the same file as the input" predict --data "$work/g.h5" --checkpoint "$work/m.h5" -o "$work/m.h5"
expect_error "output in a missing directory" "$work/none" predict --checkpoint "$work/m.h5" -o "$work/none/x.h5"
expect_error "no --checkpoint" "checkpoint" predict -o "$work/x.h5"
mpi_error "missing checkpoint" "no such file" predict --grid 2x2x1 --threads 1 --checkpoint "$work/none.h5" -o "$work/x.h5"
mpi_error "output over the data" "is the same file as the input" predict --grid 2x2x1 --threads 1 --data "$work/g.h5" \
  --checkpoint "$work/m.h5" -o "$work/g.h5"
# The GNN's kind comes from the model file: --model may repeat it, never contradict it. A copy of
# m.h5 marked as GraphSAGE's (the /options attributes the trainer writes, docs/gcn-model.md)
# shows the kind in both directions without training one.
if "$plexus" predict --checkpoint "$work/m.h5" --model gcn -o "$work/pk.h5" --threads 1 >"$work/pk.out" 2>&1 &&
   grep -q "model $work/m.h5: gcn, 2 layers, hidden 16, 5 epochs" "$work/pk.out"; then ok; else fail "predict --model gcn"; cat "$work/pk.out"; fi
cp "$work/m.h5" "$work/sage.h5"
$py -c "
import h5py, numpy as np
with h5py.File('$work/sage.h5', 'r+') as f:
    o = f['options']
    o.attrs['model'] = 'sage'; o.attrs['aggregator'] = 'sum'; o.attrs['normalize'] = np.uint8(1)
" || fail "mark a model file as sage's"
expect_error "--model of another kind" "--model: $work/m.h5 holds a gcn model, not sage (the kind comes from the model file" \
  predict --checkpoint "$work/m.h5" --model sage -o "$work/x.h5"
expect_error "--model of another kind (sage file)" "--model: $work/sage.h5 holds a sage model, not gcn" \
  predict --checkpoint "$work/sage.h5" --model gcn -o "$work/x.h5"
expect_error "--model unknown" "--model: 'gpt' is not one of gcn, sage, gin, gat, " predict --checkpoint "$work/m.h5" --model gpt -o "$work/x.h5"
expect_error "--model gat of a gcn file" "--model: $work/m.h5 holds a gcn model, not gat" \
  predict --checkpoint "$work/m.h5" --model gat -o "$work/x.h5"
expect_error "--heads is the file's" "unknown option '--heads' of plexus predict" \
  predict --checkpoint "$work/m.h5" --heads 4 -o "$work/x.h5"
expect_error "--aggregator is the file's" "unknown option '--aggregator' of plexus predict" \
  predict --checkpoint "$work/sage.h5" --aggregator sum -o "$work/x.h5"
mpi_error "--model of another kind" "holds a gcn model, not gin" predict --grid 2x2x1 --threads 1 --checkpoint "$work/m.h5" \
  --model gin -o "$work/x.h5"
# A GPT model file to predict, and a GNN model file to the GPT's sampler: each named as such.
"$plexus" gpt train --layers 1 --heads 1 --embed 8 --block 8 --batch 2 --iters 0 --threads 1 --quiet \
  --save "$work/gpt.h5" >/dev/null 2>&1 || fail "gpt train --save"
expect_error "a GPT model file" "gpt.h5: is a GPT model file (plexus gpt train --save or --checkpoint-dir), not a GNN model file" \
  predict --checkpoint "$work/gpt.h5" -o "$work/x.h5"
mpi_error "a GPT model file" "gpt.h5: is a GPT model file" predict --grid 2x2x1 --threads 1 --checkpoint "$work/gpt.h5" -o "$work/x.h5"
expect_error "a GNN model file to gpt sample" "m.h5: is a GNN model file (plexus train --save-model or --checkpoint-dir), not a GPT model file" \
  gpt sample --model "$work/m.h5"
expect_error "predictions to predict" "p1.h5: is a predictions file (plexus predict), not a GNN model file" \
  predict --checkpoint "$work/p1.h5" -o "$work/x.h5"
[[ -e "$work/x.h5" || -e "$work/none" ]] && fail "an output written on error"
cmp -s "$cora" "$work/g.h5" || fail "the data file changed"
compgen -G "$work/*.tmp.*" >/dev/null && fail "a temporary file left"

echo "cli_predict: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
