#!/usr/bin/env bash
# plexus train --restore-best, --patience and --class-weights on Cora (docs/gnn-models.md, "The
# loss"; docs/gcn-model.md, weights_epoch): the saved model is the one whose accuracy is
# reported (plexus predict on it prints the same test accuracy); early stopping ends patience
# epochs after the pick; a run checkpointed, stopped and resumed — also for more epochs than it
# first had — ends with the uninterrupted run's weights; bad values end with exit 2 and one line.
# Usage: cli_training_options.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
cd "$work" || exit 1

# summary FILE KEY: a field of the metrics file's summary (its last line).
summary() { tail -1 "$1" | "$py" -c "import json, sys; print(json.loads(sys.stdin.read())['$2'])"; }
common=(--threads 1 --quiet --lr 0.05 --class-weights auto)

# --restore-best: the model file holds the picked epoch's weights, and says so.
if "$plexus" train "${common[@]}" --epochs 120 --restore-best --save-model best.h5 --metrics best.jsonl >best.out 2>&1 &&
   "$plexus" predict --checkpoint best.h5 -o p.h5 --threads 1 >p.out 2>&1; then
  best=$(summary best.jsonl best_epoch) weights=$(summary best.jsonl weights_epoch) test=$(summary best.jsonl test_acc)
  [[ $best == "$weights" && $best -lt 120 ]] && ok || fail "weights_epoch $weights is not best_epoch $best (< 120)"
  grep -q "test $(printf '%.4f' "$test")" p.out && ok || { fail "predict on the saved model: not test $test"; cat p.out; }
  grep -q "(the weights of epoch $best)" p.out && ok || { fail "predict does not say the weights' epoch"; cat p.out; }
  h5dump -a weights_epoch best.h5 | grep -q "(0): $((best - 1))" && ok || fail "model file attribute weights_epoch"
else
  fail "train --restore-best, predict"; cat best.out p.out
fi

# --patience: ends patience epochs after the pick, and says so.
if "$plexus" train "${common[@]}" --epochs 400 --patience 7 --metrics pat.jsonl >pat.out 2>&1; then
  done_=$(summary pat.jsonl epochs_done) best=$(summary pat.jsonl best_epoch)
  [[ $(summary pat.jsonl stopped_early) == True && $done_ -eq $((best + 7)) ]] && ok ||
    fail "stopped_early with epochs_done $done_, best epoch $best, patience 7"
  "$plexus" train --threads 1 --lr 0.05 --class-weights auto --epochs 400 --patience 7 >pat2.out 2>&1
  grep -q "^stopped early: 7 epochs without a better validation accuracy" pat2.out && ok || { fail "stopped early line"; cat pat2.out; }
else
  fail "train --patience"; cat pat.out
fi

# A run checkpointed every 10 epochs, stopped by --epochs 40 (restoring its pick), resumed to 120:
# the same weights and pick as the uninterrupted 120 epochs (best.h5).
if "$plexus" train "${common[@]}" --epochs 40 --restore-best --checkpoint-dir ck --checkpoint-every 10 >ck1.out 2>&1 &&
   "$plexus" train "${common[@]}" --epochs 120 --restore-best --resume ck --save-model resumed.h5 \
     --metrics resumed.jsonl >ck2.out 2>&1; then
  [[ $(summary resumed.jsonl best_epoch) == "$(summary best.jsonl best_epoch)" ]] && ok || fail "resumed run's pick"
  "$py" - best.h5 resumed.h5 <<'PY' && ok || fail "resumed run's weights differ from the uninterrupted run's"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
names = []
a["value"].visit(lambda n: names.append(n) if isinstance(a["value"][n], h5py.Dataset) else None)
assert names and all(np.array_equal(a["value"][n][...], b["value"][n][...]) for n in names), names
PY
else
  fail "checkpoint and resume with --restore-best"; cat ck1.out ck2.out
fi

# Node weights in the file (/node_weights): all 1 trains as without them; other weights change
# the loss; a bad weight is refused; a prepared file (its copy in P2 order) trains alike.
"$py" - "$cora" <<'PY'
import shutil, sys, h5py, numpy as np
for name, w in (("ones", None), ("skewed", "skew"), ("bad", "nan")):
    shutil.copy(sys.argv[1], f"{name}.h5")
    with h5py.File(f"{name}.h5", "r+") as f:
        n = int(f.attrs["num_nodes"])
        x = np.ones(n, np.float32) if w is None else (np.arange(n) % 5).astype(np.float32)
        if w == "nan":
            x[17] = np.nan
        f.create_dataset("node_weights", data=x)
PY
for f in plain ones skewed; do
  data=$cora; [[ $f != plain ]] && data=$f.h5
  "$plexus" train --threads 1 --quiet --epochs 5 --data "$data" --metrics "nw_$f.jsonl" >/dev/null 2>&1 || fail "train on $f node weights"
done
loss() { sed -n 2p "$1" | "$py" -c "import json, sys; print(json.loads(sys.stdin.read())['loss'])"; }
[[ $(loss nw_ones.jsonl) == "$(loss nw_plain.jsonl)" ]] && ok || fail "node weights of 1 changed the loss"
[[ $(loss nw_skewed.jsonl) != "$(loss nw_plain.jsonl)" ]] && ok || fail "node weights did not change the loss"
expect_error "a NaN node weight" "/node_weights: weight nan of node 17" train --epochs 2 --data bad.h5
if "$plexus" prepare skewed.h5 -o skewed_prep.h5 --balance permute >/dev/null 2>&1 &&
   "$plexus" train --threads 1 --quiet --epochs 5 --dropout 0 --data skewed_prep.h5 --metrics nw_prep.jsonl >/dev/null 2>&1 &&
   "$plexus" train --threads 1 --quiet --epochs 5 --dropout 0 --data skewed.h5 --metrics nw_skew0.jsonl >/dev/null 2>&1; then
  "$py" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-5 * b)" \
    "$(loss nw_prep.jsonl)" "$(loss nw_skew0.jsonl)" && ok || fail "a prepared file's node weights do not follow its nodes"
else
  fail "prepare and train a file with node weights"
fi

expect_error "class weights of another count" "--class-weights: 2 weights for 7 classes" train --epochs 2 --class-weights 1,2
expect_error "class weights not numbers" "--class-weights: expected auto or numbers" train --epochs 2 --class-weights heavy
expect_error "negative class weight" "--class-weights: weight -1" train --epochs 2 --class-weights 1,1,1,-1,1,1,1
expect_error "negative patience" "--patience: must be 0" train --epochs 2 --patience -1
# A resumed run keeps its class weights.
expect_error "resume with other class weights" "was trained with --class-weights auto" \
  train --threads 1 --quiet --lr 0.05 --epochs 120 --resume ck --class-weights 1,1,1,1,1,1,2

echo "cli_training_options: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
