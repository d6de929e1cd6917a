#!/usr/bin/env bash
# Wrong answers are never reported as success: a diverged loss, nothing to train on, a prepared
# file edited after `plexus prepare`, ranks started with different options, numbers wrapped or
# defaults taken silently, negative degrees. Each ends `plexus` with exit code 2 and one line
# `plexus: error: ...`, under MPI too (one line for the whole job).
# Usage: cli_wrong_answers.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

"$plexus" generate rmat --scale 7 --edge-factor 4 --feature-width 8 --classes 3 -o "$work/good.h5" >/dev/null || {
  echo "FAIL: could not generate the base graph"; exit 1; }
# mutate BASE NAME PYTHON_CODE: copy BASE.h5 to NAME.h5 and run the code with `f` open for writing.
mutate() {
  cp "$work/$1.h5" "$work/$2.h5"
  $py -c "import h5py, numpy as np
f = h5py.File('$work/$2.h5', 'r+')
$3
f.close()" || fail "mutate $2"
}
train() { expect_error "$1" "$2" train --epochs 3 --quiet --data "${@:3}"; }

# 1. A loss that overflows stops the run, naming the epoch (the GCN) or the step (the GPT).
mutate good huge-features "f['features'][...] = np.full(f['features'].shape, 3e38, np.float32)"
train nan-loss "training: loss is .* at epoch 1 " "$work/huge-features.h5"
mpi_error nan-loss "training: loss is .* at epoch 1 " train --grid 2x2x1 --epochs 3 --quiet --data "$work/huge-features.h5"
expect_error gpt-nan-loss "training: loss is .* at step " gpt train --iters 4 --layers 1 --heads 2 --embed 16 \
  --block 16 --batch 2 --eval-every 0 --lr 1e30 --quiet

# 1b. A prediction that overflows writes nothing (SAGE and GAT gave NaN logits here, the GCN on Cora
# with exit 0), naming the first layer and node whose output is not finite; under MPI the same.
for kind in sage gat; do
  "$plexus" train --data "$work/good.h5" --model $kind --epochs 2 --quiet --save-model "$work/m-$kind.h5" \
    >/dev/null 2>&1 || fail "train $kind for predict"
  expect_error "predict-overflow-$kind" "prediction: the output of layer[0-9]* is not finite for node [0-9]* " \
    predict --checkpoint "$work/m-$kind.h5" --data "$work/huge-features.h5" -o "$work/p-$kind.h5" --embeddings
  [[ ! -e "$work/p-$kind.h5" ]] && ok || fail "predict-overflow-$kind wrote $work/p-$kind.h5"
done
mpi_error predict-overflow "prediction: the output of layer[0-9]* is not finite for node [0-9]* " \
  predict --checkpoint "$work/m-gat.h5" --data "$work/huge-features.h5" -o "$work/p-mpi.h5" --grid 2x2x1
[[ ! -e "$work/p-mpi.h5" ]] && ok || fail "mpi predict-overflow wrote $work/p-mpi.h5"

# 1c. --feature-precision bf16 with a feature beyond bfloat16's range (it would be stored as Inf,
# a file every reader refuses) is refused before anything is written: one process, 3 ranks, passes.
mutate good bf16-overflow "x = f['features'][...]; x[5, 2] = 3.4e38; f['features'][...] = x"
want_bf16="bf16-overflow.h5: node 5, feature 2: 3.4e+38 is beyond bfloat16.s range"
expect_error prepare-bf16-overflow "$want_bf16" prepare "$work/bf16-overflow.h5" -o "$work/b1.h5" -q --feature-precision bf16
mkdir -p "$work/scratch"
PLEXUS_PREPARE_PASSES=3 expect_error prepare-bf16-overflow-passes "$want_bf16" prepare "$work/bf16-overflow.h5" \
  -o "$work/b2.h5" -q --feature-precision bf16 --memory-per-rank 1G --scratch "$work/scratch"
[[ -z "$(ls -A "$work/scratch")" ]] && ok || fail "prepare-bf16-overflow-passes left scratch files"
mpi_error prepare-bf16-overflow "$want_bf16" prepare "$work/bf16-overflow.h5" -o "$work/b3.h5" -q --feature-precision bf16
for b in b1 b2 b3; do [[ ! -e "$work/$b.h5" ]] && ok || fail "prepare-bf16-overflow wrote $b.h5"; done

# 2. Nothing to train on, in the sharded and the in-memory (--balance) loads and under MPI.
mutate good no-train "f['masks/train'][...] = 0"
train empty-train-mask "no-train.h5: /masks/train: empty train mask" "$work/no-train.h5"
mutate good unlabelled "f['labels'][...] = -1"
train all-unlabelled "unlabelled.h5: /masks/train: no node of the train mask has a label" "$work/unlabelled.h5"
train all-unlabelled-in-memory "unlabelled.h5: /masks/train: no node" "$work/unlabelled.h5" --balance permute
mpi_error all-unlabelled "unlabelled.h5: /masks/train: no node" train --grid 2x2x1 --quiet --data "$work/unlabelled.h5"

# 3. A prepared file's two copies of the split (P2: /masks, P: /prepared/masks_p) and its orders
# are checked against each other; a changed split gave accuracies of 1.5.
"$plexus" prepare "$work/good.h5" -o "$work/prep.h5" --balance permute -q || fail "prepare"
mutate prep prep-masks-p "f['prepared/masks_p/train'][...] = 1"
train edited-masks-p "prep-masks-p.h5: /prepared: labels_p and masks_p disagree" "$work/prep-masks-p.h5" --layers 1
train edited-masks-p-unused "prep-masks-p.h5: /prepared: labels_p and masks_p disagree" "$work/prep-masks-p.h5" --layers 2
mutate prep prep-masks "m = f['masks/val'][...]; f['masks/val'][...] = 1 - m"
train edited-masks "prep-masks.h5: /prepared: labels_p and masks_p disagree" "$work/prep-masks.h5" --layers 1
mutate prep prep-labels-p "y = f['prepared/labels_p'][...]; y[0] = (y[0] + 1) % 3; f['prepared/labels_p'][...] = y"
train edited-labels-p "/prepared: labels_p and masks_p disagree" "$work/prep-labels-p.h5" --layers 1
mutate prep prep-order "p = f['prepared/node_id_p'][...]; p[1] = p[0]; f['prepared/node_id_p'][...] = p"
train not-a-permutation "/prepared/node_id_p: not a permutation" "$work/prep-order.h5"
mpi_error edited-masks-p "/prepared: labels_p and masks_p disagree" train --grid 2x2x1 --layers 1 --quiet \
  --data "$work/prep-masks-p.h5"
# An untouched prepared file still trains, with accuracies within [0, 1].
"$plexus" train --epochs 3 --quiet --layers 1 --data "$work/prep.h5" --metrics "$work/m.jsonl" >/dev/null 2>&1 &&
  $py -c "import json,sys; r=[json.loads(l) for l in open('$work/m.jsonl')]
sys.exit(not all(0 <= e[k] <= 1 for e in r[1:-1] for k in ('train_acc','val_acc','test_acc')))" && ok ||
  fail "prepared file trains"

# 4. Under MPI every rank runs the same command line.
timeout 60 mpirun -np 1 "$plexus" train --epochs 2 --quiet : -np 1 "$plexus" train --epochs 3 --quiet \
  >"$work/out" 2>"$work/err"
rc=$?
if [[ $rc -ne 2 || $(grep -c "^plexus: error: " "$work/err") -ne 1 ]] ||
  ! grep -q "^plexus: error: command line: ranks were started with different options (rank 1 differs from rank 0)" "$work/err"; then
  fail "mpi different options"; echo "  rc=$rc:"; cat "$work/err"
else ok; fi

# 5. Numbers are read in their own type: no wrapping, saturation or NaN; no silent defaults.
expect_error seed-negative "--seed: expected a whole number between 0 and" train --seed -1
expect_error seed-overflow "--seed: expected a whole number between 0 and" train --seed 18446744073709551616
expect_error int64-overflow "--vocab: expected a whole number" gpt train --vocab 99999999999999999999
expect_error lr-nan "--lr: expected a finite number" train --lr nan
expect_error prepare-seed-negative "--balance-seed: expected a whole number" prepare "$work/good.h5" -o "$work/x.h5" --balance-seed -2
expect_error rmat-seed-negative "--seed: expected a whole number" generate rmat --seed -1 -o "$work/x.h5"
expect_error sample-temperature-inf "--temperature: expected a finite number" gpt sample --model "$work/x.h5" --temperature inf
expect_error data-empty "--data: must not be empty" train --data ""
expect_error config-directory "is a directory, not a TOML file" train --config "$work"
printf 'seed = -1\n' >"$work/neg-seed.toml"
expect_error toml-seed-negative "--seed: expected a whole number" train --config "$work/neg-seed.toml"
printf '%%%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 1.5\n2 3 2\n' >"$work/frac.mtx"
expect_error mtx-integer-fraction "frac.mtx:3: expected an integer value" convert mtx "$work/frac.mtx" -o "$work/x.h5"
[[ -e "$work/x.h5" ]] && fail "x.h5 written despite errors"

# 6. Negative weights making a degree non-positive: an input error naming the file, everywhere.
mutate good negative "n = len(f['graph/indices']); f['graph/values'] = np.full(n, -5.0, np.float32)"
expect_error prepare-negative-degree "negative.h5: /graph/values: row 0 of A + I has a non-positive" \
  prepare "$work/negative.h5" -o "$work/x.h5"
train train-negative-degree "negative.h5: /graph/values: row .* non-positive" "$work/negative.h5"
train train-negative-degree-in-memory "negative.h5: /graph/values: row .* non-positive" "$work/negative.h5" --balance permute

# 7. An error every rank meets is printed once.
mpi_error bad-option "--epochs: must be at least 1" train --grid 2x2x1 --epochs -1
mpi_error bad-number "--seed: expected a whole number" train --grid 2x2x1 --seed -1

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
