#!/usr/bin/env python3
"""PyTorch Geometric peer of Plexus's GNNs (GCN, GraphSAGE, GIN, GAT, APPNP): the models `plexus train
--model gcn|sage|gin|gat|appnp` trains, built from PyG's GCNConv, SAGEConv, GINConv, GATConv and
Linears with APPNP, on the same
Plexus format-v1 graph file (docs/format-v1.md). CPU, float32. Run it with /usr/bin/python3
(Debian's torch; scripts/install-deps.sh --tests installs torch_geometric 2.6.1 beside it).

Continue a Plexus run from its model file (a checkpoint or --save-model; docs/gcn-model.md):

    pyg_gnn_peer.py GRAPH.h5 MODEL.h5 [--epochs E] [--metrics METRICS.jsonl [--rel-loss R]]
        [--time] [--threads T] [--json]

  The kind, widths and training options come from MODEL.h5; its weights are loaded into the
  convolutions (transposed to PyTorch's Linear layout) and its Adam moments and step count into
  torch.optim.Adam (AdamW when /options adamw is 1). It trains until epoch E (default: the last
  epoch of METRICS), printing each epoch's training loss and, after the update, the validation
  loss and the three accuracies. With --metrics (the JSON Lines of the engine's `--metrics`) it
  compares the `loss` of every epoch after epochs_done, and the `val_loss` of every epoch from
  epochs_done on (the model file's own state included), with its own: relative error <= R
  (default 1e-4), else it exits 1 naming the first epoch that differs. Dropout masks are the
  engine's Philox masks (tests/gcn_reference.py's keep_scale, which needs SciPy), so runs with
  dropout compare too; so are GAT's attention dropout masks (gcn_reference.counter_uniform).

Train from PyG's own initialisation (the quality comparison):

    pyg_gnn_peer.py GRAPH.h5 --fresh [--model gcn|sage|gin|gat|appnp] [--layers L] [--hidden H] [--epochs E]
        [--lr LR] [--weight-decay WD] [--adamw] [--dropout P] [--seeds 0,1,2]
        [--aggregator mean|sum] [--normalize] [--gin-eps EPS] [--train-eps]
        [--heads H] [--out-heads H2] [--attn-dropout P] [--negative-slope S] [--steps K] [--alpha A]
        [--time] [--threads T] [--json]

  For each seed: torch.manual_seed(seed), the convolutions' own reset_parameters, F.dropout
  (and GATConv's own attention dropout);
  reports the test accuracy at the best-validation epoch (the highest validation accuracy, ties
  to the lower validation loss, as the engine picks it) and the mean over the seeds.

Many comparisons in one process (torch and PyG imported once: 2.7 s a process here):

    pyg_gnn_peer.py --each JOBS

  JOBS holds one comparison a line, `LABEL ARGUMENTS...` (the arguments above, shell-quoted);
  each prints its own output, then `each: LABEL ok` or `each: LABEL FAIL (exit N)`; the exit
  code is 1 if any failed.

--time skips the evaluations and reports the time of an epoch's forward + loss + backward +
Adam step (the median after the first, warm-up, epoch); --threads T sets torch.set_num_threads.
In model-file mode the dropout masks are drawn before each epoch's timer starts. --json prints
one JSON object instead of the text.

The model, as the engine defines it: widths D_0 = features, hidden x (L-1), D_L = classes; layer
K maps D_K to D_K+1 as dropout(H) -> conv -> ReLU (gat: ELU; none after the last layer). The graph's
self-loops are dropped and its duplicate edges merged (their weights summed); messages run
from j to i for every j in row i of the CSR.

  gcn   GCNConv(D_K, D_K+1): A_hat H W + b, A_hat = D^-1/2 (A + I) D^-1/2 with the file's edge
        weights and one self-loop of weight 1 (PyG adds it: the graph's own were dropped).
        Model file: layerK/weight [D_K x D_K+1] (H W, PyTorch's lin.weight transposed), layerK/bias.
  sage  SAGEConv(aggr=mean|sum, normalize, root_weight=True): lin_l(agg_{j in N(i)} h_j) + lin_r(h_i),
        lin_l with the bias; normalize: F.normalize(out, p=2, dim=-1) before the ReLU. Edge
        weights are ignored; a node without neighbours aggregates 0. Model file: layerK/weight
        (lin_l), layerK/root_weight (lin_r), layerK/bias.
  gin   GINConv(Linear(D_K, D_K+1) -> ReLU -> Linear(D_K+1, D_K+1), eps, train_eps):
        MLP((1 + eps) h_i + sum_{j in N(i)} h_j), edge weights ignored. Model file: layerK/weight,
        layerK/bias (first Linear), layerK/weight2, layerK/bias2 (second), layerK/eps [1 x 1] when
        eps is trained (else eps is /options gin_eps).
  gine  GINEConv(the same MLP, eps, train_eps, edge_dim=D): MLP((1 + eps) h_i + sum_{j in N(i)}
        relu(h_j + lin(e_ij))), e_ij the file's /graph/edge_features row of the stored edge i -> j
        (row i, column j); lin = Linear(D, D_K). Model file: gin's and layerK/edge_weight [D x D_K]
        (lin.weight transposed), layerK/edge_bias.
  gat   GATConv(D_K, F, heads, concat, negative_slope, dropout=attn_dropout, add_self_loops=True):
        z = H W (no bias), e_ij = LeakyReLU(att_dst . z_i + att_src . z_j) per head over the edges
        j -> i and one self-loop per node, alpha = softmax_j(e_ij), attention dropout on alpha,
        out_i = sum_j alpha_ij z_j, then + bias. Hidden layers: /options heads heads of
        F = D_K+1 / heads, concatenated; the last: out_heads heads of F = D_L, averaged. Edge
        weights ignored. Model file: layerK/weight [D_K x heads*F] (head-major columns h*F + f),
        layerK/att_src and layerK/att_dst [1 x heads*F] (PyG's (1, heads, F)), layerK/bias [1 x D_K+1].
        The engine's attention dropout mask of layer K keeps alpha_ij of head h where
        counter_uniform(DropoutKey{seed, epoch, 256 + K}, i * heads + h, j) >= attn_dropout.
        With /options edge_features: GATConv(edge_dim=D), e_ij += att_edge . lin_edge(edge_ij) per
        head, the self-loops' rows the mean of the node's edges' (fill_value "mean"); model file
        layerK/edge_weight [D x heads*F] (lin_edge.weight transposed), layerK/att_edge.

  appnp Linear(D_K, D_K+1) for every layer (ReLU between), then APPNP(K=steps, alpha) over
        A_hat as gcn's (PyG's citation example). Model file: layerK/weight, layerK/bias.

Loss: mean cross-entropy over the training rows. Adam in PyTorch's formulation (betas 0.9,
0.999, eps 1e-8) with L2 weight decay (or AdamW's decoupled decay) on layer 0's weight matrices
only (sage: weight and root_weight; gin: weight and weight2), never on biases or eps; gat and
appnp decay every parameter of every layer (PyG's GAT and APPNP examples:
Adam(model.parameters(), weight_decay=5e-4)).
"""
import argparse
import functools
import json
import os
import statistics
import sys
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F

KINDS = ("gcn", "sage", "gin", "gine", "gat", "appnp")
# The layer index of GAT's attention dropout keys: DropoutKey{seed, epoch, ATTENTION_LAYER + K}, apart
# from the input dropout's {seed, epoch, K}.
ATTENTION_LAYER = 256


class Graph:
    """The file's features, labels and splits, and the cleaned edges as PyG's edge_index."""

    def __init__(self, path):
        with h5py.File(path, "r") as f:
            self.n = int(f.attrs["num_nodes"])
            self.classes = int(f.attrs["num_classes"])
            indptr = f["graph/indptr"][...].astype(np.int64)
            cols = f["graph/indices"][...].astype(np.int64)
            values = f["graph/values"][...].astype(np.float64) if "values" in f["graph"] else np.ones(len(cols))
            self.x = torch.from_numpy(f["features"][...].astype(np.float32))
            labels = f["labels"][...].astype(np.int64)
            masks = [f[f"masks/{s}"][...].astype(bool) & (labels >= 0) for s in ("train", "val", "test")]
            edge_features = f["graph/edge_features"][...].astype(np.float32) if "edge_features" in f["graph"] else None
        self.labels = torch.from_numpy(labels)
        self.splits = [torch.from_numpy(np.nonzero(m)[0]) for m in masks]
        rows = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(indptr))
        off = rows != cols
        keys, first, where = np.unique(rows[off] * self.n + cols[off], return_index=True, return_inverse=True)
        i, j = keys // self.n, keys % self.n
        # Each edge's feature row (gine; the engine refuses a graph that stores an edge twice).
        self.edge_attr = None if edge_features is None else torch.from_numpy(edge_features[off][first])
        self.edge_dim = 0 if edge_features is None else edge_features.shape[1]
        self.edge_index = torch.from_numpy(np.vstack([j, i]))  # PyG's (source, target): j -> i
        self.edge_weight = torch.from_numpy(
            np.bincount(where, weights=values[off], minlength=len(keys)).astype(np.float32))


class Options:
    """The kind and its options, from a model file's /options or from the command line."""

    def __init__(self, kind, aggregator="mean", normalize=False, gin_eps=0.0, train_eps=False, heads=8, out_heads=1,
                 attn_dropout=0.0, negative_slope=0.2, steps=10, alpha=0.1, edge_features=False):
        if kind not in KINDS:
            sys.exit(f"pyg_gnn_peer: unknown model kind '{kind}' ({', '.join(KINDS)})")
        if aggregator not in ("mean", "sum"):
            sys.exit(f"pyg_gnn_peer: unknown aggregator '{aggregator}' (mean, sum)")
        if heads < 1 or out_heads < 1:
            sys.exit(f"pyg_gnn_peer: heads {heads} and out heads {out_heads} must be at least 1")
        self.kind, self.aggregator, self.normalize = kind, aggregator, normalize
        self.gin_eps, self.train_eps = gin_eps, train_eps
        self.heads, self.out_heads = heads, out_heads
        self.attn_dropout, self.negative_slope = attn_dropout, negative_slope
        self.steps, self.alpha = steps, alpha
        self.edge_features = edge_features  # gat: GATConv(edge_dim=D) on the graph's edge features

    def text(self):
        """The kind and the options that shape it, as the peer reports them."""
        return self.kind + {"sage": f" aggregator={self.aggregator} normalize={int(self.normalize)}",
                            "gin": f" eps={self.gin_eps:g} train_eps={int(self.train_eps)}",
                            "gine": f" eps={self.gin_eps:g} train_eps={int(self.train_eps)}",
                            "gat": f" heads={self.heads} out_heads={self.out_heads} attn_dropout={self.attn_dropout:g}"
                                   f" negative_slope={self.negative_slope:g} edge_features={int(self.edge_features)}",
                            "appnp": f" steps={self.steps} alpha={self.alpha:g}"}.get(self.kind, "")


@functools.lru_cache(maxsize=None)
def engine_gat_conv_class():
    """GATConv whose attention dropout can be the engine's: while `attention_mask` is set (a
    function of the edges' sources and targets giving the [edges x heads] factors, 0 or 1/(1-p)),
    those factors replace F.dropout on alpha; unset, it is GATConv itself. Made once (PyG
    compiles each MessagePassing class's propagate), when PyG is first needed."""
    from torch_geometric.nn import GATConv

    class EngineGATConv(GATConv):
        attention_mask = None

        def edge_update(self, alpha_j, alpha_i, edge_attr, index, ptr, dim_size, edge_index_j):
            if self.attention_mask is None:
                return super().edge_update(alpha_j, alpha_i, edge_attr, index, ptr, dim_size)
            p, self.dropout = self.dropout, 0.0  # GATConv's own code, without its dropout
            try:
                alpha = super().edge_update(alpha_j, alpha_i, edge_attr, index, ptr, dim_size)
            finally:
                self.dropout = p
            return alpha * self.attention_mask(edge_index_j, index)

    return EngineGATConv


def gat_conv(d_in, d_out, last, opt, edge_dim=0):
    """A layer of the engine's GAT: hidden layers concatenate `heads` heads of d_out / heads
    features; the last averages `out_heads` heads of d_out (= classes) features. With
    opt.edge_features, edge_dim = the graph's (self-loops filled with the mean, GATConv's default)."""
    heads = opt.out_heads if last else opt.heads
    if not last and d_out % heads:
        sys.exit(f"pyg_gnn_peer: the hidden width {d_out} is not a multiple of the heads ({heads})")
    if opt.edge_features and edge_dim <= 0:
        sys.exit("pyg_gnn_peer: gat with edge features needs a graph with them (/graph/edge_features)")
    return engine_gat_conv_class()(d_in, d_out if last else d_out // heads, heads=heads, concat=not last,
                                   negative_slope=opt.negative_slope, dropout=opt.attn_dropout, add_self_loops=True,
                                   edge_dim=edge_dim if opt.edge_features else None)


class Net(torch.nn.Module):
    """The L convolutions of one kind, widths `dims`, with PyG's own initialisation."""

    def __init__(self, dims, opt, edge_dim=0):
        from torch_geometric.nn import APPNP, GCNConv, GINConv, GINEConv, SAGEConv

        super().__init__()
        self.kind = opt.kind
        convs = []
        # appnp: PyG's citation example: Linears with a ReLU between, then APPNP(K, alpha).
        self.prop = APPNP(opt.steps, opt.alpha) if opt.kind == "appnp" else None
        for k, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
            if opt.kind == "appnp":
                convs.append(torch.nn.Linear(d_in, d_out))
            elif opt.kind == "gat":
                convs.append(gat_conv(d_in, d_out, k + 2 == len(dims), opt, edge_dim))
            elif opt.kind == "gcn":
                convs.append(GCNConv(d_in, d_out, cached=True))  # A_hat normalised once
            elif opt.kind == "sage":
                convs.append(SAGEConv(d_in, d_out, aggr=opt.aggregator, normalize=opt.normalize, root_weight=True))
            else:
                mlp = torch.nn.Sequential(torch.nn.Linear(d_in, d_out), torch.nn.ReLU(), torch.nn.Linear(d_out, d_out))
                if opt.kind == "gine":
                    if edge_dim <= 0:
                        sys.exit("pyg_gnn_peer: gine needs a graph with edge features (/graph/edge_features)")
                    convs.append(GINEConv(mlp, eps=opt.gin_eps, train_eps=opt.train_eps, edge_dim=edge_dim))
                else:
                    convs.append(GINConv(mlp, eps=opt.gin_eps, train_eps=opt.train_eps))
        self.convs = torch.nn.ModuleList(convs)

    def forward(self, g, dropout, attention=None):
        """dropout(h, k) is layer k's input dropout; attention(k), where given, is GAT layer k's
        attention dropout (an EngineGATConv.attention_mask; None: GATConv's own)."""
        h = g.x
        for k, conv in enumerate(self.convs):
            h = dropout(h, k)
            if self.kind == "gat":
                conv.attention_mask = attention(k) if attention else None
            if self.kind == "appnp":
                h = conv(h)
            elif self.kind == "gine" or (self.kind == "gat" and conv.lin_edge is not None):
                h = conv(h, g.edge_index, g.edge_attr)
            else:
                h = conv(h, g.edge_index, g.edge_weight) if self.kind == "gcn" else conv(h, g.edge_index)
            if k + 1 < len(self.convs):
                h = F.elu(h) if self.kind == "gat" else F.relu(h)
        return self.prop(h, g.edge_index, g.edge_weight) if self.prop is not None else h

    def engine_params(self):
        """[(engine name, parameter, stored transposed)] in the model file's naming; the ones
        weight decay applies to are layer 0's matrices (gat: all of them)."""
        out = []
        for k, c in enumerate(self.convs):
            if self.kind == "gcn":
                named = [("weight", c.lin.weight, True), ("bias", c.bias, False)]
            elif self.kind == "appnp":
                named = [("weight", c.weight, True), ("bias", c.bias, False)]
            elif self.kind == "sage":
                named = [("weight", c.lin_l.weight, True), ("root_weight", c.lin_r.weight, True),
                         ("bias", c.lin_l.bias, False)]
            elif self.kind == "gat":  # att_src, att_dst: PyG's (1, heads, F) is the file's [1 x heads*F]
                named = [("weight", c.lin.weight, True), ("att_src", c.att_src, False),
                         ("att_dst", c.att_dst, False), ("bias", c.bias, False)]
                if c.lin_edge is not None:  # lin_edge: Linear(edge_dim, heads * F, bias=False)
                    named += [("edge_weight", c.lin_edge.weight, True), ("att_edge", c.att_edge, False)]
            else:
                named = [("weight", c.nn[0].weight, True), ("bias", c.nn[0].bias, False),
                         ("weight2", c.nn[2].weight, True), ("bias2", c.nn[2].bias, False)]
                if isinstance(c.eps, torch.nn.Parameter):
                    named.append(("eps", c.eps, False))
                if self.kind == "gine":  # lin: Linear(edge_dim, d_in)
                    named += [("edge_weight", c.lin.weight, True), ("edge_bias", c.lin.bias, False)]
            out += [(f"layer{k}/{name}", p, t) for name, p, t in named]
        return out


def make_optimizer(net, lr, weight_decay, adamw):
    params = net.engine_params()
    if net.kind in ("gat", "appnp"):  # as PyG's GAT and APPNP examples: every parameter
        decayed = [p for _, p, _ in params]
    else:  # Kipf & Welling's rule, which the engine keeps for these kinds
        decayed = [p for name, p, _ in params
                   if name in ("layer0/weight", "layer0/root_weight", "layer0/weight2", "layer0/edge_weight")]
    rest = [p for _, p, _ in params if not any(p is q for q in decayed)]
    cls = torch.optim.AdamW if adamw else torch.optim.Adam
    return cls([{"params": decayed, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}],
               lr=lr, betas=(0.9, 0.999), eps=1e-8)


def evaluate(net, g):
    net.eval()
    with torch.no_grad():
        out = net(g, lambda h, k: h)
        pred = out.argmax(dim=1)
        accs = [float((pred[s] == g.labels[s]).float().mean()) if len(s) else float("nan") for s in g.splits]
        val = g.splits[1]
        val_loss = float(F.cross_entropy(out[val], g.labels[val])) if len(val) else float("nan")
    return {"val_loss": val_loss, "train_acc": accs[0], "val_acc": accs[1], "test_acc": accs[2]}


def sync(g):
    """Waits for the GPU when the graph is on one (so that a time covers the work)."""
    if g.x.is_cuda:
        torch.cuda.synchronize()


def train_epoch(net, g, opt, dropout, attention=None):
    """One epoch: forward + loss + backward + Adam step; (loss, seconds)."""
    sync(g)
    t0 = time.perf_counter()
    net.train()
    opt.zero_grad(set_to_none=True)
    out = net(g, dropout, attention)
    train = g.splits[0]
    loss = F.cross_entropy(out[train], g.labels[train])
    loss.backward()
    opt.step()
    sync(g)
    return float(loss), time.perf_counter() - t0


def timing(seconds):
    timed = seconds[1:] if len(seconds) > 1 else seconds
    return {"train_seconds_median": statistics.median(timed), "train_seconds_first": seconds[0]}


class ModelFile:
    """A Plexus model file: kind and options, widths, parameters and Adam moments."""

    def __init__(self, path):
        with h5py.File(path, "r") as f:
            o = f["options"].attrs
            text = lambda v: v.decode() if isinstance(v, bytes) else str(v)  # noqa: E731
            kind = text(o["model"]) if "model" in o else "gcn"
            self.opt = Options(kind, text(o.get("aggregator", "mean")), bool(o.get("normalize", 0)),
                               float(np.float32(o.get("gin_eps", 0.0))), bool(o.get("train_eps", 0)),
                               int(o.get("heads", 8)), int(o.get("out_heads", 1)),
                               float(np.float32(o.get("attn_dropout", 0.0))),
                               float(np.float32(o.get("negative_slope", 0.2))), int(o.get("steps", 10)),
                               float(np.float32(o.get("alpha", 0.1))), bool(o.get("edge_features", 0)))
            self.lr, self.weight_decay = float(np.float32(o["lr"])), float(np.float32(o["weight_decay"]))
            self.adamw, self.dropout, self.seed = bool(o["adamw"]), float(np.float32(o["dropout"])), int(o["seed"])
            self.epochs_done = int(f.attrs["epochs_done"])
            self.dims = [int(d) for d in f["dims"][...]]
            self.tensors = {}
            for group in ("value", "adam_m", "adam_v"):
                f[group].visititems(lambda name, obj, group=group: self.tensors.__setitem__(
                    f"{group}/{name}", obj[...]) if isinstance(obj, h5py.Dataset) else None)

    def load_into(self, net, opt):
        """Copies the weights into `net` and the moments and step count into `opt`."""
        params = net.engine_params()
        expected = {f"{g}/{name}" for g in ("value", "adam_m", "adam_v") for name, _, _ in params}
        have = set(self.tensors)
        if have != expected:
            sys.exit(f"pyg_gnn_peer: the model file's tensors are not those of a {self.opt.kind} model: "
                     f"missing {sorted(expected - have)}, unexpected {sorted(have - expected)}")

        def torch_layout(key, p, transposed):
            a = self.tensors[key].astype(np.float32)
            a = a.T if transposed else a.reshape(p.shape)
            if tuple(a.shape) != tuple(p.shape):
                sys.exit(f"pyg_gnn_peer: {key} has shape {self.tensors[key].shape}, the model wants {tuple(p.shape)}")
            return torch.from_numpy(np.ascontiguousarray(a))

        with torch.no_grad():
            for name, p, t in params:
                p.copy_(torch_layout(f"value/{name}", p, t))
                opt.state[p] = {"step": torch.tensor(float(self.epochs_done)),
                                "exp_avg": torch_layout(f"adam_m/{name}", p, t),
                                "exp_avg_sq": torch_layout(f"adam_v/{name}", p, t)}


def philox_dropout(p, seed, epoch, g):
    """The engine's dropout for epoch `epoch` (0-based): Philox masks, drawn now, as dropout(h, k)."""
    if p == 0:
        return lambda h, k: h
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
    from gcn_reference import keep_scale

    masks = {}

    def drop(h, k):
        if k not in masks:
            masks[k] = torch.from_numpy(keep_scale(g.n, h.shape[1], p, seed, epoch, k).astype(np.float32))
        return h * masks[k]

    return drop


def philox_attention(p, seed, epoch, g, net):
    """The engine's attention dropout of `net` (a GAT) for epoch `epoch` (0-based), drawn now, as
    attention(k): layer k's EngineGATConv.attention_mask. Element (edge j -> i, head h) is kept
    where counter_uniform(seed, epoch, ATTENTION_LAYER + k; i * heads + h, j) >= p, i and j in the
    file's node order; None without attention dropout."""
    if p == 0:
        return None
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
    from gcn_reference import counter_uniform

    # GATConv's edges: the graph's (it has no self-loop left to remove), then one loop per node.
    loops = torch.arange(g.n, dtype=g.edge_index.dtype)
    src, dst = torch.cat([g.edge_index[0], loops]), torch.cat([g.edge_index[1], loops])
    p32 = np.float32(p)
    masks = []
    for k, conv in enumerate(net.convs):
        h = np.arange(conv.heads, dtype=np.uint64)
        i, j = dst.numpy().astype(np.uint64)[:, None], src.numpy().astype(np.uint64)[:, None]
        u = counter_uniform(seed, epoch, ATTENTION_LAYER + k, i * np.uint64(conv.heads) + h,
                            np.broadcast_to(j, (len(j), len(h))))
        masks.append(torch.from_numpy(np.where(u >= p32, 1.0 / (1.0 - float(p32)), 0.0).astype(np.float32)))

    def attention(k):
        def mask(s, d):
            if not (torch.equal(s, src) and torch.equal(d, dst)):
                sys.exit("pyg_gnn_peer: GATConv's edges are not the graph's followed by one self-loop per node")
            return masks[k]
        return mask

    return attention


def read_metrics(path):
    lines = {}
    for text in open(path):
        rec = json.loads(text)
        if "epoch" in rec and "loss" in rec:
            lines[int(rec["epoch"])] = rec
    return lines


def continue_run(args, g, say):
    mf = ModelFile(args.model_file)
    if mf.dims[0] != g.x.shape[1] or mf.dims[-1] != g.classes:
        sys.exit(f"pyg_gnn_peer: the model's widths {mf.dims} do not fit the graph "
                 f"({g.x.shape[1]} features, {g.classes} classes)")
    metrics = read_metrics(args.metrics) if args.metrics else {}
    end = args.epochs if args.epochs is not None else max(metrics, default=0)
    if end <= mf.epochs_done:
        sys.exit(f"pyg_gnn_peer: nothing to train: the model has {mf.epochs_done} epochs done, "
                 f"the run ends at epoch {end} (--epochs, or the last epoch of --metrics)")
    net = Net(mf.dims, mf.opt, g.edge_dim)
    opt = make_optimizer(net, mf.lr, mf.weight_decay, mf.adamw)
    mf.load_into(net, opt)
    o = mf.opt
    say(f"{o.text()} {mf.dims}; lr {mf.lr:g}, weight decay {mf.weight_decay:g}{' (AdamW)' if mf.adamw else ''}, "
        f"dropout {mf.dropout:g}; "
        f"from epoch {mf.epochs_done} to {end}")

    errors, worst = [], 0.0

    def compare(epoch, key, got):
        nonlocal worst
        line = metrics.get(epoch)
        if line is None or key not in line or line[key] is None:
            return
        rel = abs(line[key] - got) / max(abs(got), 1e-12)
        worst = max(worst, rel)
        if rel > args.rel_loss:
            errors.append(f"epoch {epoch} {key}: engine {line[key]:.8g}, PyG {got:.8g} "
                          f"(relative {rel:.2e} > {args.rel_loss:g})")

    records, seconds = [], []
    if not args.time:
        compare(mf.epochs_done, "val_loss", evaluate(net, g)["val_loss"])
    for e in range(mf.epochs_done, end):
        attention = philox_attention(o.attn_dropout, mf.seed, e, g, net) if o.kind == "gat" else None
        loss, s = train_epoch(net, g, opt, philox_dropout(mf.dropout, mf.seed, e, g), attention)
        seconds.append(s)
        rec = {"epoch": e + 1, "loss": loss, "train_seconds": s}
        compare(e + 1, "loss", loss)
        if not args.time:
            rec.update(evaluate(net, g))
            compare(e + 1, "val_loss", rec["val_loss"])
        records.append(rec)
        say(" ".join(f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}" for k, v in rec.items()))
    result = {"kind": o.kind, "dims": mf.dims, "epochs_done": mf.epochs_done, "epochs": records, **timing(seconds)}
    say(f"train epoch (forward + loss + backward + Adam): median {result['train_seconds_median'] * 1e3:.1f} ms "
        f"(first {result['train_seconds_first'] * 1e3:.1f} ms), {torch.get_num_threads()} threads")
    if args.metrics:
        result.update({"compared": len(errors) == 0, "worst_rel_error": worst, "errors": errors})
        say(f"against {args.metrics}: worst relative error {worst:.1e}" + (
            f"; {len(errors)} above {args.rel_loss:g}, the first: {errors[0]}" if errors else f" (<= {args.rel_loss:g})"))
    return result, 1 if errors else 0


def compare_attention(args, g, say):
    """The engine's attention coefficients (plexus predict --attention, of the same model file)
    against GATConv's own (return_attention_weights) for the model file's weights: every
    entry and head within --rel-loss, used here as an absolute bound on alpha."""
    import h5py

    mf = ModelFile(args.model_file)
    if mf.opt.kind != "gat":
        sys.exit(f"pyg_gnn_peer: --attention needs a GAT model, {args.model_file} holds {mf.opt.kind}")
    net = Net(mf.dims, mf.opt, g.edge_dim)
    mf.load_into(net, make_optimizer(net, mf.lr, mf.weight_decay, mf.adamw))
    net.eval()
    worst, errors = 0.0, []
    with h5py.File(args.attention) as f, torch.no_grad():
        h = g.x
        for k, conv in enumerate(net.convs):
            conv.attention_mask = None
            h, (edges, alpha) = conv(h, g.edge_index, return_attention_weights=True)
            if k + 1 < len(net.convs):
                h = F.elu(h)
            theirs = {(int(d), int(s_)): a for s_, d, a in zip(edges[0].tolist(), edges[1].tolist(), alpha.numpy())}
            group = f[f"attention/layer{k}"]
            dst, src, ours = group["dst"][()], group["src"][()], group["alpha"][()]
            if len(dst) != len(theirs) or ours.shape[1] != alpha.shape[1]:
                errors.append(f"layer {k}: {len(dst)} entries x {ours.shape[1]} heads, GATConv {len(theirs)} x "
                              f"{alpha.shape[1]}")
                continue
            for d, s_, a in zip(dst.tolist(), src.tolist(), ours):
                t = theirs.get((d, s_))
                if t is None:
                    errors.append(f"layer {k}: entry {s_} -> {d} is not one of GATConv's")
                    break
                worst = max(worst, float(np.abs(a - t).max()))
    if worst > args.rel_loss:
        errors.append(f"largest difference of alpha {worst:.2e} > {args.rel_loss:g}")
    say(f"attention of {args.attention} against GATConv's: largest difference {worst:.1e}"
        + (f"; {errors[0]}" if errors else ""))
    return {"kind": "gat", "compared": not errors, "worst_abs_error": worst, "errors": errors}, 1 if errors else 0


def fresh_runs(args, g, say):
    o = Options(args.model, args.aggregator, args.normalize, args.gin_eps, args.train_eps, args.heads, args.out_heads,
                args.attn_dropout, args.negative_slope, args.steps, args.alpha, args.edge_features)
    dims = [g.x.shape[1]] + [args.hidden] * (args.layers - 1) + [g.classes]
    runs = []
    for seed in args.seeds:
        torch.manual_seed(seed)
        net = Net(dims, o, g.edge_dim).to(g.x.device)
        opt = make_optimizer(net, args.lr, args.weight_decay, args.adamw)
        best, seconds, loss = None, [], float("nan")
        for e in range(args.epochs):
            loss, s = train_epoch(net, g, opt, lambda h, k: F.dropout(h, args.dropout, training=True))
            seconds.append(s)
            if args.time:
                continue
            m = evaluate(net, g)
            if best is None or m["val_acc"] > best["val_acc"] or (
                    m["val_acc"] == best["val_acc"] and m["val_loss"] < best["val_loss"]):
                best = {"best_epoch": e + 1, **m}
        run = {"seed": seed, "final_loss": loss, **timing(seconds), **(best or {})}
        runs.append(run)
        say(f"seed {seed}: final loss {loss:.4f}, epoch {run['train_seconds_median'] * 1e3:.1f} ms"
            + ("" if args.time else f", best validation {best['val_acc']:.4f} at epoch {best['best_epoch']}, "
               f"test {best['test_acc']:.4f}"))
    result = {"kind": o.kind, "dims": dims, "epochs": args.epochs, "runs": runs}
    if not args.time:
        tests = [r["test_acc"] for r in runs]
        result["test_acc_mean"] = statistics.mean(tests)
        result["test_acc_std"] = statistics.stdev(tests) if len(tests) > 1 else 0.0
        say(f"test accuracy at the best-validation epoch: {result['test_acc_mean']:.4f} "
            f"+- {result['test_acc_std']:.4f} over {len(tests)} seeds")
    return result, 0


def each(jobs):
    """Runs every line `LABEL ARGUMENTS...` of the file `jobs` as main(ARGUMENTS); 1 if any failed."""
    import shlex

    failed = 0
    with open(jobs) as f:
        lines = [shlex.split(line) for line in f if line.strip()]
    for label, *argv in lines:
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse's errors, and a comparison's own exit (a message: 1)
            if isinstance(e.code, str):
                print(e.code, flush=True)
            rc = e.code if isinstance(e.code, int) else 1
        except Exception as e:  # one job's failure is its line's, not the others'
            print(f"{type(e).__name__}: {e}", flush=True)
            rc = 1
        print(f"each: {label} ok" if rc == 0 else f"each: {label} FAIL (exit {rc})", flush=True)
        failed += rc != 0
    return 1 if failed else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("graph", help="Plexus format-v1 graph (HDF5)")
    ap.add_argument("model_file", nargs="?", help="Plexus model file to continue (not with --fresh)")
    ap.add_argument("--epochs", type=int, help="train until this epoch (--fresh: default 200)")
    ap.add_argument("--metrics", help="the engine's metrics (JSON Lines) to compare with")
    ap.add_argument("--rel-loss", type=float, default=1e-4, help="largest relative loss error (default 1e-4)")
    ap.add_argument("--time", action="store_true", help="time the epochs, without evaluations")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="--fresh: where to train (default cpu)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    ap.add_argument("--fresh", action="store_true", help="train from PyG's initialisation (no model file)")
    ap.add_argument("--attention", metavar="PREDICTIONS",
                    help="gat: compare the attention coefficients of this predictions file (plexus predict "
                         "--attention of MODEL.h5) with GATConv's; trains nothing")
    fresh = ap.add_argument_group("--fresh only (a model file brings its own)")
    fresh.add_argument("--model", choices=KINDS, help="default gcn")
    fresh.add_argument("--layers", type=int, help="default 2")
    fresh.add_argument("--hidden", type=int, help="default 16")
    fresh.add_argument("--lr", type=float, help="default 0.01")
    fresh.add_argument("--weight-decay", type=float, help="default 5e-4")
    fresh.add_argument("--adamw", action="store_const", const=True)
    fresh.add_argument("--dropout", type=float, help="default 0.5")
    fresh.add_argument("--seeds", type=lambda s: [int(v) for v in s.split(",")], help="default 0")
    fresh.add_argument("--aggregator", choices=("mean", "sum"), help="sage: default mean")
    fresh.add_argument("--normalize", action="store_const", const=True, help="sage")
    fresh.add_argument("--gin-eps", type=float, help="gin: default 0")
    fresh.add_argument("--train-eps", action="store_const", const=True, help="gin")
    fresh.add_argument("--heads", type=int, help="gat: hidden layers' heads, default 8 (--hidden a multiple)")
    fresh.add_argument("--out-heads", type=int, help="gat: the last layer's heads, averaged; default 1")
    fresh.add_argument("--attn-dropout", type=float, help="gat: GATConv's dropout on alpha; default 0")
    fresh.add_argument("--negative-slope", type=float, help="gat: default 0.2")
    fresh.add_argument("--edge-features", action="store_const", const=True,
                       help="gat: GATConv(edge_dim) on the graph's edge features")
    fresh.add_argument("--steps", type=int, help="appnp: propagation steps K, default 10")
    fresh.add_argument("--alpha", type=float, help="appnp: teleport probability, default 0.1")
    args = ap.parse_args(argv)
    if args.fresh == (args.model_file is not None):
        ap.error("give either MODEL.h5 or --fresh")
    defaults = {"model": "gcn", "layers": 2, "hidden": 16, "lr": 0.01, "weight_decay": 5e-4, "adamw": False,
                "dropout": 0.5, "seeds": [0], "aggregator": "mean", "normalize": False, "gin_eps": 0.0,
                "train_eps": False, "heads": 8, "out_heads": 1, "attn_dropout": 0.0, "negative_slope": 0.2,
                "steps": 10, "alpha": 0.1, "edge_features": False}
    given = [k for k in defaults if getattr(args, k) is not None]
    if not args.fresh and given:
        ap.error(f"--{given[0].replace('_', '-')} is for --fresh: MODEL.h5 brings its own")
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.time and args.metrics:
        ap.error("--time does not compare: leave out --metrics")
    if args.attention and args.fresh:
        ap.error("--attention compares a model file's attention: give MODEL.h5, not --fresh")
    if not args.fresh and args.epochs is None and not args.metrics and not args.attention:
        ap.error("MODEL.h5 needs --epochs or --metrics (where to stop)")
    if args.threads:
        torch.set_num_threads(args.threads)
    say = (lambda text: None) if args.json else (lambda text: print(text, flush=True))
    g = Graph(args.graph)
    if args.device == "cuda":
        if not args.fresh:
            ap.error("--device cuda is for --fresh runs")
        for name in ("x", "labels", "edge_index", "edge_weight", "edge_attr"):
            if getattr(g, name) is not None:
                setattr(g, name, getattr(g, name).cuda())
        g.splits = [s.cuda() for s in g.splits]
    if args.attention:
        result, rc = compare_attention(args, g, say)
    elif args.fresh:
        args.epochs = 200 if args.epochs is None else args.epochs
        result, rc = fresh_runs(args, g, say)
    else:
        result, rc = continue_run(args, g, say)
    if args.json:
        import torch_geometric

        print(json.dumps({"torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
                          "threads": torch.get_num_threads(), "graph": args.graph, **result}))
    return rc


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--each":
        sys.exit(each(sys.argv[2]))
    sys.exit(main())
