#!/usr/bin/env python3
"""The PyG peer of link prediction (issue 46): PyG's examples/link_pred.py on Cora.

GCN of 2 layers (hidden 128, output 64), the dot-product decoder, RandomLinkSplit(num_val=0.05,
num_test=0.1, is_undirected=True, add_negative_train_samples=False) on NormalizeFeatures()'s
features, Adam 0.01, 100 epochs, fresh negatives each epoch (negative_sampling), binary
cross-entropy with logits; the test ROC-AUC at the epoch of the best validation ROC-AUC. With
--decoder mlp the pair's score is OGB's baseline LinkPredictor on z_u * z_v instead (3 Linear
layers 64 -> 128 -> 128 -> 1, ReLU between them, no dropout; its logit, not its sigmoid, goes to
the loss), trained with the encoder by the same Adam.

    pyg_link_peer.py PLANETOID_DIR [--seeds 10] [--epochs 100] [--decoder dot|mlp] [--write-split DIR]

PLANETOID_DIR holds the raw ind.cora.* files (read offline). With --write-split, each seed's split
is written for the engine to train on the same one: DIR/seed<k>/{features.f32 (N × F float32,
normalised), train_edges.i64 (2 × E int64: the message-passing edges, both directions),
val_pos.i64, val_neg.i64, test_pos.i64, test_neg.i64 (2 × n int64), shape.txt ("N F")}.
Prints one line per seed and a summary line `PEER_JSON {...}`.
"""
import argparse
import json
import os
import statistics

import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
import numpy as np
from torch_geometric.io import read_planetoid_data
from torch_geometric.nn import GCNConv
from torch_geometric.utils import negative_sampling


def roc_auc_score(labels, scores):
    """scikit-learn's roc_auc_score (not installed here) in NumPy: the Mann-Whitney U over the
    pooled ranks, tied scores sharing their mean rank."""
    labels, scores = np.asarray(labels), np.asarray(scores, dtype=np.float64)
    order = np.argsort(scores, kind="mergesort")
    s = scores[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        ranks[i:j] = (i + 1 + j) / 2.0
        i = j
    pos = labels[order] == 1
    p, n = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - p * (p + 1) / 2) / (p * n)


class Net(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden_channels)
        self.conv2 = GCNConv(hidden_channels, out_channels)

    def encode(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)

    @staticmethod
    def decode(z, edge_label_index):
        return (z[edge_label_index[0]] * z[edge_label_index[1]]).sum(dim=-1)


class LinkPredictor(torch.nn.Module):
    """OGB's baseline LinkPredictor (examples/linkproppred), returning its logit."""

    def __init__(self, in_channels, hidden_channels, num_layers):
        super().__init__()
        widths = [in_channels] + [hidden_channels] * (num_layers - 1) + [1]
        self.lins = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))

    def forward(self, x_i, x_j):
        x = x_i * x_j
        for lin in self.lins[:-1]:
            x = F.relu(lin(x))
        return self.lins[-1](x)


def train_step(model, optimizer, criterion, train_data):
    """One epoch's training step of link_pred: encode, fresh negatives, decode, loss, Adam."""
    model.train()
    optimizer.zero_grad()
    z = model.encode(train_data.x, train_data.edge_index)
    neg = negative_sampling(edge_index=train_data.edge_index, num_nodes=train_data.num_nodes,
                            num_neg_samples=train_data.edge_label_index.size(1), method="sparse")
    edge_label_index = torch.cat([train_data.edge_label_index, neg], dim=-1)
    edge_label = torch.cat([train_data.edge_label, train_data.edge_label.new_zeros(neg.size(1))], dim=0)
    loss = criterion(model.decode(z, edge_label_index).view(-1), edge_label)
    loss.backward()
    optimizer.step()
    return loss


def write_split(out, seed, x, train_data, val_data, test_data):
    d = os.path.join(out, f"seed{seed}")
    os.makedirs(d, exist_ok=True)
    x.numpy().astype("float32").tofile(os.path.join(d, "features.f32"))
    train_data.edge_index.numpy().astype("int64").tofile(os.path.join(d, "train_edges.i64"))
    for name, data in (("val", val_data), ("test", test_data)):
        idx, lab = data.edge_label_index, data.edge_label
        idx[:, lab == 1].numpy().astype("int64").tofile(os.path.join(d, f"{name}_pos.i64"))
        idx[:, lab == 0].numpy().astype("int64").tofile(os.path.join(d, f"{name}_neg.i64"))
    with open(os.path.join(d, "shape.txt"), "w") as f:
        f.write(f"{x.size(0)} {x.size(1)}\n")


def run(raw_dir, seed, epochs, out, decoder):
    torch.manual_seed(seed)
    data = read_planetoid_data(raw_dir, "cora")
    data = T.NormalizeFeatures()(data)
    split = T.RandomLinkSplit(num_val=0.05, num_test=0.1, is_undirected=True, add_negative_train_samples=False)
    train_data, val_data, test_data = split(data)
    if out:
        write_split(out, seed, data.x, train_data, val_data, test_data)
    model = Net(data.num_features, 128, 64)
    params = list(model.parameters())
    if decoder == "mlp":
        predictor = LinkPredictor(64, 128, 3)
        model.decode = lambda z, idx: predictor(z[idx[0]], z[idx[1]]).view(-1)
        params += list(predictor.parameters())
    optimizer = torch.optim.Adam(params=params, lr=0.01)
    criterion = torch.nn.BCEWithLogitsLoss()

    @torch.no_grad()
    def test(d):
        model.eval()
        z = model.encode(d.x, d.edge_index)
        out = model.decode(z, d.edge_label_index).view(-1).sigmoid()
        return roc_auc_score(d.edge_label.cpu().numpy(), out.cpu().numpy())

    best_val = final_test = 0.0
    for epoch in range(epochs):
        train_step(model, optimizer, criterion, train_data)
        val_auc, test_auc = test(val_data), test(test_data)
        if val_auc > best_val:
            best_val, final_test = val_auc, test_auc
    return best_val, final_test


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw_dir")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--write-split")
    ap.add_argument("--decoder", choices=["dot", "mlp"], default="dot")
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    tests = []
    for seed in range(a.seeds):
        val, test = run(a.raw_dir, seed, a.epochs, a.write_split, a.decoder)
        tests.append(test)
        print(f"seed {seed}: best val ROC-AUC {val:.4f}, its test ROC-AUC {test:.4f}", flush=True)
    summary = {"peer": "pyg", "decoder": a.decoder, "torch": torch.__version__, "epochs": a.epochs, "seeds": a.seeds,
               "test_auc_mean": statistics.mean(tests), "test_auc_std": statistics.pstdev(tests), "test_auc": tests}
    print("PEER_JSON " + json.dumps(summary))


if __name__ == "__main__":
    main()
