#!/usr/bin/env python3
"""Checks examples/bench/pyg_gnn_peer.py itself, before tests/cli_gnn_pyg_parity.sh compares the
engine with it: on a 5-node graph, for every model variant, the peer's forward pass and one
Adam step against a float64 numpy computation written from the definitions alone.

    gnn_peer_check.py

The graph is directed (row i lists the j that node i aggregates, so a transposed edge direction
shows), has a self-loop (dropped by every kind; GCN adds its own of weight 1), a duplicate edge
(merged: its weights summed for GCN, one neighbour for SAGE and GIN), an edge weight other than 1
(used by GCN only) and a node without neighbours. For each variant a model file with random
weights and Adam moments after 3 epochs is written in the engine's layout (docs/gcn-model.md),
read by the peer's own loaders, and checked:

  forward   the peer's logits against dense numpy: gcn  Â H W + b with Â = D^-1/2 (A + I) D^-1/2;
            sage  agg(H) W + H W_root + b (agg: the sum over the neighbours or their mean, 0 without
            any), then row-wise L2 normalisation if set; gin  ReLU(((1 + ε) H + B H) W + b) W2 + b2;
            gat  per head h, Z = H W, α_ij = softmax_j LeakyReLU(a_dst·z_i + a_src·z_j) over the
            neighbours and the node itself, Σ_j α_ij z_j, heads concatenated (hidden) or averaged
            (last), + b; gine  gin's MLP of (1 + ε) h_i + Σ_j ReLU(h_j + e_ij W_e + b_e); gat with
            edge features  + att_edge·(e_ij W_e) in α's logit, a self-loop's e the mean of the
            node's edges' rows; ReLU between layers (gat: ELU). With attention dropout, also the
            training forward, α masked as the engine keys it (gcn_reference.counter_uniform).
  step      the parameters after the peer's Adam step against numpy's Adam (step 4, L2 or
            decoupled decay on layer 0's matrices only, gat: on every parameter) fed with
            central-difference gradients of the numpy loss (mean cross-entropy over the training
            rows; with GAT's attention dropout, that of the masked forward).
"""
import os
import sys
import tempfile

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "bench"))
import pyg_gnn_peer as peer  # noqa: E402
from gcn_reference import counter_uniform, keep_scale  # noqa: E402  (tests/, beside this file)

N, DIMS = 5, [3, 4, 2]
# Row i lists the nodes i aggregates: 0 <- 1, 2, 2 (duplicate), 0 (self-loop); 1 <- 2;
# 2 <- 0, 3; 3 <- 1; 4 <- none.
INDPTR = np.array([0, 4, 5, 7, 8, 8])
INDICES = np.array([1, 2, 2, 0, 2, 0, 3, 1])
VALUES = np.array([1.0, 0.5, 1.5, 3.0, 1.0, 2.0, 1.0, 1.0], dtype=np.float32)
# A feature row per stored entry (gine, gat with edge features): the duplicate's second row and
# the self-loop's differ from the rest, and must not be read (the first row of 0 <- 2 is).
EDGE_FEATURES = np.array([[0.5, -1.0], [1.5, 0.25], [-3.0, 2.0], [4.0, 4.0], [-0.5, 0.75], [1.0, 1.0],
                          [0.25, -2.0], [-1.25, 0.5]], dtype=np.float32)
TRAIN = np.array([1, 1, 0, 1, 1], dtype=np.uint8)
LABELS = np.array([0, 1, 1, 0, 1], dtype=np.int32)
LR, WD, STEPS_DONE, SEED = 0.05, 0.1, 3, 1

VARIANTS = {
    "gcn": dict(model="gcn"),
    "sage-mean": dict(model="sage", aggregator="mean", normalize=0),
    "sage-sum": dict(model="sage", aggregator="sum", normalize=0),
    "sage-mean-normalize": dict(model="sage", aggregator="mean", normalize=1),
    "sage-sum-normalize-adamw": dict(model="sage", aggregator="sum", normalize=1, adamw=1),
    "gin-eps0.1": dict(model="gin", gin_eps=0.1, train_eps=0),
    "gin-train-eps": dict(model="gin", gin_eps=0.3, train_eps=1),
    "gin-train-eps-adamw": dict(model="gin", gin_eps=-0.2, train_eps=1, adamw=1),
    # Hidden: 2 heads of 2 features concatenated; last: 1 head.
    "gat-concat": dict(model="gat", heads=2, out_heads=1, attn_dropout=0.0, negative_slope=0.2),
    # Hidden: 4 heads of 1 feature; last: 3 heads of 2 averaged.
    "gat-mean-adamw": dict(model="gat", heads=4, out_heads=3, attn_dropout=0.0, negative_slope=0.2, adamw=1),
    # The engine's attention dropout masks, replayed.
    "gat-attn-dropout": dict(model="gat", heads=2, out_heads=2, attn_dropout=0.5, negative_slope=0.2),
    # GINEConv (edge_dim 2) and GATConv(edge_dim=2), the self-loops' rows the mean of the node's edges'.
    "gine-eps0.1": dict(model="gine", gin_eps=0.1, train_eps=0),
    "gine-train-eps-adamw": dict(model="gine", gin_eps=-0.2, train_eps=1, adamw=1),
    "gat-edge-features": dict(model="gat", heads=2, out_heads=1, attn_dropout=0.0, negative_slope=0.2, edge_features=1),
    "gat-edge-features-mean-adamw": dict(model="gat", heads=4, out_heads=3, attn_dropout=0.0, negative_slope=0.1,
                                         edge_features=1, adamw=1),
}
EDGE_DIM = EDGE_FEATURES.shape[1]


def edge_rows():
    """[i, j] -> the feature row of the stored edge i <- j (its first, for the duplicate; none for
    the self-loop), zeros where there is no edge."""
    e = np.zeros((N, N, EDGE_DIM))
    seen = np.zeros((N, N), bool)
    for i in range(N):
        for k in range(INDPTR[i], INDPTR[i + 1]):
            j = INDICES[k]
            if j != i and not seen[i, j]:
                e[i, j], seen[i, j] = EDGE_FEATURES[k], True
    return e


def dense_adjacency():
    a = np.zeros((N, N))
    for i in range(N):
        for k in range(INDPTR[i], INDPTR[i + 1]):
            if INDICES[k] != i:
                a[i, INDICES[k]] += VALUES[k]
    return a, (a != 0).astype(float)


def param_names(o):
    names = {"gcn": ["weight", "bias"], "sage": ["weight", "root_weight", "bias"],
             "gin": ["weight", "bias", "weight2", "bias2"] + (["eps"] if o.get("train_eps") else []),
             "gine": ["weight", "bias", "weight2", "bias2"] + (["eps"] if o.get("train_eps") else [])
                     + ["edge_weight", "edge_bias"],
             "gat": ["weight", "att_src", "att_dst", "bias"]
                    + (["edge_weight", "att_edge"] if o.get("edge_features") else [])}[o["model"]]
    return [f"layer{k}/{n}" for k in range(len(DIMS) - 1) for n in names]


def gat_heads(o, k):
    """GAT layer k's heads and features per head."""
    last = k + 2 == len(DIMS)
    heads = o["out_heads"] if last else o["heads"]
    return heads, DIMS[k + 1] if last else DIMS[k + 1] // heads


def shape(name, o):
    k, n = int(name[5]), name.split("/")[1]
    d_in, d_out = DIMS[k], DIMS[k + 1]
    if o["model"] == "gat":  # the heads' columns side by side
        heads, width = gat_heads(o, k)
        d_out_heads = heads * width
        return {"weight": (d_in, d_out_heads), "att_src": (1, d_out_heads), "att_dst": (1, d_out_heads),
                "edge_weight": (EDGE_DIM, d_out_heads), "att_edge": (1, d_out_heads)}.get(n, (1, d_out))
    shapes = {"weight": (d_in, d_out), "root_weight": (d_in, d_out), "weight2": (d_out, d_out), "eps": (1, 1),
              "edge_weight": (EDGE_DIM, d_in), "edge_bias": (1, d_in)}  # gine: lin = Linear(D_e, d_in)
    return shapes.get(n, (1, d_out))  # the biases: 1 x d_out


def gat_layer(o, k, h, w, b, epoch):
    """GAT layer k from its definition: every head's attention over j in N(i) and i itself; with
    `epoch`, α dropped where the engine's key (seed, epoch, 256 + k; i * heads + head, j) says."""
    heads, width = gat_heads(o, k)
    z = (h @ w("weight")).reshape(N, heads, width)
    s_src = (z * w("att_src").reshape(heads, width)).sum(axis=2)  # [N x heads]
    s_dst = (z * w("att_dst").reshape(heads, width)).sum(axis=2)
    e = s_dst[:, None, :] + s_src[None, :, :]  # [i, j, head]
    if o.get("edge_features"):  # + att_edge . (W_e e_ij) per head; a self-loop's row: the mean of i's edges'
        rows = edge_rows()
        count = b.sum(axis=1)
        loops = rows.sum(axis=1) / np.maximum(count, 1)[:, None]
        rows[np.arange(N), np.arange(N)] = loops
        m = (rows @ w("edge_weight")).reshape(N, N, heads, width)
        e = e + (m * w("att_edge").reshape(heads, width)).sum(axis=3)
    e = np.where(e > 0, e, o["negative_slope"] * e)
    edge = (b + np.eye(N))[:, :, None] > 0  # B has no self-loop; every node gets one
    e = np.where(edge, e, -np.inf)
    alpha = np.exp(e - e.max(axis=1, keepdims=True))
    alpha = alpha / alpha.sum(axis=1, keepdims=True)
    if epoch is not None and o["attn_dropout"] > 0:
        i, j, hh = np.meshgrid(np.arange(N), np.arange(N), np.arange(heads), indexing="ij")
        u = counter_uniform(SEED, epoch, 256 + k, i * heads + hh, j)
        alpha = alpha * np.where(u >= np.float32(o["attn_dropout"]), 1 / (1 - o["attn_dropout"]), 0.0)
    out = np.einsum("ijh,jhf->ihf", alpha, z)
    out = out.reshape(N, heads * width) if k + 2 < len(DIMS) else out.mean(axis=1)
    return out + w("bias")


def forward(o, x, p, epoch=None):
    """Dense float64 logits from the definitions; p maps the engine's names to arrays. `epoch`:
    the training forward of that epoch (GAT's attention dropout; no other dropout here)."""
    a, b = dense_adjacency()
    a_hat = a + np.eye(N)
    d = 1.0 / np.sqrt(a_hat.sum(axis=1))
    a_hat = d[:, None] * a_hat * d[None, :]
    h = x
    for k in range(len(DIMS) - 1):
        w = lambda n: p[f"layer{k}/{n}"]  # noqa: E731
        if o["model"] == "gcn":
            z = a_hat @ h @ w("weight") + w("bias")
        elif o["model"] == "sage":
            agg = b @ h
            if o["aggregator"] == "mean":
                agg = agg / np.maximum(b.sum(axis=1, keepdims=True), 1)
            z = agg @ w("weight") + h @ w("root_weight") + w("bias")
            if o["normalize"]:
                z = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
        elif o["model"] in ("gin", "gine"):
            eps = w("eps")[0, 0] if o["train_eps"] else np.float32(o["gin_eps"])
            if o["model"] == "gin":
                agg = b @ h
            else:  # sum over j in N(i) of ReLU(h_j + e_ij W_e + b_e)
                msg = np.maximum(h[None, :, :] + edge_rows() @ w("edge_weight") + w("edge_bias"), 0)
                agg = (b[:, :, None] * msg).sum(axis=1)
            z = np.maximum(((1 + eps) * h + agg) @ w("weight") + w("bias"), 0) @ w("weight2") + w("bias2")
        else:
            z = gat_layer(o, k, h, w, b, epoch)
        if k + 2 == len(DIMS):
            h = z
        elif o["model"] == "gat":
            h = np.where(z > 0, z, np.expm1(np.minimum(z, 0)))  # ELU
        else:
            h = np.maximum(z, 0)
    return h


def loss(o, x, p, epoch=None):
    z = forward(o, x, p, epoch)
    lp = z - z.max(axis=1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(axis=1, keepdims=True))
    t = TRAIN.astype(bool)
    return -lp[t, LABELS[t]].mean()


def adam_step(o, x, p, m, v, epoch=None):
    """numpy's Adam step STEPS_DONE + 1 with central-difference gradients (of the training
    forward of `epoch` where given)."""
    out, h = {}, 1e-6
    b1, b2, step = 0.9, 0.999, STEPS_DONE + 1
    for name in p:
        g = np.zeros_like(p[name])
        for idx in np.ndindex(*g.shape):
            plus = {**p, name: p[name].copy()}
            minus = {**p, name: p[name].copy()}
            plus[name][idx] += h
            minus[name][idx] -= h
            g[idx] = (loss(o, x, plus, epoch) - loss(o, x, minus, epoch)) / (2 * h)
        decayed = o["model"] == "gat" or name in ("layer0/weight", "layer0/root_weight", "layer0/weight2",
                                                  "layer0/edge_weight")
        wd = WD if decayed else 0.0
        w = p[name]
        if o.get("adamw"):
            w = w * (1 - LR * wd)
        else:
            g = g + wd * w
        mm, vv = b1 * m[name] + (1 - b1) * g, b2 * v[name] + (1 - b2) * g * g
        out[name] = w - LR / (1 - b1 ** step) * mm / (np.sqrt(vv) / np.sqrt(1 - b2 ** step) + 1e-8)
    return out


def write_files(folder, o, rng):
    graph, model = os.path.join(folder, "g.h5"), os.path.join(folder, "m.h5")
    x = rng.standard_normal((N, DIMS[0])).astype(np.float32)
    with h5py.File(graph, "w") as f:
        f.attrs.update({"num_nodes": N, "num_features": DIMS[0], "num_classes": DIMS[-1], "directed": 1})
        f["graph/indptr"], f["graph/indices"], f["graph/values"] = INDPTR, INDICES, VALUES
        f["graph/edge_features"] = EDGE_FEATURES
        f["features"], f["labels"] = x, LABELS
        f["masks/train"], f["masks/val"], f["masks/test"] = TRAIN, 1 - TRAIN, 1 - TRAIN
    tensors = {}
    with h5py.File(model, "w") as f:
        f.attrs.update({"layers": len(DIMS) - 1, "epochs_done": STEPS_DONE})
        f["dims"] = np.array(DIMS)
        f.create_group("options").attrs.update(
            {"lr": np.float32(LR), "weight_decay": np.float32(WD), "dropout": np.float32(0), "seed": np.uint64(SEED),
             "adamw": np.uint8(o.get("adamw", 0)), "model": o["model"],
             **{k: np.int32(v) if k in ("heads", "out_heads") else np.uint8(v) if isinstance(v, int)
                else np.float32(v) if isinstance(v, float) else v
                for k, v in o.items() if k not in ("model", "adamw")}})
        for name in param_names(o):
            val = (rng.standard_normal(shape(name, o)) * 0.7).astype(np.float32)
            if name.endswith("/eps"):
                val[...] = o["gin_eps"]
            mom = (rng.standard_normal(shape(name, o)) * 0.05).astype(np.float32)
            sq = rng.uniform(0.001, 0.01, shape(name, o)).astype(np.float32)
            for group, arr in (("value", val), ("adam_m", mom), ("adam_v", sq)):
                f[f"{group}/{name}"] = arr
                tensors.setdefault(group, {})[name] = arr.astype(np.float64)
    return graph, model, x.astype(np.float64), tensors


def check(name, o, folder, rng):
    graph, model, x, t = write_files(folder, o, rng)
    g, mf = peer.Graph(graph), peer.ModelFile(model)
    net = peer.Net(mf.dims, mf.opt, g.edge_dim)
    opt = peer.make_optimizer(net, mf.lr, mf.weight_decay, mf.adamw)
    mf.load_into(net, opt)
    net.eval()
    with torch.no_grad():
        got = net(g, lambda h, k: h).double().numpy()
    want = forward(o, x, t["value"])
    problems = [] if np.ptp(want, axis=0).min() > 1e-2 else ["the logits barely differ across nodes: pick another seed"]
    fwd = np.abs(got - want).max() / np.abs(want).max()
    # GAT's attention dropout: the engine's masks of the next epoch, in the training forward too.
    epoch = STEPS_DONE if o.get("attn_dropout") else None
    attention = peer.philox_attention(o["attn_dropout"], SEED, epoch, g, net) if epoch is not None else None
    if attention is not None:
        net.train()
        with torch.no_grad():
            got = net(g, lambda h, k: h, attention).double().numpy()
        want = forward(o, x, t["value"], epoch)
        fwd = max(fwd, np.abs(got - want).max() / np.abs(want).max())
        if np.abs(want - forward(o, x, t["value"])).max() < 1e-3:
            problems.append("attention dropout changed nothing: pick another seed")
    if fwd > 1e-5:
        problems.append(f"forward: largest difference {fwd:.1e} of the largest logit")
    peer.train_epoch(net, g, opt, lambda h, k: h, attention)
    after = adam_step(o, x, t["value"], t["adam_m"], t["adam_v"], epoch)
    step = 0.0
    for pname, p, transposed in net.engine_params():
        mine = p.detach().double().numpy()
        mine = mine.T if transposed else mine.reshape(after[pname].shape)
        moved = np.abs(after[pname] - t["value"][pname]).max()
        err = np.abs(mine - after[pname]).max() / max(moved, 1e-12)
        step = max(step, err)
        if err > 1e-3:
            problems.append(f"step: {pname} off by {err:.1e} of its move {moved:.1e}")
    print(("ok   " if not problems else "FAIL ") + f"{name}: forward {fwd:.1e}, step {step:.1e} (relative)")
    for p in problems:
        print("  " + p)
    return not problems


def check_counter_uniform():
    """counter_uniform at single elements (GAT's attention masks) keeps what keep_scale's dense
    masks keep (the input dropout's, which tests/cli_gcn_reference.sh holds to the engine's),
    for a seed with high bits and a layer past 255."""
    seed, epoch, layer, p = (5 << 32) + 7, 4, 257, 0.4
    want = keep_scale(9, 11, p, seed, epoch, layer) != 0
    r, c = np.meshgrid(np.arange(9), np.arange(11), indexing="ij")
    got = counter_uniform(seed, epoch, layer, r, c) >= np.float32(p)
    ok = np.array_equal(got, want)
    print(("ok   " if ok else "FAIL ") + "counter_uniform: the same elements as keep_scale")
    return ok


def main():
    rng = np.random.default_rng(8)  # every variant's logits differ across nodes
    with tempfile.TemporaryDirectory() as folder:
        results = [check(name, o, folder, rng) for name, o in VARIANTS.items()]
    results.append(check_counter_uniform())
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
