#!/usr/bin/env bash
# 3D-parallel training equals single-rank training, through the command line and mpirun (every
# factorization of 2 to 8 ranks in-process: mpi_test_trainer, mpi_test_gnn_models): on grids of
# 2, 3, 4, 6 and 8 ranks, each axis split alone and together, 20 epochs give per-epoch losses within 1e-5 relative of the 1x1x1 run
# and the same final accuracies — on Cora (N=2708, F=1433, C=7: uneven for most grids) with
# 2 layers, and on a synthetic graph whose N, F and C divide by no grid (N=1001, F=37, C=5)
# with 3 layers; 4 layers on some grids. With --layer-order auto (the default) the narrowing
# layers transform first (Cora: T, T; the synthetic graph: T, A, T and T, A, A, T), so both
# orders and mixed role layouts run; every Cora grid is also compared with the one-rank run
# that aggregates first (the same math, another order of the sums).
# Usage: cli_mpi_grids.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passed=0

/usr/bin/python3 - "$work/odd.h5" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(7)
n, f, c = 1001, 37, 5
labels = rng.integers(0, c, n).astype(np.int32)
src = rng.integers(0, n, 6000); dst = rng.integers(0, n, 6000)
same = rng.random(6000) < 0.6  # homophily: many edges inside a class
dst[same] = [rng.choice(np.flatnonzero(labels == labels[s])) for s in src[same]]
pairs = {(int(a), int(b)) for a, b in zip(src, dst) if a != b}
pairs |= {(b, a) for a, b in pairs}
rows = [[] for _ in range(n)]
for a, b in sorted(pairs): rows[a].append(b)
indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
feats = (rng.random((n, f)) + np.eye(c, f)[labels]).astype(np.float32)
split = rng.random(n)
with h5py.File(sys.argv[1], "w") as h:
    h.attrs.update(format="plexus-graph", format_version=np.int32(1), num_nodes=np.int64(n),
                   num_features=np.int64(f), num_classes=np.int32(c), directed=np.int8(0))
    h["graph/indptr"] = indptr; h["graph/indices"] = np.array([b for r in rows for b in r], np.int64)
    h["features"] = feats; h["labels"] = labels
    h["masks/train"] = (split < 0.3).astype(np.uint8); h["masks/val"] = ((split >= 0.3) & (split < 0.5)).astype(np.uint8)
    h["masks/test"] = (split >= 0.5).astype(np.uint8)
PY

compare() {  # compare NAME REFERENCE CANDIDATE
  if /usr/bin/python3 - "$2" "$3" <<'PY'
import json, sys
ref, got = ([json.loads(l) for l in open(p)][1:] for p in sys.argv[1:3])  # not the header
assert len(ref) == len(got), f"{len(got)} lines, expected {len(ref)}"
worst = max(abs(a["loss"] - b["loss"]) / abs(a["loss"]) for a, b in zip(ref[:-1], got[:-1]))
assert worst <= 1e-5, f"loss differs by {worst:.2e} relative"
for key in ("train_acc", "val_acc", "test_acc"):
    assert ref[-2][key] == got[-2][key], f"final {key} {got[-2][key]} != {ref[-2][key]}"
assert ref[-1]["test_acc"] == got[-1]["test_acc"], "test accuracy at best validation differs"
PY
  then passed=$((passed + 1)); else echo "FAIL [$1]"; failures=$((failures + 1)); fi
}

run() {  # run NAME GRID ARGS... -> metrics in $work/NAME.jsonl
  local name=$1 grid=$2; shift 2
  local p=$(( ${grid//x/*} ))
  if [[ $p -eq 1 ]]; then
    "$plexus" train --grid "$grid" --quiet --threads 1 --metrics "$work/$name.jsonl" "$@" >/dev/null
  else
    timeout 300 mpirun -np "$p" "$plexus" train --grid "$grid" --quiet --threads 1 --metrics "$work/$name.jsonl" "$@" >/dev/null
  fi || { echo "FAIL [$name]: exit code $?"; failures=$((failures + 1)); return 1; }
}

cora=(--data "$src/data/cora.h5" --epochs 20 --layers 2)
odd3=(--data "$work/odd.h5" --epochs 20 --layers 3 --hidden 13)
odd4=(--data "$work/odd.h5" --epochs 20 --layers 4 --hidden 11)
run cora-1x1x1 1x1x1 "${cora[@]}"
run cora-af-1x1x1 1x1x1 "${cora[@]}" --layer-order aggregate-first
compare "cora 1x1x1 auto vs aggregate-first" "$work/cora-af-1x1x1.jsonl" "$work/cora-1x1x1.jsonl"
run odd3-1x1x1 1x1x1 "${odd3[@]}"
run odd4-1x1x1 1x1x1 "${odd4[@]}"
for g in 2x1x1 1x3x1 1x1x3 1x2x2 4x1x1 3x2x1 1x2x3 2x2x2; do
  run "cora-$g" "$g" "${cora[@]}" && compare "cora $g" "$work/cora-1x1x1.jsonl" "$work/cora-$g.jsonl" &&
    compare "cora $g vs aggregate-first" "$work/cora-af-1x1x1.jsonl" "$work/cora-$g.jsonl"
  run "odd3-$g" "$g" "${odd3[@]}" && compare "odd 3 layers $g" "$work/odd3-1x1x1.jsonl" "$work/odd3-$g.jsonl"
done
for g in 1x3x1 2x2x2 2x3x1; do
  run "odd4-$g" "$g" "${odd4[@]}" && compare "odd 4 layers $g" "$work/odd4-1x1x1.jsonl" "$work/odd4-$g.jsonl"
done
echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
