#!/usr/bin/env python3
"""PyTorch Geometric peer on the GPU: the GCN that `plexus train --backend cuda` trains, built from
PyG's `GCNConv`, on the same Plexus format-v1 HDF5 file.

    python3 examples/bench/pyg_gcn_peer.py GRAPH.h5 [--epochs E] [--layers L] [--hidden H]
        [--adj csr|edge_index|both] [--reps R]

Model and schedule as Plexus: L GCNConv layers (features -> hidden ... -> classes), dropout 0.5
on every layer input (the features too), ReLU after all but the last layer, masked mean
cross-entropy over the train rows, Adam lr 0.01 with L2 weight decay 5e-4 on layer 0's weight
only; float32 everywhere, TF32 off (PyTorch's default for matmul, and Plexus's).

A_hat = D^-1/2 (A + I) D^-1/2 is built once, untimed, exactly as plexus::gcn_normalize does
(torch_gcn_peer.gcn_normalize, scipy). The adjacency reaches GCNConv in one of PyG's two forms:
  csr         a torch.sparse CSR `adj_t` of the normalised A_hat, GCNConv(normalize=False): PyG's
              SpMM path (cuSPARSE through torch.sparse.mm), its recommended form for large graphs;
  edge_index  the raw edges with GCNConv(cached=True): PyG's gather/scatter message passing,
              which holds an edges x hidden message tensor (may run out of memory on big graphs).
`both` runs each that fits and reports the faster as the peer.

Timed per epoch, with torch.cuda.synchronize() at both ends: `train` = forward + loss + backward
+ Adam step (what `train_seconds` is in Plexus's metrics), and `epoch` = train + an evaluation
forward without dropout + accuracies (Plexus's `epoch_seconds`). The first epoch is warm-up.
Also times one SpMM A_hat(N x N) * X(N x 128) through torch.sparse.mm (cuSPARSE) on the same
matrix. Prints a table and one `BENCH_JSON {...}` line.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_gcn_peer import gcn_normalize, load_graph  # noqa: E402  (the same A_hat as Plexus)


def build_model(dims, adj_form, gen):
    from torch_geometric.nn import GCNConv

    convs = torch.nn.ModuleList()
    for l in range(len(dims) - 1):
        if adj_form == "csr":
            conv = GCNConv(dims[l], dims[l + 1], normalize=False, add_self_loops=False)
        else:
            conv = GCNConv(dims[l], dims[l + 1], cached=True)
        with torch.no_grad():  # Glorot uniform, zero bias (PyG's defaults, seeded)
            lim = (6.0 / (dims[l] + dims[l + 1])) ** 0.5
            conv.lin.weight.copy_((torch.rand(dims[l + 1], dims[l], generator=gen) * 2 - 1) * lim)
            conv.bias.zero_()
        convs.append(conv)
    return convs


def run(args, adj_form, data, dev):
    n, x, labels, train_idx, val_idx, test_idx, classes, adj = data
    gen = torch.Generator().manual_seed(7)
    dims = [x.shape[1]] + [args.hidden] * (args.layers - 1) + [classes]
    convs = build_model(dims, adj_form, gen).to(dev)
    opt = torch.optim.Adam([{"params": [convs[0].lin.weight], "weight_decay": 5e-4},
                            {"params": [p for l, c in enumerate(convs) for name, p in c.named_parameters()
                                        if not (l == 0 and name == "lin.weight")], "weight_decay": 0.0}],
                           lr=0.01)

    def forward(training):
        h = x
        for l, conv in enumerate(convs):
            h = F.dropout(h, 0.5, training)
            h = conv(h, adj)
            if l + 1 < len(convs):
                h = F.relu(h)
        return h

    train_s, epoch_s, losses = [], [], []
    for _ in range(args.epochs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        convs.train()
        opt.zero_grad(set_to_none=True)
        out = forward(True)
        loss = F.cross_entropy(out[train_idx], labels[train_idx])
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        convs.eval()
        with torch.no_grad():
            ev = forward(False)
            pred = ev.argmax(dim=1)
            accs = [(pred[i] == labels[i]).float().mean().item() for i in (train_idx, val_idx, test_idx)]
            _ = F.cross_entropy(ev[val_idx], labels[val_idx]).item()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        train_s.append(t1 - t0)
        epoch_s.append(t2 - t0)
        losses.append(float(loss.item()))
    skip = 1 if args.epochs > 1 else 0
    return {"adj": adj_form, "train_seconds_median": statistics.median(train_s[skip:]),
            "epoch_seconds_median": statistics.median(epoch_s[skip:]), "train_seconds": train_s,
            "epoch_seconds": epoch_s, "losses": losses, "final_accs": accs,
            "peak_gpu_bytes": torch.cuda.max_memory_allocated(dev)}


def cuda_time(fn, reps):
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    return statistics.median(ts)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("graph")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--adj", choices=["csr", "edge_index", "both"], default="both")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("pyg_gcn_peer: no CUDA device")
    import torch_geometric

    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(42)

    t0 = time.perf_counter()
    n, indptr, indices, values, x_np, labels_np, train_np, val_np, test_np, classes = load_graph(args.graph)
    a_sp = gcn_normalize(n, indptr, indices, values)
    prep_s = time.perf_counter() - t0
    nnz = int(a_sp.nnz)
    print(f"graph {args.graph}: N={n}, nnz(A_hat incl. self-loops)={nnz}, F={x_np.shape[1]}, C={classes}; "
          f"torch {torch.__version__}, torch_geometric {torch_geometric.__version__}, "
          f"{torch.cuda.get_device_name(dev)}; load+normalize {prep_s:.1f} s (untimed)")
    sys.stdout.flush()

    x = torch.from_numpy(x_np).to(dev)
    labels = torch.from_numpy(labels_np).to(dev)
    sel = lambda m: torch.from_numpy(np.nonzero(m & (labels_np >= 0))[0]).to(dev)  # noqa: E731
    train_idx, val_idx, test_idx = sel(train_np), sel(val_np), sel(test_np)

    # adj_t in PyG's convention is A_hat transposed (rows = targets); A_hat is symmetric for an
    # undirected graph, but transpose anyway so the math is the same for any input.
    a_t = a_sp.T.tocsr()
    a_t.sort_indices()
    adj_csr = torch.sparse_csr_tensor(torch.from_numpy(a_t.indptr.astype(np.int64)),
                                      torch.from_numpy(a_t.indices.astype(np.int64)),
                                      torch.from_numpy(a_t.data.astype(np.float32)), size=a_t.shape).to(dev)
    del a_t

    # SpMM alone (cuSPARSE via torch.sparse.mm), X: N x 128.
    xb = torch.rand(n, 128, generator=torch.Generator().manual_seed(7)).to(dev) * 2 - 1
    spmm_s = cuda_time(lambda: torch.sparse.mm(adj_csr, xb), args.reps)
    spmm_bytes = (n + 1) * 8 + nnz * 4 + nnz * 4 + nnz * 128 * 4 + n * 128 * 4  # bench_gcn's model
    del xb

    results = []
    forms = ["csr", "edge_index"] if args.adj == "both" else [args.adj]
    for form in forms:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        if form == "csr":
            adj = adj_csr
        else:
            coo = a_sp.tocoo()
            off = coo.row != coo.col  # GCNConv adds its own self-loops and normalises
            adj = torch.from_numpy(np.vstack([coo.row[off], coo.col[off]]).astype(np.int64)).to(dev)
            del coo
        data = (n, x, labels, train_idx, val_idx, test_idx, classes, adj)
        try:
            r = run(args, form, data, dev)
        except torch.OutOfMemoryError as e:
            r = {"adj": form, "error": f"out of memory: {str(e).splitlines()[0]}"}
        results.append(r)
        print(f"  adj={form}: " + (r["error"] if "error" in r else
              f"train {r['train_seconds_median'] * 1e3:.1f} ms, epoch {r['epoch_seconds_median'] * 1e3:.1f} ms, "
              f"final loss {r['losses'][-1]:.4f}, peak {r['peak_gpu_bytes'] / 2**30:.2f} GiB"))
        sys.stdout.flush()
        del adj, data
    ok = [r for r in results if "error" not in r]
    best = min(ok, key=lambda r: r["train_seconds_median"]) if ok else None
    print(f"torch.sparse.mm SpMM (cuSPARSE) A_hat*X(Nx128): {spmm_s * 1e3:.2f} ms, "
          f"{spmm_bytes / spmm_s / 1e9:.0f} GB/s by the byte model")
    rec = {"impl": "pyg", "torch_version": torch.__version__, "pyg_version": torch_geometric.__version__,
           "device": torch.cuda.get_device_name(dev), "graph": args.graph, "num_nodes": n, "nnz_a_hat": nnz,
           "layers": args.layers, "hidden": args.hidden, "epochs": args.epochs,
           "spmm_seconds": spmm_s, "spmm_bytes": spmm_bytes, "runs": results,
           "best_adj": best["adj"] if best else None,
           "train_seconds_median": best["train_seconds_median"] if best else None,
           "epoch_seconds_median": best["epoch_seconds_median"] if best else None}
    print("BENCH_JSON " + json.dumps(rec))


if __name__ == "__main__":
    main()
