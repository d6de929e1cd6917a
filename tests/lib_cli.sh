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

# make_text_graphs: text graphs in $work for the converters on ranks and in passes: weighted.txt
# (12-digit skewed ids, duplicates, self-loops, comments, mixed separators), general.mtx,
# sym.mtx (pattern symmetric), int.mtx (integer, 700 entries), dense.txt (1-based, CRLF).
make_text_graphs() {
  $py - "$work" <<'PY'
import random, sys
work = sys.argv[1]
rng = random.Random(7)
# Weighted, 12-digit ids, skewed degrees, duplicates (different weights), self-loops, comments.
ids = [300000000000 + rng.randrange(10**9) for _ in range(400)]
with open(f"{work}/weighted.txt", "w") as f:
    f.write("# a comment\n% another\n\n")
    for k in range(3000):
        u = ids[int(len(ids) * rng.random() ** 3)]
        v = ids[rng.randrange(len(ids))]
        f.write(f"{u}\t{v}\t{rng.uniform(0.1, 3):.4f}\n")
        if k % 97 == 0: f.write(f"{u} {u} 1.0\n# mid comment\n")
        if k % 89 == 0: f.write(f"{u},{v},{rng.uniform(5, 6):.3f}\n")
# MatrixMarket: general real with comments, symmetric pattern, integer.
n = 211
with open(f"{work}/general.mtx", "w") as f:
    lines = [f"{rng.randrange(1, n + 1)} {rng.randrange(1, n + 1)} {rng.uniform(-1, 3):.5f}" for _ in range(1800)]
    f.write(f"%%MatrixMarket matrix coordinate real general\n% comment\n%\n{n} {n} {len(lines)}\n")
    for k, l in enumerate(lines):
        f.write(l + "\n")
        if k % 301 == 0: f.write("% in between\n")
with open(f"{work}/sym.mtx", "w") as f:
    pairs = sorted({(max(a, b), min(a, b)) for a, b in ((rng.randrange(1, n + 1), rng.randrange(1, n + 1)) for _ in range(900))})
    f.write(f"%%MatrixMarket matrix coordinate pattern symmetric\n{n} {n} {len(pairs)}\n")
    for a, b in pairs: f.write(f"{a} {b}\n")
with open(f"{work}/int.mtx", "w") as f:
    f.write(f"%%MatrixMarket matrix coordinate integer general\n{n} {n} 700\n")
    for _ in range(700): f.write(f"{rng.randrange(1, n + 1)} {rng.randrange(1, n + 1)} {rng.randrange(1, 9)}\n")
# Unweighted, 1-based dense ids, CRLF endings.
with open(f"{work}/dense.txt", "w", newline="") as f:
    for _ in range(2500):
        f.write(f"{rng.randrange(1, 301)} {rng.randrange(1, 301)}\r\n")
PY
}

# scratch_empty NAME: $work/scratch (the passes' --scratch DIR) holds nothing.
scratch_empty() { [ -z "$(ls -A "$work/scratch")" ] && ok || fail "$1: left in the scratch directory: $(ls -A "$work/scratch")"; }
