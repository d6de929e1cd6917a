#!/usr/bin/env bash
# `mpirun -np P plexus prepare` (prepare_graph_distributed): the file equals the one-process
# prepare's, dataset for dataset and attribute for attribute (tests/h5_same_datasets.py), on
# 2, 3, 4 and 8 ranks, for Cora and for a small weighted graph with duplicates, self-loops,
# isolated nodes, original node ids, class names and node weights (37 nodes: no rank count
# divides it), with edge features or without, with balance none and permute, symmetrized and
# --directed; some runs exchange
# in rounds of a few entries and read in stripes of a few edges. Bad input on one rank's slice
# and metis on several ranks end every rank with one line and leave no file behind.
# Usage: cli_prepare_ranks.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

make_small_graphs

# case NAME INPUT RANKS [prepare options...]: one process vs RANKS ranks.
case_() {
  local name=$1 input=$2 ranks=$3; shift 3
  rm -f "$work/one.h5" "$work/many.h5"
  if ! "$plexus" prepare "$input" -o "$work/one.h5" -q "$@" 2>"$work/err"; then fail "$name: one process"; cat "$work/err"; return; fi
  if ! timeout 120 mpirun -np "$ranks" "$plexus" prepare "$input" -o "$work/many.h5" -q "$@" >"$work/out" 2>&1; then
    fail "$name: $ranks ranks"; tail -n 5 "$work/out"; return
  fi
  if same_datasets "$work/one.h5" "$work/many.h5" >"$work/diff"; then ok; else fail "$name: $ranks ranks differ"; head -n 8 "$work/diff"; fi
}
# (Each here once or twice; more graphs and rounds in-process: tests/mpi_test_prepare.cpp.)
for r in 3 8; do case_ "small permute" "$work/small.h5" $r --balance permute; done
case_ "small none" "$work/small.h5" 3 --balance none
# Edge features (a row per stored entry, the duplicate's copies unlike): carried as in one process.
"$py" - "$work/small.h5" "$work/small_edges.h5" "$work/small_directed.h5" "$work/small_directed_edges.h5" <<'PY'
import shutil, sys, h5py, numpy as np
for src, dst in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        nnz = f["graph/indices"].shape[0]
        f["graph/edge_features"] = (np.arange(nnz * 3, dtype=np.float32) * 0.5 - 7).reshape(nnz, 3)
PY
for r in 3; do PLEXUS_PREPARE_ROUND=4 case_ "small with edge features, permute" "$work/small_edges.h5" $r --balance permute; done
case_ "small directed with edge features" "$work/small_directed_edges.h5" 4 --balance none --directed
# ... and in passes (through scratch files): the same file again.
mkdir -p "$work/edge_scratch"
"$plexus" prepare "$work/small_edges.h5" -o "$work/one_edges.h5" -q --balance permute &&
  PLEXUS_PREPARE_PASSES=6 PLEXUS_PREPARE_ROUND=3 "$plexus" prepare "$work/small_edges.h5" -o "$work/passes_edges.h5" -q \
    --balance permute --memory-per-rank 1G --scratch "$work/edge_scratch" &&
  same_datasets "$work/one_edges.h5" "$work/passes_edges.h5" >"$work/diff" && [ -z "$(ls -A "$work/edge_scratch")" ] && ok ||
  { fail "edge features in 6 passes differ from one process"; head -n 8 "$work/diff"; }
case_ "small directed permute" "$work/small_directed.h5" 4 --balance permute --directed
case_ "small one-way edges symmetrized" "$work/small_directed.h5" 3 --balance permute
case_ "small seed 9" "$work/small.h5" 2 --balance permute --balance-seed 9
PLEXUS_PREPARE_ROUND=3 PLEXUS_READ_EDGES=4 case_ "small in rounds of 3" "$work/small.h5" 3 --balance permute
case_ "cora permute" "$cora" 4 --balance permute
PLEXUS_PREPARE_ROUND=500 case_ "cora rounds of 500" "$cora" 3 --balance permute --directed

# --feature-precision bf16: the same file on ranks; /features are the fp32 file's, rounded to
# nearest even (read as float32), in half the bytes.
case_ "cora bf16 features" "$cora" 3 --balance permute --feature-precision bf16
# Small graphs on many ranks (most ranks hold no row; an edgeless graph's datasets are empty):
# what one process prepares, P ranks prepare alike.
"$plexus" generate sbm --nodes 40 --classes 2 --feature-width 3 --avg-degree 0 -o "$work/edgeless.h5" >/dev/null &&
  printf "0 0\n1 1\n2 2\n" >"$work/loops.txt" && printf "5 5\n" >"$work/one_node.txt" &&
  "$plexus" convert edgelist "$work/loops.txt" -o "$work/loops.h5" >/dev/null &&
  "$plexus" convert edgelist "$work/one_node.txt" -o "$work/one_node.h5" >/dev/null || fail "small graphs"
case_ "edgeless" "$work/edgeless.h5" 8 --balance permute
case_ "self-loops only" "$work/loops.h5" 3 --balance permute
case_ "one node" "$work/one_node.h5" 4 --balance none
"$plexus" prepare "$cora" -o "$work/f32.h5" -q && "$plexus" prepare "$cora" -o "$work/b16.h5" -q --feature-precision bf16 &&
  $py - "$work/f32.h5" "$work/b16.h5" <<'PY' && ok || fail "bf16 features are the rounded fp32 ones"
import h5py, numpy as np, sys
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
x = a["features"][...].astype(np.float32)
bits = x.view(np.uint32).astype(np.uint64)
rounded = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
got = np.empty(x.shape, np.float32)
b["features"].id.read(h5py.h5s.ALL, h5py.h5s.ALL, got, mtype=h5py.h5t.IEEE_F32LE)
assert b["features"].id.get_type().get_size() == 2
assert np.array_equal(got, rounded), "features differ"
assert not np.array_equal(got, x), "nothing was rounded"
PY

# The distributed file trains like the one-process file (bit for bit: the same datasets).
"$plexus" prepare "$cora" -o "$work/one.h5" -q &&
  timeout 120 mpirun -np 4 "$plexus" prepare "$cora" -o "$work/four.h5" -q &&
  "$plexus" train "$work/one.h5" --epochs 3 --threads 1 -q --metrics "$work/one.jsonl" >/dev/null &&
  "$plexus" train "$work/four.h5" --epochs 3 --threads 1 -q --metrics "$work/four.jsonl" >/dev/null &&
  [ "$(grep '"epoch"' "$work/one.jsonl" | sed 's/"seconds[^,]*,//g; s/"[a-z_]*seconds":[^,}]*//g' | md5sum)" = \
    "$(grep '"epoch"' "$work/four.jsonl" | sed 's/"seconds[^,]*,//g; s/"[a-z_]*seconds":[^,}]*//g' | md5sum)" ] &&
  ok || fail "train on the 4-rank file"

# The summary names the ranks and the largest rank's peak memory.
if timeout 120 mpirun -np 2 "$plexus" prepare "$cora" -o "$work/two.h5" >"$work/out" 2>&1 &&
   grep -q "; 2 ranks" "$work/out" && grep -q "peak RSS .* (the largest rank's)" "$work/out"; then ok
else fail "summary"; cat "$work/out"; fi

# Errors: metis on several ranks; a bad column id in the last rank's rows. One line, exit 2,
# the existing output untouched, no temporary file.
echo "keep me" >"$work/existing.h5"
mpi_error "metis on 4 ranks" "metis partitions the whole graph in one process" prepare "$cora" -o "$work/existing.h5" --balance metis --grid 2x2x1
$py -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    idx = f['graph/indices']
    idx[len(idx) - 1] = 10**9
" "$work/small.h5"
mpi_error "bad column in the last slice" "/graph/indices" prepare "$work/small.h5" -o "$work/existing.h5" --balance permute
[ "$(cat "$work/existing.h5")" = "keep me" ] && ok || fail "existing output overwritten"
ls "$work" | grep -q '\.tmp' && fail "temporary files left: $(ls "$work" | grep '\.tmp')" || ok

# A full disk: rank 0 reserves the file's bytes before any rank writes (io/hdf5/collective_write.hpp),
# so a disk too small ends every rank with one line, before the collective writes. Simulated by a
# file size limit on rank 0 (fallocate past it fails with EFBIG, as past a full disk with ENOSPC);
# and, where this user may mount one, on a real 6 MB tmpfs.
rm -f "$work"/full.h5*
timeout 120 mpirun -np 3 bash -c 'trap "" XFSZ; if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then ulimit -f 8000; fi; exec "$@"' _ \
  "$plexus" prepare "$cora" -o "$work/full.h5" -q >"$work/out" 2>"$work/err"
rc=$?
if [[ $rc -eq 2 && $(grep -c "^plexus: error: " "$work/err") -eq 1 ]] && grep -q "no room on the disk for the" "$work/err" &&
   [ -z "$(ls "$work" | grep full.h5)" ]; then ok
else fail "full disk on rank 0: rc=$rc, left: $(ls "$work" | grep full.h5)"; grep -v "^mca_\|^vulcan" "$work/err" | head -5; fi
mkdir -p "$work/small_fs"
if mount -t tmpfs -o size=6m tmpfs "$work/small_fs" 2>/dev/null; then
  timeout 120 mpirun -np 3 "$plexus" prepare "$cora" -o "$work/small_fs/full.h5" -q >"$work/out" 2>"$work/err"
  rc=$?
  if [[ $rc -eq 2 ]] && grep -q "no room on the disk.*No space left" "$work/err" && [ -z "$(ls -A "$work/small_fs")" ]; then ok
  else fail "full tmpfs: rc=$rc, left: $(ls -A "$work/small_fs")"; fi
  umount "$work/small_fs"
else
  echo "note: cannot mount a tmpfs here; the full-disk check ran with a file size limit only"
fi

# Memory per rank (docs/balancing.md): at most the process's own (a 4-rank prepare of Cora) plus
# 48 bytes per Â entry of its share, 4 per feature of its rows, 16 per node and two 12 MB
# exchange buffers, with 20 % slack; and, net of the process's own, at most half the
# one-process peak (R-MAT scale 17).
"$plexus" generate rmat --scale 17 -o "$work/r17.h5" >/dev/null
/usr/bin/time -f "%M" -o "$work/rss_one" "$plexus" prepare "$work/r17.h5" -o "$work/r17_one.h5" -q
rm -f "$work"/rss_four.*
mpirun -np 4 bash -c '/usr/bin/time -f "%M" -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$work/rss_four" \
  "$plexus" prepare "$work/r17.h5" -o "$work/r17_four.h5" -q
mpirun -np 4 bash -c '/usr/bin/time -f "%M" -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$work/rss_base" \
  "$plexus" prepare "$cora" -o "$work/cora_four.h5" -q
if $py - "$work" <<'PY'
import glob, h5py, sys
w = sys.argv[1]
kib = lambda pattern: [int(open(f).read().split()[-1]) * 1024 for f in glob.glob(f"{w}/{pattern}")]
one, four, base = kib("rss_one")[0], max(kib("rss_four.*")), max(kib("rss_base.*"))
with h5py.File(f"{w}/r17_four.h5") as f:
    n, feats, entries = int(f.attrs["num_nodes"]), int(f.attrs["num_features"]), len(f["prepared/a1/indices"])
model = 48 * entries / 4 + 4 * feats * n / 4 + 16 * n + 2 * 12 * 2**20
print(f"one process {one / 2**20:.0f} MiB, 4 ranks {four / 2**20:.0f} MiB a rank (base {base / 2**20:.0f} + model {model / 2**20:.0f})")
# Net of the process itself (libraries, MPI: more in a CUDA build), which no data changes.
sys.exit(0 if four <= base + 1.2 * model and four - base <= 0.5 * (one - base) else 1)
PY
then ok; else fail "memory per rank"; fi
same_datasets "$work/r17_one.h5" "$work/r17_four.h5" >/dev/null && ok || fail "R-MAT scale 17 on 4 ranks differs"

# SIGTERM to the ranks while they prepare: every rank ends, no output and no temporary file
# (rank 0's temporary output is removed by the signal handler of io/files/safe_files).
"$plexus" generate sbm --nodes 120000 --avg-degree 16 --feature-width 32 --seed 3 -o "$work/big.h5" >/dev/null
mpirun -np 4 "$plexus" prepare "$work/big.h5" -o "$work/stopped.h5" >"$work/stop.out" 2>&1 &
runner=$!
for _ in $(seq 1 300); do grep -q "cleaning" "$work/stop.out" 2>/dev/null && break; sleep 0.1; done
# To the ranks themselves: mpirun would pass it on only a second later, when a fast machine
# may have finished.
pkill -TERM -f "prepare $work/big.h5 -o $work/stopped.h5" || kill -TERM $runner
wait $runner
rc=$?
if [[ $rc -ne 0 && ! -e "$work/stopped.h5" ]]; then ok; else fail "SIGTERM: rc=$rc, output $(ls "$work" | grep stopped)"; fi
ls "$work" | grep -q '\.tmp' && fail "SIGTERM left $(ls "$work" | grep '\.tmp')" || ok
# mpirun may return while its ranks are still exiting (seen on a loaded machine): they have 5 s.
for _ in $(seq 1 50); do pgrep -f "prepare $work/big.h5" >/dev/null || break; sleep 0.1; done
pgrep -f "prepare $work/big.h5" >/dev/null && fail "ranks left 5 s after SIGTERM" || ok

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
