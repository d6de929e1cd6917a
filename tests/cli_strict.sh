#!/usr/bin/env bash
# --strict of `plexus train` and `plexus predict` (docs/format-v1.md, "Validation"): a file whose
# undirected graph stores an edge one way only, or whose masks share a node, trains by default
# and is refused under --strict with one line `plexus: error: FILE: ...` and exit 2 — on one
# rank and on two, on shards and on the whole graph read by every rank (--balance permute).
# Usage: cli_strict.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passed=0
export OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
mpi="mpirun -np 2"
[[ $(id -u) -eq 0 ]] && mpi="mpirun --allow-run-as-root -np 2"

"$plexus" generate rmat --scale 6 --edge-factor 4 --feature-width 8 --classes 3 -o "$work/good.h5" >/dev/null || {
  echo "FAIL: could not generate the base graph"; exit 1; }

# mutate NAME PYTHON_CODE: copy good.h5 to NAME.h5 and run the code with `f` open for writing.
mutate() {
  cp "$work/good.h5" "$work/$1.h5"
  $py -c "import h5py, numpy as np
f = h5py.File('$work/$1.h5', 'r+')
$2
f.close()"
}
# Node 0 in the train and the test mask (and in no other pair).
mutate overlap "t = f['masks/train'][...]; v = f['masks/val'][...]; s = f['masks/test'][...]
t[0], v[0], s[0] = 1, 0, 1; f['masks/train'][...] = t; f['masks/val'][...] = v; f['masks/test'][...] = s"
# The first edge u -> v (u != v) of the graph removed: v -> u stays, stored one way only.
mutate oneway "p = f['graph/indptr'][...]; i = f['graph/indices'][...]
rows = np.repeat(np.arange(len(p) - 1), np.diff(p)); e = int(np.nonzero(rows != i)[0][0])
print(int(i[e]), int(rows[e]), file=open('$work/oneway.edge', 'w'))
i = np.delete(i, e); p[rows[e] + 1:] -= 1
del f['graph/indices']; f['graph/indices'] = i; f['graph/indptr'][...] = p
if 'graph/values' in f: w = np.delete(f['graph/values'][...], e); del f['graph/values']; f['graph/values'] = w"
read -r back_u back_v <"$work/oneway.edge"  # the edge left: back_u -> back_v, with no back_v -> back_u

# run NAME WANT_RC WANT_STDERR_SUBSTRING -- COMMAND...
run() {
  local name=$1 want_rc=$2 want=$3; shift 4
  "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(grep -c "^plexus: error" "$work/err")
  if [[ $rc -ne $want_rc ]]; then
    echo "FAIL [$name]: rc=$rc, wanted $want_rc:"; cat "$work/err"; failures=$((failures + 1))
  elif [[ $want_rc -eq 2 ]] && { [[ $lines -ne 1 ]] || ! grep -qF "plexus: error: $want" "$work/err"; }; then
    echo "FAIL [$name]: $lines error lines, wanted 'plexus: error: $want':"; cat "$work/err"; failures=$((failures + 1))
  else
    passed=$((passed + 1))
  fi
}
train() { "$plexus" train --epochs 1 --hidden 4 --quiet "$@"; }

run good-strict 0 "" -- train --data "$work/good.h5" --strict --save-model "$work/model.h5"
run overlap-default 0 "" -- train --data "$work/overlap.h5"
run overlap-strict 2 "$work/overlap.h5: /masks/test: node 0 is also in /masks/train" -- \
  train --data "$work/overlap.h5" --strict
run overlap-strict-2-ranks 2 "$work/overlap.h5: /masks/test: node 0 is also in /masks/train" -- \
  $mpi "$plexus" train --epochs 1 --hidden 4 --quiet --data "$work/overlap.h5" --strict
run overlap-strict-whole 2 "$work/overlap.h5: /masks/test: node 0 is also in /masks/train" -- \
  train --data "$work/overlap.h5" --strict --balance permute
run oneway-default 0 "" -- train --data "$work/oneway.h5"
run oneway-strict 2 "$work/oneway.h5: /graph/indices: undirected graph, but an edge is stored one way only" -- \
  train --data "$work/oneway.h5" --strict
run oneway-strict-2-ranks 2 "$work/oneway.h5: /graph/indices: undirected graph, but an edge is stored one way only" -- \
  $mpi "$plexus" train --epochs 1 --hidden 4 --quiet --data "$work/oneway.h5" --strict
run oneway-strict-whole 2 "$work/oneway.h5: /graph/indices: undirected graph, but edge $back_u -> $back_v has no $back_v -> $back_u" -- \
  train --data "$work/oneway.h5" --strict --balance permute
run predict-default 0 "" -- "$plexus" predict --data "$work/overlap.h5" --checkpoint "$work/model.h5" --quiet \
  -o "$work/p1.h5"
run predict-strict 2 "$work/overlap.h5: /masks/test: node 0 is also in /masks/train" -- \
  "$plexus" predict --data "$work/overlap.h5" --checkpoint "$work/model.h5" --quiet -o "$work/p2.h5" --strict
run predict-strict-good 0 "" -- "$plexus" predict --data "$work/good.h5" --checkpoint "$work/model.h5" --quiet \
  -o "$work/p3.h5" --strict

echo "cli_strict: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
