#!/usr/bin/env bash
# GPT checkpoints and resume (docs/checkpoints.md), from the user's side:
#  - a run checkpointed after step 4 and resumed to 10 gives the uninterrupted run's per-step
#    losses and validation losses bit for bit on the same grid and replicas, at ZeRO stages 0-3,
#    with bf16, with --recompute, and within 1e-6 when resumed with other replicas, ZeRO stage or grid;
#  - SIGTERM to one process ends it after its step with a checkpoint and exit status 143;
#  - SIGTERM during an evaluation of seconds abandons the evaluation at once (its step's
#    val_loss null), checkpoints the step, and the resumed run makes the evaluation up: the
#    uninterrupted run's losses, validation losses and best bit for bit; SIGTERM within a step
#    of many micro-batches abandons the step and checkpoints the one before;
#  - other options, another text, a GCN checkpoint or a plain model file are one line, exit 2.
# Usage: cli_gpt_checkpoint.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$(realpath "$1") src=$(realpath "$2")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
cd "$work" || exit 1
head -c 30000 "$src/data/tinyshakespeare.txt" >text.txt
base=(gpt train --layers 2 --heads 2 --block 32 --batch 4 --eval-every 5 --eval-iters 2 --threads 1
      --quiet --dropout 0.1 --warmup 2)
gpt=("${base[@]}" --data text.txt --iters 10 --embed 32)

# compare FULL RESUMED TOLERANCE: steps 5..10 of the resumed run against the full run's.
compare() {
  "$py" - "$@" <<'EOF'
import json, sys
full, resumed, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
rows = lambda p: [json.loads(l) for l in open(p)]
f, r = rows(full), rows(resumed)
fl = {x["iter"]: x for x in f if "iter" in x}
rl = {x["iter"]: x for x in r if "iter" in x}
assert sorted(rl) == list(range(5, 11)), sorted(rl)
for i in rl:
    for key in ("loss", "val_loss", "grad_norm"):
        if key not in rl[i]:
            continue
        a, b = fl[i][key], rl[i][key]
        assert (a == b) if tol == 0 else abs(a - b) <= tol * max(1.0, abs(a)), (i, key, a, b)
fs, rs = f[-1], r[-1]
assert rs["iters_done"] == 10 and not rs["interrupted"] and rs["resumed_from"].endswith("checkpoint-00000004.h5"), rs
assert abs(fs["best_val_loss"] - rs["best_val_loss"]) <= tol * abs(fs["best_val_loss"]), (fs, rs)
assert fs["initial_val_loss"] == rs["initial_val_loss"], (fs, rs)
EOF
}

# run NAME RANKS OPTIONS...: the full run, a checkpointed run, and a resume from its step-4 checkpoint.
run() {
  local name=$1 np=$2; shift 2
  local launch=("$plexus")
  ((np > 1)) && launch=(mpirun -np "$np" "$plexus")
  "${launch[@]}" "${gpt[@]}" "$@" --metrics "full-$name.jsonl" >/dev/null
  "${launch[@]}" "${gpt[@]}" "$@" --checkpoint-dir "ck-$name" --checkpoint-every 4 --keep 0 >/dev/null
  rm -f "ck-$name/checkpoint-00000008.h5" "ck-$name/checkpoint-00000010.h5"
  "${launch[@]}" "${gpt[@]}" "$@" --resume "ck-$name" --metrics "res-$name.jsonl" >/dev/null &&
    compare "full-$name.jsonl" "res-$name.jsonl" 0 && ok || fail "resume bit for bit: $name"
}
run one 1
run zero1 2 --dp 2 --zero 1
run zero3 2 --dp 2 --zero 3
run grid-zero2 4 --grid 2x1x1 --dp 2 --zero 2
run bf16 2 --dp 2 --zero 2 --precision bf16
# --recompute is no model option: a checkpoint written without it resumes with it, bit for bit.
"$plexus" "${gpt[@]}" --resume ck-one --recompute --metrics res-one-recompute.jsonl >/dev/null &&
  compare full-one.jsonl res-one-recompute.jsonl 0 && ok || fail "resume with --recompute bit for bit"

# Other replicas, stage or grid: the same run within rounding.
"$plexus" "${gpt[@]}" --resume ck-zero3 --metrics x1.jsonl >/dev/null &&
  compare full-zero3.jsonl x1.jsonl 1e-6 && ok || fail "ZeRO-3 x 2 -> one rank"
mpirun -np 2 "$plexus" "${gpt[@]}" --dp 2 --zero 1 --resume ck-grid-zero2 --metrics x2.jsonl >/dev/null &&
  compare full-grid-zero2.jsonl x2.jsonl 1e-6 && ok || fail "2x1x1 x 2 ZeRO-2 -> 1x1x1 x 2 ZeRO-1"

# The checkpoint: the model tensors (a model file gpt sample reads) and the moments.
"$py" - ck-one/checkpoint-00000004.h5 <<'EOF' && ok || fail "checkpoint layout"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as f:
    o = f["optimizer"]
    assert o.attrs["iters_done"] == 4 and o.attrs["iters"] == 10 and o.attrs["seed"] == 1337, dict(o.attrs)
    for name in ("wte", "h.0.attn.c_attn.weight", "ln_f.bias"):
        assert f[name].shape == o["m/" + name].shape == o["v/" + name].shape, name
        assert (o["v/" + name][()] >= 0).all() and np.count_nonzero(o["m/" + name][()]) > 0, name
EOF
"$plexus" gpt sample --model ck-one/checkpoint-00000004.h5 --tokens 5 --threads 1 >/dev/null && ok || fail "gpt sample reads a checkpoint"

# SIGTERM: the step ends, a checkpoint is written, exit status 143, and the run resumes from it.
long=("${base[@]}" --data text.txt --iters 100000 --embed 32)
set -m  # job control: a background job keeps SIGINT and SIGTERM at their defaults
"$plexus" "${long[@]}" --checkpoint-dir sig --checkpoint-every 100000 --metrics sig.jsonl >sig.out 2>&1 &
job=$!
set +m
sleep 3  # start-up and some steps
kill -TERM "$job"
wait "$job"; rc=$?
if [[ $rc -ne 143 ]] || ! grep -q "^interrupted by SIGTERM after step" sig.out || [[ $(ls sig | wc -l) -ne 1 ]]; then
  fail "SIGTERM"; echo "  rc=$rc"; cat sig.out; ls sig
else
  "$py" -c 'import json,sys; s=[json.loads(l) for l in open("sig.jsonl")][-1]; sys.exit(not (s["interrupted"] and s["checkpoint"]))' &&
    ok || fail "SIGTERM: metrics marked interrupted"
fi

# SIGTERM within a long evaluation or a step of many micro-batches: honoured before the next
# batch, not after the evaluation or step (a second later at most, not seconds).
slow=(gpt train --layers 2 --heads 2 --block 64 --batch 8 --embed 64 --threads 1 --quiet --dropout 0.1 --warmup 2
      --data text.txt)
# stop_gpt NAME WAIT_FOR_ITER ARGS...: starts the run, sends SIGTERM 0.5 s after the metrics show
# step WAIT_FOR_ITER, waits; sets rc and ms (the time from the signal to the end).
stop_gpt() {
  local name=$1 iter=$2; shift 2
  set -m
  "$plexus" "$@" --checkpoint-dir "$name" --checkpoint-every 1000 --metrics "$name.jsonl" >"$name.out" 2>&1 &
  local job=$!
  set +m
  for _ in $(seq 600); do grep -q "\"iter\":$iter," "$name.jsonl" 2>/dev/null && break; sleep 0.05; done
  sleep 0.5
  kill -TERM "$job"
  local start
  start=$(date +%s%N)
  wait "$job"; rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
}
# About 3 s an evaluation (1000 batches), evaluations after steps 3 and 6.
evals=("${slow[@]}" --iters 6 --eval-every 3 --eval-iters 1000)
"$plexus" "${evals[@]}" --metrics evals-full.jsonl >/dev/null || fail "uninterrupted run with long evaluations"
stop_gpt evals 2 "${evals[@]}"
if [[ $rc -ne 143 || $ms -gt 1500 || "$(ls evals)" != checkpoint-00000003.h5 ]] ||
   ! grep -q "^interrupted by SIGTERM after step 3 of 6 (work after it abandoned)" evals.out; then
  fail "SIGTERM during an evaluation"; echo "  rc=$rc, $ms ms, checkpoints: $(ls evals)"; cat evals.out
else
  "$py" - evals.jsonl <<'EOF' && ok || fail "SIGTERM during an evaluation: metrics"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in rows if "iter" in r]
assert [r["iter"] for r in steps] == [1, 2, 3] and steps[-1]["val_loss"] is None, steps[-1]
assert rows[-1]["interrupted"] and rows[-1]["iters_done"] == 3, rows[-1]
EOF
  "$plexus" "${evals[@]}" --resume evals --metrics evals-resumed.jsonl >/dev/null &&
    "$py" - evals-full.jsonl evals-resumed.jsonl <<'EOF' && ok || fail "resumed after an abandoned evaluation"
import json, sys
full, resumed = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
f = {r["iter"]: r for r in full if "iter" in r}
r = {x["iter"]: x for x in resumed if "iter" in x}
assert sorted(r) == [4, 5, 6], sorted(r)
for i in r:
    for k in ("loss", "grad_norm"):
        assert f[i][k] == r[i][k], (i, k)
assert f[6]["val_loss"] == r[6]["val_loss"]
for k in ("best_val_loss", "initial_val_loss"):
    assert full[-1][k] == resumed[-1][k], (k, full[-1][k], resumed[-1][k])
EOF
fi
# About 2 s a step (200 micro-batches), no evaluation.
stop_gpt accum 1 "${slow[@]}" --iters 1000 --eval-every 0 --grad-accum 200
if [[ $rc -ne 143 || $ms -gt 1500 || "$(ls accum)" != checkpoint-00000001.h5 ]] ||
   ! grep -q "^interrupted by SIGTERM after step 1 of 1000 (work after it abandoned)" accum.out; then
  fail "SIGTERM within a step of many micro-batches"; echo "  rc=$rc, $ms ms, checkpoints: $(ls accum)"; cat accum.out
else ok; fi

# Refusals.
expect_error "other --lr" "was trained with --lr 0.001, this run has --lr 0.002" "${gpt[@]}" --resume ck-one --lr 0.002
expect_error "other --embed" "was trained with --embed 32, this run has --embed 64" "${base[@]}" --data text.txt --iters 10 --embed 64 --resume ck-one
expect_error "other --iters" "was trained with --iters 10, this run has --iters 20" "${base[@]}" --data text.txt --iters 20 --embed 32 --resume ck-one
expect_error "other --seed" "was trained with --seed 1337" "${gpt[@]}" --resume ck-one --seed 1
expect_error "other --precision" "was trained with --precision fp32" "${gpt[@]}" --resume ck-one --precision bf16
tail -c 20000 "$src/data/tinyshakespeare.txt" | tr 'a-z' 'A-Z' >other.txt
expect_error "other text" "was trained on text of another vocabulary" "${base[@]}" --data other.txt --iters 10 --embed 32 --resume ck-one
mkdir -p plain && "$plexus" "${base[@]}" --data text.txt --iters 2 --embed 32 --save plain/checkpoint-00000002.h5 >/dev/null
expect_error "a plain model file" "optimizer: missing" "${gpt[@]}" --resume plain
mkdir -p gcn && "$plexus" train --epochs 2 --threads 1 -q --checkpoint-dir gcn >/dev/null
expect_error "a GCN checkpoint" "gcn/checkpoint-[0-9]*\.h5: is a GNN model file (plexus train --save-model or --checkpoint-dir), not a GPT model file" \
  "${gpt[@]}" --resume gcn
expect_error "--checkpoint-every 0" "--checkpoint-every" "${gpt[@]}" --checkpoint-dir x --checkpoint-every 0

echo "cli_gpt_checkpoint: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
