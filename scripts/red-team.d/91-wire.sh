# Issue 47's low-bit wire (docs/communication.md, "Low-bit wire"): sourced by scripts/red-team.sh.
#  - `train --wire` and `plan --wire`: a value not offered (bf16 among them: --precision's), and
#    --wire with --precision bf16;
#  - int8 on one rank trains to fp32's losses bit for bit (nothing is rounded there);
#  - int8 and int4 on 3 and 4 ranks (permuted, chunked, rs-ag): auto and dense to the same
#    losses bit for bit, and finite;
#  - plan says what travels.
S=$W/wire
mkdir -p "$S"
wc=(--epochs 2 --quiet --threads 1 --hidden 8)
same_losses() { cmp -s <(grep -o '"loss":[^,]*' "$1") <(grep -o '"loss":[^,]*' "$2"); }
# every epoch's loss a finite number (the header's "loss" is its reduction's description)
finite_losses() { $py -c 'import json,math,sys; r=[json.loads(l) for l in open(sys.argv[1])]; e=[x["loss"] for x in r if "epoch" in x]
sys.exit(not (e and all(isinstance(v, float) and math.isfinite(v) for v in e) and r[-1].get("summary")))' "$1" 2>/dev/null; }

refuse train "wire: a value not offered" "--wire" --data "$IN/sbm.h5" "${wc[@]}" --wire int2
refuse train "wire: bf16 is --precision's" "--wire" --data "$IN/sbm.h5" "${wc[@]}" --wire bf16
refuse train "wire: empty" "--wire" --data "$IN/sbm.h5" "${wc[@]}" --wire ""
refuse train "wire: int8 with --precision bf16" "--wire" --data "$IN/sbm.h5" "${wc[@]}" --wire int8 --precision bf16
refuse plan "wire: plan, a value not offered" "--wire" --data "$IN/sbm.h5" --ranks 2 --wire fp16
refuse plan "wire: plan, int4 with --precision bf16" "--wire" --data "$IN/sbm.h5" --ranks 2 --wire int4 --precision bf16
accept plan "wire: plan says what travels" 'said "int8 on the wire"' --data "$IN/sbm.h5" --ranks 4 --wire int8
accept train "wire: fp32 on one rank" 'jsonl_ok $OUT/w-fp32-1.jsonl' --data "$IN/sbm.h5" "${wc[@]}" \
  --metrics "$OUT/w-fp32-1.jsonl"
accept train "wire: int8 on one rank, fp32's losses" 'same_losses $OUT/w-int8-1.jsonl $OUT/w-fp32-1.jsonl' \
  --data "$IN/sbm.h5" "${wc[@]}" --wire int8 --metrics "$OUT/w-int8-1.jsonl"
NP=3 accept train "wire: int8, 3 ranks, permuted, dense" 'finite_losses $OUT/w-int8-3d.jsonl' --data "$IN/sbm.h5" \
  "${wc[@]}" --balance permute --grid 3x1x1 --wire int8 --sparse-comm dense --metrics "$OUT/w-int8-3d.jsonl"
NP=3 accept train "wire: int8, 3 ranks, permuted, auto: dense's losses" \
  'same_losses $OUT/w-int8-3a.jsonl $OUT/w-int8-3d.jsonl' --data "$IN/sbm.h5" "${wc[@]}" --balance permute \
  --grid 3x1x1 --wire int8 --sparse-comm auto --metrics "$OUT/w-int8-3a.jsonl"
NP=4 accept train "wire: int4, 4 ranks, chunked, rs-ag, dense" 'finite_losses $OUT/w-int4-4d.jsonl' \
  --data "$IN/sbm.h5" "${wc[@]}" --grid 2x1x2 --agg-chunks 3 --comm-variant rs-ag --wire int4 --sparse-comm dense \
  --metrics "$OUT/w-int4-4d.jsonl"
NP=4 accept train "wire: int4, 4 ranks, chunked, rs-ag, auto: dense's losses" \
  'same_losses $OUT/w-int4-4a.jsonl $OUT/w-int4-4d.jsonl' --data "$IN/sbm.h5" "${wc[@]}" --grid 2x1x2 --agg-chunks 3 \
  --comm-variant rs-ag --wire int4 --sparse-comm auto --metrics "$OUT/w-int4-4a.jsonl"
