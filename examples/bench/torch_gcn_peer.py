#!/usr/bin/env python3
"""PyTorch (CPU) peer of examples/bench/bench_gcn.cpp: the same GCN math on the same file.

    /usr/bin/python3 examples/bench/torch_gcn_peer.py GRAPH.h5 [--epochs E] [--threads T]
        [--reps R] [--sparse auto|csr|coo]

Reads a Plexus format-v1 HDF5 graph (docs/format-v1.md) with h5py, builds
A_hat = D^-1/2 (A + I) D^-1/2 exactly as plexus::gcn_normalize does (self-loops replaced by one
loop of weight 1, duplicates summed, D = row sums of A + I), and per epoch runs:
  train forward (dropout 0.5 on every layer input, aggregate-first: A_hat·dropout(H) then ·W + b,
  ReLU on all but the last layer) -> masked cross-entropy (mean over train rows) -> backward ->
  Adam (lr 0.01, L2 weight decay 5e-4 on layer 0's weight only) -> evaluation forward under
  torch.no_grad without dropout, reusing layer 0's clean aggregation A_hat·X computed once
  (as Plexus caches it).
The backward of A_hat·H uses an explicitly transposed A_hat^T (as Plexus does), via a custom
autograd Function, so the same sparse layout/kernel serves forward and backward.

Also times torch's SpMM (A_hat · X, X: N×128) and GEMM (N×128 · 128×128) for the same shapes and
prints a table plus one `BENCH_JSON {...}` line.
"""
import argparse
import json
import statistics
import sys
import time

import h5py
import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F


def load_graph(path):
    with h5py.File(path, "r") as f:
        n = int(f.attrs["num_nodes"])
        indptr = f["graph/indptr"][...].astype(np.int64)
        indices = f["graph/indices"][...].astype(np.int64)
        values = f["graph/values"][...].astype(np.float32) if "values" in f["graph"] else None
        x = f["features"][...].astype(np.float32)
        labels = f["labels"][...].astype(np.int64)
        train = f["masks/train"][...].astype(bool)
        val = f["masks/val"][...].astype(bool)
        test = f["masks/test"][...].astype(bool)
        classes = int(f.attrs["num_classes"])
    if values is None:
        values = np.ones(indices.shape[0], dtype=np.float32)
    return n, indptr, indices, values, x, labels, train, val, test, classes


def gcn_normalize(n, indptr, indices, values):
    a = sp.csr_matrix((values, indices, indptr), shape=(n, n), dtype=np.float32).tocoo()
    off = a.row != a.col      # existing self-loops are replaced ...
    a = sp.csr_matrix((a.data[off], (a.row[off], a.col[off])), shape=(n, n), dtype=np.float32)  # sums duplicates
    a = (a + sp.identity(n, dtype=np.float32, format="csr")).tocsr()  # ... by one loop of weight 1
    a.sort_indices()
    deg = np.asarray(a.sum(axis=1)).ravel().astype(np.float64)
    if np.any(deg <= 0):
        raise ValueError("a row of A + I has a non-positive weight sum")
    dinv = (1.0 / np.sqrt(deg)).astype(np.float32)
    d = sp.diags(dinv)
    return (d @ a @ d).tocsr().astype(np.float32)


def to_torch(a, layout):
    a = a.tocsr()
    a.sort_indices()
    if layout == "csr":
        return torch.sparse_csr_tensor(torch.from_numpy(a.indptr.astype(np.int64)),
                                       torch.from_numpy(a.indices.astype(np.int64)),
                                       torch.from_numpy(a.data.astype(np.float32)), size=a.shape)
    coo = a.tocoo()
    idx = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    return torch.sparse_coo_tensor(idx, torch.from_numpy(coo.data.astype(np.float32)), size=a.shape).coalesce()


def spmm(a, b):
    return torch.sparse.mm(a, b) if a.layout == torch.sparse_coo else torch.mm(a, b)


class Aggregate(torch.autograd.Function):
    """Y = A·H; dH = A^T·dY with a pre-transposed A^T (Plexus keeps a_t for the same reason)."""

    @staticmethod
    def forward(ctx, h, a, a_t):
        ctx.a_t = a_t
        return spmm(a, h)

    @staticmethod
    def backward(ctx, gy):
        return spmm(ctx.a_t, gy.contiguous()), None, None


def median_time(reps, fn):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def glorot(fan_in, fan_out, gen):
    lim = (6.0 / (fan_in + fan_out)) ** 0.5
    return (torch.rand(fan_in, fan_out, generator=gen) * 2 - 1) * lim


def main():
    p = argparse.ArgumentParser()
    p.add_argument("graph")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--sparse", choices=["auto", "csr", "coo"], default="auto",
                   help="sparse layout for A_hat; auto times both SpMMs and keeps the faster")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(42)

    t0 = time.perf_counter()
    n, indptr, indices, values, x_np, labels_np, train_np, val_np, test_np, classes = load_graph(args.graph)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    a_sp = gcn_normalize(n, indptr, indices, values)
    a_t_sp = a_sp.T.tocsr()
    norm_s = time.perf_counter() - t0
    nnz = int(a_sp.nnz)
    del indptr, indices, values
    print(f"graph {args.graph}: N={n}, nnz(A_hat incl. self-loops)={nnz}, F={x_np.shape[1]}, C={classes}")
    print(f"torch {torch.__version__} threads={torch.get_num_threads()}  load {load_s:.2f} s  "
          f"normalize (scipy) {norm_s:.2f} s  reps={args.reps} (median)")
    sys.stdout.flush()

    f = 128
    gen = torch.Generator().manual_seed(7)
    xb = torch.rand(n, f, generator=gen) * 2 - 1

    # ---- (a) SpMM: pick the faster layout --------------------------------------------------
    layouts = ["csr", "coo"] if args.sparse == "auto" else [args.sparse]
    spmm_times = {}
    mats = {}
    for lay in layouts:
        try:
            a = to_torch(a_sp, lay)
            spmm_times[lay] = median_time(args.reps, lambda: spmm(a, xb))
            mats[lay] = a
        except (RuntimeError, NotImplementedError) as e:
            print(f"layout {lay}: unsupported ({e})")
    layout = min(spmm_times, key=spmm_times.get)
    for lay, t in spmm_times.items():
        print(f"torch SpMM layout {lay}: {t:.4f} s" + ("  <- used" if lay == layout else ""))
    a_hat = mats[layout]
    mats.clear()
    a_hat_t = to_torch(a_t_sp, layout)
    del a_sp, a_t_sp
    spmm_s = spmm_times[layout]
    spmm_bytes = (n + 1) * 8 + nnz * 4 + nnz * 4 + nnz * f * 4 + n * f * 4  # same model as bench_gcn
    spmm_gbs = spmm_bytes / spmm_s / 1e9

    # ---- (b) GEMM --------------------------------------------------------------------------
    w = torch.rand(f, args.hidden, generator=gen)
    gemm_s = median_time(args.reps, lambda: torch.mm(xb, w))
    y = torch.mm(xb, w)
    gemm_tn_s = median_time(args.reps, lambda: torch.mm(xb.t(), y))
    flops = 2.0 * n * f * args.hidden
    gemm_gflops = flops / gemm_s / 1e9
    gemm_tn_gflops = flops / gemm_tn_s / 1e9
    del xb, y

    # ---- (c) GCN ---------------------------------------------------------------------------
    x = torch.from_numpy(x_np)
    labels = torch.from_numpy(labels_np)
    train_idx = torch.from_numpy(np.nonzero(train_np & (labels_np >= 0))[0])
    val_idx = torch.from_numpy(np.nonzero(val_np & (labels_np >= 0))[0])
    dims = [x.shape[1]] + [args.hidden] * (args.layers - 1) + [classes]
    weights = [glorot(dims[l], dims[l + 1], gen).requires_grad_() for l in range(args.layers)]
    biases = [torch.zeros(dims[l + 1], requires_grad=True) for l in range(args.layers)]
    opt = torch.optim.Adam([{"params": [weights[0]], "weight_decay": 5e-4},
                            {"params": weights[1:] + biases, "weight_decay": 0.0}], lr=0.01)
    p_drop = 0.5
    cache = {}

    def forward(training):
        h = x
        for l in range(args.layers):
            if training:
                agg = Aggregate.apply(F.dropout(h, p_drop, True), a_hat, a_hat_t)
            elif l == 0:
                if "agg0" not in cache:
                    cache["agg0"] = spmm(a_hat, x)
                agg = cache["agg0"]
            else:
                agg = spmm(a_hat, h)
            h = torch.addmm(biases[l], agg, weights[l])
            if l + 1 < args.layers:
                h = torch.relu(h)
        return h

    epoch_s, losses = [], []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = forward(True)
        loss = F.cross_entropy(out[train_idx], labels[train_idx])
        loss.backward()
        opt.step()
        with torch.no_grad():
            ev = forward(False)
            pred = ev.argmax(dim=1)
            val_acc = (pred[val_idx] == labels[val_idx]).float().mean().item()
            _ = F.cross_entropy(ev[val_idx], labels[val_idx]).item()
        epoch_s.append(time.perf_counter() - t0)
        losses.append(float(loss.item()))
    timed = epoch_s[1:] if len(epoch_s) > 1 else epoch_s
    epoch_med = statistics.median(timed)

    print()
    print("Byte model (SpMM): indptr (N+1)*8 + indices nnz*4 + values nnz*4 + B rows gathered nnz*128*4 "
          f"+ C written N*128*4 = {spmm_bytes / 1e9:.3f} GB per call (same model as bench_gcn; torch's "
          "own index arrays are int64)")
    print(f"{'measurement':34s} {'seconds':>14s} {'rate':>14s}")
    print(f"{'SpMM  A_hat(N x N) * X(N x 128)':34s} {spmm_s:14.4f} {spmm_gbs:11.2f} GB/s  [{layout}]")
    print(f"{'GEMM  (N x 128)*(128 x 128)':34s} {gemm_s:14.4f} {gemm_gflops:8.2f} GFLOP/s")
    print(f"{'GEMM  (N x 128)^T*(N x 128)':34s} {gemm_tn_s:14.4f} {gemm_tn_gflops:8.2f} GFLOP/s")
    print(f"{'GCN epoch (median, skip 1st)':34s} {epoch_med:14.3f}")
    print(f"{'GCN epoch 1 (warm-up)':34s} {epoch_s[0]:14.3f}")
    print(f"final loss {losses[-1]:.4f}, val acc {val_acc:.4f}")
    rec = {"impl": "torch", "torch_version": torch.__version__, "graph": args.graph,
           "threads": torch.get_num_threads(), "num_nodes": n, "nnz_a_hat": nnz, "features": f,
           "hidden": args.hidden, "layers": args.layers, "epochs": args.epochs, "reps": args.reps,
           "sparse_layout": layout, "spmm_seconds_by_layout": spmm_times,
           "spmm_seconds": spmm_s, "spmm_bytes": spmm_bytes, "spmm_gbs": spmm_gbs,
           "gemm_seconds": gemm_s, "gemm_gflops": gemm_gflops,
           "gemm_tn_seconds": gemm_tn_s, "gemm_tn_gflops": gemm_tn_gflops,
           "epoch_seconds_median": epoch_med, "epoch_seconds_first": epoch_s[0],
           "epoch_seconds": epoch_s, "final_loss": losses[-1]}
    print("BENCH_JSON " + json.dumps(rec))


if __name__ == "__main__":
    main()
