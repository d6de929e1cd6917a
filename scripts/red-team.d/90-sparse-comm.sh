# Issue 47's new inputs (docs/communication.md, "Row-sparse sums"): sourced by scripts/red-team.sh.
#  - `train --sparse-comm` and `plan --sparse-comm`: a value not offered; the library's name
#    never shown; plan's held rows (a small file's counted, a prepared file's read, edited ones
#    refused, missing ones an upper bound);
#  - auto, rows and dense train alike on 1, 3 and 4 ranks (a permuted graph, chunked, sharded, rs-ag),
#    to the same losses bit for bit;
#  - `generate road`: each option out of its range; a graph that trains;
#  - `generate sbm --communities`: out of its range; a graph that trains on two ranks alike.
S=$W/sparse
mkdir -p "$S"
sc=(--epochs 2 --quiet --threads 1 --hidden 8)
same_losses() { cmp -s <(grep -o '"loss":[^,]*' "$1") <(grep -o '"loss":[^,]*' "$2"); }

refuse train "sparse-comm: a value not offered" "--sparse-comm" --data "$IN/sbm.h5" "${sc[@]}" --sparse-comm sparse
refuse train "sparse-comm: empty" "--sparse-comm" --data "$IN/sbm.h5" "${sc[@]}" --sparse-comm ""
refuse plan "sparse-comm: plan, a value not offered" "--sparse-comm" --data "$IN/sbm.h5" --ranks 2 --sparse-comm on
accept plan "sparse-comm: plan counts a small file's held rows" 'said "row-sparse where it costs less"' --data "$IN/sbm.h5" \
  --ranks 4 --sparse-comm auto
accept plan "sparse-comm: rows across nodes" 'said "row-sparse wherever it moves fewer bytes"' --data "$IN/sbm.h5" \
  --ranks 4 --ranks-per-node 2 --sparse-comm rows
# A prepared file's held rows: as prepared, edited (a block holding more rows than its tile's with
# any entry), and removed (a file from before them: auto planned as dense, an upper bound).
cp "$IN/prep.h5" "$S/held-bad.h5" && cp "$IN/prep.h5" "$S/held-none.h5" && $py - "$S" <<'PY' || setup_fail "90: held rows"
import h5py, sys
with h5py.File(sys.argv[1] + "/held-bad.h5", "r+") as f:
    h = f["prepared/block_counts/held_a1"][...]; h[0, 1] = h[0, 0] + 1; f["prepared/block_counts/held_a1"][...] = h
with h5py.File(sys.argv[1] + "/held-none.h5", "r+") as f:
    del f["prepared/block_counts/held_a1"]; del f["prepared/block_counts/held_a2"]
PY
accept plan "sparse-comm: plan reads a prepared file's held rows" 'said "fewer bytes: several nodes"' --data "$IN/prep.h5" \
  --ranks 4 --ranks-per-node 2 --sparse-comm auto
refuse plan "sparse-comm: held rows beyond their tile's" "held_a1" --data "$S/held-bad.h5" --ranks 4 --sparse-comm auto
accept plan "sparse-comm: no held rows, auto an upper bound" 'said "upper bound"' --data "$S/held-none.h5" --ranks 4 \
  --sparse-comm auto
NP=3 accept train "sparse-comm: dense, 3 ranks, permuted" 'jsonl_ok $OUT/sc-dense3.jsonl' --data "$IN/sbm.h5" \
  "${sc[@]}" --balance permute --grid 3x1x1 --sparse-comm dense --metrics "$OUT/sc-dense3.jsonl"
NP=3 accept train "sparse-comm: rows, 3 ranks, the dense losses" 'same_losses $OUT/sc-auto3.jsonl $OUT/sc-dense3.jsonl' \
  --data "$IN/sbm.h5" "${sc[@]}" --balance permute --grid 3x1x1 --sparse-comm rows --metrics "$OUT/sc-auto3.jsonl"
NP=4 accept train "sparse-comm: dense, 4 ranks, chunked, sharded, rs-ag" 'jsonl_ok $OUT/sc-dense4.jsonl' \
  --data "$IN/sbm.h5" "${sc[@]}" --grid 2x1x2 --agg-chunks 3 --shard-adj --comm-variant rs-ag --sparse-comm dense \
  --metrics "$OUT/sc-dense4.jsonl"
NP=4 accept train "sparse-comm: auto, 4 ranks, chunked, sharded, rs-ag, the dense losses" \
  'same_losses $OUT/sc-auto4.jsonl $OUT/sc-dense4.jsonl' --data "$IN/sbm.h5" "${sc[@]}" --grid 2x1x2 --agg-chunks 3 \
  --shard-adj --comm-variant rs-ag --sparse-comm auto --metrics "$OUT/sc-auto4.jsonl"
accept train "sparse-comm: auto on one rank" 'jsonl_ok $OUT/sc-auto1.jsonl' --data "$IN/sbm.h5" "${sc[@]}" \
  --sparse-comm auto --metrics "$OUT/sc-auto1.jsonl"

refuse "generate road" "road: no nodes" "--nodes" --nodes 0 -o "$OUT/road-bad.h5"
refuse "generate road" "road: a degree above a lattice's" "--avg-degree" --avg-degree 4.5 -o "$OUT/road-bad.h5"
refuse "generate road" "road: a negative degree" "--avg-degree" --avg-degree -1 -o "$OUT/road-bad.h5"
refuse "generate road" "road: no classes" "--classes" --classes 0 -o "$OUT/road-bad.h5"
refuse "generate road" "road: more classes than nodes" "--classes" --nodes 5 --classes 6 -o "$OUT/road-bad.h5"
refuse "generate road" "road: no features" "--feature-width" --feature-width 0 -o "$OUT/road-bad.h5"
refuse "generate road" "road: shares above one" "--val-fraction" --train-fraction 0.7 --val-fraction 0.5 -o "$OUT/road-bad.h5"
refuse "generate road" "road: no node left for the test split" "the test split" --nodes 20 --classes 1 \
  --train-fraction 0.5 --val-fraction 0.5 -o "$OUT/road-bad.h5"
accept "generate road" "road: a small map" 'graph_ok $OUT/road.h5' --nodes 3000 --feature-width 8 -o "$OUT/road.h5"
NP=2 accept train "road: trains with auto on 2 ranks" 'jsonl_ok $OUT/road.jsonl' --data "$OUT/road.h5" "${sc[@]}" \
  --sparse-comm auto --metrics "$OUT/road.jsonl"

# `generate sbm --communities`: below the classes, above the nodes, negative; a graph of more
# communities than classes trains on two ranks (the sums' one exchange) to dense's losses.
refuse "generate sbm" "sbm: fewer communities than classes" "--communities" --nodes 100 --classes 4 --communities 3 \
  -o "$OUT/sbm-bad.h5"
refuse "generate sbm" "sbm: more communities than nodes" "--communities" --nodes 100 --communities 101 -o "$OUT/sbm-bad.h5"
refuse "generate sbm" "sbm: negative communities" "--communities" --communities -1 -o "$OUT/sbm-bad.h5"
accept "generate sbm" "sbm: 40 communities, 4 classes" 'graph_ok $OUT/sbm-com.h5' --nodes 3000 --classes 4 \
  --communities 40 --feature-width 8 -o "$OUT/sbm-com.h5"
NP=2 accept train "sbm communities: dense, 2 ranks" 'jsonl_ok $OUT/sbm-com-dense.jsonl' --data "$OUT/sbm-com.h5" \
  "${sc[@]}" --grid 2x1x1 --balance metis --sparse-comm dense --metrics "$OUT/sbm-com-dense.jsonl"
NP=2 accept train "sbm communities: auto, 2 ranks, the dense losses" \
  'same_losses $OUT/sbm-com-auto.jsonl $OUT/sbm-com-dense.jsonl' --data "$OUT/sbm-com.h5" "${sc[@]}" --grid 2x1x1 \
  --balance metis --sparse-comm auto --metrics "$OUT/sbm-com-auto.jsonl"

# The input's gather (docs/communication.md, "Row-sparse gathers"): a GCN layer 0 aggregating first
# on 4 ranks over d gathers only the feature rows its block's columns hold — the dense losses bit for
# bit, fewer bytes — in fp32 and in bf16; plan says which gathers it knew.
fewer_bytes() {  # a.jsonl b.jsonl: a's epochs moved fewer bytes than b's
  $py - "$1" "$2" <<'PY'
import json, sys
def total(p):
    return sum(r["comm_bytes"]["total"] for r in map(json.loads, open(p)) if "epoch" in r)
sys.exit(0 if total(sys.argv[1]) < total(sys.argv[2]) else 1)
PY
}
for prec in fp32 bf16; do
  NP=4 accept train "sparse-comm: gather over 4 ranks, dense, $prec" "jsonl_ok \$OUT/sc-g-dense-$prec.jsonl" \
    --data "$OUT/road.h5" "${sc[@]}" --grid 1x1x4 --layer-order aggregate-first --precision "$prec" \
    --sparse-comm dense --metrics "$OUT/sc-g-dense-$prec.jsonl"
  NP=4 accept train "sparse-comm: gather over 4 ranks, auto, $prec: the dense losses, fewer bytes" \
    "same_losses \$OUT/sc-g-auto-$prec.jsonl \$OUT/sc-g-dense-$prec.jsonl && fewer_bytes \$OUT/sc-g-auto-$prec.jsonl \$OUT/sc-g-dense-$prec.jsonl" \
    --data "$OUT/road.h5" "${sc[@]}" --grid 1x1x4 --layer-order aggregate-first --precision "$prec" \
    --sparse-comm auto --metrics "$OUT/sc-g-auto-$prec.jsonl"
done
accept plan "sparse-comm: plan counts the gathers with the sums" 'said "sums and gathers"' --data "$OUT/road.h5" \
  --ranks 4 --sparse-comm auto --layer-order aggregate-first

# The locality order (docs/balancing.md, "locality"): prepare refuses it without a grid, on several
# ranks and in passes; a file prepared for 2x1x2 holds two orders and trains on that grid with the
# row-sparse collectives to the dense losses bit for bit; train orders a plain file by it in memory.
refuse prepare "locality: no grid" "--grid" "$OUT/road.h5" -o "$S/loc-nogrid.h5" --balance locality
NP=2 refuse prepare "locality: on 2 ranks" "locality partitions the whole graph" "$OUT/road.h5" -o "$S/loc-ranks.h5" \
  --balance locality --grid 2x1x2
refuse prepare "locality: in passes" "locality partitions the whole graph" "$OUT/road.h5" -o "$S/loc-passes.h5" \
  --balance locality --grid 2x1x2 --memory-per-rank 40M --scratch "$S"
accept prepare "locality: prepared for 2x1x2, two orders" 'said "Â2\); balance locality \(4 parts\)"' \
  "$OUT/road.h5" -o "$S/loc.h5" --balance locality --grid 2x1x2
NP=4 accept train "locality: dense on its grid" 'jsonl_ok $OUT/loc-dense.jsonl' --data "$S/loc.h5" "${sc[@]}" \
  --grid 2x1x2 --sparse-comm dense --metrics "$OUT/loc-dense.jsonl"
NP=4 accept train "locality: auto on its grid, the dense losses, fewer bytes" \
  'same_losses $OUT/loc-auto.jsonl $OUT/loc-dense.jsonl && fewer_bytes $OUT/loc-auto.jsonl $OUT/loc-dense.jsonl' \
  --data "$S/loc.h5" "${sc[@]}" --grid 2x1x2 --sparse-comm auto --metrics "$OUT/loc-auto.jsonl"
NP=4 accept train "locality: a plain file ordered in memory" 'jsonl_ok $OUT/loc-mem.jsonl' --data "$OUT/road.h5" \
  "${sc[@]}" --grid 2x1x2 --balance locality --sparse-comm auto --metrics "$OUT/loc-mem.jsonl"
