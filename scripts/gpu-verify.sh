#!/usr/bin/env bash
# Run THERE, on a lent GPU machine, from the repository root (after scripts/gpu-setup.sh): builds
# for sm_90 and verifies the CUDA backend. Logs go to $OUT (default /tmp/plexus-gpu).
#   scripts/gpu-verify.sh [steps...]   steps: env build unit sanitize cora suite (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/plexus-gpu}; mkdir -p "$OUT"
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
steps=("$@"); ((${#steps[@]})) || steps=(env build unit sanitize cora suite)
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
         cmake --build "$BUILD" -j "$JOBS"; } > "$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"; say "BUILD FAILED"; exit 1
  fi
  grep -iE "warning" "$OUT/build.log" | head -20
fi
# The CUDA tests: test_cuda_backend (Cora left out under the sanitizers: too slow there) and the
# cuda instances of the backend-parameterised kernel suite.
cuda_tests=("test_cuda_backend --gtest_filter=-*Cora*" "test_kernels --gtest_filter=*/cuda")
if has unit; then
  say "test_cuda_backend, test_kernels (cuda)"
  for t in "test_cuda_backend" "test_kernels --gtest_filter=*/cuda"; do
    read -r bin filter <<< "$t"
    "$BUILD/tests/$bin" ${filter:+"$filter"} 2>&1 | tee "$OUT/$bin.log" | grep -E "^\[  (FAILED|  OK|PASSED|SKIPPED)|cora|Failure|error" | head -60
  done
fi
if has sanitize; then
  say "compute-sanitizer memcheck / racecheck / synccheck (${cuda_tests[*]})"
  for tool in memcheck racecheck synccheck; do
    for t in "${cuda_tests[@]}"; do
      read -r bin filter <<< "$t"
      log="$OUT/sanitize_${tool}_$bin.log"
      PLEXUS_CUDA_SYNC_CHECK=1 timeout 600 compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "$BUILD/tests/$bin" "$filter" > "$log" 2>&1
      echo "$tool $bin: exit $? ($(grep -cE '^\[       OK' "$log") tests ok) $(grep -m1 'ERROR SUMMARY' "$log")"
    done
  done
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
if has suite; then
  say "the whole suite: ctest -j$JOBS"
  ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" --timeout 900 > "$OUT/ctest.log" 2>&1
  echo "ctest exit $?"; grep -E "tests passed|Failed|\*\*\*|Not Run|Skipped" "$OUT/ctest.log" | head -40
fi
say done
