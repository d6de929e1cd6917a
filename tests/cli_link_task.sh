#!/usr/bin/env bash
# plexus train --task link (docs/link-prediction.md): on Cora, one rank and a 2x1x2 grid train
# the same losses and ROC-AUCs (the metrics file's val_auc / test_auc), the summary names the
# task and its metrics, a prepared file (its split renumbered) trains as the plain one, and
# what the link task does not take yet ends with exit 2 and one line.
# Usage: cli_link_task.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
cd "$work" || exit 1

link=(train --task link --threads 1 --hidden 32 --embedding-width 16 --dropout 0.2 --mrr-negatives 20 --quiet)
if "$plexus" "${link[@]}" --epochs 15 --grid 1x1x1 --metrics one.jsonl >one.out 2>&1 &&
   timeout 300 mpirun -np 4 "$plexus" "${link[@]}" --epochs 15 --grid 2x1x2 --metrics four.jsonl >four.out 2>&1; then
  "$py" - one.jsonl four.jsonl <<'PY' && ok || fail "link task: 2x1x2 differs from one rank, or metrics missing"
import json, math, sys
def read(path):
    lines = [json.loads(l) for l in open(path)]
    return [l for l in lines if "epoch" in l and not l.get("summary")], lines[-1]
(a, sa), (b, sb) = read(sys.argv[1]), read(sys.argv[2])
assert len(a) == len(b) == 15, (len(a), len(b))
for x, y in zip(a, b):
    assert "train_acc" not in x and math.isfinite(x["val_auc"]) and math.isfinite(x["test_auc"]), x
    assert abs(x["loss"] - y["loss"]) <= 1e-5 * abs(x["loss"]), (x["loss"], y["loss"])
    assert abs(x["val_auc"] - y["val_auc"]) <= 2e-3 and abs(x["test_auc"] - y["test_auc"]) <= 2e-3
    assert 0 < x["val_mrr"] <= 1 and abs(x["val_mrr"] - y["val_mrr"]) <= 5e-3 and abs(x["test_mrr"] - y["test_mrr"]) <= 5e-3
assert a[-1]["loss"] < a[0]["loss"], "the loss does not fall"
for s in (sa, sb):
    assert s["task"] == "link" and s["select_by"] == "auc" and s["test_acc"] is None, s
    assert 0.5 < s["test_auc"] <= 1 and s["best_val_auc"] == max(e["val_auc"] for e in a), s
    assert 1 / 21 < s["test_mrr"] <= 1 and s["best_val_mrr"] is not None, s
PY
  grep -q "^best validation ROC-AUC [0-9.]* at epoch [0-9]*; test ROC-AUC [0-9.]*" one.out && ok ||
    { fail "link task's result line"; cat one.out; }
  "$plexus" report one.jsonl >report.out 2>&1 && grep -q "^test ROC-AUC *0\.[0-9]*$" report.out && ok ||
    { fail "plexus report of a link run"; cat report.out; }
else
  fail "train --task link on 1 and 4 ranks"; cat one.out four.out
fi

# Checkpointed at epoch 8 on one rank, resumed to 15 on 2x1x2: the uninterrupted run's losses.
"$plexus" train --epochs 2 --threads 1 --quiet --save-model node.h5 >/dev/null 2>&1
if "$plexus" "${link[@]}" --grid 1x1x1 --epochs 8 --checkpoint-dir ck --checkpoint-every 4 >ck1.out 2>&1 &&
   timeout 300 mpirun -np 4 "$plexus" "${link[@]}" --epochs 15 --grid 2x1x2 --resume ck --metrics resumed.jsonl \
     --save-model link.h5 >ck2.out 2>&1; then
  "$py" - one.jsonl resumed.jsonl <<'PY' && ok || fail "resumed link run differs from the uninterrupted one"
import json, sys
def epochs(path):
    return {l["epoch"]: l for l in map(json.loads, open(path)) if "epoch" in l and not l.get("summary")}
a, b = epochs(sys.argv[1]), epochs(sys.argv[2])
assert sorted(b) == list(range(9, 16)), sorted(b)
for e in b:
    assert abs(a[e]["loss"] - b[e]["loss"]) <= 1e-5 * abs(a[e]["loss"]), (e, a[e]["loss"], b[e]["loss"])
PY
  h5dump -a /options/task link.h5 | grep -q '"link"' && ok || fail "the model file does not record the task"
  expect_error "predict with a link model, no --top-k" "give --top-k K" predict --checkpoint link.h5 -o p.h5
  expect_error "top-k of a node model" "is a node-classification model" predict --checkpoint node.h5 --top-k 3 -o p.h5
  # Each node's best partners: one rank and 2x1x2 alike, none a neighbour or the node itself.
  if "$plexus" predict --checkpoint link.h5 --top-k 6 -o top1.h5 --threads 1 >top1.out 2>&1 &&
     timeout 300 mpirun -np 4 "$plexus" predict --checkpoint link.h5 --top-k 6 -o top4.h5 --grid 2x1x2 --threads 1 \
       >top4.out 2>&1; then
    "$py" - top1.h5 top4.h5 "$cora" <<'PY' && ok || fail "top-k partners differ between grids, or include neighbours"
import sys, h5py, numpy as np
a, b, g = h5py.File(sys.argv[1]), h5py.File(sys.argv[2]), h5py.File(sys.argv[3])
assert a.attrs["format"] == "plexus-top-k" and a.attrs["k"] == 6 and a["partners"].shape == (2708, 6)
assert np.array_equal(a["node_id"][...], np.arange(2708)) and np.array_equal(a["node_id"][...], b["node_id"][...])
assert np.abs(a["scores"][...] - b["scores"][...]).max() < 1e-4
assert (a["partners"][...] == b["partners"][...]).mean() > 0.99  # (near-ties may swap)
assert np.all(np.diff(a["scores"][...], axis=1) <= 0), "not best first"
indptr, indices = g["graph/indptr"][...], g["graph/indices"][...]
for u in range(2708):
    p = set(a["partners"][u].tolist())
    assert u not in p and not p & set(indices[indptr[u]:indptr[u + 1]].tolist()), u
PY
  else
    fail "predict --top-k on 1 and 4 ranks"; cat top1.out top4.out
  fi
  # Given pairs: the score of each node's best partner is the top-K file's, on 1 and 4 ranks.
  "$py" - <<'PY'
import h5py
f = h5py.File("top1.h5")
partners = f["partners"][...]
with open("pairs.txt", "w") as out:
    out.write("# u v\n")
    for u in range(0, 2708, 97):
        out.write(f"{u} {partners[u, 0]}\n")
PY
  if "$plexus" predict --checkpoint link.h5 --pairs pairs.txt -o ps1.h5 --threads 1 >ps1.out 2>&1 &&
     timeout 300 mpirun -np 4 "$plexus" predict --checkpoint link.h5 --pairs pairs.txt -o ps4.h5 --grid 2x2x1 \
       --threads 1 >ps4.out 2>&1; then
    "$py" - ps1.h5 ps4.h5 top1.h5 <<'PY' && ok || fail "pair scores differ from the top-k scores or between grids"
import sys, h5py, numpy as np
a, b, t = h5py.File(sys.argv[1]), h5py.File(sys.argv[2]), h5py.File(sys.argv[3])
u = np.arange(0, 2708, 97)
assert a.attrs["format"] == "plexus-pair-scores" and np.array_equal(a["u"][...], u)
assert np.array_equal(a["v"][...], t["partners"][u, 0])
assert np.abs(a["score"][...] - t["scores"][u, 0]).max() < 1e-4, np.abs(a["score"][...] - t["scores"][u, 0]).max()
assert np.abs(a["score"][...] - b["score"][...]).max() < 1e-4
PY
  else
    fail "predict --pairs on 1 and 4 ranks"; cat ps1.out ps4.out
  fi
  # Only listed nodes (any order, a repeat, a comment): their rows of the all-nodes file, on 1 and 4 ranks.
  printf '# ids\n2700\n5\n17\n5\n0\n' >nodes.txt
  if "$plexus" predict --checkpoint link.h5 --top-k 6 --nodes nodes.txt -o tn1.h5 --threads 1 >tn1.out 2>&1 &&
     timeout 300 mpirun -np 4 "$plexus" predict --checkpoint link.h5 --top-k 6 --nodes nodes.txt -o tn4.h5 \
       --grid 1x2x2 --threads 1 >tn4.out 2>&1; then
    "$py" - tn1.h5 tn4.h5 top1.h5 <<'PY' && ok || fail "top-k of listed nodes differ from their rows of all nodes"
import sys, h5py, numpy as np
a, b, t = h5py.File(sys.argv[1]), h5py.File(sys.argv[2]), h5py.File(sys.argv[3])
rows = [0, 5, 17, 2700]
assert a.attrs["num_rows"] == 4 and a.attrs["num_nodes"] == 2708 and a["partners"].shape == (4, 6)
for f in (a, b):
    assert np.array_equal(f["node_id"][...], rows), f["node_id"][...]
    assert np.abs(f["scores"][...] - t["scores"][rows]).max() < 1e-4
    assert (f["partners"][...] == t["partners"][rows]).mean() > 0.95  # (near-ties may swap)
PY
  else
    fail "predict --top-k --nodes on 1 and 4 ranks"; cat tn1.out tn4.out
  fi
  printf '3\n99999\n' >unknown_nodes.txt
  expect_error "listed node not in the graph" "node 99999 is not in the graph" predict --checkpoint link.h5 \
    --top-k 3 --nodes unknown_nodes.txt -o pn.h5
  expect_error "--nodes without --top-k" "give --top-k too" predict --checkpoint link.h5 --nodes nodes.txt -o pn.h5
  printf '0 1\n2 99999\n' >unknown.txt
  expect_error "pairs with an unknown node" "node 99999 is not in the graph" predict --checkpoint link.h5 \
    --pairs unknown.txt -o pu.h5
  expect_error "resume a link run as a node run" "was trained with --task link" train --resume ck --epochs 20 --hidden 32
  expect_error "resume a link run with other MRR negatives" "--mrr-negatives" train --task link --resume ck \
    --epochs 20 --hidden 32 --embedding-width 16 --dropout 0.2 --mrr-negatives 5
else
  fail "link task checkpointed and resumed"; cat ck1.out ck2.out
fi
# A file with its own link split (convert edgelist --edge-split, seed 3) trains as the same split
# drawn in memory (--seed 3): the same losses and ROC-AUCs.
"$py" - "$cora" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1])
ip, ix = f["graph/indptr"][...], f["graph/indices"][...]
with open("cora_edges.txt", "w") as o:
    for u in range(len(ip) - 1):
        for v in ix[ip[u]:ip[u + 1]]:
            if u < v:
                o.write(f"{u} {v}\n")
PY
if "$plexus" convert edgelist cora_edges.txt --num-nodes 2708 --edge-split 0.85,0.05,0.1 --split-seed 3 \
     -o edge_split.h5 >es.out 2>&1 &&
   "$plexus" convert edgelist cora_edges.txt --num-nodes 2708 -o edges.h5 >/dev/null 2>&1 &&
   "$plexus" train --task link --data edge_split.h5 --epochs 6 --seed 3 --threads 1 --quiet --metrics fs.jsonl \
     >/dev/null 2>&1 &&
   "$plexus" train --task link --data edges.h5 --epochs 6 --seed 3 --threads 1 --quiet --metrics ms.jsonl >/dev/null 2>&1
then
  "$py" - fs.jsonl ms.jsonl <<'PY' && ok || fail "a file's link split trains differently from the same split in memory"
import json, sys
def read(path):
    l = [json.loads(x) for x in open(path)]
    return l[0], [(x["loss"], x["val_auc"], x["test_auc"]) for x in l if "epoch" in x and not x.get("summary")]
(ha, a), (hb, b) = read(sys.argv[1]), read(sys.argv[2])
assert len(a) == 6 and a == b, (a, b)
assert ha["link_split"] == "file" and hb["link_split"] == [0.05, 0.1], (ha["link_split"], hb["link_split"])
PY
  grep -q "^links held out: 263 validation, 527 test" es.out && ok || { fail "convert --edge-split's report"; cat es.out; }
  "$plexus" inspect edge_split.h5 2>&1 | grep -q "link split     val 263 links (263 negatives)  test 527 links" && ok ||
    fail "inspect does not show the file's link split"
  expect_error "a file's split and --link-split" "holds its own link split" train --task link --data edge_split.h5 \
    --link-split 0.1,0.1
  # Prepared (permuted, on one process), the file keeps its split, renumbered with the graph, and
  # trains as the plain one: the same losses and ROC-AUCs; its model's partners are the same.
  if "$plexus" prepare edge_split.h5 -o es_p.h5 --balance permute -q >/dev/null 2>es_p.err &&
     "$plexus" train --task link --data es_p.h5 --epochs 6 --seed 3 --threads 1 --quiet --metrics fp.jsonl \
       --save-model fp_model.h5 >/dev/null 2>&1 &&
     "$plexus" train --task link --data edge_split.h5 --epochs 6 --seed 3 --threads 1 --quiet --save-model fs_model.h5 \
       >/dev/null 2>&1 &&
     "$plexus" predict --checkpoint fp_model.h5 --data es_p.h5 --top-k 4 -o fp_top.h5 >/dev/null 2>&1 &&
     "$plexus" predict --checkpoint fs_model.h5 --data edge_split.h5 --top-k 4 -o fs_top.h5 >/dev/null 2>&1; then
    "$py" - fs.jsonl fp.jsonl edge_split.h5 es_p.h5 fs_top.h5 fp_top.h5 <<'PY' && ok || fail "a prepared file's link split trains differently"
import json, sys, h5py, numpy as np
def read(path):
    return [(x["loss"], x["val_auc"], x["test_auc"]) for x in map(json.loads, open(path)) if "epoch" in x and not x.get("summary")]
assert read(sys.argv[1]) == read(sys.argv[2]), (read(sys.argv[1]), read(sys.argv[2]))
plain, prep = h5py.File(sys.argv[3]), h5py.File(sys.argv[4])
p2 = prep["prepared/node_id_p2"][...]
for name in ("val_pos", "val_neg", "test_pos", "test_neg"):  # stored in P2 order: position k is node p2[k]
    assert np.array_equal(p2[prep["links/" + name][...]], plain["links/" + name][...]), name
a, b = h5py.File(sys.argv[5]), h5py.File(sys.argv[6])
for name in ("node_id", "partners", "scores"):
    assert np.array_equal(a[name][...], b[name][...]), name
PY
  else
    fail "prepare a file with a link split, train and predict on it"; cat es_p.err
  fi
  # On 3 ranks: the same file.
  if timeout 120 mpirun -np 3 "$plexus" prepare edge_split.h5 -o es_p3.h5 --balance permute -q >es_p3.err 2>&1; then
    same_datasets es_p.h5 es_p3.h5 >es_p3.diff && ok || { fail "a link split prepared on 3 ranks differs"; head -5 es_p3.diff; }
  else
    fail "prepare a file with a link split on 3 ranks"; tail -3 es_p3.err
  fi
  # In 5 passes through scratch files: the same file again, nothing left in the scratch folder.
  mkdir -p scratch
  if PLEXUS_PREPARE_PASSES=5 "$plexus" prepare edge_split.h5 -o es_p5.h5 --balance permute -q --memory-per-rank 1G \
       --scratch scratch >es_p5.err 2>&1; then
    same_datasets es_p.h5 es_p5.h5 >es_p5.diff && [ -z "$(ls -A scratch)" ] && ok ||
      { fail "a link split prepared in passes differs (or left scratch files)"; head -5 es_p5.diff; }
  else
    fail "prepare a file with a link split in passes"; tail -3 es_p5.err
  fi
  # The same split written as a split column (the file's held-out links tagged val and test, in
  # other orders): the same held-out links; the file trains (its negatives are its own draw).
  "$py" - edge_split.h5 cora_edges.txt <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1])
tag = {}
for name, t in (("val_pos", "valid"), ("test_pos", "test")):
    for u, v in f["links/" + name][...]:
        tag[(int(u), int(v))] = t
with open("cora_tagged.txt", "w") as o:
    for line in reversed(open(sys.argv[2]).read().splitlines()):
        u, v = map(int, line.split())
        o.write(f"{v} {u} {tag.get((min(u, v), max(u, v)), 'train')}\n")
PY
  if "$plexus" convert edgelist cora_tagged.txt --num-nodes 2708 --edge-split-column -o tagged.h5 >tg.out 2>&1 &&
     "$plexus" train --task link --data tagged.h5 --epochs 3 --threads 1 --quiet --metrics tg.jsonl >/dev/null 2>&1; then
    "$py" - edge_split.h5 tagged.h5 tg.jsonl <<'PY' && ok || fail "a split column does not hold out its tagged links"
import json, sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
for name in ("val_pos", "test_pos"):
    assert sorted(map(tuple, a["links/" + name][...])) == sorted(map(tuple, b["links/" + name][...])), name
assert np.array_equal(a["graph/indices"][...], b["graph/indices"][...])
l = [json.loads(x) for x in open(sys.argv[3])]
assert l[0]["link_split"] == "file" and 0 < l[-1]["test_auc"] <= 1
PY
  else
    fail "convert --edge-split-column and train on it"; cat tg.out
  fi
else
  fail "convert --edge-split and train on it"; cat es.out
fi
# generate sbm --task link: a planted-community graph with its links split; its held-out links are learnable.
if "$plexus" generate sbm --task link --nodes 2000 --seed 4 -o sbm_link.h5 >sl.out 2>&1 &&
   "$plexus" train --task link --data sbm_link.h5 --epochs 60 --threads 1 --quiet --metrics sl.jsonl >/dev/null 2>&1; then
  "$py" - sl.jsonl <<'PY' && ok || fail "generate sbm --task link: held-out links not learnt"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
assert l[0]["link_split"] == "file" and l[-1]["test_auc"] > 0.75, (l[0]["link_split"], l[-1]["test_auc"])
PY
else
  fail "generate sbm --task link and train on it"; cat sl.out
fi
# OGB's baseline recipe: the MLP decoder on z_u * z_v and an Adam step per batch of links, on 1 and
# 4 ranks alike; the saved model scores given pairs (both directions alike), refuses --top-k.
ogb=(train --task link --threads 1 --hidden 16 --embedding-width 8 --decoder mlp --decoder-hidden 12 --edge-batch 1500
     --epochs 4 --quiet)
if "$plexus" "${ogb[@]}" --grid 1x1x1 --metrics mlp1.jsonl --save-model mlp.h5 >mlp1.out 2>&1 &&
   timeout 300 mpirun -np 4 "$plexus" "${ogb[@]}" --grid 1x2x2 --metrics mlp4.jsonl >mlp4.out 2>&1 &&
   printf '0 1\n1 0\n5 9\n' >mlp_pairs.txt &&
   "$plexus" predict --checkpoint mlp.h5 --pairs mlp_pairs.txt -o mlp_scores.h5 --threads 1 >/dev/null 2>&1; then
  "$py" - mlp1.jsonl mlp4.jsonl mlp_scores.h5 <<'PY' && ok || fail "MLP decoder with edge batches on 1 and 4 ranks"
import json, sys
import h5py
def read(path):
    lines = [json.loads(l) for l in open(path)]
    return [l for l in lines if "epoch" in l and not l.get("summary")], lines[0]
(a, ha), (b, hb) = read(sys.argv[1]), read(sys.argv[2])
assert ha["decoder"] == "mlp" and ha["edge_batch"] == 1500 and ha["decoder_hidden"] == 12, ha
assert len(a) == len(b) == 4 and a[-1]["loss"] < a[0]["loss"], (a, b)
for x, y in zip(a, b):
    assert abs(x["loss"] - y["loss"]) <= 1e-5 * abs(x["loss"]) and abs(x["val_auc"] - y["val_auc"]) <= 2e-3, (x, y)
s = h5py.File(sys.argv[3])["score"][...]
assert len(s) == 3 and s[0] == s[1] and s[0] != s[2], s
PY
  expect_error "top-k of an MLP link model" "--top-k: ranks partners by the embeddings' dot product" \
    predict --checkpoint mlp.h5 --top-k 3 -o mlp_top.h5
  # inspect says what the model is: its task and decoder, its best ROC-AUCs (not accuracies).
  if "$plexus" inspect mlp.h5 >mlp_inspect.txt 2>&1 && "$plexus" inspect mlp.h5 --json >mlp_inspect.json 2>&1 &&
     grep -Eq '^  task +link \(embedding width 8, decoder mlp: 3 layers 12 wide, edge-batch 1500\)$' mlp_inspect.txt &&
     grep -Eq '^  best epoch +[0-9]+ \(val ROC-AUC 0\.[0-9]+, test ROC-AUC 0\.[0-9]+\)$' mlp_inspect.txt; then
    "$py" - mlp_inspect.json <<'PY' && ok || fail "inspect --json of an MLP link model"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["task"] == "link" and d["link"]["decoder"] == "mlp" and d["link"]["edge_batch"] == 1500, d
assert d["link"]["decoder_hidden"] == 12 and d["link"]["embedding_width"] == 8 and 0 < d["best_test_auc"] <= 1, d
PY
  else
    fail "inspect of an MLP link model"; cat mlp_inspect.txt
  fi
else
  fail "train --decoder mlp --edge-batch on 1 and 4 ranks"; cat mlp1.out mlp4.out
fi
expect_error "generate: an edge split without the link task" "--edge-split" generate sbm --edge-split 0.8,0.1,0.1 -o x.h5
expect_error "link task picked by accuracy per class" "--select-by" train --task link --select-by macro-f1
expect_error "node task picked by auc" "--select-by" train --select-by auc
expect_error "plan of a link task METIS orders per grid" "--balance" plan --task link --balance metis --ranks 2
expect_error "held-out shares" "--link-split" train --task link --link-split 0.5,0.5
expect_error "held-out shares, text" "--link-split" train --task link --link-split 0.1
expect_error "embedding width" "--embedding-width" train --task link --embedding-width -3
expect_error "MRR negatives" "--mrr-negatives" train --task link --mrr-negatives -2
expect_error "edge batch" "--edge-batch" train --task link --edge-batch -1
expect_error "decoder width with the dot decoder" "--decoder-hidden: is the MLP decoder" train --task link --decoder-hidden 8
# A prepared Cora (no split of its own) trains the link task as the plain file: the split is
# drawn on the graph in its input's order.
if "$plexus" prepare "$cora" -o prepared.h5 --grid 1x1x1 >/dev/null 2>&1 &&
   "$plexus" train --task link --data prepared.h5 --epochs 3 --threads 1 --quiet --metrics pc.jsonl >/dev/null 2>&1 &&
   "$plexus" train --task link --data "$cora" --epochs 3 --threads 1 --quiet --metrics cc.jsonl >/dev/null 2>&1; then
  "$py" - pc.jsonl cc.jsonl <<'PY' && ok || fail "the link task on a prepared Cora trains differently"
import json, sys
r = [[x["loss"] for x in map(json.loads, open(f)) if "epoch" in x and not x.get("summary")] for f in sys.argv[1:]]
assert len(r[0]) == 3 and r[0] == r[1], r
PY
else
  fail "the link task on a prepared Cora"
fi

# plexus plan --task link: its dry run scores the pairs training scores (the split drawn alike), so
# the predicted memory per rank (every kind, "pairs" included) and each axis's bytes of the first
# and the steady epoch are the measured ones exactly: both decoders, edge batches, Hits@K and MRR,
# and a graph balanced in memory (--balance permute: the pairs move with the nodes).
for c in "1x1x1 --decoder dot" "2x2x1 --decoder dot --hits-k 20" "1x1x3 --decoder mlp --decoder-layers 2" \
         "3x1x1 --decoder dot --edge-batch 1500 --mrr-negatives 5" "1x2x2 --decoder mlp --edge-batch 3000" \
         "2x1x2 --decoder dot --balance permute --mrr-negatives 3" "1x3x1 --decoder mlp --balance permute"; do
  read -r grid options <<<"$c"
  IFS=x read -r gx gy gz <<<"$grid"
  np=$((gx * gy * gz))
  run=(--task link --hidden 24 --embedding-width 12 --dropout 0.3 $options)
  launch=()
  [ "$np" -gt 1 ] && launch=(timeout 300 mpirun -np "$np")
  if "$plexus" plan --json --ranks "$np" "${run[@]}" >plan.json 2>plan.err &&
     "${launch[@]}" "$plexus" train "${run[@]}" --grid "$grid" --epochs 2 --threads 1 --quiet --metrics plan-m.jsonl \
       >/dev/null 2>train.err; then
    "$py" - plan.json plan-m.jsonl "$grid" <<'PY' && ok || fail "plan --task link $c: not the measured memory and bytes"
import json, sys
plan = next(g for g in json.load(open(sys.argv[1]))["grids"] if g["grid"] == sys.argv[3])
lines = [json.loads(l) for l in open(sys.argv[2])]
summary, epochs = lines[-1], [l for l in lines if "epoch" in l and "comm_bytes" in l]
assert summary["peak_tensor_bytes"] == plan["memory_bytes_per_rank"], (summary["peak_tensor_bytes"], plan["memory_bytes_per_rank"])
assert summary["memory_by_kind"] == {k: int(v) for k, v in plan["memory_by_kind"].items()}, (summary["memory_by_kind"], plan["memory_by_kind"])
assert summary["memory_by_kind"]["pairs"] > 0
for epoch, key in zip(epochs, ("bytes_first", "bytes_steady")):
    for axis in "xyz":
        assert abs(epoch["comm_bytes"][axis] - plan[key][axis]) <= 1e-9 * max(1.0, plan[key][axis]), (key, axis, epoch["comm_bytes"], plan[key])
PY
  else
    fail "plan and train --task link $c"; cat plan.err train.err
  fi
done

echo "cli_link_task: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
