# HDF5 inputs (docs/hardening.md, "HDF5 inputs that read other files", "Missing data is never
# read as zeros", "Messages that say what happened"): sourced by scripts/red-team.sh.
#  - no output replaces a file an input reads through libhdf5 (external link targets, external
#    raw-data files, virtual dataset sources), on one rank and under MPI;
#  - storage never written is refused, never read as zeros (graph, model and checkpoint files);
#  - a file locked or marked open by a writer is named as such; valid virtual datasets are read;
#    PLEXUS_HDF5_CHECK_SECONDS is parsed strictly and the check's limit scales to the file.
H=$IN/h5
mkdir -p "$H"
on_g=(--data "$IN/g.h5" --quiet --threads 1)  # predict and --resume on the graph of $IN/gcn.h5 and $IN/ckpt
cp -r "$IN/ckpt" "$H/ck-chunk"
(cd "$H" && $py - "$IN" <<'PY') || setup_fail "20-hdf5: h5py inputs"
import os, shutil, sys
import h5py, numpy as np
IN = sys.argv[1]
H = os.getcwd()

def rewrite(src, dst, name, make):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        x = f[name][...]
        del f[name]
        make(f, name, x)

def chunked(rows):
    def make(f, name, x):
        d = f.create_dataset(name, shape=x.shape, dtype=x.dtype, chunks=(4,) + x.shape[1:])
        if rows:
            d[:rows] = x[:rows]
    return make

def external(raw, cut=0):  # absolute names: the cases run from another folder
    def make(f, name, x):
        t = x.dtype.newbyteorder("<")
        data = x.astype(t).tobytes()
        open(raw, "wb").write(data[: len(data) - cut])
        f.create_dataset(name, shape=x.shape, dtype=t, external=[(os.path.join(H, raw), 0, len(data))])
    return make

def linked(target):
    def make(f, name, x):
        with h5py.File(target, "w") as t:
            t[name] = x
        f[name] = h5py.ExternalLink(target, name)
    return make

def virtual(source, half=False, source_rows=None):
    def make(f, name, x):
        n = x.shape[0]
        with h5py.File(source, "w") as s:
            s["a"] = x[: n // 2]
            s["b"] = x[n // 2 : source_rows if source_rows is not None else n]
        lay = h5py.VirtualLayout(shape=x.shape, dtype=x.dtype)
        lay[: n // 2] = h5py.VirtualSource(source, "a", shape=(n // 2,) + x.shape[1:])
        if not half:
            lay[n // 2 :] = h5py.VirtualSource(source, "b", shape=(n - n // 2,) + x.shape[1:])
        f.create_virtual_dataset(name, lay)
    return make

g = f"{IN}/g.h5"
rewrite(g, "ext.h5", "features", external("feat.bin"))
rewrite(g, "elink.h5", "features", linked("featfile.h5"))
rewrite(g, "vds.h5", "features", virtual("src.h5"))
rewrite(g, "nested.h5", "labels", linked("labfile.h5"))
rewrite("labfile.h5", "labfile.new", "labels", external("lab.bin"))
shutil.move("labfile.new", "labfile.h5")
os.makedirs("ck")
rewrite(g, "vds-ckpt.h5", "labels", virtual("ck/checkpoint-00000001.h5"))
os.link("feat.bin", "hard.bin")
os.symlink("featfile.h5", "sym.h5")
rewrite(g, "chunk-features.h5", "features", chunked(48))
rewrite(g, "chunk-indices.h5", "graph/indices", chunked(8))
rewrite(g, "chunk-labels.h5", "labels", chunked(0))
rewrite(f"{IN}/prep.h5", "chunk-prepared.h5", "features", chunked(20))
rewrite(g, "unwritten-mask.h5", "masks/train", lambda f, name, x: f.create_dataset(name, shape=x.shape, dtype=x.dtype))
rewrite(g, "ext-short.h5", "features", external("short.bin", cut=40))
rewrite(g, "ext-empty.h5", "features", external("empty.bin", cut=1 << 30))
rewrite(g, "ext-missing.h5", "labels", external("gone.bin"))
rewrite(g, "vds-missing.h5", "features", virtual("gone.h5"))
rewrite(g, "vds-half.h5", "features", virtual("src-half.h5", half=True))
rewrite(g, "vds-small.h5", "features", virtual("src-small.h5", source_rows=50))
rewrite(f"{IN}/gcn.h5", "gcn-chunk.h5", "value/layer0/weight", chunked(1))
rewrite(f"{IN}/model.h5", "gpt-chunk.h5", "h.0.attn.c_attn.weight", chunked(4))
newest = sorted(p for p in os.listdir("ck-chunk") if p.startswith("checkpoint-"))[-1]
rewrite(f"{IN}/ckpt/{newest}", f"ck-chunk/{newest}", "adam_m/layer0/weight", chunked(0))
os.remove("gone.bin"); os.remove("gone.h5")
# A writer that stopped without closing a superblock-v3 file leaves it marked open for writing.
src = h5py.File(g, "r")
f = h5py.File("marked.h5", "w", libver="latest")
for k in src: src.copy(src[k], f, k)
for k, v in src.attrs.items(): f.attrs[k] = v
f.flush()
os._exit(0)
PY

# ---- 1. No output replaces a file an input reads through HDF5 ------------------------------------
reads="reads this file through HDF5"
refuse prepare "-o the external raw-data file of its input" "the input $H/ext.h5 $reads (external raw data of /features)" \
  "$H/ext.h5" -o "$H/feat.bin"
refuse prepare "-o the target of its input's external link" "(the target of the external link /features)" "$H/elink.h5" -o "$H/featfile.h5"
refuse prepare "-o the source of its input's virtual dataset" "(a source file of the virtual dataset /features)" "$H/vds.h5" -o "$H/src.h5"
refuse prepare "-o a raw-data file behind an external link" "$H/lab.bin: cannot write: the input $H/nested.h5 $reads" \
  "$H/nested.h5" -o "$H/lab.bin"
refuse prepare "-o a hard link to an external raw-data file" "$reads" "$H/ext.h5" -o "$H/hard.bin"
refuse prepare "-o a symbolic link to an external link's target" "$reads" "$H/elink.h5" -o "$H/sym.h5"
refuse prepare "-o a relative name of a virtual dataset's source" "$reads" "$H/vds.h5" -o "in/h5/src.h5"
refuse train "--save-model onto its data's external raw data" "$reads" "${tr1[@]}" --data "$H/ext.h5" --save-model "$H/feat.bin"
refuse train "--metrics onto its data's virtual source" "$reads" "${tr1[@]}" --data "$H/vds.h5" --metrics "$H/src.h5"
refuse train "--checkpoint-dir whose checkpoint its data reads (another run's)" "that are not this run's" --epochs 2 --quiet --threads 1 --data "$H/vds-ckpt.h5" \
  --checkpoint-dir "$H/ck" --checkpoint-every 1
refuse predict "-o its data's external link target" "$reads" --quiet --threads 1 --data "$H/elink.h5" --checkpoint "$IN/gcn.h5" -o "$H/featfile.h5"
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 refuse train "MPI 2: --save-model onto external raw data" "$reads" --grid 2x1x1 "${tr1[@]}" --data "$H/ext.h5" \
    --save-model "$H/feat.bin"
  NP=2 refuse train "MPI 2: --metrics onto an external link target" "$reads" --grid 2x1x1 "${tr1[@]}" --data "$H/elink.h5" \
    --metrics "$H/featfile.h5"
  NP=2 refuse train "MPI 2: a checkpoint its data reads (another run's)" "that are not this run's" --grid 2x1x1 --epochs 2 --quiet --threads 1 \
    --data "$H/vds-ckpt.h5" --checkpoint-dir "$H/ck" --checkpoint-every 1
  NP=4 refuse predict "MPI 4: -o a virtual dataset's source" "$reads" --grid 2x2x1 --quiet --threads 1 --data "$H/vds.h5" \
    --checkpoint "$IN/gcn.h5" -o "$H/src.h5"
fi
accept prepare "input with external raw data, output elsewhere" 'graph_ok "$OUT/ext-prep.h5"' "$H/ext.h5" -o "$OUT/ext-prep.h5" -q

# ---- 3. Missing data is never read as zeros --------------------------------------------------
chunks="/features: 4 of 16 chunks were never written"
refuse train "features with chunks never written" "$chunks" "${tr1[@]}" --data "$H/chunk-features.h5"
refuse prepare "features with chunks never written" "$chunks" "$H/chunk-features.h5" -o "$OUT/p.h5"
refuse inspect "features with chunks never written" "$chunks" "$H/chunk-features.h5"
refuse train "indices with chunks never written" "/graph/indices: " "${tr1[@]}" --data "$H/chunk-indices.h5"
refuse train "labels with no chunk written" "/labels: no data stored" "${tr1[@]}" --data "$H/chunk-labels.h5"
refuse train "prepared file with chunks never written" "chunks were never written" "${tr1[@]}" --data "$H/chunk-prepared.h5"
refuse train "contiguous mask never written" "/masks/train: no data stored (storage never written)" "${tr1[@]}" \
  --data "$H/unwritten-mask.h5"
refuse train "external raw data 40 bytes short" "its external raw-data file $H/short.bin holds" "${tr1[@]}" --data "$H/ext-short.h5"
refuse prepare "external raw data empty" "holds 0 bytes" "$H/ext-empty.h5" -o "$OUT/p.h5"
refuse train "external raw data missing" "its external raw-data file $H/gone.bin does not exist" "${tr1[@]}" \
  --data "$H/ext-missing.h5"
refuse train "virtual dataset, source file missing" "its source file gone.h5 was not found" "${tr1[@]}" --data "$H/vds-missing.h5"
refuse prepare "virtual dataset, half its elements mapped" "its virtual mappings cover 256 of its 512 elements" \
  "$H/vds-half.h5" -o "$OUT/p.h5"
refuse train "virtual dataset, source smaller than mapped" "holds 144 elements, but its mapping places 256" "${tr1[@]}" \
  --data "$H/vds-small.h5"
refuse predict "model file with chunks never written" "/value/layer0/weight: 1 of 2 chunks were never written" "${on_g[@]}" \
  --checkpoint "$H/gcn-chunk.h5" -o "$OUT/p.h5"
refuse "gpt sample" "model file with chunks never written" "h.0.attn.c_attn.weight: 3 of 4 chunks were never written" \
  --model "$H/gpt-chunk.h5" --tokens 4
refuse train "--resume a checkpoint with no chunk written" "/adam_m/layer0/weight: no data stored" "${on_g[@]}" --epochs 6 \
  --resume "$H/ck-chunk"
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 refuse train "MPI 2: features with chunks never written" "$chunks" --grid 2x1x1 "${tr1[@]}" --data "$H/chunk-features.h5"
  NP=4 refuse train "MPI 4: external raw data short" "(truncated?)" --grid 2x2x1 "${tr1[@]}" --data "$H/ext-short.h5"
  NP=2 refuse train "MPI 2: virtual dataset, source missing" "was not found" --grid 2x1x1 "${tr1[@]}" --data "$H/vds-missing.h5"
  NP=2 refuse train "MPI 2: --resume a checkpoint with no chunk written" "no data stored" --grid 2x1x1 "${on_g[@]}" --epochs 6 \
    --resume "$H/ck-chunk"
fi

# ---- 5. Messages that say what happened ------------------------------------------------------
accept train "a valid virtual dataset is read" 'said "test accuracy"' "${tr1[@]}" --data "$H/vds.h5"
accept train "an external link is followed" 'said "test accuracy"' "${tr1[@]}" --data "$H/elink.h5"
accept train "external raw data is read" 'said "test accuracy"' "${tr1[@]}" --data "$H/ext.h5"
accept prepare "a valid virtual dataset is prepared" 'graph_ok "$OUT/vds-prep.h5"' "$H/vds.h5" -o "$OUT/vds-prep.h5" -q
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 CHECK='said "test accuracy"' execute 0 train "MPI 2: a valid virtual dataset is read" "" --grid 2x1x1 "${tr1[@]}" --data "$H/vds.h5"
  NP=4 CHECK='said "test accuracy"' execute 0 train "MPI 4: external link and raw data" "" --grid 2x2x1 "${tr1[@]}" --data "$H/nested.h5"
fi
marked="is marked as open for writing by another process"
refuse inspect "a file a crashed writer left marked open" "$marked" "$H/marked.h5"
refuse prepare "a file a crashed writer left marked open" "h5clear -s $H/marked.h5" "$H/marked.h5" -o "$OUT/p.h5"
cp "$IN/g.h5" "$H/locked.h5"
$py -c 'import h5py, sys, time
f = h5py.File(sys.argv[1], "r+"); open(sys.argv[1] + ".ready", "w").close(); time.sleep(600)' "$H/locked.h5" &
holder=$!
bg_pids+=("$holder")
for _ in $(seq 100); do [[ -e $H/locked.h5.ready ]] && break; sleep 0.1; done
locked="is locked by another process that has it open for writing (HDF5 file locking)"
refuse inspect "a file another process is writing" "$locked" "$H/locked.h5"
refuse train "a file another process is writing" "HDF5_USE_FILE_LOCKING=FALSE" "${tr1[@]}" --data "$H/locked.h5"
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 refuse train "MPI 2: a file another process is writing" "$locked" --grid 2x1x1 "${tr1[@]}" --data "$H/locked.h5"
  NP=2 refuse train "MPI 2: a file a crashed writer left marked open" "$marked" --grid 2x1x1 "${tr1[@]}" --data "$H/marked.h5"
fi
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
for v in "" " 5" "5 " "+5" "5s"; do
  PLEXUS_HDF5_CHECK_SECONDS=$v refuse inspect "PLEXUS_HDF5_CHECK_SECONDS='$v'" "is not a whole number of seconds" "$IN/g.h5"
done
check_seconds=${PLEXUS_HDF5_CHECK_SECONDS-unset}
unset PLEXUS_HDF5_CHECK_SECONDS
refuse inspect "a small file hanging libhdf5: the 10 s limit, not 60" "within 10 s (the limit for a file of its size" \
  "$repo/tests/fixtures/corrupt_hdf5_hang.h5"
[[ $check_seconds == unset ]] || export PLEXUS_HDF5_CHECK_SECONDS=$check_seconds
