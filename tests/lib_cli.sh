# Shared set-up of the command-line tests (sourced by tests/cli_*.sh after they set
# plexus=$1 src=$2): a scratch directory, pass/fail counters and expect_error.
py=/usr/bin/python3
cora=$src/data/cora.h5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passed=0
ok() { passed=$((passed + 1)); }
fail() { echo "FAIL [$1]"; failures=$((failures + 1)); }

# expect_error NAME EXPECTED_SUBSTRING ARGS...: plexus ARGS exits 2 with one stderr line
# `plexus: error: ...EXPECTED_SUBSTRING...`.
expect_error() {
  local name=$1 want=$2; shift 2
  "$plexus" "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(wc -l <"$work/err")
  if [[ $rc -ne 2 || $lines -ne 1 ]] || ! grep -q "^plexus: error: .*$want" "$work/err"; then
    fail "$name"; echo "  rc=$rc, $lines stderr lines, wanted '$want':"; cat "$work/err"
  else ok; fi
}

# mpi_error NAME SUBSTRING ARGS...: like expect_error on 4 ranks (mpirun adds its own lines).
mpi_error() {
  local name=$1 want=$2; shift 2
  timeout 60 mpirun -np 4 "$plexus" "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(grep -c "^plexus: error: " "$work/err")
  if [[ $rc -ne 2 || $lines -ne 1 ]] || ! grep -q "^plexus: error: .*$want" "$work/err"; then
    fail "mpi $name"; echo "  rc=$rc (124 = hang), $lines error lines:"; cat "$work/err"
  else ok; fi
}

# same_datasets A B: two HDF5 files hold the same objects, values and attributes
# (tests/h5_same_datasets.py); prints the differences.
same_datasets() { $py "$src/tests/h5_same_datasets.py" "$1" "$2"; }

# make_small_graphs: $work/small.h5 and $work/small_directed.h5, a 37-node graph with 12-digit
# ids, weights, a duplicate edge (first weight kept), self-loops, an edge stored both ways with
# different weights, two isolated nodes (in the node file only), class names and node weights
# (37 nodes: no rank or pass count below it divides it).
make_small_graphs() {
  $py - "$work" <<'PY'
import random, sys
work = sys.argv[1]
rng = random.Random(5)
ids = [100000000000 + 7919 * k for k in range(37)]
edges = []
for _ in range(90):
    u, v = rng.randrange(35), rng.randrange(35)
    edges.append((ids[u], ids[v], round(rng.uniform(0.1, 2.0), 3)))
edges += [(ids[3], ids[3], 1.5), (ids[4], ids[9], 0.5), (ids[4], ids[9], 0.7), (ids[9], ids[4], 1.25)]
with open(f"{work}/edges.txt", "w") as f:
    for u, v, w in edges: f.write(f"{u} {v} {w}\n")
names = ["cat", "dog", "emu"]
with open(f"{work}/nodes.csv", "w") as f:
    f.write("id,label,split,f0,f1,f2\n")
    for k, i in enumerate(ids):
        split = ["train", "val", "test", ""][k % 4]
        f.write(f"{i},{names[k % 3]},{split},{rng.random():.5f},{rng.random():.5f},{k}\n")
PY
  "$plexus" convert edgelist "$work/edges.txt" --nodes "$work/nodes.csv" -o "$work/small.h5" >/dev/null &&
    $py -c "
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], 'r+') as f:
    n = int(f.attrs['num_nodes'])
    f['node_weights'] = np.linspace(0.5, 2.0, n).astype(np.float32)
  " "$work/small.h5" && ok || fail "make the small graph"
  "$plexus" convert edgelist "$work/edges.txt" --nodes "$work/nodes.csv" --directed -o "$work/small_directed.h5" >/dev/null &&
    ok || fail "make the directed graph"
}
