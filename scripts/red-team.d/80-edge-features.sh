# Edge features (issue 46, docs/format-v1.md, docs/gnn-models.md "GINE"): sourced by
# scripts/red-team.sh.
#  - /graph/edge_features of the wrong shape, type or values: one line naming it, exit 2, for
#    every reader that meets it (train, inspect, prepare);
#  - GINE on a graph without them, stored twice, sharded or bf16: refused;
#  - prepare on one process, on ranks and in passes carries them (the same file; GINE trains on
#    it as on the plain one);
#  - GINE trains, predicts and is planned on 1 and 2 ranks.
E=$W/edges
mkdir -p "$E"
(cd "$E" && $py - "$IN" <<'PY') || setup_fail "80: h5py inputs"
import shutil, sys
import h5py, numpy as np
IN = sys.argv[1]
def edit(dst, f_):
    shutil.copy(f"{IN}/sbm.h5", dst)
    with h5py.File(dst, "r+") as f:
        f_(f)
nnz = lambda f: f["graph/indices"].shape[0]
edit("ef.h5", lambda f: f.create_dataset("graph/edge_features", data=np.random.default_rng(1).standard_normal((nnz(f), 3)).astype(np.float32)))
edit("ef-short.h5", lambda f: f.create_dataset("graph/edge_features", data=np.zeros((nnz(f) - 1, 3), np.float32)))
edit("ef-1d.h5", lambda f: f.create_dataset("graph/edge_features", data=np.zeros(nnz(f), np.float32)))
edit("ef-0cols.h5", lambda f: f.create_dataset("graph/edge_features", data=np.zeros((nnz(f), 0), np.float32)))
edit("ef-int.h5", lambda f: f.create_dataset("graph/edge_features", data=np.zeros((nnz(f), 2), np.int32)))
def nan(f):
    a = np.zeros((nnz(f), 2), np.float32)
    a[5, 1] = np.nan
    f.create_dataset("graph/edge_features", data=a)
edit("ef-nan.h5", nan)
def twice(f):  # the first stored edge stored again (row 0 gets a duplicate entry)
    ip, ix = f["graph/indptr"][...], f["graph/indices"][...]
    ix = np.insert(ix, ip[1], ix[ip[0]])
    ip[1:] += 1
    del f["graph/indptr"], f["graph/indices"]
    f["graph/indptr"], f["graph/indices"] = ip, ix
    f.create_dataset("graph/edge_features", data=np.ones((len(ix), 2), np.float32))
edit("ef-twice.h5", twice)
PY
ge=(--model gine --epochs 2 --quiet --threads 1 --hidden 8)

refuse train "edge features: fewer rows than edges" "/graph/edge_features" --data "$E/ef-short.h5" "${ge[@]}"
refuse train "edge features: one-dimensional" "/graph/edge_features" --data "$E/ef-1d.h5" "${ge[@]}"
refuse train "edge features: no columns" "/graph/edge_features" --data "$E/ef-0cols.h5" "${ge[@]}"
refuse train "edge features: integers" "/graph/edge_features" --data "$E/ef-int.h5" "${ge[@]}"
refuse train "edge features: a NaN" "/graph/edge_features: NaN at [5, 1]" --data "$E/ef-nan.h5" "${ge[@]}"
refuse train "edge features: a NaN, read by a gcn too" "/graph/edge_features" --data "$E/ef-nan.h5" --epochs 1 --quiet --balance permute
refuse train "gine: an edge stored twice" "stored twice" --data "$E/ef-twice.h5" "${ge[@]}"
refuse train "gine: a graph without edge features" "the model reads edge features and the file has none" --data "$IN/sbm.h5" "${ge[@]}"
refuse train "gine: a prepared file without edge features" "the model reads edge features and the file has none" \
  --data "$IN/prep.h5" "${ge[@]}"
refuse train "gine: sharded Â" "--shard-adj" --data "$E/ef.h5" "${ge[@]}" --shard-adj
refuse train "gine: bf16" "--precision" --data "$E/ef.h5" "${ge[@]}" --precision bf16
refuse inspect "edge features: fewer rows than edges, inspect" "/graph/edge_features" "$E/ef-short.h5"
accept train "gine: the plain file, for the prepared one" 'jsonl_ok $OUT/gine-plain.jsonl' --data "$E/ef.h5" "${ge[@]}" \
  --metrics "$OUT/gine-plain.jsonl"
accept prepare "prepare: a graph with edge features, carried" 'graph_ok $OUT/efp.h5' "$E/ef.h5" -o "$OUT/efp.h5" \
  --balance permute --quiet
accept train "gine: the prepared file trains as the plain one" \
  'cmp -s <(grep -o "\"loss\":[^,]*" $OUT/gine-prep.jsonl) <(grep -o "\"loss\":[^,]*" $OUT/gine-plain.jsonl)' \
  --data "$OUT/efp.h5" "${ge[@]}" --metrics "$OUT/gine-prep.jsonl"
accept prepare "prepare in passes: a graph with edge features, the one-process file" \
  '$py $repo/tests/h5_same_datasets.py $OUT/efp.h5 $OUT/efp2.h5 >/dev/null' "$E/ef.h5" -o "$OUT/efp2.h5" --balance permute \
  --quiet --memory-per-rank 1G --scratch "$E"
refuse prepare "prepare in passes: an edge feature NaN" "/graph/edge_features" "$E/ef-nan.h5" -o "$OUT/efp5.h5" \
  --memory-per-rank 1G --scratch "$E"
NP=2 accept prepare "prepare on 2 ranks: a graph with edge features, the one-process file" \
  '$py $repo/tests/h5_same_datasets.py $OUT/efp.h5 $OUT/efp3.h5 >/dev/null' "$E/ef.h5" -o "$OUT/efp3.h5" --balance permute --quiet
NP=2 refuse prepare "prepare on 2 ranks: an edge feature NaN" "/graph/edge_features: non-finite value at edge 5" \
  "$E/ef-nan.h5" -o "$OUT/efp4.h5"
accept train "gine: trains" 'jsonl_ok $OUT/gine.jsonl' --data "$E/ef.h5" "${ge[@]}" --metrics "$OUT/gine.jsonl" \
  --save-model "$OUT/gine.h5"
NP=2 accept train "gine: 2 ranks" 'jsonl_ok $OUT/gine2.jsonl' --data "$E/ef.h5" "${ge[@]}" --grid 1x2x1 --metrics "$OUT/gine2.jsonl"
accept predict "gine: predicts" '[[ -s $OUT/gine-p.h5 ]]' --checkpoint "$OUT/gine.h5" --data "$E/ef.h5" -o "$OUT/gine-p.h5" --quiet
refuse predict "gine: predicts on a graph without edge features" "/graph/edge_features" \
  --checkpoint "$OUT/gine.h5" --data "$IN/sbm.h5" -o "$OUT/gine-p2.h5" --quiet
accept plan "gine: planned" 'true' --data "$E/ef.h5" --model gine --ranks 4
refuse train "gat --edge-features: a graph without them" "the model reads edge features and the file has none" \
  --data "$IN/sbm.h5" --model gat --heads 2 --edge-features --epochs 1 --quiet --hidden 8
NP=2 accept train "gat --edge-features: 2 ranks" 'jsonl_ok $OUT/gate2.jsonl' --data "$E/ef.h5" --model gat --heads 2 \
  --edge-features --epochs 2 --quiet --threads 1 --hidden 8 --grid 2x1x1 --metrics "$OUT/gate2.jsonl"
# convert edgelist --edge-features N (docs/converters.md): the last N columns of every line.
printf '0 1 0.5 -1\n1 2 2 3\n2 0 1 4\n' >"$E/ef.txt"
printf '0 1 0.5\n1 2 2 3\n' >"$E/ef-short.txt"
printf '0 1 nan\n' >"$E/ef-nan.txt"
refuse convert "edge list: lines with and without a weight" "columns like the first edge line" edgelist "$E/ef-short.txt" \
  -o "$OUT/efc1.h5" --edge-features 1
refuse convert "edge list: an edge feature that is not finite" "edge feature" edgelist "$E/ef-nan.txt" -o "$OUT/efc2.h5" \
  --edge-features 1
refuse convert "edge list: a negative width" "--edge-features" edgelist "$E/ef.txt" -o "$OUT/efc3.h5" --edge-features -1
refuse convert "edge list: edge features in passes" "--edge-features" edgelist "$E/ef.txt" -o "$OUT/efc4.h5" \
  --edge-features 1 --memory-per-rank 1G --scratch "$E"
accept convert "edge list: edge features" '[[ -s $OUT/efc.h5 ]]' edgelist "$E/ef.txt" -o "$OUT/efc.h5" --edge-features 1
