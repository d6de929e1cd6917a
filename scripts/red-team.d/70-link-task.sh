# Issue 46's new inputs (docs/link-prediction.md): sourced by scripts/red-team.sh.
#  - `train --task link` (and `plan --task link`): the held-out shares, the embedding width, the options it does not take
#    yet, a graph without links to train on, on 1 and 2 ranks; a prepared file trains;
#  - a link model file whose claims (its task, its embedding width) were edited;
#  - `predict --top-k`: K out of range, a node model, a link model without --top-k, features
#    whose embeddings overflow, K beyond the candidates (padded, never a non-finite score);
#  - `convert ogb` of OGB's link layout: each kind of bad .pt file, damaged containers, and a
#    file's /links attributes (as_published, negatives_per_link) edited.
L=$W/link
mkdir -p "$L"
lk=(--task link --epochs 2 --quiet --threads 1 --hidden 8 --embedding-width 4)
"$plexus" train --data "$IN/sbm.h5" "${lk[@]}" --save-model "$L/link.h5" --checkpoint-dir "$L/ck" >/dev/null ||
  setup_fail "70: train --task link"
printf '%%%%MatrixMarket matrix coordinate pattern general\n6 6 0\n' >"$L/edgeless.mtx"
"$plexus" convert mtx "$L/edgeless.mtx" -o "$L/edgeless.h5" >/dev/null 2>&1 || setup_fail "70: convert edgeless"
printf '0 1\n1 2\n2 0\n' >"$L/triangle.txt"
"$plexus" convert edgelist "$L/triangle.txt" -o "$L/triangle.h5" >/dev/null 2>&1 || setup_fail "70: convert triangle"
(cd "$L" && $py - "$IN" <<'PY') || setup_fail "70: h5py inputs"
import shutil, sys
import h5py, numpy as np
IN = sys.argv[1]
def edit(src, dst, f_):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        f_(f)
edit("link.h5", "task-edge.h5", lambda f: f["options"].attrs.modify("task", "edge"))
edit("link.h5", "width-edited.h5", lambda f: f["options"].attrs.modify("embedding_width", np.int64(5)))
def no_task(f):
    del f["options"].attrs["task"]
edit("link.h5", "no-task.h5", no_task)
def huge(f):
    f["features"][...] = np.where(np.arange(f["features"].shape[1]) % 2 == 0, 3e38, -3e38).astype(np.float32)
edit(f"{IN}/sbm.h5", "huge.h5", huge)
PY

# train --task link: what it is told and what it does not take.
refuse train "link: held-out shares summing to 1" "--link-split" --data "$IN/sbm.h5" "${lk[@]}" --link-split 0.5,0.5
refuse train "link: a negative share" "--link-split" --data "$IN/sbm.h5" "${lk[@]}" --link-split -0.1,0.1
refuse train "link: a share that is not a number" "--link-split" --data "$IN/sbm.h5" "${lk[@]}" --link-split nan,0.1
refuse train "link: one share" "--link-split" --data "$IN/sbm.h5" "${lk[@]}" --link-split 0.1
refuse train "link: shares as words" "--link-split" --data "$IN/sbm.h5" "${lk[@]}" --link-split a,b
refuse train "link: a negative embedding width" "--embedding-width" --data "$IN/sbm.h5" "${lk[@]}" --embedding-width -2
refuse train "link: an unknown task" "--task" --data "$IN/sbm.h5" --task edges --epochs 1 --quiet
NP=2 accept train "link: METIS-balanced, 2 ranks" 'jsonl_ok $OUT/lmetis.jsonl' --data "$IN/sbm.h5" "${lk[@]}" \
  --balance metis --grid 2x1x1 --metrics "$OUT/lmetis.jsonl"
accept train "link: a prepared file permuted in memory" 'jsonl_ok $OUT/lprep-perm.jsonl' --data "$IN/prep.h5" "${lk[@]}" \
  --balance permute --metrics "$OUT/lprep-perm.jsonl"
refuse plan "link: plan of a METIS order" "--balance" --data "$IN/sbm.h5" --task link --balance metis --ranks 2
accept plan "link: plan of a permuted order" 'said "\"task\": \"link\""' --data "$IN/sbm.h5" --task link --balance permute \
  --ranks 3 --json
refuse plan "a balance the prepared file was not prepared with" "prepared with" --data "$IN/prep.h5" --balance none --ranks 2
refuse plan "an unknown balance" "--balance" --data "$IN/sbm.h5" --balance tidy --ranks 2
refuse train "link: bf16" "--precision" --data "$IN/sbm.h5" "${lk[@]}" --precision bf16
refuse train "link: picked by a class's recall" "--select-by" --data "$IN/sbm.h5" "${lk[@]}" --select-by recall:1
refuse train "link: class weights" "--class-weights" --data "$IN/sbm.h5" "${lk[@]}" --class-weights auto
refuse train "link: rs-ag collectives" "--comm-variant" --data "$IN/sbm.h5" "${lk[@]}" --comm-variant rs-ag
refuse train "node task picked by auc" "--select-by" --data "$IN/sbm.h5" "${tr1[@]}" --select-by auc
accept train "link: a prepared file" 'jsonl_ok $OUT/link-prep.jsonl' --data "$IN/prep.h5" "${lk[@]}" \
  --metrics "$OUT/link-prep.jsonl"
refuse train "link: an edgeless graph" "no training link" --data "$L/edgeless.h5" "${lk[@]}"
refuse train "link: a triangle with half its links held out" "held-out shares must leave training links" \
  --data "$L/triangle.h5" "${lk[@]}" --link-split 0.5,0.5
refuse plan "link: plan of an edgeless graph" "no training link" --data "$L/edgeless.h5" --task link --ranks 2
refuse plan "link: plan of a triangle with half its links held out" "held-out shares must leave training links" \
  --data "$L/triangle.h5" --task link --ranks 2 --link-split 0.5,0.5
accept plan "link: plan of a planted graph" 'said "\"task\": \"link\""' --data "$IN/sbm.h5" --task link --ranks 4 --json
NP=2 refuse train "link: an edgeless graph, 2 ranks" "no training link" --data "$L/edgeless.h5" "${lk[@]}" --grid 2x1x1
NP=2 accept train "link: 2 ranks" 'jsonl_ok $OUT/l2.jsonl && grep -q "\"test_auc\"" $OUT/l2.jsonl' \
  --data "$IN/sbm.h5" "${lk[@]}" --grid 1x1x2 --metrics "$OUT/l2.jsonl"
accept train "link: a triangle (some split shares hold no link)" 'jsonl_ok $OUT/tri.jsonl' \
  --data "$L/triangle.h5" "${lk[@]}" --metrics "$OUT/tri.jsonl"

# A link model file's claims.
refuse predict "a link model whose task is edited" "attribute task" \
  --checkpoint "$L/task-edge.h5" --data "$IN/sbm.h5" -o "$OUT/t1.h5" --top-k 3
refuse predict "a link model whose embedding width is edited" "embedding width" \
  --checkpoint "$L/width-edited.h5" --data "$IN/sbm.h5" -o "$OUT/t2.h5" --top-k 3
refuse predict "a link model without its task: it reads as node classification picked by auc" "auc is the link task's" \
  --checkpoint "$L/no-task.h5" --data "$IN/sbm.h5" -o "$OUT/t3.h5"
refuse train "resume a link model as node classification" "was trained with --task link" \
  --data "$IN/sbm.h5" --epochs 4 --quiet --threads 1 --hidden 8 --resume "$L/ck"

# predict --top-k.
topk_ok() { $py -c 'import h5py,sys,numpy as n
f=h5py.File(sys.argv[1]); p=f["partners"][()]; s=f["scores"][()]
sys.exit(not (n.isfinite(s).all() and (s[p < 0] == 0).all() and f.attrs["k"] == p.shape[1]))' "$1" 2>/dev/null; }
refuse predict "top-k of 0" "--top-k" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" -o "$OUT/k0.h5" --top-k 0
refuse predict "top-k of -3" "--top-k" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" -o "$OUT/k-3.h5" --top-k -3
refuse predict "top-k of a node model" "node-classification model" --checkpoint "$IN/gcn.h5" --data "$IN/g.h5" \
  -o "$OUT/kn.h5" --top-k 3
refuse predict "a link model without --top-k" "give --top-k K" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" -o "$OUT/kk.h5"
refuse predict "top-k with --embeddings" "--embeddings" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" -o "$OUT/ke.h5" \
  --top-k 3 --embeddings
refuse predict "top-k on features of ±3e38" "is not finite for node" --checkpoint "$L/link.h5" --data "$L/huge.h5" \
  -o "$OUT/kh.h5" --top-k 3
refuse predict "top-k on a graph of other features" "features" --checkpoint "$L/link.h5" --data "$IN/cora.h5" \
  -o "$OUT/kf.h5" --top-k 3
accept predict "top-k beyond the candidates: padded with -1 and 0" 'topk_ok $OUT/kbig.h5' \
  --checkpoint "$L/link.h5" --data "$IN/sbm.h5" -o "$OUT/kbig.h5" --top-k 500 --threads 1
NP=2 accept predict "top-k on 2 ranks" 'topk_ok $OUT/k2.h5' \
  --checkpoint "$L/link.h5" --data "$IN/sbm.h5" -o "$OUT/k2.h5" --top-k 4 --grid 2x1x1 --threads 1

# predict --pairs.
printf '0 1\n1 2\n' >"$L/pairs.txt"
printf '0 1\n1 2 3\n' >"$L/three.txt"
printf '0 1\n1 two\n' >"$L/word.txt"
printf '# nothing\n\n' >"$L/none.txt"
printf '0 1\n5 100000\n' >"$L/unknown.txt"
printf '0 1\n-1 2\n' >"$L/negative.txt"
printf '0 99999999999999999999\n' >"$L/huge.txt"
pairs_ok() { $py -c 'import h5py,sys,numpy as n
f=h5py.File(sys.argv[1]); sys.exit(not (f.attrs["num_pairs"] == 2 and n.isfinite(f["score"][()]).all() and list(f["u"][()]) == [0, 1]))' "$1" 2>/dev/null; }
accept predict "pairs scored" 'pairs_ok $OUT/ps.h5' --checkpoint "$L/link.h5" --data "$IN/sbm.h5" --pairs "$L/pairs.txt" \
  -o "$OUT/ps.h5" --threads 1
NP=2 accept predict "pairs scored on 2 ranks" 'pairs_ok $OUT/ps2.h5' --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --pairs "$L/pairs.txt" -o "$OUT/ps2.h5" --grid 1x2x1 --threads 1
refuse predict "pairs: three ids on a line" "three.txt:2: not two node ids" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --pairs "$L/three.txt" -o "$OUT/p3.h5"
refuse predict "pairs: a word" "word.txt:2: expected an integer node id, got 'two'" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --pairs "$L/word.txt" -o "$OUT/pw.h5"
refuse predict "pairs: none" "holds no pair" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" --pairs "$L/none.txt" \
  -o "$OUT/pn.h5"
refuse predict "pairs: an id not in the graph" "node 100000 is not in the graph" --checkpoint "$L/link.h5" \
  --data "$IN/sbm.h5" --pairs "$L/unknown.txt" -o "$OUT/pu.h5"
refuse predict "pairs: a negative id" "node -1 is not in the graph" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --pairs "$L/negative.txt" -o "$OUT/pneg.h5"
refuse predict "pairs: an id past int64" "huge.txt:1: node id out of range" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --pairs "$L/huge.txt" -o "$OUT/ph.h5"
refuse predict "pairs: the file missing" "nope.txt" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --pairs "$L/nope.txt" -o "$OUT/pm.h5"
refuse predict "pairs: a directory" "link" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" --pairs "$L" -o "$OUT/pd.h5"
refuse predict "pairs: written over" "is the same file as the input" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --pairs "$L/pairs.txt" -o "$L/pairs.txt"
refuse predict "pairs and top-k together" "not both" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --pairs "$L/pairs.txt" --top-k 3 -o "$OUT/pt.h5"
refuse predict "pairs of a node model" "node-classification model" --checkpoint "$IN/gcn.h5" --data "$IN/g.h5" \
  --pairs "$L/pairs.txt" -o "$OUT/pnode.h5"

# predict --top-k K --nodes FILE: only the listed nodes' partners.
printf '# listed\n7\n3\n7\n' >"$L/nodes.txt"
printf '3\n1 2\n' >"$L/nodes_two.txt"
printf '3\n100000\n' >"$L/nodes_unknown.txt"
printf '# nothing\n' >"$L/nodes_none.txt"
nodes_ok() { $py -c 'import h5py,sys,numpy as n
f=h5py.File(sys.argv[1]); sys.exit(not (f.attrs["num_rows"] == 2 and list(f["node_id"][()]) == [3, 7] and f["partners"].shape == (2, 4) and n.isfinite(f["scores"][()]).all()))' "$1" 2>/dev/null; }
accept predict "top-k of listed nodes" 'nodes_ok $OUT/tn.h5' --checkpoint "$L/link.h5" --data "$IN/sbm.h5" --top-k 4 \
  --nodes "$L/nodes.txt" -o "$OUT/tn.h5" --threads 1
NP=3 accept predict "top-k of listed nodes on 3 ranks" 'nodes_ok $OUT/tn3.h5' --checkpoint "$L/link.h5" \
  --data "$IN/sbm.h5" --top-k 4 --nodes "$L/nodes.txt" -o "$OUT/tn3.h5" --grid 3x1x1 --threads 1
refuse predict "nodes: two ids on a line" "nodes_two.txt:2: not one node id" --checkpoint "$L/link.h5" \
  --data "$IN/sbm.h5" --top-k 4 --nodes "$L/nodes_two.txt" -o "$OUT/tn2.h5"
refuse predict "nodes: an id not in the graph" "node 100000 is not in the graph" --checkpoint "$L/link.h5" \
  --data "$IN/sbm.h5" --top-k 4 --nodes "$L/nodes_unknown.txt" -o "$OUT/tnu.h5"
refuse predict "nodes: none" "holds no node id" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" --top-k 4 \
  --nodes "$L/nodes_none.txt" -o "$OUT/tnn.h5"
refuse predict "nodes without --top-k" "give --top-k too" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --nodes "$L/nodes.txt" -o "$OUT/tnk.h5"
refuse predict "nodes with --pairs" "not both" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" --top-k 2 \
  --nodes "$L/nodes.txt" --pairs "$L/pairs.txt" -o "$OUT/tnp.h5"
refuse predict "nodes: written over" "is the same file as the input" --checkpoint "$L/link.h5" --data "$IN/sbm.h5" \
  --top-k 2 --nodes "$L/nodes.txt" -o "$L/nodes.txt"

# --mrr-negatives K: each held-out split's MRR.
refuse train "MRR negatives: negative" "--mrr-negatives" --task link --data "$IN/sbm.h5" --mrr-negatives -1
refuse train "MRR negatives: too many" "--mrr-negatives" --task link --data "$IN/sbm.h5" --mrr-negatives 100001
refuse train "MRR negatives: not a number" "--mrr-negatives" --task link --data "$IN/sbm.h5" --mrr-negatives many
mrr_ok() { $py -c 'import json,sys
l=[json.loads(x) for x in open(sys.argv[1])]; e=[x for x in l if "epoch" in x and not x.get("summary")]
sys.exit(not (len(e) == 2 and all(0 < x["val_mrr"] <= 1 and 0 < x["test_mrr"] <= 1 for x in e) and l[-1]["test_mrr"] is not None))' "$1" 2>/dev/null; }
accept train "MRR in the metrics" 'mrr_ok $OUT/mrr.jsonl' --task link --data "$IN/sbm.h5" --mrr-negatives 30 --epochs 2 \
  --threads 1 --metrics "$OUT/mrr.jsonl"

# --decoder mlp: OGB's LinkPredictor on z_u * z_v.
refuse train "decoder: unknown" "--decoder" --task link --data "$IN/sbm.h5" --decoder cosine
refuse train "decoder layers with the dot decoder" "--decoder-layers: is the MLP decoder's" --task link \
  --data "$IN/sbm.h5" --decoder-layers 2
refuse train "decoder width with the dot decoder" "--decoder-hidden: is the MLP decoder's" --task link \
  --data "$IN/sbm.h5" --decoder-hidden 16
refuse train "decoder layers past 16" "--decoder-layers" --task link --data "$IN/sbm.h5" --decoder mlp --decoder-layers 17
refuse train "decoder width negative" "--decoder-hidden" --task link --data "$IN/sbm.h5" --decoder mlp --decoder-hidden -4
refuse train "decoder with node classification" "--decoder: is the link task's" --data "$IN/sbm.h5" --decoder mlp
"$plexus" train --data "$IN/sbm.h5" "${lk[@]}" --decoder mlp --decoder-hidden 6 --save-model "$L/mlp.h5" >/dev/null ||
  setup_fail "70: train --decoder mlp"
printf '0 1\n2 3\n3 2\n' >"$L/mlp_pairs.txt"
(cd "$L" && $py - <<'PY') || setup_fail "70: h5py mlp inputs"
import shutil
import h5py
for name, value in (("mlp-as-dot.h5", "dot"), ("mlp-as-other.h5", "cosine")):
    shutil.copy("mlp.h5", name)
    with h5py.File(name, "r+") as f:
        f["options"].attrs.modify("decoder", value)
shutil.copy("link.h5", "dot-as-mlp.h5")
with h5py.File("dot-as-mlp.h5", "r+") as f:
    f["options"].attrs["decoder"] = "mlp"
PY
mlp_scored() { $py -c 'import h5py,sys,numpy as np
s=h5py.File(sys.argv[1])["score"][...]; sys.exit(not (len(s) == 3 and np.isfinite(s).all() and s[1] == s[2]))' "$1" 2>/dev/null; }
accept predict "an MLP link model scores pairs (both directions alike)" 'mlp_scored $OUT/mlp_pairs.h5' \
  --checkpoint "$L/mlp.h5" --data "$IN/sbm.h5" --pairs "$L/mlp_pairs.txt" -o "$OUT/mlp_pairs.h5"
refuse predict "an MLP link model's top-k" "--top-k: ranks partners by the embeddings' dot product" \
  --checkpoint "$L/mlp.h5" --data "$IN/sbm.h5" --top-k 2 -o "$OUT/mlp_top.h5"
refuse predict "an MLP link model relabelled dot" "--decoder-hidden: is the MLP decoder's" \
  --checkpoint "$L/mlp-as-dot.h5" --data "$IN/sbm.h5" --pairs "$L/mlp_pairs.txt" -o "$OUT/m1.h5"
refuse predict "an MLP link model of an unknown decoder" "decoder" \
  --checkpoint "$L/mlp-as-other.h5" --data "$IN/sbm.h5" --pairs "$L/mlp_pairs.txt" -o "$OUT/m2.h5"
refuse predict "a dot link model relabelled mlp" "decoder0" \
  --checkpoint "$L/dot-as-mlp.h5" --data "$IN/sbm.h5" --pairs "$L/mlp_pairs.txt" -o "$OUT/m3.h5"

# --edge-batch N: N training links an optimizer step.
refuse train "edge batch: negative" "--edge-batch" --task link --data "$IN/sbm.h5" --edge-batch -1
refuse train "edge batch: past 2^31 - 1" "--edge-batch" --task link --data "$IN/sbm.h5" --edge-batch 4294967296
refuse train "edge batch: not a number" "--edge-batch" --task link --data "$IN/sbm.h5" --edge-batch half
refuse train "edge batch: node classification" "--edge-batch: is the link task's" --data "$IN/sbm.h5" --edge-batch 10
refuse train "edge batch: steps past the dropout key" "--edge-batch" --task link --data "$IN/sbm.h5" --edge-batch 1 \
  --epochs 100000000
batch_ok() { $py -c 'import json,sys
l=[json.loads(x) for x in open(sys.argv[1])]; e=[x for x in l if "epoch" in x and not x.get("summary")]
sys.exit(not (len(e) == 2 and l[0].get("edge_batch") == 7 and all(0 < x["loss"] < 10 for x in e)))' "$1" 2>/dev/null; }
accept train "edge batches train and are recorded" 'batch_ok $OUT/batch.jsonl' --task link --data "$IN/sbm.h5" \
  --edge-batch 7 --epochs 2 --threads 1 --metrics "$OUT/batch.jsonl"

# convert edgelist --edge-split and files with their own link split (/links).
printf '0 1\n1 2\n2 3\n3 4\n4 5\n5 0\n0 3\n1 4\n2 5\n6 7\n7 8\n8 6\n0 6\n' >"$L/ring.txt"
"$plexus" convert edgelist "$L/ring.txt" --edge-split 0.6,0.2,0.2 --split-seed 2 -o "$L/ring_split.h5" >/dev/null 2>&1 ||
  setup_fail "70: convert --edge-split"
(cd "$L" && $py - <<'PY') || setup_fail "70: h5py link splits"
import shutil
import h5py, numpy as np
def edit(dst, f_):
    shutil.copy("ring_split.h5", dst)
    with h5py.File(dst, "r+") as f:
        f_(f)
def shape(f):
    del f["links/val_pos"]
    f["links/val_pos"] = np.zeros((1, 3), np.int64)
edit("split_shape.h5", shape)
def out_of_range(f):
    a = f["links/test_neg"][...]; a[0, 1] = 99; f["links/test_neg"][...] = a
edit("split_range.h5", out_of_range)
def leak(f):  # a held-out link that is an edge of /graph
    ip, ix = f["graph/indptr"][...], f["graph/indices"][...]
    a = f["links/val_pos"][...]; a[0] = [0, ix[ip[0]]]; f["links/val_pos"][...] = a
edit("split_leak.h5", leak)
def missing(f):
    del f["links/test_pos"]
edit("split_missing.h5", missing)
def floats(f):
    a = f["links/val_neg"][...]; del f["links/val_neg"]; f["links/val_neg"] = a.astype(np.float32)
edit("split_float.h5", floats)
PY
es=(--task link --epochs 2 --quiet --threads 1 --hidden 8)
split_ok() { $py -c 'import json,sys
l=[json.loads(x) for x in open(sys.argv[1])]
sys.exit(not (l[0]["link_split"] == "file" and l[-1]["test_auc"] is not None))' "$1" 2>/dev/null; }
accept train "link: a file's own split" 'split_ok $OUT/rs.jsonl' --data "$L/ring_split.h5" "${es[@]}" --metrics "$OUT/rs.jsonl"
NP=2 accept train "link: a file's own split on 2 ranks" 'split_ok $OUT/rs2.jsonl' --data "$L/ring_split.h5" "${es[@]}" \
  --grid 2x1x1 --metrics "$OUT/rs2.jsonl"
refuse train "link split: a pair of 3 ids" "/links/val_pos: expected shape [M, 2]" --data "$L/split_shape.h5" "${es[@]}"
refuse train "link split: a node out of range" "/links/test_neg: pair 1" --data "$L/split_range.h5" "${es[@]}"
refuse train "link split: a held-out link in the graph" "is an edge of /graph: message passing would see" \
  --data "$L/split_leak.h5" "${es[@]}"
refuse train "link split: a list missing" "/links/test_pos: missing dataset" --data "$L/split_missing.h5" "${es[@]}"
refuse train "link split: float pairs" "/links/val_neg: expected int64" --data "$L/split_float.h5" "${es[@]}"
refuse train "link split: and --link-split" "holds its own link split" --data "$L/ring_split.h5" "${es[@]}" \
  --link-split 0.1,0.1
accept prepare "link split: prepare carries it" 'graph_ok $OUT/rsp.h5' "$L/ring_split.h5" -o "$OUT/rsp.h5" --quiet
NP=2 accept prepare "link split: prepare on 2 ranks, the one-process file" \
  '$py $repo/tests/h5_same_datasets.py $OUT/rsp.h5 $OUT/rsp2.h5 >/dev/null' "$L/ring_split.h5" -o "$OUT/rsp2.h5" --quiet
accept prepare "link split: prepare in passes, the one-process file" \
  '$py $repo/tests/h5_same_datasets.py $OUT/rsp.h5 $OUT/rsp3.h5 >/dev/null' "$L/ring_split.h5" -o "$OUT/rsp3.h5" --quiet \
  --memory-per-rank 1G --scratch "$L"
refuse convert "edge split: fractions over 1" "--edge-split" edgelist "$L/ring.txt" --edge-split 0.8,0.2,0.2 -o "$OUT/e1.h5"
refuse convert "edge split: fractions under 1" "--edge-split" edgelist "$L/ring.txt" --edge-split 0.5,0.2,0.2 -o "$OUT/e2.h5"
refuse convert "edge split: nothing held out" "--edge-split" edgelist "$L/ring.txt" --edge-split 1,0,0 -o "$OUT/e3.h5"
refuse convert "edge split: two fractions" "--edge-split" edgelist "$L/ring.txt" --edge-split 0.9,0.1 -o "$OUT/e4.h5"
refuse convert "edge split: too few links to hold one out" "holds out no link" edgelist "$L/triangle.txt" \
  --edge-split 0.4,0.3,0.3 -o "$OUT/e5.h5"
printf '0 1\n0 2\n0 3\n1 2\n1 3\n2 3\n' >"$L/k4.txt"
refuse convert "edge split: too dense for negatives" "--edge-split" edgelist "$L/k4.txt" --edge-split 0.5,0.25,0.25 \
  -o "$OUT/e8.h5"
refuse convert "split seed alone" "--split-seed" edgelist "$L/ring.txt" --split-seed 4 -o "$OUT/e6.h5"
NP=2 refuse convert "edge split on ranks" "--edge-split" edgelist "$L/ring.txt" --edge-split 0.6,0.2,0.2 -o "$OUT/e7.h5"

# generate sbm --task link.
gen_ok() { $py -c 'import h5py,sys
f=h5py.File(sys.argv[1]); sys.exit(not ("links" in f and f["links/val_pos"].shape[0] > 0 and f["links/test_neg"].shape[1] == 2))' "$1" 2>/dev/null; }
accept generate "sbm with a link split" 'gen_ok $OUT/gl.h5' sbm --task link --nodes 300 -o "$OUT/gl.h5"
refuse generate "sbm: an edge split without the link task" "--edge-split" sbm --nodes 300 --edge-split 0.8,0.1,0.1 \
  -o "$OUT/gl2.h5"
refuse generate "sbm: an edge split over 1" "--edge-split" sbm --task link --nodes 300 --edge-split 0.9,0.1,0.1 \
  -o "$OUT/gl3.h5"
refuse generate "sbm: an unknown task" "--task" sbm --task edge --nodes 300 -o "$OUT/gl4.h5"

# convert edgelist --edge-split-column: each edge line's last column is its split.
printf '0 1 train\n1 2 val\n2 3 test\n3 4 train\n4 5 train\n5 0 valid\n0 3 train\n1 4 train\n2 5 train\n6 7 train\n7 8 train\n8 6 train\n0 6 train\n' \
  >"$L/ring_tagged.txt"
col_ok() { $py -c 'import h5py,sys
f=h5py.File(sys.argv[1]); sys.exit(not (f["links/val_pos"].shape[0] == 2 and f["links/test_pos"].shape[0] == 1))' "$1" 2>/dev/null; }
accept convert "edge split column" 'col_ok $OUT/col.h5' edgelist "$L/ring_tagged.txt" --edge-split-column -o "$OUT/col.h5"
printf '0 1 train\n1 2 later\n' >"$L/tag_bad.txt"
printf '0 1 train\n1 0 test\n' >"$L/tag_twice.txt"
printf '0 1 train\n1 2\n' >"$L/tag_missing.txt"
printf '0 1 train\n1 1 val\n' >"$L/tag_self.txt"
refuse convert "edge split column: a tag that is none" "tag_bad.txt:2: expected a split" edgelist "$L/tag_bad.txt" \
  --edge-split-column -o "$OUT/c1.h5"
refuse convert "edge split column: a link in two splits" "in two splits" edgelist "$L/tag_twice.txt" \
  --edge-split-column -o "$OUT/c2.h5"
refuse convert "edge split column: a line without it" "tag_missing.txt:2: expected 3 or 4 columns" edgelist \
  "$L/tag_missing.txt" --edge-split-column -o "$OUT/c3.h5"
refuse convert "edge split column: a held-out self-loop" "is not a link of the input" edgelist "$L/tag_self.txt" \
  --edge-split-column -o "$OUT/c4.h5"
refuse convert "edge split column and --edge-split" "use one" edgelist "$L/ring_tagged.txt" --edge-split-column \
  --edge-split 0.8,0.1,0.1 -o "$OUT/c5.h5"
NP=2 refuse convert "edge split column on ranks" "--edge-split-column" edgelist "$L/ring_tagged.txt" \
  --edge-split-column -o "$OUT/c6.h5"
insp_ok() { $py -c 'import json,sys
d=json.load(open(sys.argv[1])); sys.exit(not (d["link_split"]["val_pos"] > 0 and d["link_split"]["test_neg"] == d["link_split"]["test_pos"]))' "$1" 2>/dev/null; }
accept inspect "a file's link split in JSON" '"$plexus" inspect "$L/ring_split.h5" --json > $OUT/insp.json && insp_ok $OUT/insp.json' \
  "$L/ring_split.h5"
refuse inspect "a leaked held-out link" "is an edge of /graph" "$L/split_leak.h5"

# convert ogb of OGB's link-property layout (split/<name>/*.pt, torch.save files; docs/converters.md).
fx=$repo/tests/fixtures
ogbl_dir() {  # ogbl_dir NAME PART BAD: ogbl_tiny with split/time/PART.pt replaced by ogbl_bad/BAD.pt
  rm -rf "$L/$1" && cp -r "$fx/ogbl_tiny" "$L/$1" && cp "$fx/ogbl_bad/$3.pt" "$L/$1/split/time/$2.pt"
}
published_ok() { $py -c 'import h5py,sys
f=h5py.File(sys.argv[1]); l=f["links"]
sys.exit(not (l.attrs["as_published"] == 1 and l.attrs["negatives_per_link"] == int(sys.argv[2])))' "$1" "$2" 2>/dev/null; }
accept convert "ogb link layout (collab's shape, zip .pt)" 'published_ok $OUT/ogbl.h5 0' ogb "$fx/ogbl_tiny" -o "$OUT/ogbl.h5"
accept convert "ogb link layout (citation2's shape, legacy .pt)" 'published_ok $OUT/ogbc.h5 3' ogb "$fx/ogbl_citation_tiny" \
  -o "$OUT/ogbc.h5"
accept train "link: an OGB split with a held-out link that is also a training link" 'split_ok $OUT/ogbl.jsonl' \
  --data "$OUT/ogbl.h5" "${es[@]}" --metrics "$OUT/ogbl.jsonl"
mrr_ok() { $py -c 'import json,sys
l=[json.loads(x) for x in open(sys.argv[1])]
sys.exit(not (l[-1]["test_mrr"] is not None and 0 < l[-1]["test_mrr"] <= 1))' "$1" 2>/dev/null; }
NP=2 accept train "link: citation2's own negatives rank its links (MRR), 2 ranks" 'mrr_ok $OUT/ogbc.jsonl' \
  --data "$OUT/ogbc.h5" "${es[@]}" --grid 1x2x1 --metrics "$OUT/ogbc.jsonl"
ogbl_dir ogb_notedge train train_not_an_edge
refuse convert "ogb: a training link that is no edge" "is not an edge of raw/edge.csv.gz" ogb "$L/ogb_notedge" -o "$OUT/o1.h5"
ogbl_dir ogb_range valid node_out_of_range
refuse convert "ogb: a negative out of range" "'edge_neg' entry 1: node 10 out of range" ogb "$L/ogb_range" -o "$OUT/o2.h5"
ogbl_dir ogb_shape valid edge_wrong_shape
refuse convert "ogb: pairs of three" "has shape [1, 3], expected" ogb "$L/ogb_shape" -o "$OUT/o3.h5"
ogbl_dir ogb_noneg test no_negatives
refuse convert "ogb: no negatives" "no 'edge_neg'" ogb "$L/ogb_noneg" -o "$OUT/o4.h5"
ogbl_dir ogb_tensors valid torch_tensors
refuse convert "ogb: torch tensors instead of numpy arrays" "not an allowed class" ogb "$L/ogb_tensors" -o "$OUT/o5.h5"
ogbl_dir ogb_mixed valid negatives_per_link_3
refuse convert "ogb: own negatives in one file, shared in the other" "the split's files disagree" ogb "$L/ogb_mixed" \
  -o "$OUT/o6.h5"
ogbl_dir ogb_cut valid no_negatives
head -c 300 "$fx/ogbl_tiny/split/time/valid.pt" >"$L/ogb_cut/split/time/valid.pt"
refuse convert "ogb: a .pt cut short" "end-of-directory" ogb "$L/ogb_cut" -o "$OUT/o7.h5"
ogbl_dir ogb_crc valid no_negatives
$py -c 'import sys; b=bytearray(open(sys.argv[1],"rb").read()); i=b.find(b"edge_neg"); b[i]=ord("E"); open(sys.argv[2],"wb").write(b)' \
  "$fx/ogbl_tiny/split/time/valid.pt" "$L/ogb_crc/split/time/valid.pt"
refuse convert "ogb: a .pt with a damaged byte" "CRC-32" ogb "$L/ogb_crc" -o "$OUT/o8.h5"
refuse convert "ogb: a split that is not there" "no such split directory" ogb "$fx/ogbl_tiny" --split year -o "$OUT/o9.h5"
(cd "$L" && $py - "$OUT" <<'PY') || setup_fail "70: h5py OGB edits"
import shutil, sys
import h5py, numpy as np
OUT = sys.argv[1]
def edit(dst, f_):
    shutil.copy(f"{OUT}/ogbc.h5", dst)
    with h5py.File(dst, "r+") as f:
        f_(f)
edit("pub2.h5", lambda f: f["links"].attrs.modify("as_published", np.int32(2)))
edit("per5.h5", lambda f: f["links"].attrs.modify("negatives_per_link", np.int64(5)))
edit("perneg.h5", lambda f: f["links"].attrs.modify("negatives_per_link", np.int64(-1)))
edit("pub0.h5", lambda f: f["links"].attrs.modify("as_published", np.int32(0)))
PY
refuse train "link split: as_published 2" "attribute as_published: 2 is not 0 or 1" --data "$L/pub2.h5" "${es[@]}"
refuse train "link split: negatives a link that do not divide them" "negatives_per_link 5 needs" --data "$L/per5.h5" "${es[@]}"
refuse train "link split: negatives a link below 0" "negatives_per_link: -1 is negative" --data "$L/perneg.h5" "${es[@]}"
refuse inspect "link split: a published split claimed as ours" "is an edge of /graph" "$L/pub0.h5"
