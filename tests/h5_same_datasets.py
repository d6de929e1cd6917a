#!/usr/bin/env python3
# Exit 0 when two HDF5 files hold the same objects: every group and dataset under the same name,
# each dataset of the same dtype and values, every attribute of the same value and type. Used by
# the tests of the distributed prepare (its file equals the one-process file, dataset for dataset;
# the storage layout -- chunks, compression -- may differ). Prints each difference.
# Usage: h5_same_datasets.py A.h5 B.h5
import h5py, sys, numpy as np
a, b = h5py.File(sys.argv[1], 'r'), h5py.File(sys.argv[2], 'r')
bad = []
def attrs(x, y, name):
    ka, kb = set(x.attrs.keys()), set(y.attrs.keys())
    if ka != kb: bad.append(f"{name} attrs {ka ^ kb}")
    for k in ka & kb:
        va, vb = x.attrs[k], y.attrs[k]
        if not np.array_equal(np.asarray(va), np.asarray(vb)) or np.asarray(va).dtype != np.asarray(vb).dtype:
            bad.append(f"{name} attr {k}: {va!r} vs {vb!r}")
def walk(name, obj):
    other = b.get(name)
    if other is None: bad.append(f"missing in 2nd: {name}"); return
    attrs(obj, other, name)
    if isinstance(obj, h5py.Dataset):
        if obj.id.get_type().get_class() == h5py.h5t.FLOAT and obj.id.get_type().get_size() == 2:
            # 16-bit floats (bfloat16 /features): the types must be equal, the values read as float32
            if not obj.id.get_type().equal(other.id.get_type()): bad.append(f"{name}: 16-bit float types differ"); return
            def f32(d):
                out = np.empty(d.shape, np.float32)
                d.id.read(h5py.h5s.ALL, h5py.h5s.ALL, out, mtype=h5py.h5t.IEEE_F32LE)
                return out
            if not np.array_equal(f32(obj), f32(other)): bad.append(f"{name}: values differ")
            return
        x, y = obj[()], other[()]
        if obj.dtype != other.dtype: bad.append(f"{name}: dtype {obj.dtype} vs {other.dtype}")
        elif not np.array_equal(np.asarray(x), np.asarray(y)):
            bad.append(f"{name}: values differ")
a.visititems(walk)
b.visititems(lambda n, o: bad.append(f"missing in 1st: {n}") if a.get(n) is None else None)
attrs(a, b, "/")
print("\n".join(bad) if bad else "identical")
sys.exit(1 if bad else 0)
