# Issue 45's classes (docs/hardening.md, "Third round"): sourced by scripts/red-team.sh.
#  1. no non-finite number written as a result: predictions that overflow, bf16 features beyond
#     bfloat16's range;
#  2. what a file claims is checked against what it holds: a model file relabelled as another
#     kind, a prepared file whose two_orders flag, second order or block counts were edited, a
#     chunk-index key damaged so that it hides its chunk;
#  3. a checkpoint's temporary left by a killed run is removed by the next run (and nothing else);
#  4. small graphs (edgeless, self-loops only, one node) prepared and converted on 2 to 4 ranks
#     equal one process's file;
#  the training selection: --select-by refuses what it cannot pick by.
# (Section 7, the library under MPI, is unit-tested: tests/mpi_test_library_misuse.cpp.)
C=$W/claims
mkdir -p "$C"
"$plexus" train --data "$IN/sbm.h5" --epochs 2 --model gat --heads 2 --hidden 4 --threads 1 --quiet \
  --save-model "$C/gat.h5" >/dev/null || setup_fail "60: train gat"
"$plexus" train --data "$IN/sbm.h5" --epochs 2 --model sage --threads 1 --quiet --save-model "$C/sage.h5" \
  >/dev/null || setup_fail "60: train sage"
"$plexus" prepare "$IN/sbm.h5" -o "$C/perm.h5" --balance permute -q || setup_fail "60: prepare permute"
printf '1 1\n2 2\n3 3\n' >"$C/loops.txt"
printf '%%%%MatrixMarket matrix coordinate pattern general\n5 5 0\n' >"$C/edgeless.mtx"
printf '0 0\n' >"$C/one.txt"
(cd "$C" && $py - "$IN" <<'PY') || setup_fail "60: h5py inputs"
import shutil, sys
import h5py, numpy as np
IN = sys.argv[1]

def edit(src, dst, f_):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        f_(f)

def huge(f):
    f["features"][...] = np.where(np.arange(f["features"].shape[1]) % 2 == 0, 3e38, -3e38).astype(np.float32)
edit(f"{IN}/sbm.h5", "huge.h5", huge)

def bf16_beyond(f):
    x = f["features"][...]; x[7, 1] = 3.4e38; f["features"][...] = x
edit(f"{IN}/sbm.h5", "bf16-beyond.h5", bf16_beyond)

edit("gat.h5", "gat-as-gcn.h5", lambda f: f["options"].attrs.modify("model", "gcn"))
def no_kind(f):
    del f["options"].attrs["model"]
edit("sage.h5", "sage-no-kind.h5", no_kind)

edit("perm.h5", "flag-flipped.h5", lambda f: f["prepared"].attrs.modify("two_orders", 0))
def a2_link(f):
    del f["prepared/a2"]; f["prepared/a2"] = f["prepared/a1"]
edit("perm.h5", "a2-link.h5", a2_link)
def a2_copy(f):
    del f["prepared/a2"]; f.copy(f["prepared/a1"], "prepared/a2")
edit("perm.h5", "a2-copy.h5", a2_copy)
def ids_link(f):
    del f["prepared/node_id_p"]; f["prepared/node_id_p"] = f["prepared/node_id_p2"]
edit("perm.h5", "ids-link.h5", ids_link)
def tiles_wrap(f):
    b = f["prepared/block_counts/a1"]; t = b[...]
    if t.size >= 2:
        t.flat[0] += 1 << 62; t.flat[1] -= 1 << 62; b[...] = t
edit(f"{IN}/prep.h5", "tiles-wrap.h5", tiles_wrap)

# A damaged key in a chunk index: the entry of /features' last chunk says it holds rows far past
# the extent. The index still counts every chunk; a read of the real rows finds none (zeros).
def damage_key(path, name):
    with h5py.File(path, "r") as f:
        ds = f[name]
        info = ds.id.get_chunk_info(ds.id.get_num_chunks() - 1)
        ndims, addr = ds.ndim, info.byte_offset
    raw = bytearray(open(path, "rb").read())
    key_bytes = 8 + 8 * (ndims + 1)  # chunk size, filter mask, offsets (one more than dims)
    at = raw.find(b"TREE")
    while at >= 0:
        if raw[at + 4] == 1 and raw[at + 5] == 0:  # a leaf of a chunk index
            entries = int.from_bytes(raw[at + 6:at + 8], "little")
            for i in range(entries):
                key = at + 24 + i * (key_bytes + 8)
                if int.from_bytes(raw[key + key_bytes:key + key_bytes + 8], "little") == addr:
                    raw[key + 8:key + 16] = (1 << 40).to_bytes(8, "little")
                    open(path, "wb").write(bytes(raw))
                    return
        at = raw.find(b"TREE", at + 1)
    raise SystemExit("no chunk-index key found for " + name)
shutil.copy(f"{IN}/sbm.h5", "key-hidden.h5")
damage_key("key-hidden.h5", "features")
PY

# 1. Non-finite results are never written.
refuse predict "features of ±3e38: GAT logits not finite" "is not finite for node" \
  --checkpoint "$C/gat.h5" --data "$C/huge.h5" -o "$OUT/p-huge.h5" --threads 1
refuse predict "features of ±3e38: SAGE embeddings not finite" "is not finite for node" \
  --checkpoint "$C/sage.h5" --data "$C/huge.h5" -o "$OUT/p-huge2.h5" --embeddings --threads 1
NP=3 refuse predict "features of ±3e38 on 3 ranks" "is not finite for node" \
  --checkpoint "$C/gat.h5" --data "$C/huge.h5" -o "$OUT/p-huge3.h5" --grid 3x1x1 --threads 1
refuse prepare "bf16 features beyond bfloat16's range" "is beyond bfloat16's range" \
  "$C/bf16-beyond.h5" -o "$OUT/bf.h5" -q --feature-precision bf16
NP=2 refuse prepare "bf16 features beyond bfloat16's range on 2 ranks" "is beyond bfloat16's range" \
  "$C/bf16-beyond.h5" -o "$OUT/bf2.h5" -q --feature-precision bf16

# 2. A file's claims against what it holds.
refuse predict "a GAT model file relabelled gcn" "gat-as-gcn.h5" \
  --checkpoint "$C/gat-as-gcn.h5" --data "$IN/sbm.h5" -o "$OUT/p-relabel.h5" --threads 1
refuse predict "a SAGE model file without its kind" "sage-no-kind.h5" \
  --checkpoint "$C/sage-no-kind.h5" --data "$IN/sbm.h5" -o "$OUT/p-nokind.h5" --threads 1
refuse train "prepared: two_orders flipped to 0" "attribute two_orders is 0, but /prepared/a2 is not /prepared/a1" \
  "${tr1[@]}" --data "$C/flag-flipped.h5"
refuse train "prepared: a2 a link to a1" "/prepared/a2: is /prepared/a1 (a link)" "${tr1[@]}" --data "$C/a2-link.h5"
NP=2 refuse train "prepared: a2 a link to a1, 2 ranks" "/prepared/a2: is /prepared/a1 (a link)" \
  "${tr1[@]}" --data "$C/a2-link.h5" --grid 2x1x1
refuse train "prepared: a2 a copy of a1" "a1 and a2 disagree" "${tr1[@]}" --data "$C/a2-copy.h5" --layers 2
NP=2 refuse train "prepared: a2 a copy of a1, 2 ranks" "a1 and a2 disagree" "${tr1[@]}" --data "$C/a2-copy.h5" \
  --grid 2x1x1
refuse train "prepared: node_id_p a link to node_id_p2" "/prepared/node_id_p: is /prepared/node_id_p2 (a link)" \
  "${tr1[@]}" --data "$C/ids-link.h5"
refuse predict "prepared: two_orders flipped, predict" "attribute two_orders is 0" \
  --checkpoint "$IN/gcn.h5" --data "$C/flag-flipped.h5" -o "$OUT/p-flag.h5" --threads 1
refuse plan "block counts whose tiles wrap 2^64" "block_counts" --ranks 4 --data "$C/tiles-wrap.h5"
refuse train "a chunk-index key that hides a chunk" "its chunk index counts every chunk but has none at offset" \
  "${tr1[@]}" --data "$C/key-hidden.h5"
NP=2 refuse train "a chunk-index key that hides a chunk, 2 ranks" "has none at offset" \
  "${tr1[@]}" --data "$C/key-hidden.h5" --grid 2x1x1
refuse prepare "a chunk-index key that hides a chunk, prepare" "has none at offset" \
  "$C/key-hidden.h5" -o "$OUT/key-hidden-p.h5" -q

# 3. A killed run's checkpoint temporary: the next run in the directory removes it, and only it.
cp -r "$IN/ckpt" "$C/ck-killed"
printf 'half a checkpoint' >"$C/ck-killed/checkpoint-00000009.h5.tmp.999999"
printf 'a user file' >"$C/ck-killed/notes.txt"  # (no *.tmp.* of another kind here: the runner fails on any left)
accept train "a killed run's checkpoint temporary is removed by the next run" \
  '[[ ! -e $C/ck-killed/checkpoint-00000009.h5.tmp.999999 && -e $C/ck-killed/notes.txt ]] && grep -q "removed .*tmp.999999" "$LOG/err"' \
  --data "$IN/g.h5" --epochs 5 --threads 1 --quiet --checkpoint-dir "$C/ck-killed" --resume "$C/ck-killed"

# 4. Small graphs on many ranks: the same file as one process.
same_h5() { $py "$repo/tests/h5_same_datasets.py" "$1" "$2" >/dev/null 2>&1; }
"$plexus" convert edgelist "$C/loops.txt" -o "$C/loops-1.h5" >/dev/null 2>&1 || setup_fail "60: convert loops"
"$plexus" convert mtx "$C/edgeless.mtx" -o "$C/edgeless-1.h5" >/dev/null 2>&1 || setup_fail "60: convert edgeless"
"$plexus" convert edgelist "$C/one.txt" -o "$C/one-1.h5" >/dev/null 2>&1 || setup_fail "60: convert one node"
for np in 2 4; do
  NP=$np accept convert "self-loops only, $np ranks" "same_h5 $C/loops-1.h5 $OUT/loops-$np.h5" \
    edgelist "$C/loops.txt" -o "$OUT/loops-$np.h5"
  NP=$np accept convert "edgeless MatrixMarket, $np ranks" "same_h5 $C/edgeless-1.h5 $OUT/edgeless-$np.h5" \
    mtx "$C/edgeless.mtx" -o "$OUT/edgeless-$np.h5"
  NP=$np accept convert "one node, $np ranks" "same_h5 $C/one-1.h5 $OUT/one-$np.h5" \
    edgelist "$C/one.txt" -o "$OUT/one-$np.h5"
done
"$plexus" prepare "$C/edgeless-1.h5" -o "$C/edgeless-p1.h5" -q --balance permute || setup_fail "60: prepare edgeless"
NP=3 accept prepare "edgeless graph prepared on 3 ranks" "same_h5 $C/edgeless-p1.h5 $OUT/edgeless-p3.h5" \
  "$C/edgeless-1.h5" -o "$OUT/edgeless-p3.h5" -q --balance permute

# The selection of the best epoch: what it cannot pick by is refused before any work.
refuse train "--select-by recall of a class the graph lacks" "--select-by: recall of class 9" \
  "${tr1[@]}" --data "$IN/sbm.h5" --select-by recall:9
refuse train "--select-by an unknown metric" "--select-by: 'f1' is not one of" "${tr1[@]}" --select-by f1
accept train "--select-by recall:1 prints every class" 'said "class 2: validation precision"' \
  --data "$IN/sbm.h5" --epochs 3 --threads 1 --select-by recall:1
