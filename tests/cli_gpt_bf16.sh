#!/usr/bin/env bash
# plexus gpt train --precision bf16: bfloat16 parameters, gradients and data-parallel collectives
# with fp32 master weights and Adam state (docs/data-parallel.md, "Mixed precision").
#  - bf16 tracks fp32: on one rank, and for D >= 2 replicas at every ZeRO stage, per-step and
#    validation losses within $track of the fp32 single-rank run over 10 steps (why that
#    tolerance: docs/data-parallel.md), and a longer run learns as far as fp32 does;
#  - with D = 2 and one micro-batch every stage takes the same steps bit for bit (a sum of two
#    bf16 values is rounded once whichever collective adds them);
#  - bytes per axis, d included, equal `plexus plan gpt --precision bf16`, and bf16 moves half the
#    bytes of fp32 on d;
#  - parameters, gradients and optimizer state follow ZeRO's bf16 formulas, 2Ψ + 2Ψ + 12Ψ split
#    over D as the stage says, for D = 2, 3, 4;
#  - bad options exit 2 with one line.
# Usage: cli_gpt_bf16.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
text=$src/data/tinyshakespeare.txt
track=0.002  # relative, per step: see docs/data-parallel.md
shape=(--layers 3 --heads 6 --embed 90 --block 16 --batch 5)
model=("${shape[@]}" --warmup 3 --lr 3e-3 --dropout 0.1 --eval-every 5 --eval-iters 2 --threads 1 --quiet
       --grad-accum 2 --bucket-mb 0.05)

"$plexus" gpt train --data "$text" "${model[@]}" --iters 10 --metrics "$work/fp32.jsonl" >/dev/null || fail "fp32 run"
"$plexus" gpt train --data "$text" "${model[@]}" --iters 10 --precision bf16 --metrics "$work/bf16.jsonl" \
  >/dev/null || fail "bf16 run"

# Losses of RUN within $track of REFERENCE at every step; prints the largest difference.
tracks() {
  $py - "$1" "$2" "$track" <<'PY'
import json, sys
ref, got = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
tol = float(sys.argv[3])
pairs = [(a, b) for a, b in zip(ref, got) if "iter" in a]
assert len(pairs) == 10 and all("iter" in b for _, b in pairs)
worst = 0.0
for a, b in pairs:
    for key in ("loss", "val_loss"):
        if key in a:
            rel = abs(a[key] - b[key]) / abs(a[key])
            worst = max(worst, rel)
            assert rel <= tol, f"step {a['iter']} {key}: fp32 {a[key]}, bf16 {b[key]} (relative {rel:.2e})"
assert got[-1]["precision"] == "bf16" and got[-1]["matmul_precision"] == "bf16"
print(f"worst relative loss difference to fp32: {worst:.2e}")
PY
}
if tracks "$work/fp32.jsonl" "$work/bf16.jsonl"; then ok; else fail "bf16 on one rank tracks fp32"; fi

# ---- replicas at every stage --------------------------------------------------------------------------
# (One grid for each D here; replicas as threads at every stage and precision: tests/test_zero.cpp.)
runs=("2 1x1x2" "3 1x1x1" "4 1x2x1")
for P in 3 4 8; do
  "$plexus" plan gpt --ranks "$P" "${shape[@]}" --grad-accum 2 --bucket-mb 0.05 --precision bf16 --json \
    >"$work/plan$P.json" || fail "plan gpt $P"
done
for r in "${runs[@]}"; do
  read -r D g <<<"$r"
  P=$((D * $(tr x '*' <<<"$g")))
  for S in 0 1 2 3; do
    run=$work/d${D}_${g}_z$S.jsonl
    if ! mpirun -np "$P" "$plexus" gpt train --data "$text" "${model[@]}" --iters 10 --grid "$g" --dp "$D" \
        --zero "$S" --precision bf16 --metrics "$run" >"$work/out" 2>&1; then
      fail "bf16 D=$D grid $g ZeRO-$S ran"; cat "$work/out"; continue
    fi
    if tracks "$work/fp32.jsonl" "$run" >>"$work/tracks.log"; then ok; else fail "bf16 D=$D grid $g ZeRO-$S tracks fp32"; fi
    if $py "$src/tests/gpt_dp_checks.py" "$run" "$work/plan$P.json" "$g" "$D" "$S"; then ok; else
      fail "bf16 D=$D grid $g ZeRO-$S: bytes and memory"; fi
  done
done

sort -k7 -g "$work/tracks.log" | tail -1 | sed 's/^/replicas, every stage: /'

# ---- D = 2, one micro-batch: the stages agree bit for bit; bf16 halves the bytes on d ----------------
one=("${shape[@]}" --dropout 0.1 --eval-every 0 --threads 1 --quiet --bucket-mb 0.05 --iters 4)
for S in 0 1 2 3; do
  for prec in bf16 fp32; do
    mpirun -np 4 "$plexus" gpt train --data "$text" "${one[@]}" --grid 1x2x1 --dp 2 --zero "$S" --precision "$prec" \
      --metrics "$work/one_${prec}_$S.jsonl" >/dev/null 2>&1 || fail "D=2 $prec ZeRO-$S"
  done
done
if $py - "$work" <<'PY'; then ok; else fail "bf16 stages agree and halve the bytes on d"; fi
import json, sys
w = sys.argv[1]
def steps(prec, s):
    return [json.loads(l) for l in open(f"{w}/one_{prec}_{s}.jsonl") if '"iter"' in l]
base = [x["loss"] for x in steps("bf16", 0)]
for s in (1, 2, 3):
    assert [x["loss"] for x in steps("bf16", s)] == base, f"ZeRO-{s} differs from ZeRO-0 in bf16"
loss = 4 * 2 * (2 - 1) / 2 * 8  # the 8-byte loss over d (D = 2, 4 ranks), not halved
for s in range(4):
    b16, b32 = (steps(p, s)[1]["comm_bytes"]["d"] - loss for p in ("bf16", "fp32"))
    assert b32 > 0 and abs(b16 - b32 / 2) <= 1e-9 * b32, (s, b16, b32)
print(f"ZeRO-0 bytes on d per step: bf16 {b16 + loss:.0f}, fp32 {b32 + loss:.0f}")
PY

# ---- a longer run learns as far as fp32 ---------------------------------------------------------------
long=(--layers 2 --heads 4 --embed 64 --block 32 --batch 8 --iters 150 --warmup 10 --lr 3e-3 --eval-every 50
      --eval-iters 8 --threads 2 --quiet)
"$plexus" gpt train --data "$text" "${long[@]}" --metrics "$work/long32.jsonl" >/dev/null || fail "long fp32"
"$plexus" gpt train --data "$text" "${long[@]}" --precision bf16 --metrics "$work/long16.jsonl" >/dev/null ||
  fail "long bf16"
if $py - "$work/long32.jsonl" "$work/long16.jsonl" <<'PY'; then ok; else fail "bf16 learns as fp32 does"; fi
import json, sys
a, b = (json.loads(open(p).readlines()[-1]) for p in sys.argv[1:])
print(f"150 steps: best validation loss fp32 {a['best_val_loss']:.4f}, bf16 {b['best_val_loss']:.4f} "
      f"(from {a['initial_val_loss']:.4f})")
assert b["best_val_loss"] < 0.8 * b["initial_val_loss"]
assert abs(b["best_val_loss"] - a["best_val_loss"]) <= 0.02 * a["best_val_loss"]
PY

# ---- --matmul-precision: bf16 follows --precision unless told; the CPU multiplies in fp32 -------------
"$plexus" gpt train --data "$text" "${model[@]}" --iters 3 --precision bf16 --matmul-precision fp32 \
  --metrics "$work/mm32.jsonl" >/dev/null || fail "--matmul-precision fp32 run"
if $py - "$work/bf16.jsonl" "$work/mm32.jsonl" <<'PY'; then ok; else fail "--matmul-precision"; fi
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert b[-1]["matmul_precision"] == "fp32" and a[-1]["matmul_precision"] == "bf16"
assert [x["loss"] for x in a if "iter" in x][:3] == [x["loss"] for x in b if "iter" in x]
PY

# ---- bad options -------------------------------------------------------------------------------------
expect_error precision "--precision" gpt train --data "$text" --precision fp16
expect_error plan-precision "--precision" plan gpt --ranks 2 --precision half
expect_error matmul-precision "--matmul-precision" gpt train --data "$text" --matmul-precision fp16
expect_error train-matmul-precision "--matmul-precision" train --matmul-precision tf64

echo "$passed passed, $failures failed"
((failures == 0))
