#!/usr/bin/env python3
"""The PyG peer's epoch time for link prediction (issue 46, acceptance 7): PyG's link_pred model
(GCN 2 layers, hidden 128, output 64, dot decoder, a fresh negative per training link each epoch,
Adam 0.01) full-batch on a graph in Plexus format v1 (HDF5), after RandomLinkSplit(num_val=0.05,
num_test=0.1, is_undirected=True).

    pyg_link_epoch.py GRAPH.h5 [--epochs 5] [--threads T] [--decoder dot|mlp]

With --decoder mlp the pairs are scored by OGB's LinkPredictor (pyg_link_peer.py: 3 layers, 128
wide, on z_u * z_v), trained with the encoder.

Prints the median seconds of the training step (encode, negatives, decode, loss, backward, Adam)
and of the whole epoch (the step and the validation and test ROC-AUC's forward passes; the
ROC-AUC itself, in NumPy here, is left out), then `PEER_JSON {...}`.
"""
import argparse
import json
import statistics
import time

import h5py
import numpy as np
import torch
import torch_geometric.transforms as T
from torch_geometric.data import Data
from pyg_link_peer import LinkPredictor, Net, train_step  # the peer's model and step (this folder)


def read_graph(path):
    with h5py.File(path, "r") as f:
        indptr, indices = f["graph/indptr"][...], f["graph/indices"][...]
        x = torch.from_numpy(f["features"][...].astype(np.float32))
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    edge_index = torch.from_numpy(np.stack([rows, indices]).astype(np.int64))
    return Data(x=x, edge_index=edge_index)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--decoder", choices=["dot", "mlp"], default="dot")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    data = read_graph(a.graph)
    split = T.RandomLinkSplit(num_val=0.05, num_test=0.1, is_undirected=True, add_negative_train_samples=False)
    train_data, val_data, test_data = split(data)
    model = Net(data.num_features, 128, 64)
    params = list(model.parameters())
    if a.decoder == "mlp":
        predictor = LinkPredictor(64, 128, 3)
        model.decode = lambda z, idx: predictor(z[idx[0]], z[idx[1]]).view(-1)
        params += list(predictor.parameters())
    optimizer = torch.optim.Adam(params=params, lr=0.01)
    criterion = torch.nn.BCEWithLogitsLoss()
    steps, epochs = [], []
    for _ in range(a.epochs):
        t0 = time.perf_counter()
        train_step(model, optimizer, criterion, train_data)
        t1 = time.perf_counter()
        model.eval()
        with torch.no_grad():
            for d in (val_data, test_data):
                model.decode(model.encode(d.x, d.edge_index), d.edge_label_index).view(-1).sigmoid()
        t2 = time.perf_counter()
        steps.append(t1 - t0)
        epochs.append(t2 - t0)
    summary = {"peer": "pyg", "decoder": a.decoder, "torch": torch.__version__, "threads": a.threads, "nodes": int(data.num_nodes),
               "edges": int(data.edge_index.size(1)), "train_links": int(train_data.edge_label_index.size(1)),
               "step_seconds": statistics.median(steps), "epoch_seconds": statistics.median(epochs)}
    print(f"PyG: training step {summary['step_seconds']:.3f} s, epoch {summary['epoch_seconds']:.3f} s (median of {a.epochs})")
    print("PEER_JSON " + json.dumps(summary))


if __name__ == "__main__":
    main()
