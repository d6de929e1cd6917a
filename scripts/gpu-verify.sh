#!/usr/bin/env bash
# Run THERE, on a lent GPU machine, from the repository root (after scripts/gpu-setup.sh): builds
# for sm_90 and verifies the CUDA backend. Logs go to $OUT (default /tmp/plexus-gpu).
#   scripts/gpu-verify.sh [steps...]   steps: env build unit sanitize cora models ranks edges
#                                      edgebench suite (default: all but edgebench). Env: TARGETS (build only these targets),
#                                      SANITIZE_TOOLS (default: memcheck racecheck synccheck).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/plexus-gpu}; mkdir -p "$OUT"
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
DEV=${DEV:-cuda}  # DEV=cpu tries the steps on a machine without a GPU
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
steps=("$@"); ((${#steps[@]})) || steps=(env build unit sanitize cora models ranks edges suite)
t0=$SECONDS
say() { echo "== [$((SECONDS - t0)) s] $*"; }
has() { local s; for s in "${steps[@]}"; do [[ $s == "$1" ]] && return 0; done; return 1; }

if has env; then
  say env
  { nvidia-smi; nvcc --version | tail -2; g++ --version | head -1; cmake --version | head -1
    grep PRETTY /etc/os-release; nproc; free -g | head -2
    python3 -c 'import torch, torch_geometric; print("torch", torch.__version__, "pyg", torch_geometric.__version__)'
  } 2>&1 | tee "$OUT/env.txt"
fi
if has build; then
  say "configure + build ($BUILD, -j$JOBS)"
  if ! { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLEXUS_CUDA=ON -DPLEXUS_CUDA_ARCH=90 &&
         cmake --build "$BUILD" -j "$JOBS" ${TARGETS:+--target $TARGETS}; } > "$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"; say "BUILD FAILED"; exit 1
  fi
  grep -iE "warning" "$OUT/build.log" | head -20
fi
# The CUDA tests: all of test_cuda_backend (Cora left out under the sanitizers: too slow there)
# and the cuda instances (named .../cuda) of the backend-parameterised suites.
gpu_suites=("test_kernels" "test_attention" "test_edge_attention" "test_transformer_kernels")
cuda_tests=("test_cuda_backend --gtest_filter=-*Cora*" "test_gpt --gtest_filter=*Cuda*:*/cuda")
for t in "${gpu_suites[@]}"; do cuda_tests+=("$t --gtest_filter=*/cuda"); done
if has unit; then
  say "the CUDA tests: ${cuda_tests[*]} (and test_cuda_backend's Cora)"
  for t in "test_cuda_backend --gtest_filter=*" "${cuda_tests[@]:1}"; do
    read -r bin filter <<< "$t"
    "$BUILD/tests/$bin" "$filter" > "$OUT/unit_$bin.log" 2>&1
    echo "$bin: exit $? ($(grep -cE '^\[       OK' "$OUT/unit_$bin.log") ok)"
    grep -E "^\[  FAILED|Failure|rror:" "$OUT/unit_$bin.log" | head -20
  done
fi
if has sanitize; then
  # Every (tool, test) pair at once, each under its own time limit: the sanitizers are CPU-bound.
  say "compute-sanitizer ${SANITIZE_TOOLS:-memcheck racecheck synccheck} on ${cuda_tests[*]}"
  mkdir -p "$OUT/sanitize"
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
    for t in "${cuda_tests[@]}"; do
      read -r bin filter <<< "$t"
      ( PLEXUS_CUDA_SYNC_CHECK=1 timeout "${SANITIZE_TIMEOUT:-600}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
          "$BUILD/tests/$bin" "$filter" > "$OUT/sanitize/${tool}_$bin.log" 2>&1
        rc=$?; log="$OUT/sanitize/${tool}_$bin.log"
        echo "$tool $bin: exit $rc$( ((rc == 124)) && echo ' (time limit)') ($(grep -cE '^\[       OK' "$log") tests ok) $(grep -m1 'ERROR SUMMARY' "$log")" ) &
    done
  done
  wait
fi
if has cora; then
  say "Cora, 200 epochs: plexus train --backend cuda vs --backend cpu"
  for be in cuda cpu; do
    "$BUILD/plexus" train --backend "$be" --metrics "$OUT/cora_$be.jsonl" > "$OUT/cora_$be.txt" 2>&1 || echo "cora $be failed"
    tail -2 "$OUT/cora_$be.txt"
  done
  python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = {b: [json.loads(l) for l in open(f"{out}/cora_{b}.jsonl")] for b in ("cuda", "cpu")}
g, c = rows["cuda"][1:-1], rows["cpu"][1:-1]  # epochs: after the header, before the summary
rel = [abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(g, c)]
k = max(range(len(rel)), key=rel.__getitem__)
print(f"epochs {len(g)}: worst relative loss difference {rel[k]:.3g} at epoch {k + 1}; "
      f"test acc cuda {rows['cuda'][-1]['test_acc']:.4f} cpu {rows['cpu'][-1]['test_acc']:.4f}; "
      f"median epoch cuda {sorted(r['epoch_seconds'] for r in g)[len(g) // 2] * 1e3:.2f} ms "
      f"cpu {sorted(r['epoch_seconds'] for r in c)[len(c) // 2] * 1e3:.2f} ms")
PY
fi
# The worst relative difference of the per-epoch (or per-step) losses of two metrics files:
#   compare_losses A.jsonl B.jsonl LABEL LIMIT
compare_losses() {
  python3 - "$@" <<'PY'
import json, sys
a, b, label, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
def losses(f):
    rows = [json.loads(l) for l in open(f)]
    return [r["loss"] for r in rows if ("epoch" in r or "iter" in r) and isinstance(r.get("loss"), float)]
x, y = losses(a), losses(b)
if not x or len(x) != len(y):
    print(f"{label}: FAILED (loss counts {len(x)} vs {len(y)})"); sys.exit(1)
rel = [abs(p - q) / max(abs(q), 1e-30) for p, q in zip(x, y)]
k = max(range(len(rel)), key=rel.__getitem__)
ok = rel[k] <= limit
print(f"{label}: {len(x)} losses, worst relative difference {rel[k]:.3g} at {k + 1} "
      f"({x[k]:.8g} vs {y[k]:.8g}); limit {limit:g}: {'ok' if ok else 'FAILED'}")
sys.exit(0 if ok else 1)
PY
}
if has models; then
  say "every GNN on Cora, 200 epochs: CUDA vs CPU backend per epoch (limit 1e-4 relative)"
  for m in gcn sage gin gat; do
    for be in "$DEV" cpu; do
      "$BUILD/plexus" train --model "$m" --backend "$be" --epochs 200 --metrics "$OUT/models_${m}_$be.jsonl" \
        > "$OUT/models_${m}_$be.txt" 2>&1 || { echo "$m $be failed:"; tail -3 "$OUT/models_${m}_$be.txt"; }
    done
    compare_losses "$OUT/models_${m}_$DEV.jsonl" "$OUT/models_${m}_cpu.jsonl" "$m cuda vs cpu" 1e-4
    for f in "$OUT/models_${m}_$DEV.jsonl" "$OUT/models_${m}_cpu.jsonl"; do tail -1 "$f" | grep -o '"test_acc":[^,}]*' | tr "\n" " "; done; echo
  done
fi
if has ranks; then
  say "ranks sharing the GPU (collectives staged through host memory) vs one rank (limit 1e-5 relative)"
  for m in gcn gat; do
    "$BUILD/plexus" train --model "$m" --backend "$DEV" --epochs 50 --metrics "$OUT/ranks_${m}_1.jsonl" > /dev/null 2>&1
    for g in 1x2x1 2x1x1 1x1x2 2x2x1 1x2x2; do
      n=$(( ${g:0:1} * ${g:2:1} * ${g:4:1} ))
      timeout 300 mpirun -np "$n" "$BUILD/plexus" train --model "$m" --backend "$DEV" --grid "$g" --epochs 50 \
        --metrics "$OUT/ranks_${m}_$g.jsonl" > "$OUT/ranks_${m}_$g.txt" 2>&1 || { echo "$m $g failed:"; tail -3 "$OUT/ranks_${m}_$g.txt"; }
      compare_losses "$OUT/ranks_${m}_$g.jsonl" "$OUT/ranks_${m}_1.jsonl" "$m cuda grid $g vs 1 rank" 1e-5
    done
  done
  gpt=(gpt train --data data/tinyshakespeare.txt --backend "$DEV" --precision bf16 --iters 30 --eval-every 0
       --layers 2 --heads 4 --embed 128 --block 64 --batch 16 -q)
  "$BUILD/plexus" "${gpt[@]}" --metrics "$OUT/ranks_gpt_1.jsonl" > /dev/null 2>&1
  timeout 300 mpirun -np 4 "$BUILD/plexus" "${gpt[@]}" --dp 2 --grid 1x1x2 --zero 3 --metrics "$OUT/ranks_gpt_4.jsonl" \
    > "$OUT/ranks_gpt_4.txt" 2>&1 || { echo "gpt 4 ranks failed:"; tail -3 "$OUT/ranks_gpt_4.txt"; }
  compare_losses "$OUT/ranks_gpt_4.jsonl" "$OUT/ranks_gpt_1.jsonl" "gpt bf16 2 replicas x grid 1x1x2, ZeRO-3 vs 1 rank" 1e-5
fi
# A planted-community graph with a feature row per stored edge (4 wide, half a standard normal):
#   edge_graph OUT NODES DEGREE [generate sbm options...]
edge_graph() {
  local out=$1 nodes=$2 deg=$3; shift 3
  "$BUILD/plexus" generate sbm --nodes "$nodes" --avg-degree "$deg" --feature-width 32 --classes 6 -o "$out" "$@" \
    > /dev/null || return 1
  "${PYTHON:-python3}" - "$out" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    nnz = f["graph/indices"].shape[0]
    f["graph/edge_features"] = (0.5 * np.random.default_rng(5).standard_normal((nnz, 4))).astype(np.float32)
PY
}
if has edges; then
  say "edge learning (issue 46): GINE, GAT with edge features, APPNP and link prediction; CUDA vs CPU per epoch (limit 1e-4), ranks vs one rank (1e-5)"
  edge_graph "$OUT/edges_node.h5" 3000 8 && edge_graph "$OUT/edges_link.h5" 3000 8 --task link || echo "edge graphs failed"
  # NAME|GRAPH|OPTIONS|EPOCHS. The MLP decoders' runs are chaotic on this graph: the reference
  # backend and the CPU one (both float32 on the CPU) part by 1e-7 at epoch 4 and 1e-4 by epoch
  # 13, as CUDA and the CPU do (run to run, CUDA is bit for bit): 10 epochs for them.
  variants=("gine|node|--model gine --train-eps|40" "gat-edge|node|--model gat --heads 2 --edge-features|40"
            "appnp|node|--model appnp|40" "link-gcn|link|--task link|40"
            "link-sage-mlp|link|--task link --model sage --decoder mlp|10"
            "link-gin|link|--task link --model gin|40" "link-gine-mlp|link|--task link --model gine --decoder mlp|10"
            "link-gat-edge|link|--task link --model gat --heads 2 --edge-features --hits-k 20 --mrr-negatives 10|40"
            "link-gcn-batches|link|--task link --edge-batch 2000|40")
  for v in "${variants[@]}"; do
    IFS='|' read -r name graph options epochs <<< "$v"; read -ra opts <<< "$options"
    for be in "$DEV" cpu; do
      "$BUILD/plexus" train --data "$OUT/edges_$graph.h5" "${opts[@]}" --backend "$be" --epochs "$epochs" --hidden 32 -q \
        --metrics "$OUT/edges_${name}_$be.jsonl" > "$OUT/edges_${name}_$be.txt" 2>&1 \
        || { echo "$name $be failed:"; tail -3 "$OUT/edges_${name}_$be.txt"; }
    done
    compare_losses "$OUT/edges_${name}_$DEV.jsonl" "$OUT/edges_${name}_cpu.jsonl" "$name cuda vs cpu" 1e-4
  done
  # A link model's predictions on one rank, CUDA vs CPU: every node's 5 best partners and their scores.
  "$BUILD/plexus" train --data "$OUT/edges_link.h5" --task link --model gat --heads 2 --edge-features --backend "$DEV" \
    --epochs 20 --hidden 32 -q --save-model "$OUT/edges_link_model.h5" > "$OUT/edges_predict.txt" 2>&1 || echo "link model failed"
  for be in "$DEV" cpu; do
    "$BUILD/plexus" predict --checkpoint "$OUT/edges_link_model.h5" --data "$OUT/edges_link.h5" --backend "$be" --top-k 5 \
      -o "$OUT/edges_partners_$be.h5" >> "$OUT/edges_predict.txt" 2>&1 || { echo "predict --top-k $be failed:"; tail -3 "$OUT/edges_predict.txt"; }
  done
  "${PYTHON:-python3}" - "$OUT/edges_partners_$DEV.h5" "$OUT/edges_partners_cpu.h5" <<'PY' || echo "top-k partners: FAILED"
import sys, h5py, numpy as np
a, b = (h5py.File(f, "r") for f in sys.argv[1:])
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
for n in names:
    x, y = a[n][...], b[n][...]
    if x.dtype.kind == "f":
        print(f"top-k partners {n}: worst relative difference {np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-6)):.3g}")
    else:
        print(f"top-k partners {n}: {np.mean(x == y) * 100:.2f} % equal")
PY
  for v in "gine|node|--model gine|2x1x2" "link-gcn|link|--task link|1x2x2" "link-gat-edge|link|--task link --model gat --heads 2 --edge-features|2x2x1"; do
    IFS='|' read -r name graph options g <<< "$v"; read -ra opts <<< "$options"
    n=$(( ${g:0:1} * ${g:2:1} * ${g:4:1} ))
    "$BUILD/plexus" train --data "$OUT/edges_$graph.h5" "${opts[@]}" --backend "$DEV" --epochs 20 --hidden 32 -q \
      --metrics "$OUT/edges_ranks_${name}_1.jsonl" > /dev/null 2>&1
    timeout 300 mpirun -np "$n" "$BUILD/plexus" train --data "$OUT/edges_$graph.h5" "${opts[@]}" --backend "$DEV" \
      --grid "$g" --epochs 20 --hidden 32 -q --metrics "$OUT/edges_ranks_${name}_$g.jsonl" > "$OUT/edges_ranks_$name.txt" 2>&1 \
      || { echo "$name $g failed:"; tail -3 "$OUT/edges_ranks_$name.txt"; }
    compare_losses "$OUT/edges_ranks_${name}_$g.jsonl" "$OUT/edges_ranks_${name}_1.jsonl" "$name cuda grid $g vs 1 rank" 1e-5
  done
fi
if has edgebench; then
  # GINE and GAT with edge features against PyG's GINEConv / GATConv(edge_dim) on the same GPU, file and math.
  EB_NODES=${EB_NODES:-500000} EB_DEG=${EB_DEG:-20}
  say "edge models' speed: $EB_NODES nodes, mean degree $EB_DEG, 4 edge features, 3 layers, hidden 128"
  edge_graph "$OUT/edgebench.h5" "$EB_NODES" "$EB_DEG" --train-fraction 0.1 || echo "edgebench graph failed"
  for v in "gine|--model gine" "gat-edge|--model gat --heads 4 --edge-features"; do
    IFS='|' read -r name options <<< "$v"; read -ra opts <<< "$options"
    "$BUILD/plexus" train --data "$OUT/edgebench.h5" "${opts[@]}" --backend "$DEV" --layers 3 --hidden 128 --epochs 8 -q \
      --metrics "$OUT/edgebench_$name.jsonl" > "$OUT/edgebench_$name.txt" 2>&1 || { echo "plexus $name failed"; tail -3 "$OUT/edgebench_$name.txt"; }
    PYTHONUNBUFFERED=1 python3 -W ignore examples/bench/pyg_gnn_peer.py "$OUT/edgebench.h5" --fresh "${opts[@]}" \
      --layers 3 --hidden 128 --epochs 8 --time --device cuda --json > "$OUT/edgebench_${name}_pyg.json" 2> "$OUT/edgebench_${name}_pyg.err" \
      || { echo "pyg $name failed"; tail -3 "$OUT/edgebench_${name}_pyg.err"; }
    python3 - "$name" "$OUT/edgebench_$name.jsonl" "$OUT/edgebench_${name}_pyg.json" <<'PY' || true
import json, statistics, sys
m, px_file, pyg_file = sys.argv[1:]
ep = [r for r in map(json.loads, open(px_file)) if "epoch" in r and "summary" not in r]
px = statistics.median(r["train_seconds"] for r in ep[1:])
pyg = json.load(open(pyg_file))
t = pyg["runs"][0]["train_seconds_median"]
print(f"{m}: train step plexus {px * 1e3:.1f} ms, PyG {t * 1e3:.1f} ms (torch {pyg['torch']}, PyG "
      f"{pyg['torch_geometric']}): ratio plexus/pyg {px / t:.3f}")
PY
  done
fi
if has suite; then
  say "the whole suite: ctest -j$JOBS"
  ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" --timeout 900 > "$OUT/ctest.log" 2>&1
  echo "ctest exit $?"; grep -E "tests passed|Failed|\*\*\*|Not Run|Skipped" "$OUT/ctest.log" | head -40
fi
say done
