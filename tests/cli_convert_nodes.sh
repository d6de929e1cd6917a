#!/usr/bin/env bash
# Your own labelled data in, from the user's side: a planted-partition graph (600 nodes, 4
# classes, features with class signal) as a text edge list with sparse original ids
# (1000 + 7k) and isolated nodes, plus a node CSV of id,label,split,features in shuffled order.
# `plexus convert edgelist --nodes` keeps every node, trains well above chance, keeps the
# original ids (/node_ids, and `plexus predict`'s node_id column), maps class names
# (/class_names), reads TSV and .npy features alike, and splits stratified by label (--split).
# `plexus prepare` (permute, metis) keeps both, so predict on a prepared file, on 1 or 2 ranks,
# reports the original ids and the same classes as on the unprepared file.
# Bad node data ends with exit 2 and one line naming the file and line.
# Usage: cli_convert_nodes.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"

# run NAME ARGS...: plexus ARGS succeeds (its output in $work/NAME.out).
run() {
  local name=$1; shift
  if "$plexus" "$@" >"$work/$name.out" 2>&1; then ok; else fail "$name"; cat "$work/$name.out"; fi
}
# check NAME: the python on stdin (argv[1] = $work) exits 0.
check() {
  if $py - "$work" >"$work/check.out" 2>&1; then ok; cat "$work/check.out"; else fail "$1"; cat "$work/check.out"; fi
}

$py - "$work" <<'PY' || { echo "FAIL [generate]"; exit 1; }
import sys, numpy as np
w = sys.argv[1]
rng = np.random.default_rng(7)
n, C, F = 600, 4, 8
y = rng.integers(0, C, n)
ids = 1000 + 7 * np.arange(n)                   # sparse original ids
isolated = set(rng.choice(n, 12, replace=False).tolist())
x = 0.7 * rng.choice([-1.0, 1.0], size=(C, F))[y] + rng.normal(size=(n, F))
with open(f"{w}/edges.txt", "w") as f:
    f.write("# planted partition, original ids\n")
    for u in range(n):
        if u in isolated: continue
        for _ in range(3):
            same = rng.random() < 0.85
            pool = np.flatnonzero((y == y[u]) if same else (y != y[u]))
            v = int(rng.choice(pool))
            if v != u and v not in isolated: f.write(f"{ids[u]} {ids[v]}\n")
split = rng.choice(["train", "val", "test"], n, p=[0.6, 0.2, 0.2])
split[:3] = ["Train", "VALID", "validation"]     # any case, valid / validation
order = rng.permutation(n)                       # file order != id order
names = np.array(["delta", "alpha", "charlie", "bravo"])   # class k is names[k]
fcols = ",".join(f"f{j}" for j in range(F))
with open(f"{w}/nodes.csv", "w") as a, open(f"{w}/names.csv", "w") as b, open(f"{w}/nosplit.csv", "w") as c, \
     open(f"{w}/nodes.tsv", "w") as t, open(f"{w}/ids.csv", "w") as d:
    a.write(f"id,label,split,{fcols}\n"); b.write(f"id,label,split,{fcols}\n"); c.write(f"id,label,{fcols}\n")
    t.write("\t".join(["node"] + [f"f{j}" for j in range(F)] + ["cls", "part"]) + "\n")
    d.write("id,label,split\n")
    for i in order:
        feats = ",".join(repr(float(v)) for v in x[i])
        a.write(f"{ids[i]},{y[i]},{split[i]},{feats}\n")
        b.write(f'{ids[i]},"{names[y[i]]}",{split[i]},{feats}\n')
        c.write(f"{ids[i]},{y[i]},{feats}\n")
        t.write("\t".join([str(ids[i])] + [repr(float(v)) for v in x[i]] + [str(y[i]), split[i]]) + "\n")
        d.write(f"{ids[i]},{y[i]},{split[i]}\n")
np.save(f"{w}/x.npy", x[order])                  # float64, row k = data line k
np.save(f"{w}/x32.npy", x[order].astype(np.float32))
np.save(f"{w}/x_short.npy", x[order][:-1])
np.save(f"{w}/x_int.npy", np.zeros((n, F), np.int64))
np.save(f"{w}/x_fortran.npy", np.asfortranarray(x[order]))
open(f"{w}/x_bad.npy", "wb").write(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8',  ")
np.savez(f"{w}/truth.npz", ids=ids, y=y, x=x, order=order, isolated=np.array(sorted(isolated)), split=split)
PY

# ---- the journey: convert, train above chance, isolated nodes kept, ids kept ------------------
run convert convert edgelist "$work/edges.txt" --nodes "$work/nodes.csv" -o "$work/g.h5"
grep -q "600 nodes" "$work/convert.out" || fail "600 nodes reported (isolated nodes included)"
run train train --data "$work/g.h5" --epochs 60 --threads 1 --quiet --metrics "$work/m.jsonl" --save-model "$work/model.h5"
check "file contents and accuracy" <<'PY'
import sys, json, h5py, numpy as np
w = sys.argv[1]
t = np.load(f"{w}/truth.npz")
order = t["order"]
with h5py.File(f"{w}/g.h5") as f:
    assert f.attrs["num_nodes"] == 600 and f.attrs["num_classes"] == 4 and f.attrs["num_features"] == 8
    assert (f["node_ids"][()] == t["ids"][order]).all(), "node k = data line k, original id kept"
    assert (f["labels"][()] == t["y"][order]).all()
    assert np.allclose(f["features"][()], t["x"][order].astype(np.float32))
    deg = np.diff(f["graph/indptr"][()])
    pos = {int(i): k for k, i in enumerate(order)}
    assert all(deg[pos[int(i)]] == 0 for i in t["isolated"]), "isolated nodes are nodes without edges"
    sp = t["split"][order]
    assert (f["masks/train"][()] == (np.char.lower(sp) == "train")).all()
    assert f["masks/val"][()][:0].size == 0 and f["masks/val"][()].sum() == np.isin(np.char.lower(sp), ["val", "valid", "validation"]).sum()
    assert "class_names" not in f
acc = json.loads(open(f"{w}/m.jsonl").read().splitlines()[-1])["test_acc"]
print("test accuracy", acc)
assert acc > 0.7, f"test accuracy {acc} (chance 0.25)"
PY

# ---- class names, TSV, .npy: the same graph ----------------------------------------------------
run names convert edgelist "$work/edges.txt" --nodes "$work/names.csv" -o "$work/names.h5"
run tsv convert edgelist "$work/edges.txt" --nodes "$work/nodes.tsv" --id-column node --label-column cls \
  --split-column part -o "$work/tsv.h5"
run npy convert edgelist "$work/edges.txt" --nodes "$work/ids.csv" --features "$work/x.npy" -o "$work/npy.h5"
run npy32 convert edgelist "$work/edges.txt" --nodes "$work/ids.csv" --features "$work/x32.npy" -o "$work/npy32.h5"
run pick convert edgelist "$work/edges.txt" --nodes "$work/nodes.csv" --feature-columns f0,f3 -o "$work/pick.h5"
check "class names, TSV, npy" <<'PY'
import sys, h5py, numpy as np
w = sys.argv[1]
t = np.load(f"{w}/truth.npz")
order = t["order"]
names = np.array(["delta", "alpha", "charlie", "bravo"])
ref = h5py.File(f"{w}/g.h5")
with h5py.File(f"{w}/names.h5") as f:
    cn = [s.decode() for s in f["class_names"][()]]
    assert cn == sorted(names), cn
    lab = f["labels"][()]
    assert [cn[c] for c in lab] == list(names[t["y"][order]]), "label k names the node's class"
for other in ("tsv", "npy", "npy32"):
    with h5py.File(f"{w}/{other}.h5") as f:
        for d in ("node_ids", "labels", "features", "masks/train", "masks/val", "masks/test", "graph/indices"):
            assert (f[d][()] == ref[d][()]).all(), f"{other}: {d} differs from the CSV's"
with h5py.File(f"{w}/pick.h5") as f:
    assert (f["features"][()] == ref["features"][()][:, [0, 3]]).all()
PY

# ---- --split: stratified by label, deterministic by seed ---------------------------------------
run split1 convert edgelist "$work/edges.txt" --nodes "$work/nosplit.csv" --split 0.5,0.25,0.25 -o "$work/s1.h5"
run split1b convert edgelist "$work/edges.txt" --nodes "$work/nosplit.csv" --split 0.5,0.25,0.25 --split-seed 1 -o "$work/s1b.h5"
run split2 convert edgelist "$work/edges.txt" --nodes "$work/nosplit.csv" --split 0.5,0.25,0.25 --split-seed 2 -o "$work/s2.h5"
run nosplit convert edgelist "$work/edges.txt" --nodes "$work/nosplit.csv" -o "$work/none.h5"
grep -q "no train nodes" "$work/nosplit.out" || fail "no split: the summary says there is nothing to train on"
check "stratified split" <<'PY'
import sys, h5py, numpy as np
w = sys.argv[1]
m = {}
for s in ("s1", "s1b", "s2", "none"):
    with h5py.File(f"{w}/{s}.h5") as f:
        m[s] = [f[f"masks/{k}"][()] for k in ("train", "val", "test")]
        y = f["labels"][()]
for c in range(4):
    nc = (y == c).sum()
    got = [int(mask[y == c].sum()) for mask in m["s1"]]
    want = [int(np.floor(nc * a + 0.5)) for a in (0.5, 0.75, 1.0)]
    want = [want[0], want[1] - want[0], want[2] - want[1]]
    assert got == want, (c, nc, got, want)
assert all((a == b).all() for a, b in zip(m["s1"], m["s1b"])), "same seed, same split (default seed 1)"
assert any((a != b).any() for a, b in zip(m["s1"], m["s2"])), "another seed, another split"
assert (sum(m["s1"]) == 1).all(), "every labelled node in exactly one split"
assert all(mask.sum() == 0 for mask in m["none"]), "no split: masks empty (as before)"
PY

# ---- predict writes the original ids -----------------------------------------------------------
run predict predict --data "$work/g.h5" --checkpoint "$work/model.h5" -o "$work/pred.h5" --threads 1 --quiet
if timeout 60 mpirun -np 2 "$plexus" predict --grid 2x1x1 --threads 1 --quiet --data "$work/g.h5" \
     --checkpoint "$work/model.h5" -o "$work/pred2.h5" >"$work/mpi.out" 2>&1; then ok; else fail "predict on 2 ranks"; cat "$work/mpi.out"; fi
check "predictions carry original ids" <<'PY'
import sys, h5py, numpy as np
w = sys.argv[1]
ids = h5py.File(f"{w}/g.h5")["node_ids"][()]
for p in ("pred", "pred2"):
    with h5py.File(f"{w}/{p}.h5") as f:
        assert (f["node_id"][()] == ids).all(), p
    assert (h5py.File(f"{w}/{p}.h5")["class"][()] == h5py.File(f"{w}/pred.h5")["class"][()]).all(), p
PY

# ---- prepare keeps the original ids (in its P2 order) and the class names ----------------------
# g.h5 has integer labels, names.h5 class names; both the sparse ids 1000 + 7k in file order.
# Each is prepared with two orders (permute) and one (metis), and one prepared file is
# prepared again (its input rows are already in a P2 order, which its predictions keep).
# Predictions on every prepared file, on 1 and 2 ranks, name the same classes by original id.
for g in g names; do
  run "prepare-$g-permute" prepare "$work/$g.h5" -o "$work/$g-permute.h5" --balance permute --quiet
  run "prepare-$g-metis" prepare "$work/$g.h5" -o "$work/$g-metis.h5" --balance metis --grid 2x1x1 --quiet
done
run prepare-again prepare "$work/g-permute.h5" -o "$work/g-again.h5" --balance permute --balance-seed 5 --quiet
prepared="g-permute g-metis names-permute names-metis g-again"
for p in names $prepared; do
  run "predict-$p" predict --data "$work/$p.h5" --checkpoint "$work/model.h5" -o "$work/pred-$p.h5" --threads 1 --quiet
  if timeout 60 mpirun -np 2 "$plexus" predict --grid 2x1x1 --threads 1 --quiet --data "$work/$p.h5" \
       --checkpoint "$work/model.h5" -o "$work/pred2-$p.h5" >"$work/mpi-$p.out" 2>&1; then ok
  else fail "predict on 2 ranks: $p"; cat "$work/mpi-$p.out"; fi
done
PREPARED=$prepared check "prepared files keep ids and class names; predict reports them" <<'PY'
import os, sys, h5py, numpy as np
w = sys.argv[1]
t = np.load(f"{w}/truth.npz")
# The reference: predictions on the unprepared file, by original id.
with h5py.File(f"{w}/pred.h5") as f:
    ref = dict(zip(f["node_id"][()].tolist(), f["class"][()].tolist()))
assert sorted(ref) == sorted(t["ids"].tolist())
ins = {"g": h5py.File(f"{w}/g.h5"), "names": h5py.File(f"{w}/names.h5")}
ins["g-permute"] = h5py.File(f"{w}/g-permute.h5")
source = {"g-permute": "g", "g-metis": "g", "names-permute": "names", "names-metis": "names", "g-again": "g-permute"}
for p in os.environ["PREPARED"].split():
    src = ins[source[p]]
    with h5py.File(f"{w}/{p}.h5") as f:
        assert "prepared" in f, p
        # Row k is node node_id_p2[k] of the input: its original id, like /labels.
        assert (f["node_ids"][()] == src["node_ids"][()][f["prepared/node_id_p2"][()]]).all(), p
        assert sorted(f["node_ids"][()].tolist()) == sorted(t["ids"].tolist()), p
        by_id = dict(zip(f["node_ids"][()].tolist(), f["labels"][()].tolist()))
        assert all(by_id[i] == l for i, l in zip(src["node_ids"][()].tolist(), src["labels"][()].tolist())), p
        if "class_names" in src:
            assert f["class_names"].asstr()[()].tolist() == src["class_names"].asstr()[()].tolist(), p
            assert f["class_names"].asstr()[()].tolist() == ["alpha", "bravo", "charlie", "delta"], p
        else:
            assert "class_names" not in f, p
for p in ["names"] + os.environ["PREPARED"].split():
    for q in (f"pred-{p}", f"pred2-{p}"):
        with h5py.File(f"{w}/{q}.h5") as f:
            got = f["node_id"][()]
            # Rows in the order of the file prepared from (predict undoes P2): for a file from
            # g.h5 or names.h5 that is the converted order, node k = data line k.
            # g.h5 and names.h5 hold the same ids; g-again's input rows are g-permute's.
            want = ins["g-permute" if p == "g-again" else "g"]["node_ids"][()]
            assert (got == want).all(), f"{q}: node_id is not the original ids in order"
            cls = f["class"][()]
            bad = sum(ref[int(i)] != int(c) for i, c in zip(got, cls))
            assert bad == 0, f"{q}: {bad} nodes predicted differently than on g.h5"
print("prepared files checked:", os.environ["PREPARED"])
PY

# ---- an edge list without a node file: ids relabelled, kept in /node_ids -----------------------
run relabel convert edgelist "$work/edges.txt" -o "$work/relabel.h5"
check "relabelled ids kept" <<'PY'
import sys, h5py, numpy as np
w = sys.argv[1]
e = np.loadtxt(f"{w}/edges.txt", dtype=np.int64)
with h5py.File(f"{w}/relabel.h5") as f:
    assert (f["node_ids"][()] == np.unique(e)).all()
PY

# ---- errors: one line naming the file (and line) -----------------------------------------------
e=$work/edges.txt
cp "$e" "$work/bad_edges.txt"; echo "1000 999999" >>"$work/bad_edges.txt"
line=$(wc -l <"$work/bad_edges.txt")
expect_error unknown-endpoint "bad_edges.txt:$line: node id 999999 is not in the node file" \
  convert edgelist "$work/bad_edges.txt" --nodes "$work/nodes.csv" -o "$work/x.h5"
expect_error missing-column "nodes.csv:1: no column 'cls' (--label-column)" \
  convert edgelist "$e" --nodes "$work/nodes.csv" --label-column cls -o "$work/x.h5"
expect_error missing-id-column "nodes.tsv:1: no column 'id'" convert edgelist "$e" --nodes "$work/nodes.tsv" -o "$work/x.h5"
printf 'id,label\n1000,0\n1007,1\n1000,2\n' >"$work/dup.csv"
expect_error duplicate-id "dup.csv:4: duplicate node id 1000 (first on line 2)" \
  convert edgelist "$e" --nodes "$work/dup.csv" -o "$work/x.h5"
printf 'id,label,f0\n1000,0,1.5\n1007,1\n' >"$work/ragged.csv"
expect_error ragged "ragged.csv:3: expected 3 fields like the header, got 2" \
  convert edgelist "$e" --nodes "$work/ragged.csv" -o "$work/x.h5"
printf 'id,label,split\n1000,0,training\n' >"$work/badsplit.csv"
expect_error bad-split "badsplit.csv:2: split 'training'" convert edgelist "$e" --nodes "$work/badsplit.csv" -o "$work/x.h5"
printf 'id,label,f0\n1000,0,abc\n' >"$work/badfeat.csv"
expect_error bad-feature "badfeat.csv:2: expected a number (feature 'f0')" \
  convert edgelist "$e" --nodes "$work/badfeat.csv" -o "$work/x.h5"
printf 'id,label\n1000,-5\n' >"$work/neglabel.csv"
expect_error negative-label "neglabel.csv:2: label -5" convert edgelist "$e" --nodes "$work/neglabel.csv" -o "$work/x.h5"
expect_error npy-rows "x_short.npy: 599 rows, expected 600" \
  convert edgelist "$e" --nodes "$work/ids.csv" --features "$work/x_short.npy" -o "$work/x.h5"
expect_error npy-dtype "x_int.npy: dtype '<i8'" \
  convert edgelist "$e" --nodes "$work/ids.csv" --features "$work/x_int.npy" -o "$work/x.h5"
expect_error npy-fortran "x_fortran.npy: Fortran order" \
  convert edgelist "$e" --nodes "$work/ids.csv" --features "$work/x_fortran.npy" -o "$work/x.h5"
expect_error npy-header "x_bad.npy: corrupt .npy header" \
  convert edgelist "$e" --nodes "$work/ids.csv" --features "$work/x_bad.npy" -o "$work/x.h5"
expect_error npy-not "nodes.csv: not a .npy file" \
  convert edgelist "$e" --nodes "$work/ids.csv" --features "$work/nodes.csv" -o "$work/x.h5"
expect_error split-and-column "--split: .*nodes.csv has a split column" \
  convert edgelist "$e" --nodes "$work/nodes.csv" --split 0.6,0.2,0.2 -o "$work/x.h5"
expect_error split-fractions "--split: the fractions add up to more than 1" \
  convert edgelist "$e" --nodes "$work/nosplit.csv" --split 0.6,0.3,0.2 -o "$work/x.h5"
expect_error split-no-nodes "--split: splits labelled nodes" convert edgelist "$e" --split 0.6,0.2,0.2 -o "$work/x.h5"
expect_error features-twice "nodes.csv:1: columns 'f0', .* would be features, and --features" \
  convert edgelist "$e" --nodes "$work/nodes.csv" --features "$work/x.npy" -o "$work/x.h5"
expect_error old-features-mode "--features: names a .npy file; the synthetic feature modes are --synthetic-features degree" \
  convert edgelist "$e" --features degree -o "$work/x.h5"
expect_error synthetic-with-columns "--synthetic-features: .*nodes.csv has feature columns" \
  convert edgelist "$e" --nodes "$work/nodes.csv" --synthetic-features ones -o "$work/x.h5"
expect_error num-nodes-with-nodes "--num-nodes: the node file" \
  convert edgelist "$e" --nodes "$work/nodes.csv" --num-nodes 700 -o "$work/x.h5"
expect_error column-without-nodes "--label-column: names a column of the node file" \
  convert edgelist "$e" --label-column cls -o "$work/x.h5"
expect_error classes-below "--classes: 3 is below the 4 classes" \
  convert edgelist "$e" --nodes "$work/nodes.csv" --classes 3 -o "$work/x.h5"
[[ -e $work/x.h5 ]] && fail "an error left an output file"

echo "cli_convert_nodes: $passed passed, $failures failed"
((failures == 0))
