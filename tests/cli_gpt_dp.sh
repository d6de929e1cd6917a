#!/usr/bin/env bash
# plexus gpt train --dp D --zero S: data parallelism and ZeRO over a fourth grid axis.
#  - each replica count D >= 2 of each P <= 8 ranks, on one of its grids at one of the stages 0-3, trains like
#    1x1x1 (per-step and validation losses within 1e-5 relative over 10 steps, dropout on,
#    2 micro-batches per step, buckets smaller than a block), on uneven sizes (6 heads,
#    embed 90, batch 5: with D = 8 three replicas get no sequence);
#  - moves exactly the bytes per axis, d included, that `plexus plan gpt` predicts;
#  - holds parameters, gradients and Adam state by ZeRO's formulas (fp32: 4Ψ + 4Ψ + 8Ψ, split
#    over D as the stage says) for D = 2, 3, 4;
#  - stage 3 moves 1.5x the bytes of stage 0 on d, stages 1 and 2 as many;
#  - --memory-per-rank: a model that fits no single rank trains at stage 3 on 8 ranks;
#  - bad options exit 2 with one line.
# Usage: cli_gpt_dp.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
text=$src/data/tinyshakespeare.txt
shape=(--layers 3 --heads 6 --embed 90 --block 16 --batch 5)
model=("${shape[@]}" --warmup 3 --lr 3e-3 --dropout 0.1 --eval-every 5 --eval-iters 2 --threads 1 --quiet
       --grad-accum 2 --bucket-mb 0.05)

"$plexus" gpt train --data "$text" "${model[@]}" --iters 10 --metrics "$work/ref.jsonl" >/dev/null || fail "1x1x1 run"

# ---- every D >= 2 factorisation of P <= 8, every stage ----------------------------------------------
grids_of() {  # every ordered XxYxZ with product $1
  local n=$1 a b
  for ((a = 1; a <= n; a++)); do ((n % a)) && continue
    for ((b = 1; b <= n / a; b++)); do (((n / a) % b)) && continue; echo "${a}x${b}x$((n / a / b))"; done
  done
}
# (Every grid, replica count and stage of 1 to 6 ranks is mpi_test_gpt's, against one rank; here
# each replica count D of each P <= 8 runs end to end on one of its grids and at one stage (each
# taken in turn: every stage runs three times), through the CLI, against the plan.)
pick=0
for P in 2 3 4 5 6 7 8; do
  "$plexus" plan gpt --ranks "$P" "${shape[@]}" --grad-accum 2 --bucket-mb 0.05 --json >"$work/plan$P.json" ||
    fail "plan gpt $P"
  for ((D = 2; D <= P; D++)); do ((P % D)) && continue
    grids=($(grids_of $((P / D))))
    g=${grids[pick % ${#grids[@]}]}
    stages=($((pick % 4)))
    pick=$((pick + 1))
    for S in "${stages[@]}"; do
      run=$work/d${D}_${g}_z$S.jsonl
      if ! mpirun -np "$P" "$plexus" gpt train --data "$text" "${model[@]}" --iters 10 --grid "$g" --dp "$D" \
          --zero "$S" --metrics "$run" >"$work/out" 2>&1; then
        fail "D=$D grid $g ZeRO-$S ran"; cat "$work/out"; continue
      fi
      if $py "$src/tests/gpt_runs_match.py" "$work/ref.jsonl" "$run" 10; then ok; else
        fail "D=$D grid $g ZeRO-$S equals 1x1x1"; fi
      if $py "$src/tests/gpt_dp_checks.py" "$run" "$work/plan$P.json" "$g" "$D" "$S"; then ok; else
        fail "D=$D grid $g ZeRO-$S: bytes and memory"; fi
    done
  done
done

# ---- bytes on d: stage 3 moves 1.5x stage 0, stages 1 and 2 as many (one micro-batch) ---------------
one=("${shape[@]}" --dropout 0.1 --eval-every 0 --threads 1 --quiet --bucket-mb 0.05)
for S in 0 1 2 3; do
  mpirun -np 8 "$plexus" gpt train --data "$text" "${one[@]}" --iters 2 --grid 1x2x1 --dp 4 --zero "$S" \
    --metrics "$work/ratio$S.jsonl" >/dev/null 2>&1 || fail "ratio run ZeRO-$S"
done
if $py - "$work"/ratio{0,1,2,3}.jsonl <<'PY'; then ok; else fail "stage 3 = 1.5 x stage 0 on d"; fi
import json, sys
d = [json.loads(open(p).readlines()[1])["comm_bytes"]["d"] for p in sys.argv[1:]]  # step 1 (line 0: the header)
loss = 8 * 2 * (4 - 1) / 4 * 8  # the loss, all-reduced over d by every rank (8 bytes, D = 4, 8 ranks)
grads = [v - loss for v in d]
print(f"bytes on d per step: ZeRO-0 {d[0]:.0f}, 1 {d[1]:.0f}, 2 {d[2]:.0f}, 3 {d[3]:.0f}; 3/0 = {grads[3] / grads[0]:.6f}")
assert abs(grads[3] / grads[0] - 1.5) < 1e-12 and grads[1] == grads[0] and grads[2] == grads[0]
PY

# ---- a memory budget: too big for one rank, trains at ZeRO-3 on 8 -----------------------------------
big=(--layers 4 --heads 4 --embed 128 --block 32 --batch 8 --iters 2 --eval-every 0 --threads 1 --quiet)
expect_error budget-one-rank "does not fit" gpt train --data "$text" "${big[@]}" --memory-per-rank 8M
if mpirun -np 8 "$plexus" gpt train --data "$text" "${big[@]}" --dp 8 --zero 3 --memory-per-rank 8M \
    --metrics "$work/budget.jsonl" >"$work/out" 2>&1; then ok; else fail "ZeRO-3 on 8 ranks in 8M"; cat "$work/out"; fi
if $py - "$work/budget.jsonl" <<'PY'; then ok; else fail "budget summary"; fi
import json, sys
s = json.loads(open(sys.argv[1]).readlines()[-1])
assert s["peak_tensor_bytes"] <= 8 << 20, s["peak_tensor_bytes"]
print(f"ZeRO-3, D=8: {s['params']} parameters, peak {s['peak_tensor_bytes'] / 2**20:.2f} MiB per rank of 8 MiB; "
      f"{s['memory']}")
PY
mpirun -np 8 "$plexus" gpt train --data "$text" "${big[@]}" --dp 8 --zero 0 --memory-per-rank 8M >"$work/out" 2>&1
rc=$?
if [[ $rc -eq 2 ]] && grep -q "^plexus: error: --memory-per-rank: .*does not fit" "$work/out"; then ok; else
  fail "ZeRO-0 on 8 ranks over budget: rc=$rc"; cat "$work/out"; fi
# The plan lists only the choices predicted to fit: none on one rank, ZeRO-3 on 8 replicas among
# those of 8 ranks.
plan_fit=(plan gpt --layers 4 --heads 4 --embed 128 --block 32 --batch 8 --memory-per-rank 8M --json)
"$plexus" "${plan_fit[@]}" --ranks 1 >"$work/fit1.json" && "$plexus" "${plan_fit[@]}" --ranks 8 >"$work/fit8.json" ||
  fail "plan --memory-per-rank"
if $py - "$work/fit1.json" "$work/fit8.json" <<'PY'; then ok; else fail "plan fits"; fi
import json, sys
one, eight = (json.load(open(p))["grids"] for p in sys.argv[1:])
assert not one, one
assert eight and all(p["memory_bytes_per_rank"] <= 8 << 20 for p in eight)
assert any(p["dp"] == 8 and p["zero"] == 3 for p in eight)
PY

# ---- bad options ---------------------------------------------------------------------------------------
expect_error zero-stage "--zero" gpt train --data "$text" --zero 4
expect_error dp-zero "--dp" gpt train --data "$text" --dp 0
expect_error dp-ranks "--dp: 2 replicas need a multiple of 2 ranks; 1 was started" gpt train --data "$text" --dp 2
expect_error bucket "--bucket-mb" gpt train --data "$text" --bucket-mb 0
expect_error bucket-tiny "--bucket-mb" gpt train --data "$text" --bucket-mb 0.000001
expect_error budget-text "--memory-per-rank" gpt train --data "$text" --memory-per-rank lots
expect_error plan-budget "--memory-per-rank" plan gpt --ranks 4 --memory-per-rank -3

echo "$passed passed, $failures failed"
((failures == 0))
