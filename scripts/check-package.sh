#!/usr/bin/env bash
# The CMake package as a consumer sees it, somewhere else than where it was built or installed:
# installs BUILD_DIR (default build/) into a temporary prefix, checks that its export files hold
# no path into the source or build tree or into that prefix, moves the prefix (copies it to
# another directory and deletes the original), configures examples/embed (a separate C++-only
# project) against the copy with nothing but CMAKE_PREFIX_PATH and a plain find_package(plexus),
# builds it, checks that the program depends on no CUDA library (ldd), and runs it on one
# process and under mpirun on 2 and 4 ranks. When the package has the `cuda` component, embed is
# also built with it (-DEMBED_CUDA=ON) and run once (on the CPU where no GPU is visible). Then
# examples/pipeline (train with class weights and the best weights restored, save, score an
# unlabelled snapshot with new nodes, one table keyed by id; a link model and the new accounts' likely
# counterparties) on 1, 2 and 4 ranks: the same table and the same counterparties.
# Exit status 0 when every step passed (the example itself checks its accuracy).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=$(mktemp -d "${TMPDIR:-/tmp}/plexus-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "check-package: FAILED: $*" >&2; exit 1; }

echo "== install $build into $work/installed"
cmake --install "$build" --prefix "$work/installed" > "$work/install.log"
exports=("$work"/installed/lib*/cmake/plexus/*.cmake)
[ -e "${exports[0]}" ] || fail "no lib*/cmake/plexus/*.cmake under the prefix"
src=$(pwd -P)
bld=$(cd "$build" && pwd -P)
for path in "$src" "$bld" "$work/installed"; do
  if grep -nF "$path" "${exports[@]}"; then
    fail "the installed package files above hold the absolute path $path: the package would not travel"
  fi
done

echo "== move the prefix to $work/moved (the original is deleted)"
cp -a "$work/installed" "$work/moved"
rm -rf "$work/installed"

echo "== configure and build examples/embed against it (find_package(plexus): CPU only)"
cmake -S examples/embed -B "$work/embed" -DCMAKE_PREFIX_PATH="$work/moved" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" ||
  { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/embed" -j2 > "$work/build.log" || { cat "$work/build.log"; fail "build"; }
if grep -q "^CUDAToolkit_" "$work/embed/CMakeCache.txt"; then
  fail "a plain find_package(plexus) looked for the CUDA toolkit"
fi
echo "== ldd: the consumer loads no CUDA library"
if ldd "$work/embed/embed" | grep -E 'lib(cudart|cublas|cublasLt|cusparse|nccl|cuda)\.so'; then
  fail "the CPU-only consumer depends on the CUDA libraries above: it would not start on a node without CUDA"
fi

echo "== run"
"$work/embed/embed"
mpirun --oversubscribe -np 2 "$work/embed/embed" 1x2x1
mpirun --oversubscribe -np 4 "$work/embed/embed" 2x1x2

echo "== examples/pipeline against it: train, save, score a snapshot, one table, counterparties; 1, 2 and 4 ranks"
cmake -S examples/pipeline -B "$work/pipeline" -DCMAKE_PREFIX_PATH="$work/moved" -DCMAKE_BUILD_TYPE=Release \
  > "$work/configure-pipeline.log" || { cat "$work/configure-pipeline.log"; fail "configure (pipeline)"; }
cmake --build "$work/pipeline" -j2 > "$work/build-pipeline.log" || { cat "$work/build-pipeline.log"; fail "build (pipeline)"; }
if ldd "$work/pipeline/pipeline" | grep -E 'lib(cudart|cublas|cublasLt|cusparse|nccl|cuda)\.so'; then
  fail "the pipeline depends on the CUDA libraries above"
fi
for np in 1 2 4; do
  mkdir -p "$work/run$np"
  mpirun --oversubscribe -np "$np" "$work/pipeline/pipeline" "$work/run$np"
done
# The same table on every rank count: every id and class equal, every score within 1e-4 of the
# column's largest magnitude (the sums run in another order on another grid).
for np in 2 4; do
  python3 - "$work/run1/scores.csv" "$work/run$np/scores.csv" <<'PY' || fail "the pipeline's table on $np ranks differs from 1 rank's"
import csv, sys
a, b = (list(csv.reader(open(f))) for f in sys.argv[1:3])
assert a[0] == b[0] and len(a) == len(b) and len(a) > 1, "header or row count"
for ra, rb in zip(a[1:], b[1:]):
    assert ra[:2] == rb[:2], f"id/class {ra[:2]} vs {rb[:2]}"
for c in range(2, len(a[0])):
    x, y = [float(r[c]) for r in a[1:]], [float(r[c]) for r in b[1:]]
    top = max(max(abs(v) for v in x), 1e-30)
    err = max(abs(p - q) for p, q in zip(x, y))
    assert err <= 1e-4 * max(top, 1.0), f"column {a[0][c]}: {err} of {top}"
PY
  # Stage 3's counterparties: the same accounts and scores (within 1e-4), the same partners but
  # where two candidates' scores nearly tie.
  /usr/bin/python3 - "$work/run1/counterparties.h5" "$work/run$np/counterparties.h5" <<'PY' || fail "the pipeline's counterparties on $np ranks differ from 1 rank's"
import sys, h5py, numpy as np
a, b = (h5py.File(f) for f in sys.argv[1:3])
assert a.attrs["num_rows"] == b.attrs["num_rows"] == 60 and a.attrs["k"] == 5
assert np.array_equal(a["node_id"][...], b["node_id"][...])
sa, sb = a["scores"][...], b["scores"][...]
assert np.abs(sa - sb).max() <= 1e-4 * max(1.0, np.abs(sa).max()), np.abs(sa - sb).max()
assert (a["partners"][...] == b["partners"][...]).mean() > 0.95
PY
done

cuda_exports=("$work"/moved/lib*/cmake/plexus/plexusCudaTargets.cmake)
if [ -e "${cuda_exports[0]}" ]; then
  echo "== the cuda component: examples/embed with find_package(plexus COMPONENTS cuda)"
  cmake -S examples/embed -B "$work/embed-cuda" -DEMBED_CUDA=ON -DCMAKE_PREFIX_PATH="$work/moved" \
    -DCMAKE_BUILD_TYPE=Release > "$work/configure-cuda.log" || { cat "$work/configure-cuda.log"; fail "configure (cuda)"; }
  cmake --build "$work/embed-cuda" -j2 > "$work/build-cuda.log" || { cat "$work/build-cuda.log"; fail "build (cuda)"; }
  ldd "$work/embed-cuda/embed" | grep -qE 'libcudart\.so' || fail "the cuda component's consumer does not link libcudart"
  "$work/embed-cuda/embed"
fi
echo "package check passed"
