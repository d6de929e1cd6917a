# shellcheck shell=bash
# Issue 31, reports: what runs report (nothing not evaluated read as 0), `report`'s field types,
# names that are not UTF-8 in every JSON writer, plans at the documented sizes, and messages
# that name the right file and stay short. Sourced by scripts/red-team.sh (runner and $IN there).

R=$W/reports  # this part's own inputs
mkdir -p "$R"
# A graph without validation nodes (generators refuse to write one): sbm.h5's validation nodes
# moved into the test split.
$py - "$IN/sbm.h5" "$R/noval.h5" <<'PY' || setup_fail "reports: a graph without validation nodes"
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f, h5py.File(sys.argv[2], "w") as g:
    for k in f.attrs: g.attrs[k] = f.attrs[k]
    for name in ("graph/indptr", "graph/indices", "features", "labels", "masks/train"):
        g[name] = f[name][...]
    g["masks/test"] = f["masks/test"][...] | f["masks/val"][...]
    g["masks/val"] = 0 * f["masks/val"][...]
PY
"$plexus" train --data "$R/noval.h5" --epochs 2 --threads 1 --quiet --save-model "$R/noval-model.h5" \
  --checkpoint-dir "$R/noval-ck" >/dev/null ||
  setup_fail "reports: train without validation nodes"
# Metrics files with one field of the wrong type each (a valid run's file, edited).
"$plexus" train --epochs 2 --threads 1 --quiet --metrics "$R/ok.jsonl" >/dev/null || setup_fail "reports: metrics"
$py - "$R" <<'PY' || setup_fail "reports: edited metrics files"
import json, sys
d = sys.argv[1]
lines = [json.loads(l) for l in open(f"{d}/ok.jsonl")]
def edit(name, line, key, value, sub=None):
    ls = [dict(l) for l in lines]
    if sub: ls[line][key] = dict(ls[line][key]); ls[line][key][sub] = value
    else: ls[line][key] = value
    open(f"{d}/{name}.jsonl", "w").write("".join(json.dumps(l) + "\n" for l in ls))
edit("interrupted-yes", -1, "interrupted", "yes")
edit("summary-1", -1, "summary", 1)
edit("acc-string", 1, "val_acc", "0.9")
edit("acc-7", 2, "test_acc", 7)
edit("seconds-negative", 1, "epoch_seconds", -3)
edit("comm-list", 1, "comm_seconds", [1, 2])
edit("bytes-text", 2, "comm_bytes", "lots", )
edit("bytes-axis-null", 2, "comm_bytes", None, "y")
edit("epoch-float", 1, "epoch", 1.5)
edit("grid-number", -1, "grid", 8)
edit("ranks-zero", 0, "ranks", 0)
edit("options-list", 0, "options", [])
edit("peak-true", -1, "peak_rss_bytes", True)
PY
BAD=$'\xff\xfe'  # bytes that are not UTF-8, in names
mkdir -p "$R/d$BAD"
cp "$IN/g.h5" "$R/d$BAD/g$BAD.h5"
cp "$IN/text.txt" "$R/d$BAD/t$BAD.txt"
# A JSON document (or JSON Lines with a 2nd argument "lines") that parses and holds a name
# with those bytes escaped (\xFF\xFE).
json_name() {
  $py - "$@" <<'PY' 2>/dev/null
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
docs = [json.loads(l) for l in text.splitlines()] if len(sys.argv) > 2 else [json.loads(text)]
def strings(x):
    if isinstance(x, str): yield x
    elif isinstance(x, dict):
        for v in x.values(): yield from strings(v)
    elif isinstance(x, list):
        for v in x: yield from strings(v)
b = chr(92)
want = b + "xFF" + b + "xFE"
sys.exit(not (docs and any(want in s for d in docs for s in strings(d))))
PY
}
# A train --metrics file whose epochs have null validation figures and whose summary keeps the
# last epoch.
noval_ok() {
  $py - "$1" <<'PY' 2>/dev/null
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
e, s = [l for l in r if "epoch" in l], r[-1]
sys.exit(not (e and all(x["val_acc"] is None and x["val_loss"] is None and 0 <= x["test_acc"] <= 1 for x in e)
              and s["best_val_acc"] is None and s["best_epoch"] == e[-1]["epoch"] and s["test_acc"] == e[-1]["test_acc"]))
PY
}

# ==== nothing not evaluated is read as 0 ===========================================================
accept train "no validation nodes: val null, last epoch kept" "noval_ok $OUT/noval.jsonl && said 'not evaluated'" \
  --data "$R/noval.h5" --epochs 3 --threads 1 --metrics "$OUT/noval.jsonl"
accept predict "no validation nodes: val not evaluated" "said 'val not evaluated'" \
  --data "$R/noval.h5" --checkpoint "$R/noval-model.h5" -o "$OUT/noval-pred.h5"
accept train "resume a run without validation nodes" "noval_ok $OUT/noval-r.jsonl" \
  --data "$R/noval.h5" --epochs 3 --threads 1 --resume "$R/noval-ck" --checkpoint-dir "$R/noval-ck" \
  --metrics "$OUT/noval-r.jsonl"
accept report "a run without validation nodes" "said 'test acc'" "$OUT/noval.jsonl"

# ==== generators and --split refuse graphs with an empty split =====================================
g="generate sbm"
refuse "$g" "--val-fraction 0 (no validation nodes)" "--val-fraction" --nodes 200 --val-fraction 0 -o "$OUT/s.h5"
refuse "$g" "--train-fraction 1e-9 (no training node of 200)" "--train-fraction" --nodes 200 --train-fraction 1e-9 -o "$OUT/s.h5"
refuse "$g" "train + val = 1 (no test nodes)" "test split" --nodes 200 --train-fraction 0.6 --val-fraction 0.4 -o "$OUT/s.h5"
refuse "$g" "--train-fraction 1 --val-fraction 0" "--val-fraction" --nodes 200 --train-fraction 1 --val-fraction 0 -o "$OUT/s.h5"
refuse "$g" "4 nodes, small validation fraction" "validation split of the 4 nodes" --nodes 4 --classes 2 --val-fraction 0.01 -o "$OUT/s.h5"
for s in 1 2 3; do
  refuse "generate rmat" "--scale $s: a split without a node" "--scale" --scale $s --edge-factor 2 --feature-width 4 --classes 2 -o "$OUT/r.h5"
done
printf 'id,label\n0,0\n1,1\n2,2\n' >"$R/nodes3.csv"
refuse "convert edgelist" "--split rounds a split asked for to no node" "--split: the validation split" \
  "$IN/tri.txt" --nodes "$R/nodes3.csv" --split 0.6,0.2,0.2 -o "$OUT/c.h5"
accept "convert edgelist" "--split 1,0,0: no validation asked for" "graph_ok $OUT/c1.h5" \
  "$IN/tri.txt" --nodes "$R/nodes3.csv" --split 1,0,0 -o "$OUT/c1.h5"

# ==== report: every field it reads has its type =====================================================
for f in interrupted-yes:interrupted summary-1:summary acc-string:val_acc acc-7:test_acc \
         seconds-negative:epoch_seconds comm-list:comm_seconds bytes-text:comm_bytes bytes-axis-null:comm_bytes \
         epoch-float:epoch grid-number:grid ranks-zero:ranks options-list:options peak-true:peak_rss_bytes; do
  refuse report "field of the wrong type: ${f#*:} (${f%%:*})" "field '${f#*:}'" "$R/${f%%:*}.jsonl"
done
refuse report "--json, field of the wrong type" "field 'interrupted'" --json "$R/interrupted-yes.jsonl"

# ==== names that are not UTF-8 in every JSON writer =================================================
accept inspect "--json, a path that is not UTF-8" "json_name $LOG/out" --json "$R/d$BAD/g$BAD.h5"
accept plan "--json, a path that is not UTF-8" "json_name $LOG/out" --ranks 4 --json --data "$R/d$BAD/g$BAD.h5"
accept train "--metrics, paths that are not UTF-8" "json_name '$OUT/m$BAD.jsonl' lines" \
  "${tr1[@]}" --data "$R/d$BAD/g$BAD.h5" --metrics "$OUT/m$BAD.jsonl"
accept "gpt train" "--metrics, a corpus path that is not UTF-8" "json_name '$OUT/g$BAD.jsonl' lines" \
  "${gpt1[@]}" --data "$R/d$BAD/t$BAD.txt" --metrics "$OUT/g$BAD.jsonl"
accept report "--json, a file name that is not UTF-8" "json_name $LOG/out" --json "$OUT/m$BAD.jsonl"
accept report "table, a file name that is not UTF-8" "said 'epochs done'" "$OUT/m$BAD.jsonl"

# ==== plans at the documented sizes =================================================================
# (Issue 45: each within 5 s of CPU, GPT-3 on 64 ranks within 2; the limits here are three
# times that, for a loaded machine.)
CPU=15 accept plan "--ranks 65536 --json (the documented maximum)" "json_ok $LOG/out" --ranks 65536 --json
accept "plan gpt" "--ranks 4096 (ZeRO over 4096 replicas)" "said '4096 ranks'" --ranks 4096
CPU=15 accept "plan gpt" "--ranks 65536: every replica count, grid and ZeRO stage" "said '65536 ranks'" --ranks 65536
CPU=6 accept "plan gpt" "GPT-3 sizes on 64 ranks" "said '64 ranks'" --ranks 64 --layers 96 --heads 96 \
  --embed 12288 --block 2048 --vocab 50257 --batch 1

# ==== messages ===================================================================================
$py - "$R" <<'PY' || setup_fail "reports: token files, TOML"
import struct, sys
d = sys.argv[1]
def tok(path, n):
    h = [0] * 256; h[0] = 20240520; h[1] = 1; h[2] = n
    open(path, "wb").write(struct.pack("<256i", *h) + struct.pack("<%dH" % n, *([1] * n)))
tok(f"{d}/train.bin", 4000); tok(f"{d}/val-short.bin", 9)
open(f"{d}/long-key.toml", "w").write("k" * 1000000 + " = 1\n")
open(f"{d}/long-spaced-key.toml", "w").write('"' + "a b " * 250000 + '" = 1\n')
PY
refuse "gpt train" "a short --val-data names that file" "val-short.bin: --val-data has 9 tokens" \
  --data "$R/train.bin" --val-data "$R/val-short.bin" --vocab 50 --iters 1 --block 16 --embed 16 --heads 2 --layers 1 --threads 1
refuse train "a 1 MB unknown TOML key, shortened" "kkk...kkk" --config "$R/long-key.toml"
refuse train "a 1 MB quoted key with blanks, shortened" "unknown key" --config "$R/long-spaced-key.toml"

# ==== under MPI ==================================================================================
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 accept train "MPI 2: no validation nodes (2x1x1)" "noval_ok $OUT/noval-mpi.jsonl" \
    --grid 2x1x1 --data "$R/noval.h5" --epochs 3 --threads 1 --quiet --metrics "$OUT/noval-mpi.jsonl"
  NP=2 accept train "MPI 2: no validation nodes (1x1x2)" "noval_ok $OUT/noval-mpi2.jsonl" \
    --grid 1x1x2 --data "$R/noval.h5" --epochs 3 --threads 1 --quiet --metrics "$OUT/noval-mpi2.jsonl"
  NP=2 accept train "MPI 2: --metrics, paths that are not UTF-8" "json_name '$OUT/mpi$BAD.jsonl' lines" \
    --grid 2x1x1 "${tr1[@]}" --data "$R/d$BAD/g$BAD.h5" --metrics "$OUT/mpi$BAD.jsonl"
  NP=2 refuse train "MPI 2: a 1 MB unknown TOML key, once" "kkk...kkk" --grid 2x1x1 --config "$R/long-key.toml"
  NP=2 refuse "gpt train" "MPI 2: short --val-data" "val-short.bin" --grid 2x1x1 \
    --data "$R/train.bin" --val-data "$R/val-short.bin" --vocab 50 --iters 1 --block 16 --embed 16 --heads 2 --layers 1 --threads 1
fi
