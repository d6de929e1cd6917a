#!/usr/bin/env bash
# plexus gpt: grids of P ∈ {2, 3, 4, 6, 8} ranks, each axis split alone and together, train like
# 1x1x1 (every grid in-process: tests/mpi_test_gpt.cpp) (per-step losses and
# validation losses within 1e-5 relative over 10 steps, dropout on) on a model whose sizes
# divide unevenly (3 layers, 6 heads, embed 90, vocabulary 65, batch 5, block 16), and moves
# exactly the bytes per axis `plexus plan gpt` predicts for every step (sequence parallelism on,
# the default; context parallelism where a Z rank has fewer sequences than Y ranks: 1x2x3); so does
# --sequence-parallel=off on three grids, with more activation bytes, and --context-parallel
# on and off on a grid each; weight
# bytes per rank fall as 1/P; --save writes GPT-2-named tensors that `gpt sample` reads; bad
# input exits 2 with one line and leaves nothing behind.
# Usage: cli_gpt.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
text=$src/data/tinyshakespeare.txt
model=(--layers 3 --heads 6 --embed 90 --block 16 --batch 5 --warmup 3 --lr 3e-3 --dropout 0.1
       --eval-every 5 --eval-iters 2 --threads 1 --quiet)

"$plexus" gpt train --data "$text" "${model[@]}" --iters 10 --metrics "$work/g1x1x1.jsonl" --save "$work/m.h5" >/dev/null ||
  fail "1x1x1 run"

# ---- grids ---------------------------------------------------------------------------------------
for g in 2x1x1 1x1x2 1x3x1 2x2x1 1x2x2 3x2x1 1x2x3 2x2x2 1x1x8; do
  IFS=x read -r a b c <<<"$g"
  if ! mpirun -np $((a * b * c)) "$plexus" gpt train --data "$text" "${model[@]}" --iters 10 --grid "$g" \
      --metrics "$work/g$g.jsonl" >"$work/out" 2>&1; then
    fail "grid $g ran"; cat "$work/out"; continue
  fi
  "$plexus" plan gpt --ranks $((a * b * c)) --layers 3 --heads 6 --embed 90 --block 16 --batch 5 --json \
    >"$work/plan$g.json" || fail "plan gpt $g"
  if $py - "$work/g$g.jsonl" "$work/plan$g.json" "$g" <<'PY'; then ok; else fail "grid $g bytes = model"; fi
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1])][1:-1]  # not the header and summary
plan = next(p for p in json.load(open(sys.argv[2]))["grids"] if p["grid"] == sys.argv[3] and p["dp"] == 1)
for s in steps:
    # An evaluation (before step 1, after step 5) gathers the weights the next step then reuses.
    want = plan["bytes_step_weights_gathered" if s["iter"] in (1, 6) else "bytes_step"]
    for axis in ("x", "y", "z"):
        assert abs(s["comm_bytes"][axis] - want[axis]) <= 1e-9 * max(1.0, want[axis]), \
            f"step {s['iter']} axis {axis}: measured {s['comm_bytes'][axis]}, model {want[axis]}"
assert sys.argv[3] == "1x1x1" or sum(steps[1]["comm_bytes"][a] for a in "xyz") > 0
PY
  if $py "$src/tests/gpt_runs_match.py" "$work/g1x1x1.jsonl" "$work/g$g.jsonl" 10; then ok; else
    fail "grid $g equals 1x1x1"; fi
done

# ---- sequence parallelism: on by default (the grids above); off: the same training, the bytes its ------
# plan predicts, more activations. 1x3x1 turns it off in a --config file (a flag's true or false).
printf 'sequence-parallel = false\n' >"$work/sp-off.toml"
for g in 2x2x1 1x3x1 3x2x1; do
  IFS=x read -r a b c <<<"$g"
  off=(--sequence-parallel=off); [ "$g" = 1x3x1 ] && off=(--config "$work/sp-off.toml")
  if ! mpirun -np $((a * b * c)) "$plexus" gpt train --data "$text" "${model[@]}" --iters 10 --grid "$g" \
      "${off[@]}" --metrics "$work/off$g.jsonl" >"$work/out" 2>&1; then
    fail "grid $g --sequence-parallel=off ran"; cat "$work/out"; continue
  fi
  "$plexus" plan gpt --ranks $((a * b * c)) --layers 3 --heads 6 --embed 90 --block 16 --batch 5 --sequence-parallel=off \
    --json >"$work/plan-off$g.json" || fail "plan gpt --sequence-parallel=off $g"
  if $py "$src/tests/gpt_runs_match.py" "$work/g1x1x1.jsonl" "$work/off$g.jsonl" 10; then ok; else
    fail "grid $g --sequence-parallel=off equals 1x1x1"; fi
  if $py - "$work/off$g.jsonl" "$work/plan-off$g.json" "$g" "$work/g$g.jsonl" "$work/plan$g.json" <<'PY'; then ok; else fail "grid $g --sequence-parallel=off: bytes = plan, activations"; fi
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
plan, default_plan = json.load(open(sys.argv[2])), json.load(open(sys.argv[5]))
assert plan["sequence_parallel"] == "off" and default_plan["sequence_parallel"] == "on"
grid = next(p for p in plan["grids"] if p["grid"] == sys.argv[3] and p["dp"] == 1)
assert grid["sequence_parallel"] is False
assert next(p for p in default_plan["grids"] if p["grid"] == sys.argv[3] and p["dp"] == 1)["sequence_parallel"] is True
for s in rows[1:-1]:
    want = grid["bytes_step_weights_gathered" if s["iter"] in (1, 6) else "bytes_step"]
    for axis in "xyz":
        assert abs(s["comm_bytes"][axis] - want[axis]) <= 1e-9 * max(1.0, want[axis]), (s["iter"], axis, s["comm_bytes"], want)
off, on = rows[-1], json.loads(open(sys.argv[4]).readlines()[-1])
assert on["sequence_parallel"] is True and off["sequence_parallel"] is False
assert on["memory"]["activation_bytes"] < off["memory"]["activation_bytes"], (on["memory"], off["memory"])
PY
done

# ---- context parallelism: auto above (1x2x3's last Z rank holds one sequence: positions); on
# wherever Y splits (1x2x2), off (1x2x1), one of them from a --config file: the same training, the
# bytes their own plans predict.
printf 'context-parallel = "on"\n' >"$work/cp-on.toml"
for g in 1x2x2 1x2x1; do
  IFS=x read -r a b c <<<"$g"
  if [ "$g" = 1x2x2 ]; then mode=on args=(--config "$work/cp-on.toml"); else mode=off args=(--context-parallel=off); fi
  value=--context-parallel=$mode
  if ! mpirun -np $((a * b * c)) "$plexus" gpt train --data "$text" "${model[@]}" --iters 10 --grid "$g" "${args[@]}" \
      --metrics "$work/cp$g.jsonl" >"$work/out" 2>&1; then
    fail "grid $g $value ran"; cat "$work/out"; continue
  fi
  "$plexus" plan gpt --ranks $((a * b * c)) --layers 3 --heads 6 --embed 90 --block 16 --batch 5 "$value" \
    --json >"$work/plan-cp$g.json" || fail "plan gpt $value $g"
  if $py "$src/tests/gpt_runs_match.py" "$work/g1x1x1.jsonl" "$work/cp$g.jsonl" 10; then ok; else
    fail "grid $g $value equals 1x1x1"; fi
  if $py - "$work/cp$g.jsonl" "$work/plan-cp$g.json" "$g" "$mode" <<'PY'; then ok; else fail "grid $g $value: bytes = plan"; fi
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
plan = json.load(open(sys.argv[2]))
assert plan["context_parallel"] == sys.argv[4] and rows[-1]["context_parallel"] == sys.argv[4], (plan["context_parallel"], rows[-1])
grid = next(p for p in plan["grids"] if p["grid"] == sys.argv[3] and p["dp"] == 1)
for s in rows[1:-1]:
    want = grid["bytes_step_weights_gathered" if s["iter"] in (1, 6) else "bytes_step"]
    for axis in "xyz":
        assert abs(s["comm_bytes"][axis] - want[axis]) <= 1e-9 * max(1.0, want[axis]), (s["iter"], axis, s["comm_bytes"], want)
PY
done

# The run says so where it splits something.
tiny=(--data "$text" --layers 1 --heads 2 --embed 16 --block 8 --batch 2 --iters 1 --threads 1 --eval-every 0)
mpirun -np 2 "$plexus" gpt train "${tiny[@]}" --grid 1x2x1 >"$work/sp-on.txt" 2>&1 && grep -q "grid 1x2x1, sequence-parallel" \
  "$work/sp-on.txt" && ok || fail "gpt train names sequence parallelism on a grid it splits"
mpirun -np 2 "$plexus" gpt train "${tiny[@]}" --grid 1x2x1 --sequence-parallel=off >"$work/sp-off.txt" 2>&1 &&
  ! grep -q "sequence-parallel" "$work/sp-off.txt" && ok || fail "gpt train --sequence-parallel=off is off"
! grep -q "context-parallel" "$work/sp-on.txt" && ok || fail "2 sequences over Y = 2: whole sequences under auto"
mpirun -np 2 "$plexus" gpt train "${tiny[@]}" --grid 1x2x1 --context-parallel=on >"$work/cp-on.txt" 2>&1 &&
  grep -q "grid 1x2x1, sequence-parallel, context-parallel" "$work/cp-on.txt" && ok || fail "gpt train names context parallelism"

# plan gpt --sequence-parallel=both: every choice twice, ranked together, each one's bytes its own.
"$plexus" plan gpt --ranks 6 --layers 3 --heads 6 --embed 90 --block 16 --batch 5 --sequence-parallel=both --json \
  >"$work/plan-both.json" || fail "plan gpt --sequence-parallel=both"
if $py - "$work/plan-both.json" "$work/plan3x2x1.json" "$work/plan-off3x2x1.json" <<'PY'; then ok; else fail "plan gpt --sequence-parallel=both"; fi
import json, sys
both, on, off = (json.load(open(p)) for p in sys.argv[1:])
assert both["sequence_parallel"] == "both" and off["sequence_parallel"] == "off"
key = lambda p: (p["grid"], p["dp"], p["zero"], p["sequence_parallel"])
grids = {key(p): p for p in both["grids"]}
splits = [p for p in on["grids"] if p["grid"].split("x")[:2] != ["1", "1"]]  # 1x1xZ: listed once, without
assert len(grids) == len(splits) + len(off["grids"]), (len(grids), len(on["grids"]), len(off["grids"]))
for p in splits + off["grids"]:
    assert grids[key(p)]["bytes_step"] == p["bytes_step"] and grids[key(p)]["total_seconds"] == p["total_seconds"], key(p)
times = [p["total_seconds"] for p in both["grids"]]
assert times == sorted(times), "ranked fastest first"
PY
expect_error plan-sp-mode "--sequence-parallel" plan gpt --ranks 4 --sequence-parallel=sometimes
expect_error train-sp-both "--sequence-parallel" gpt train --data "$text" --iters 1 --sequence-parallel=both
expect_error train-cp-mode "--context-parallel" gpt train --data "$text" --iters 1 --context-parallel=sometimes

# ---- memory: weight shards fall as 1/P ---------------------------------------------------------------
if $py - "$work/m.h5" "$work"/g{1x1x1,2x2x2,1x1x8}.jsonl <<'PY'; then ok; else fail "weight bytes ~1/P"; fi
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:  # vectors (LayerNorm parameters, biases) are replicated
    vectors = sum(f[k].size for k in f if k != "vocab_chars" and f[k].ndim == 1)
    params = sum(f[k].size for k in f if k != "vocab_chars")
one, *eight = (json.loads(open(p).readlines()[-1]) for p in sys.argv[2:])
assert one["weight_bytes"] == 4 * one["params"] == 4 * params, "P=1 holds every parameter once"
bound = 1 / 8 + vectors / params  # every matrix cut over all 3 axes, at worst every vector everywhere
for s in eight:
    mean = s["weight_bytes_total"] / 8 / one["weight_bytes"]
    top = s["weight_bytes"] / one["weight_bytes"]  # 6 heads split over X can be uneven
    print(f"{s['grid']}: weight bytes per rank {mean:.4f} (mean), {top:.4f} (largest) of P=1; bound {bound:.4f}")
    assert 1 / 8 < mean <= bound, f"{s['grid']}: mean {mean:.4f}"
    if s["grid"] == "2x2x2":
        assert top <= 1.1 / 8, f"2x2x2: largest {top:.4f}"
PY

# ---- save and sample -------------------------------------------------------------------------------
if $py - "$work/m.h5" <<'PY'; then ok; else fail "model file layout"; fi
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["format"] in ("plexus-gpt", b"plexus-gpt")
    assert f["wte"].shape == (65, 90) and f["wpe"].shape == (16, 90)
    assert f["h.2.attn.c_attn.weight"].shape == (90, 270) and f["h.0.mlp.c_proj.weight"].shape == (360, 90)
    assert f["ln_f.bias"].shape == (90,) and "lm_head.weight" not in f
    assert len(f["vocab_chars"]) == 65
PY
out=$("$plexus" gpt sample --model "$work/m.h5" --prompt "ROMEO:" --tokens 40 --seed 3 --threads 1)
again=$("$plexus" gpt sample --model "$work/m.h5" --prompt "ROMEO:" --tokens 40 --seed 3 --threads 1)
if [[ "$out" == ROMEO:* && ${#out} -ge 46 && "$out" == "$again" ]]; then ok; else fail "sample"; echo "$out"; fi
# A batch of prompts (--prompts, one a line): the KV cache, no cache and grids of 2 and 4 ranks
# print the same texts, the first prompt's as it is alone; the stderr line reports the rates.
printf 'ROMEO:\nJULIET: O\nA\n' >"$work/prompts.txt"
"$plexus" gpt sample --model "$work/m.h5" --prompts "$work/prompts.txt" --tokens 20 --top-k 5 --threads 1 \
  >"$work/batch.txt" 2>"$work/batch.err" || fail "sample --prompts ran"
"$plexus" gpt sample --model "$work/m.h5" --prompts "$work/prompts.txt" --tokens 20 --top-k 5 --threads 1 --no-kv-cache \
  >"$work/batch-nocache.txt" 2>/dev/null || fail "sample --no-kv-cache ran"
mpirun -np 2 "$plexus" gpt sample --model "$work/m.h5" --prompts "$work/prompts.txt" --tokens 20 --top-k 5 --threads 1 \
  --grid 1x1x2 >"$work/batch-2.txt" 2>"$work/batch-2.err" || fail "sample on 1x1x2 ran"
mpirun -np 4 "$plexus" gpt sample --model "$work/m.h5" --prompts "$work/prompts.txt" --tokens 20 --top-k 5 --threads 1 \
  --grid 2x2x1 >"$work/batch-4.txt" 2>/dev/null || fail "sample on 2x2x1 ran"
first=$("$plexus" gpt sample --model "$work/m.h5" --prompt "ROMEO:" --tokens 20 --top-k 5 --threads 1 2>/dev/null)
if [[ $(grep -c '^--- prompt [123] ---$' "$work/batch.txt") == 3 ]] && cmp -s "$work/batch.txt" "$work/batch-nocache.txt" &&
   cmp -s "$work/batch.txt" "$work/batch-2.txt" && cmp -s "$work/batch.txt" "$work/batch-4.txt" &&
   [[ "$(awk 'NR > 1 && /^--- prompt 2 ---$/ {exit} NR > 1' "$work/batch.txt")" == "$first" ]] &&
   grep -q "^plexus: 60 tokens in .* tokens/s, first token after .* (3 prompts, grid 1x1x1, KV cache [0-9]* bytes a rank)$" \
     "$work/batch.err"; then ok; else fail "sample --prompts / --no-kv-cache / --grid"; cat "$work/batch.txt" "$work/batch.err"; fi
# plan gpt --prompts: the KV cache a rank holds, from a dry run of generation = what sample reports.
"$plexus" plan gpt --ranks 2 --layers 3 --heads 6 --embed 90 --block 16 --vocab 65 --prompts 3 --json \
  >"$work/plan-gen.json" || fail "plan gpt --prompts ran"
if $py - "$work/plan-gen.json" "$work/batch-2.err" <<'PY'; then ok; else fail "plan gpt --prompts = sample's cache"; fi
import json, re, sys
gen = json.load(open(sys.argv[1]))["generation"]
grids = {g["grid"]: g for g in gen["grids"]}
assert gen["prompts"] == 3 and set(grids) == {"2x1x1", "1x2x1", "1x1x2"}, gen
measured = int(re.search(r"KV cache (\d+) bytes a rank", open(sys.argv[2]).read()).group(1))
assert grids["1x1x2"]["cache_bytes_per_rank"] == measured == 2 * 3 * 2 * 16 * 90 * 4, (grids, measured)
assert all(g["memory_bytes_per_rank"] > g["cache_bytes_per_rank"] for g in grids.values())
PY
# --iters 0 saves the initial weights; training from the same seed starts from them.
"$plexus" gpt train --data "$text" "${model[@]}" --iters 0 --save "$work/init.h5" >/dev/null && ok || fail "iters 0"
[[ -s "$work/init.h5" ]] && ok || fail "init saved"

# ---- --profile: the kernel table, and the kernels in the summary ---------------------------------
"$plexus" gpt train --data "$text" "${model[@]}" --iters 3 --profile --metrics "$work/prof.jsonl" >"$work/prof.txt" &&
  grep -q "^gemm_nn " "$work/prof.txt" && grep -q "^attention_backward " "$work/prof.txt" &&
  grep -q "^matrix products (gemm)" "$work/prof.txt" && ok || { fail "profile table"; cat "$work/prof.txt"; }
if $py - "$work/prof.jsonl" "$work/g1x1x1.jsonl" <<'PY'; then ok; else fail "profile summary"; fi
import json, sys
prof = [json.loads(l) for l in open(sys.argv[1])]
plain = [json.loads(l) for l in open(sys.argv[2])]
k = prof[-1]["kernels"]
assert sum(v["calls"] for n, v in k.items() if n.startswith("gemm_")) > 0 and k["layernorm_apply"]["seconds"] > 0 and plain[-1]["kernels"] is None
assert [r["loss"] for r in prof[1:4]] == [r["loss"] for r in plain[1:4]], "profiling changes no number"  # steps 1-3 (line 0: the header)
PY

# ---- bad input ---------------------------------------------------------------------------------------
printf '' >"$work/empty.txt"
printf 'short text' >"$work/short.txt"
printf 'ok \xff\xfe broken' >"$work/bad_utf8.txt"
$py - "$work" <<'PY'
import sys, numpy as np
w = sys.argv[1]
hdr = np.zeros(256, np.int32); hdr[:3] = [20240520, 1, 100]
open(f"{w}/tok.bin", "wb").write(hdr.tobytes() + np.arange(100, dtype=np.uint16).tobytes())
hdr[0] = 123
open(f"{w}/magic.bin", "wb").write(hdr.tobytes() + np.arange(100, dtype=np.uint16).tobytes())
PY
expect_error missing-text "nope.txt" gpt train --data "$work/nope.txt" --metrics "$work/bad.jsonl"
expect_error empty-text "empty.txt" gpt train --data "$work/empty.txt" --metrics "$work/bad.jsonl"
expect_error short-text "fewer than --block + 1" gpt train --data "$work/short.txt" --block 64 --metrics "$work/bad.jsonl"
expect_error bad-utf8 "bad_utf8.txt" gpt train --data "$work/bad_utf8.txt"
expect_error magic "magic.bin" gpt train --data "$work/magic.bin" --vocab 100
expect_error token-range "tok.bin" gpt train --data "$work/tok.bin" --vocab 50
expect_error token-vocab "--vocab" gpt train --data "$work/tok.bin"
expect_error heads "--embed" gpt train --data "$text" --embed 100 --heads 6
expect_error grid "--grid" gpt train --data "$text" --grid 2x1x1 --iters 1
expect_error no-model "none.h5" gpt sample --model "$work/none.h5"
expect_error prompt "--prompt" gpt sample --model "$work/m.h5" --prompt "ΩΩ"
printf 'ROMEO\nΩ\n' >"$work/bad-prompts.txt"
expect_error prompts-char "bad-prompts.txt: prompt 2" gpt sample --model "$work/m.h5" --prompts "$work/bad-prompts.txt"
expect_error prompts-missing "none.txt" gpt sample --model "$work/m.h5" --prompts "$work/none.txt"
printf '' >"$work/no-prompts.txt"
expect_error prompts-empty "holds no prompt" gpt sample --model "$work/m.h5" --prompts "$work/no-prompts.txt"
expect_error prompt-and-prompts "--prompt" gpt sample --model "$work/m.h5" --prompt "A" --prompts "$work/prompts.txt"
cp "$work/m.h5" "$work/m-nan.h5"
$py -c 'import h5py, numpy as np, sys
f = h5py.File(sys.argv[1], "r+"); d = f["wpe"]; a = d[...]; a[2, 3] = np.nan; d[...] = a; f.close()' "$work/m-nan.h5"
expect_error model-nan "m-nan.h5: wpe: non-finite weight at position " gpt sample --model "$work/m-nan.h5"
[[ ! -e "$work/bad.jsonl" ]] && ok || fail "no metrics file after an error"

# --eval-every 0 never evaluates: no validation loss is reported (not 0.0000, a perfect one).
"$plexus" gpt train --data "$text" --layers 1 --heads 2 --embed 16 --block 16 --batch 2 --iters 2 --eval-every 0 \
  --threads 1 --quiet --metrics "$work/noeval.jsonl" >"$work/out" 2>&1 || fail "--eval-every 0 ran"
if grep -q "not evaluated (--eval-every 0)" "$work/out" && ! grep -q "validation loss" "$work/out" &&
   $py -c 'import json,sys; s=[json.loads(l) for l in open(sys.argv[1])][-1]; sys.exit(not (s["summary"] and s["best_val_loss"] is None and s["initial_val_loss"] is None))' "$work/noeval.jsonl"
then ok; else fail "--eval-every 0 reports no validation loss"; cat "$work/out"; fi

echo "$passed passed, $failures failed"
((failures == 0))
