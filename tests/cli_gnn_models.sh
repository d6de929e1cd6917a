#!/usr/bin/env bash
# GraphSAGE, GIN and GAT end to end (`plexus train --model sage|gin|gat`, issue 33 and GAT's).
#
# A command line that trained a GCN whatever --model says fails here: the losses of every kind
# would equal the GCN's, and plan would predict the GCN's bytes for them. The refusals are tested
# in cli_bad_input.sh, cli_plan.sh, cli_predict.sh, cli_inspect.sh, cli_report.sh,
# cli_checkpoint.sh and tests/test_cli_model_options.cpp.
#
# On an SBM graph (planted classes), for sage (mean), sage --aggregator sum --normalize, gin,
# gin --gin-eps 0.5 --train-eps, gat (8 heads) and gat --heads 4 --out-heads 2 --attn-dropout 0.3
# --negative-slope 0.1, each against the GCN of the same seed:
#  - training learns (the loss falls), and the losses differ from the GCN's and from the same
#    kind with other options;
#  - the metrics header and summary and the model file's /options record the kind and options;
#  - predict from the model file on 1 rank and on 2 (1x2x1): class = argmax(logits), the test
#    accuracy of the classes = the last epoch's test_acc, the same logits on both grids;
#  - a run checkpointed at epoch 6 on 1x2x1 and resumed on 2x2x1 gives the uninterrupted
#    one-rank run's epochs 7..10 (to rounding); a resume with other kind options is refused;
#  - plan --model predicts the bytes train measures on 2x2x1, and not the GCN's;
#  - predict --embeddings writes the hidden layer's rows, the same on 1 and 2 ranks;
#  - predict --attention writes GATConv's coefficients (the peer compares) on 1 and 3 ranks and on a
#    double-permuted file on 4;
#  - report and inspect show the kind.
# Usage: cli_gnn_models.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$(realpath "$1") src=$(realpath "$2")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
cd "$work" || exit 1

"$plexus" generate sbm --nodes 400 --classes 4 --feature-width 16 --seed 2 -o g.h5 >/dev/null || { echo "FAIL sbm"; exit 1; }
common=(--data g.h5 --threads 1 --quiet --seed 7)
declare -A kinds=(
  [gcn]="--model gcn"
  [sage]="--model sage"
  [sage-sum]="--model sage --aggregator sum --normalize"
  [gin]="--model gin"
  [gin-eps]="--model gin --gin-eps 0.5 --train-eps"
  [gat]="--model gat"
  [gat-opts]="--model gat --heads 4 --out-heads 2 --attn-dropout 0.3 --negative-slope 0.1"
)

# ---- train each kind on one rank ---------------------------------------------------------------
for k in "${!kinds[@]}"; do
  # shellcheck disable=SC2086
  "$plexus" train "${common[@]}" ${kinds[$k]} --epochs 10 --metrics "$k.jsonl" --save-model "$k.h5" >"$k.out" 2>&1 &&
    ok || { fail "train $k"; cat "$k.out"; }
done
if $py - <<'PY'; then ok; else fail "kinds: learning, options recorded, losses of their own"; fi
import json, h5py, sys
want = {
    "gcn": {"model": "gcn"},
    "sage": {"model": "sage", "aggregator": "mean", "normalize": False},
    "sage-sum": {"model": "sage", "aggregator": "sum", "normalize": True},
    "gin": {"model": "gin", "gin_eps": 0.0, "train_eps": False},
    "gin-eps": {"model": "gin", "gin_eps": 0.5, "train_eps": True},
    "gat": {"model": "gat", "heads": 8, "out_heads": 1, "attn_dropout": 0.0, "negative_slope": 0.2},
    "gat-opts": {"model": "gat", "heads": 4, "out_heads": 2, "attn_dropout": 0.3, "negative_slope": 0.1},
}
GAT = ("heads", "out_heads", "attn_dropout", "negative_slope")
losses, bad = {}, []
for k, fields in want.items():
    rows = [json.loads(l) for l in open(f"{k}.jsonl")]
    header, epochs, summary = rows[0], rows[1:-1], rows[-1]
    losses[k] = [e["loss"] for e in epochs]
    for line, name in ((header, "header"), (summary, "summary")):
        got = {f: line.get(f) for f in ("model", "aggregator", "normalize", "gin_eps", "train_eps") + GAT if f in line}
        if got != fields: bad.append(f"{k}: {name} records {got}, wanted {fields}")
    if not losses[k][-1] < losses[k][0]: bad.append(f"{k}: the loss does not fall: {losses[k]}")
    with h5py.File(f"{k}.h5", "r") as f:
        o = {n: (v.decode() if isinstance(v, bytes) else v) for n, v in f["options"].attrs.items()}
    stored = {"model": o.get("model")}
    if "aggregator" in fields: stored.update(aggregator=o.get("aggregator"), normalize=bool(o.get("normalize")))
    if "gin_eps" in fields: stored.update(gin_eps=float(o.get("gin_eps")), train_eps=bool(o.get("train_eps")))
    if "heads" in fields:  # float32 in the file: compared as the JSON's shortest decimals
        stored.update(heads=int(o.get("heads")), out_heads=int(o.get("out_heads")),
                      attn_dropout=float(f"{o.get('attn_dropout'):g}"), negative_slope=float(f"{o.get('negative_slope'):g}"))
    if stored != fields: bad.append(f"{k}: the model file records {stored}, wanted {fields}")
# The engine builds the model the options name: no two of these runs compute the same losses.
for a, b in (("sage", "gcn"), ("sage-sum", "gcn"), ("gin", "gcn"), ("gin-eps", "gcn"), ("sage", "sage-sum"),
             ("gin", "gin-eps"), ("sage", "gin"), ("gat", "gcn"), ("gat-opts", "gcn"), ("gat", "gat-opts"),
             ("gat", "sage")):
    if losses[a] == losses[b]: bad.append(f"{a} trains the same losses as {b} (does the engine build {a.split('-')[0]}?)")
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY

# ---- predict from the model files, on 1 and 2 ranks ---------------------------------------------
for k in sage-sum gin-eps gat-opts; do
  "$plexus" predict --data g.h5 --checkpoint "$k.h5" -o "p1-$k.h5" --threads 1 --embeddings >"p1-$k.out" 2>&1 &&
    grep -q "model $k.h5: $(cut -d' ' -f2 <<<"${kinds[$k]}") (" "p1-$k.out" && ok || { fail "predict $k"; cat "p1-$k.out"; }
  timeout 120 mpirun -np 2 "$plexus" predict --data g.h5 --checkpoint "$k.h5" -o "p2-$k.h5" --grid 1x2x1 --threads 1 \
    --embeddings --quiet >"p2-$k.out" 2>&1 && ok || { fail "predict $k on 1x2x1"; cat "p2-$k.out"; }
  expect_error "predict $k: --model gcn" "holds a $(cut -d' ' -f2 <<<"${kinds[$k]}") model, not gcn" \
    predict --data g.h5 --checkpoint "$k.h5" --model gcn -o x.h5
  if $py - "$k" <<'PY'; then ok; else fail "predictions of $k"; fi
import json, sys, h5py, numpy as np
k = sys.argv[1]
with h5py.File("g.h5", "r") as g:
    labels, test = g["labels"][()], g["masks/test"][()].astype(bool)
last = [json.loads(l) for l in open(f"{k}.jsonl")][-2]  # the last epoch's line
with h5py.File(f"p1-{k}.h5", "r") as a, h5py.File(f"p2-{k}.h5", "r") as b:
    la, lb, ca = a["logits"][()], b["logits"][()], a["class"][()]
assert np.array_equal(ca, np.argmax(la, axis=1)), "class is not argmax(logits)"
assert np.allclose(la, lb, rtol=1e-4, atol=1e-5), f"1 rank and 1x2x1 differ by {np.abs(la - lb).max()}"
with h5py.File(f"p1-{k}.h5", "r") as a, h5py.File(f"p2-{k}.h5", "r") as b:  # --embeddings: the hidden layer
    assert list(a["embeddings"]) == ["layer0"], list(a["embeddings"])
    ea, eb = a["embeddings/layer0"][()], b["embeddings/layer0"][()]
assert ea.shape == (len(la), 16), ea.shape
assert np.allclose(ea, eb, rtol=1e-4, atol=1e-5), f"embeddings: 1 rank and 1x2x1 differ by {np.abs(ea - eb).max()}"
assert np.abs(ea).max() > 0 and len(np.unique(ea.round(5), axis=0)) > len(ea) // 2, "embeddings: rows alike"
acc = float(np.mean(ca[test] == labels[test]))
assert abs(acc - last["test_acc"]) < 1e-9, (acc, last["test_acc"])
PY
done

# ---- predict --attention: GATConv's coefficients, named by the input's node ids on any grid ------
# 1 rank; 2x2x1 on the double-permuted file (its blocks renumbered in two orders, whole heads);
# 3x1x1 (heads split between ranks). The peer compares each file's every entry and head with
# GATConv's return_attention_weights for the same model file, on the input graph.
"$plexus" prepare g.h5 -o g.prep.h5 --balance permute -q >/dev/null || fail "prepare g.h5"
for run in "1 1x1x1 g.h5" "4 2x2x1 g.prep.h5" "3 3x1x1 g.h5"; do
  read -r np grid data <<<"$run"
  if timeout 120 mpirun -np "$np" "$plexus" predict --data "$data" --checkpoint gat-opts.h5 --attention \
       -o "att-$grid.h5" --grid "$grid" --threads 1 --quiet >"att-$grid.out" 2>&1 &&
     "$py" -W ignore "$src/examples/bench/pyg_gnn_peer.py" g.h5 gat-opts.h5 --attention "att-$grid.h5" --rel-loss 1e-5 \
       >>"att-$grid.out" 2>&1
  then ok; else fail "predict --attention on $grid ($data) against GATConv"; cat "att-$grid.out"; fi
done
if "$py" -W ignore "$src/examples/bench/pyg_gnn_peer.py" g.h5 gat.h5 --attention att-1x1x1.h5 >att-other.out 2>&1; then
  fail "the peer finds another model's attention equal to gat-opts's"
else ok; fi
expect_error "predict --attention of a sage model" "--attention: sage-sum.h5 holds a sage model: it has no attention coefficients" \
  predict --data g.h5 --checkpoint sage-sum.h5 --attention -o x.h5

# ---- resume on another grid ---------------------------------------------------------------------
for k in sage gin-eps gat-opts; do
  # shellcheck disable=SC2086
  if timeout 120 mpirun -np 2 "$plexus" train "${common[@]}" ${kinds[$k]} --grid 1x2x1 --epochs 6 \
       --checkpoint-dir "ck-$k" --checkpoint-every 3 >"ck-$k.out" 2>&1 &&
     timeout 120 mpirun -np 4 "$plexus" train "${common[@]}" ${kinds[$k]} --grid 2x2x1 --epochs 10 --resume "ck-$k" \
       --metrics "res-$k.jsonl" >"res-$k.out" 2>&1 && $py - "$k" <<'PY'
import json, sys
k = sys.argv[1]
rows = lambda p: [json.loads(l) for l in open(p)]
full = [r for r in rows(f"{k}.jsonl") if "epoch" in r]
res = [r for r in rows(f"res-{k}.jsonl") if "epoch" in r]
assert [r["epoch"] for r in res] == [7, 8, 9, 10], [r["epoch"] for r in res]
for f, r in zip(full[6:], res):
    for key in ("loss", "train_acc", "val_acc", "test_acc"):
        assert abs(f[key] - r[key]) <= 1e-4 * max(1.0, abs(f[key])), (k, r["epoch"], key, f[key], r[key])
PY
  then ok; else fail "resume $k: 1x2x1 -> 2x2x1"; tail -3 "ck-$k.out" "res-$k.out" 2>/dev/null; fi
done
# shellcheck disable=SC2086
expect_error "resume gin: other --gin-eps" "was trained with --gin-eps 0.5, this run has --gin-eps 0.25" \
  train "${common[@]}" --model gin --gin-eps 0.25 --train-eps --epochs 10 --resume ck-gin-eps
expect_error "resume sage: other --aggregator" "was trained with --aggregator mean, this run has --aggregator sum" \
  train "${common[@]}" --model sage --aggregator sum --epochs 10 --resume ck-sage
expect_error "resume gat: other --heads" "was trained with --heads 4, this run has --heads 8" \
  train "${common[@]}" --model gat --out-heads 2 --attn-dropout 0.3 --negative-slope 0.1 --epochs 10 --resume ck-gat-opts
expect_error "resume gat: other --attn-dropout" "was trained with --attn-dropout 0.3, this run has --attn-dropout 0" \
  train "${common[@]}" --model gat --heads 4 --out-heads 2 --negative-slope 0.1 --epochs 10 --resume ck-gat-opts

# ---- plan: the bytes train measures, the kind's own -------------------------------------------
for k in gcn sage-sum gin-eps gat-opts; do
  # shellcheck disable=SC2086
  "$plexus" plan --data g.h5 --ranks 4 --json ${kinds[$k]} >"plan-$k.json" 2>"plan-$k.err" || { fail "plan $k"; cat "plan-$k.err"; }
done
for k in sage-sum gin-eps gat-opts; do
  # shellcheck disable=SC2086
  if timeout 120 mpirun -np 4 "$plexus" train "${common[@]}" ${kinds[$k]} --grid 2x2x1 --epochs 2 \
       --metrics "m4-$k.jsonl" >"m4-$k.out" 2>&1 && $py - "$k" <<'PY'
import json, sys
k = sys.argv[1]
grid = lambda name: next(g for g in json.load(open(f"plan-{name}.json"))["grids"] if g["grid"] == "2x2x1")
plan, gcn = grid(k), grid("gcn")
assert json.load(open(f"plan-{k}.json"))["gnn"]["model"] == k.split("-")[0]
epochs = [r for r in map(json.loads, open(f"m4-{k}.jsonl")) if "epoch" in r]
for e, key in ((0, "bytes_first"), (1, "bytes_steady")):
    for ax in ("x", "y", "z", "total"):
        got, want = epochs[e]["comm_bytes"][ax], plan[key][ax]
        assert abs(got - want) <= 1e-9 * max(1.0, want), (k, key, ax, got, want)
assert (plan["bytes_steady"], plan["memory_bytes_per_rank"]) != (gcn["bytes_steady"], gcn["memory_bytes_per_rank"]), \
    f"plan predicts the GCN's bytes and memory for {k}"
PY
  then ok; else fail "plan --model $k against train on 2x2x1"; tail -3 "m4-$k.out"; fi
done

# ---- report and inspect show the kind -----------------------------------------------------------
if "$plexus" report gcn.jsonl sage-sum.jsonl gin-eps.jsonl gat-opts.jsonl >report.txt 2>&1 &&
   grep -Eq '^--model +gcn +sage +gin +gat$' report.txt && grep -Eq '^--aggregator +- +sum +- +-$' report.txt &&
   grep -Eq '^--gin-eps +- +- +0.5 +-$' report.txt && grep -Eq '^--train-eps +- +- +true +-$' report.txt &&
   grep -Eq '^--heads +- +- +- +4$' report.txt && grep -Eq '^--out-heads +- +- +- +2$' report.txt &&
   grep -Eq '^--attn-dropout +- +- +- +0.3$' report.txt && grep -Eq '^--negative-slope +- +- +- +0.1$' report.txt
then ok; else fail report; cat report.txt; fi
if "$plexus" inspect sage-sum.h5 >inspect.txt 2>&1 && grep -Eq '^  model +sage \(aggregator sum, normalize on\)$' inspect.txt &&
   "$plexus" inspect gin-eps.h5 >>inspect.txt 2>&1 && grep -Eq '^  model +gin \(gin-eps 0.5, train-eps on\)$' inspect.txt &&
   "$plexus" inspect gat-opts.h5 >>inspect.txt 2>&1 &&
   grep -Eq '^  model +gat \(heads 4, out-heads 2, attn-dropout 0.3, negative-slope 0.1, edge-features off\)$' inspect.txt
then ok; else fail inspect; cat inspect.txt; fi

echo "cli_gnn_models: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
