#!/usr/bin/env bash
# HDF5 inputs that read other files or lack data (docs/hardening.md, "HDF5 inputs that read
# other files" and "Missing data is never read as zeros"):
#  - no output of any command replaces a file an input reads through libhdf5: an external
#    link's target, a dataset's external raw-data file, a virtual dataset's source (prepare -o,
#    train --save-model/--metrics/--checkpoint-dir, predict -o; on one rank and under MPI);
#  - storage never written is refused, never read as zeros: chunks never written, contiguous
#    storage never written, external raw data missing or short, virtual datasets with a missing,
#    too small or partial source; in graph, model and checkpoint files;
#  - messages say what happened: a file locked or marked open by a writer; a valid virtual
#    dataset is read (the same run as the plain file, on 1 and 2 ranks).
# Inputs are `plexus generate` files rewritten with h5py.
# Usage: cli_hdf5_inputs.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
ulimit -c 0
cd "$work" || exit 1  # external raw-data names are relative to the current folder (libhdf5 1.10)

"$plexus" generate rmat --scale 6 --edge-factor 4 --feature-width 8 --classes 3 -o g.h5 >/dev/null || { echo "generate failed"; exit 1; }
"$plexus" train --data g.h5 --epochs 2 --threads 1 --quiet --save-model gcn.h5 --checkpoint-dir ck --checkpoint-every 1 >/dev/null ||
  { echo "train failed"; exit 1; }
head -c 3000 "$src/data/tinyshakespeare.txt" >t.txt
"$plexus" gpt train --data t.txt --iters 2 --layers 1 --heads 2 --embed 16 --block 16 --batch 2 --eval-every 0 --threads 1 \
  --quiet --save gpt.h5 >/dev/null || { echo "gpt train failed"; exit 1; }

$py - <<'PY' || { echo "h5py set-up failed"; exit 1; }
import shutil
import h5py, numpy as np

def rewrite(src, dst, name, make):
    """dst = src with dataset `name` replaced by what make(f, old_array) creates."""
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        x = f[name][...]
        del f[name]
        make(f, name, x)

def chunked(rows_written):
    def make(f, name, x):
        d = f.create_dataset(name, shape=x.shape, dtype=x.dtype, chunks=(4,) + x.shape[1:])
        d[:rows_written] = x[:rows_written]
    return make

def external(raw, cut=0):
    def make(f, name, x):
        data = x.astype(x.dtype.newbyteorder("<")).tobytes()
        open(raw, "wb").write(data[:len(data) - cut])
        f.create_dataset(name, shape=x.shape, dtype=x.dtype.newbyteorder("<"), external=[(raw, 0, len(data))])
    return make

def linked(target):
    def make(f, name, x):
        with h5py.File(target, "w") as t:
            t[name] = x
        f[name] = h5py.ExternalLink(target, name)
    return make

def virtual(source, rows_mapped=None, source_rows=None):
    def make(f, name, x):
        n = x.shape[0]
        with h5py.File(source, "w") as s:
            s["a"] = x[: n // 2]
            s["b"] = x[n // 2 : source_rows if source_rows is not None else n]
        lay = h5py.VirtualLayout(shape=x.shape, dtype=x.dtype)
        lay[: n // 2] = h5py.VirtualSource(source, "a", shape=(n // 2,) + x.shape[1:])
        if rows_mapped is None:
            lay[n // 2 :] = h5py.VirtualSource(source, "b", shape=(n - n // 2,) + x.shape[1:])
        f.create_virtual_dataset(name, lay)
    return make

# Whole inputs that read other files.
rewrite("g.h5", "ext.h5", "features", external("feat.bin"))
rewrite("g.h5", "elink.h5", "features", linked("featfile.h5"))
rewrite("g.h5", "vds.h5", "features", virtual("src.h5"))
import os
os.makedirs("ck2")
rewrite("g.h5", "vds-labels.h5", "labels", virtual("ck2/checkpoint-00000001.h5"))  # a checkpoint's name
shutil.copy("ck2/checkpoint-00000001.h5", "ckpt1.keep")
rewrite("g.h5", "nested.h5", "labels", linked("labfile.h5"))  # labfile.h5 keeps its labels in lab.bin
rewrite("labfile.h5", "labfile.h5.new", "labels", external("lab.bin"))
shutil.move("labfile.h5.new", "labfile.h5")
# Inputs with data missing.
rewrite("g.h5", "chunk-features.h5", "features", chunked(48))
rewrite("g.h5", "chunk-indices.h5", "graph/indices", chunked(8))
rewrite("g.h5", "unwritten-mask.h5", "masks/train", lambda f, name, x: f.create_dataset(name, shape=x.shape, dtype=x.dtype))
rewrite("g.h5", "ext-short.h5", "features", external("short.bin", cut=40))
rewrite("g.h5", "ext-missing.h5", "labels", external("gone.bin"))
rewrite("g.h5", "vds-missing.h5", "features", virtual("gone.h5"))
rewrite("g.h5", "vds-half.h5", "features", virtual("src-half.h5", rows_mapped="half"))
rewrite("g.h5", "vds-small.h5", "features", virtual("src-small.h5", source_rows=50))
rewrite("gcn.h5", "gcn-chunk.h5", "value/layer0/weight", chunked(1))
rewrite("gpt.h5", "gpt-chunk.h5", "h.0.attn.c_attn.weight", chunked(4))
shutil.copytree("ck", "ck-chunk")
rewrite("ck/checkpoint-00000002.h5", "ck-chunk/checkpoint-00000002.h5", "adam_m/layer0/weight", chunked(0))
PY
rm -f gone.bin gone.h5
md5sum feat.bin featfile.h5 src.h5 lab.bin labfile.h5 >inputs.md5

# ---- 1. No output replaces a file an input reads ------------------------------------------------
reads="reads this file through HDF5"
expect_error "prepare -o an external raw-data file" "feat.bin: cannot write: the input ext.h5 $reads (external raw data of /features)" \
  prepare ext.h5 -o feat.bin
expect_error "prepare -o an external link's target" "the input elink.h5 $reads (the target of the external link /features)" \
  prepare elink.h5 -o featfile.h5
expect_error "prepare -o a virtual dataset's source" "the input vds.h5 $reads (a source file of the virtual dataset /features)" \
  prepare vds.h5 -o src.h5
expect_error "prepare -o a file two steps away" "lab.bin: cannot write: the input nested.h5 $reads (external raw data of /labels)" \
  prepare nested.h5 -o lab.bin
ln -f feat.bin hard.bin
expect_error "prepare -o a hard link of an external raw-data file" "hard.bin: cannot write: the input ext.h5 $reads" prepare ext.h5 -o hard.bin
ln -sf featfile.h5 sym.h5
expect_error "prepare -o a symbolic link to a link target" "sym.h5: cannot write: the input elink.h5 $reads" prepare elink.h5 -o sym.h5
expect_error "train --save-model" "feat.bin: cannot write: the input ext.h5 $reads" train --data ext.h5 --epochs 1 --quiet --save-model feat.bin
expect_error "train --metrics" "src.h5: cannot write: the input vds.h5 $reads" train --data vds.h5 --epochs 1 --quiet --metrics src.h5
expect_error "predict -o" "featfile.h5: cannot write: the input elink.h5 $reads" predict --data elink.h5 --checkpoint gcn.h5 -o featfile.h5
expect_error "predict -o, the input read through the model file" "cannot write" predict --data g.h5 --checkpoint gcn.h5 -o gcn.h5
mpi_error "train --save-model" "feat.bin: cannot write: the input ext.h5 $reads" train --grid 2x2x1 --data ext.h5 --epochs 1 --quiet --save-model feat.bin
mpi_error "train --metrics" "featfile.h5: cannot write: the input elink.h5 $reads" train --grid 2x2x1 --data elink.h5 --epochs 1 --quiet --metrics featfile.h5
mpi_error "predict -o" "src.h5: cannot write: the input vds.h5 $reads" predict --data vds.h5 --checkpoint gcn.h5 -o src.h5
# A checkpoint the run would write later, which its input reads: refused (at the latest when it
# comes to it; here already before any work, as a checkpoint of another run in --checkpoint-dir:
# docs/checkpoints.md, "Whose checkpoints"), the file intact.
for np in 1 2; do
  timeout 120 mpirun -np $np "$plexus" train --data vds-labels.h5 --epochs 2 --quiet --checkpoint-dir ck2 --checkpoint-every 1 \
    >"$work/out" 2>"$work/err"
  rc=$?
  [[ $rc -eq 2 && $(grep -Ec "^plexus: error: .*(cannot write|that are not this run's)" "$work/err") -eq 1 ]] && cmp -s ck2/checkpoint-00000001.h5 ckpt1.keep &&
    ok || { fail "a checkpoint over a source of the input ($np ranks, rc=$rc)"; cat "$work/err"; }
done
md5sum -c --quiet inputs.md5 && ok || fail "a file an input reads was changed"
ls ./*.tmp.* ck/*.tmp.* ck2/*.tmp.* 2>/dev/null && fail "temporary files left" || ok
# An output that is no file an input reads is written.
"$plexus" prepare ext.h5 -o p.h5 -q && "$plexus" inspect p.h5 >/dev/null && ok || fail "prepare of ext.h5 to another file"

# ---- 3. Missing data is never read as zeros --------------------------------------------------
chunks="/features: 4 of 16 chunks were never written (a conversion stopped halfway?)"
expect_error "train, chunks never written" "chunk-features.h5: $chunks" train --data chunk-features.h5 --epochs 1 --quiet
expect_error "prepare, chunks never written" "chunk-features.h5: $chunks" prepare chunk-features.h5 -o p2.h5
[[ ! -e p2.h5 ]] && ok || fail "prepare of a file with missing chunks wrote an output"
expect_error "inspect, chunks never written" "chunk-features.h5: $chunks" inspect chunk-features.h5
mpi_error "train, chunks never written" "chunk-features.h5: $chunks" train --grid 2x2x1 --data chunk-features.h5 --epochs 1 --quiet
expect_error "edges of chunks never written" "/graph/indices: " train --data chunk-indices.h5 --epochs 1 --quiet
grep -q "chunks were never written" "$work/err" && ok || fail "indices: $(cat "$work/err")"
expect_error "contiguous storage never written" "unwritten-mask.h5: /masks/train: no data stored (storage never written)" \
  train --data unwritten-mask.h5 --epochs 1 --quiet
expect_error "external raw data short" "/features: its external raw-data file short.bin holds" train --data ext-short.h5 --epochs 1 --quiet
mpi_error "external raw data short" "(truncated?)" train --grid 2x2x1 --data ext-short.h5 --epochs 1 --quiet
expect_error "external raw data missing" "/labels: its external raw-data file gone.bin does not exist" prepare ext-missing.h5 -o p2.h5
expect_error "virtual dataset, source missing" "/features: its source file gone.h5 was not found" train --data vds-missing.h5 --epochs 1 --quiet
mpi_error "virtual dataset, source missing" "its source file gone.h5 was not found" train --grid 2x2x1 --data vds-missing.h5 --epochs 1 --quiet
expect_error "virtual dataset, half mapped" "/features: its virtual mappings cover 256 of its 512 elements" prepare vds-half.h5 -o p2.h5
expect_error "virtual dataset, source too small" "its source src-small.h5:b holds 144 elements, but its mapping places 256" \
  train --data vds-small.h5 --epochs 1 --quiet
expect_error "model file, chunks never written" "gcn-chunk.h5: /value/layer0/weight: 1 of 2 chunks were never written" \
  predict --data g.h5 --checkpoint gcn-chunk.h5 -o p3.h5
expect_error "GPT model, chunks never written" "gpt-chunk.h5: h.0.attn.c_attn.weight: 3 of 4 chunks were never written" \
  gpt sample --model gpt-chunk.h5 --tokens 4
expect_error "checkpoint, chunks never written" "checkpoint-00000002.h5: /adam_m/layer0/weight: no data stored" \
  train --data g.h5 --epochs 3 --quiet --resume ck-chunk
mpi_error "checkpoint, chunks never written" "/adam_m/layer0/weight: no data stored" train --grid 2x2x1 --data g.h5 --epochs 3 --quiet --resume ck-chunk

# ---- 5. Messages that say what happened ------------------------------------------------------
# A valid virtual dataset, external link and external raw data are read: the same run as g.h5,
# on one rank and on two (where the graph is read through MPI-IO).
summary() { $py -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][-1]; print(r["best_val_acc"], r["test_acc"])' "$1"; }
train1() { "$plexus" train --data "$1" --epochs 3 --threads 1 --quiet --metrics "$2" >/dev/null 2>"$work/err"; }
train2() { timeout 120 mpirun -np 2 "$plexus" train --grid 2x1x1 --data "$1" --epochs 3 --threads 1 --quiet --metrics "$2" >/dev/null 2>"$work/err"; }
train1 g.h5 m1-g.jsonl && train2 g.h5 m2-g.jsonl || { echo "train on g.h5 failed"; exit 1; }
for input in vds.h5 elink.h5 ext.h5; do
  train1 $input m1.jsonl && [[ $(summary m1.jsonl) == "$(summary m1-g.jsonl)" ]] && ok || { fail "train on $input"; cat "$work/err"; }
  train2 $input m2.jsonl && [[ $(summary m2.jsonl) == "$(summary m2-g.jsonl)" ]] && ok || { fail "mpi train on $input"; cat "$work/err"; }
done
# External raw data under HDF5_EXTFILE_PREFIX (${ORIGIN}: the HDF5 file's folder), from elsewhere.
(cd / && HDF5_EXTFILE_PREFIX='${ORIGIN}' "$plexus" inspect "$work/ext.h5" >/dev/null) && ok || fail "HDF5_EXTFILE_PREFIX=\${ORIGIN}"
(cd / && "$plexus" inspect "$work/ext.h5" >/dev/null 2>"$work/err"); rc=$?
[[ $rc -eq 2 ]] && grep -q "its external raw-data file feat.bin does not exist" "$work/err" && ok ||
  { fail "external raw data from another folder (rc=$rc)"; cat "$work/err"; }

# A file another process is writing: locked (HDF5 file locking), not "corrupt".
cp g.h5 locked.h5
$py -c 'import h5py, sys, time
f = h5py.File("locked.h5", "r+"); open("locked.ready", "w").close(); time.sleep(30)' &
holder=$!
for _ in $(seq 100); do [[ -e locked.ready ]] && break; sleep 0.1; done
locked="locked.h5: is locked by another process that has it open for writing (HDF5 file locking)"
expect_error "a file locked by a writer" "$locked" inspect locked.h5
expect_error "a file locked by a writer" "HDF5_USE_FILE_LOCKING=FALSE" train --data locked.h5 --epochs 1 --quiet
mpi_error "a file locked by a writer" "$locked" train --grid 2x2x1 --data locked.h5 --epochs 1 --quiet
kill $holder; wait $holder 2>/dev/null
"$plexus" inspect locked.h5 >/dev/null && ok || fail "the lock outlived its writer"
# A writer that stopped without closing a file (superblock version 3): marked open, and how to clear it.
$py -c 'import h5py, os
src = h5py.File("g.h5", "r"); f = h5py.File("marked.h5", "w", libver="latest")
for k in src: src.copy(src[k], f, k)
for k, v in src.attrs.items(): f.attrs[k] = v
f.flush(); os._exit(0)'
marked="marked.h5: is marked as open for writing by another process (the superblock's status flag)"
expect_error "a file marked open by a crashed writer" "$marked" inspect marked.h5
expect_error "a file marked open by a crashed writer" "\`h5clear -s marked.h5\` clears the mark" prepare marked.h5 -o p2.h5
mpi_error "a file marked open by a crashed writer" "$marked" train --grid 2x2x1 --data marked.h5 --epochs 1 --quiet
h5clear -s marked.h5 && "$plexus" inspect marked.h5 >/dev/null && ok || fail "h5clear -s did not make marked.h5 readable"

echo "cli_hdf5_inputs: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
