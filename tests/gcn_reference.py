#!/usr/bin/env python3
"""An independent float64 GCN trainer (numpy + scipy), the oracle of tests/cli_gcn_reference.sh.

    gcn_reference.py GRAPH.h5 MODEL.h5 METRICS.jsonl [--rel-loss R]

MODEL.h5 is a model file (docs/gcn-model.md) written by `plexus train --save-model` after
`epochs_done` epochs; METRICS.jsonl the metrics of a longer run of the same command. From the
model's weights and Adam moments the reference trains the remaining epochs itself, with the
options the model file records (lr, weight decay, Adam or AdamW, dropout, seed), and checks
every epoch line of METRICS against what it computes:

  loss                       the training loss (forward with dropout), relative error <= R (1e-5)
  val_loss                   the evaluation loss on the validation rows after the update, <= R
  train_acc, val_acc, test_acc  each split's accuracy after the update, within one node
                             of that split (float32 against float64 may flip a near tie)

Nothing is shared with the engine but the file formats and the definitions: Â = D^-1/2 (A+I)
D^-1/2 (self-loops replaced by one of weight 1, duplicates summed, D the row sums of A + I);
layer l: dropout(H) -> Â· -> ·W + b -> ReLU (not on the last); masked mean NLL of log-softmax;
Adam in PyTorch's formulation with L2 weight decay (or AdamW's decoupled decay) on layer 0's
weight only (Kipf & Welling); dropout masks are Philox4x32-10 of (seed, epoch, layer, global
row, column) exactly as include/plexus/rng.hpp defines them, scaled by 1/(1-p).
"""
import argparse
import json
import sys

import h5py
import numpy as np
import scipy.sparse as sp

MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on arrays of 32-bit counters held in uint64 (include/plexus/rng.hpp)."""
    c = [np.asarray(x, dtype=np.uint64) for x in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & MASK32, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & MASK32]
        k0 = (k0 + np.uint64(0x9E3779B9)) & MASK32
        k1 = (k1 + np.uint64(0xBB67AE85)) & MASK32
    return c


def dropout_key(seed, layer):
    """The Philox key (k0, k1) of DropoutKey{seed, epoch, layer} (counter_block in rng.hpp)."""
    return seed & 0xFFFFFFFF, ((seed >> 32) ^ ((layer * 0x9E3779B9) & 0xFFFFFFFF)) & 0xFFFFFFFF


def word_to_uniform(w):
    return (w >> np.uint64(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def keep_scale(rows, cols, p, seed, epoch, layer):
    """rows x cols factors of dropout: 1/(1-p) where kept, 0 where dropped."""
    groups = (cols + 3) // 4
    r = np.repeat(np.arange(rows, dtype=np.uint64), groups)
    g = np.tile(np.arange(groups, dtype=np.uint64), rows)
    words = philox4x32_10(r & MASK32, r >> np.uint64(32), g, np.full_like(r, epoch), *dropout_key(seed, layer))
    w = np.stack(words, axis=1).reshape(rows, groups * 4)[:, :cols]
    p32 = np.float32(p)
    return np.where(word_to_uniform(w) >= p32, 1.0 / (1.0 - float(p32)), 0.0)


def counter_uniform(seed, epoch, layer, rows, cols):
    """counter_uniform(DropoutKey{seed, epoch, layer}, row, col) of rng.hpp at arrays of (row, col):
    for masks whose elements are not a dense grid (GAT's attention dropout, one per edge and head)."""
    r, c = np.asarray(rows, dtype=np.uint64), np.asarray(cols, dtype=np.uint64)
    words = philox4x32_10(r & MASK32, r >> np.uint64(32), c >> np.uint64(2), np.full_like(r, epoch),
                          *dropout_key(seed, layer))
    return word_to_uniform(np.choose((c & np.uint64(3)).astype(np.int64), words))


def normalized_adjacency(f):
    n = int(f.attrs["num_nodes"])
    indptr, indices = f["graph/indptr"][...], f["graph/indices"][...]
    values = f["graph/values"][...].astype(np.float64) if "values" in f["graph"] else np.ones(len(indices))
    rows = np.repeat(np.arange(n), np.diff(indptr))
    off = rows != indices
    a = sp.coo_matrix((values[off], (rows[off], indices[off])), shape=(n, n)).tocsr()  # sums duplicates
    a = a + sp.identity(n, format="csr")
    d = 1.0 / np.sqrt(np.asarray(a.sum(axis=1)).ravel())
    return (sp.diags(d) @ a @ sp.diags(d)).tocsr()


def log_softmax(z):
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


class Reference:
    def __init__(self, graph, model):
        with h5py.File(graph, "r") as f:
            self.a = normalized_adjacency(f)
            self.x = f["features"][...].astype(np.float64)
            self.labels = f["labels"][...].astype(np.int64)
            self.masks = [f[f"masks/{s}"][...].astype(bool) for s in ("train", "val", "test")]
        self.at = self.a.T.tocsr()
        with h5py.File(model, "r") as f:
            self.layers = int(f.attrs["layers"])
            self.epochs_done = int(f.attrs["epochs_done"])
            o = f["options"].attrs
            self.lr, self.wd = float(np.float32(o["lr"])), float(np.float32(o["weight_decay"]))
            self.dropout, self.adamw, self.seed = float(o["dropout"]), bool(o["adamw"]), int(o["seed"])
            names = [f"layer{l}/{t}" for l in range(self.layers) for t in ("weight", "bias")]
            self.params = [f[f"value/{k}"][...].astype(np.float64) for k in names]
            self.m = [f[f"adam_m/{k}"][...].astype(np.float64) for k in names]
            self.v = [f[f"adam_v/{k}"][...].astype(np.float64) for k in names]
        self.decay = [k == 0 for k in range(len(self.params))]  # layer 0's weight only

    def forward(self, epoch, training):
        h, cache = self.x, []
        for l in range(self.layers):
            w, b = self.params[2 * l], self.params[2 * l + 1]
            mask = keep_scale(*h.shape, self.dropout, self.seed, epoch, l) if training and self.dropout > 0 else None
            xin = h * mask if mask is not None else h
            agg = self.a @ xin
            z = agg @ w + b
            cache.append((mask, agg, z))
            h = np.maximum(z, 0.0) if l + 1 < self.layers else z
        return h, cache

    def nll(self, logits, mask):
        lp = log_softmax(logits)
        return float(-lp[mask, self.labels[mask]].mean())

    def train_epoch(self, epoch):
        logits, cache = self.forward(epoch, True)
        train = self.masks[0]
        loss = self.nll(logits, train)
        d = np.exp(log_softmax(logits))
        d[np.arange(len(d)), self.labels] -= 1.0
        d[~train] = 0.0
        d /= train.sum()
        grads = [None] * len(self.params)
        for l in reversed(range(self.layers)):
            mask, agg, z = cache[l]
            if l + 1 < self.layers:
                d = d * (z > 0)
            grads[2 * l], grads[2 * l + 1] = agg.T @ d, d.sum(axis=0, keepdims=True)
            if l > 0:
                d = self.at @ (d @ self.params[2 * l].T)
                if mask is not None:
                    d = d * mask
        self.adam(grads)
        return loss

    def adam(self, grads):
        step = self.epochs_done + 1
        b1, b2, eps = float(np.float32(0.9)), float(np.float32(0.999)), 1e-8
        for k, g in enumerate(grads):
            p, wd = self.params[k], self.wd if self.decay[k] else 0.0
            if not self.adamw:
                g = g + wd * p
            self.m[k] = b1 * self.m[k] + (1 - b1) * g
            self.v[k] = b2 * self.v[k] + (1 - b2) * g * g
            if self.adamw:
                p = p * (1 - self.lr * wd)
            bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
            self.params[k] = p - self.lr / bc1 * self.m[k] / (np.sqrt(self.v[k]) / np.sqrt(bc2) + eps)
        self.epochs_done += 1

    def evaluate(self):
        logits, _ = self.forward(0, False)
        pred = logits.argmax(axis=1)  # ties: the lowest column, as the engine
        acc = [float((pred[m] == self.labels[m]).mean()) if m.any() else 0.0 for m in self.masks]
        return {"train_acc": acc[0], "val_acc": acc[1], "test_acc": acc[2], "val_loss": self.nll(logits, self.masks[1])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("model")
    ap.add_argument("metrics")
    ap.add_argument("--rel-loss", type=float, default=1e-5)
    args = ap.parse_args()
    ref = Reference(args.graph, args.model)
    epochs = [r for r in map(json.loads, open(args.metrics)) if "epoch" in r]
    start = ref.epochs_done
    if len(epochs) <= start:
        sys.exit(f"{args.metrics}: {len(epochs)} epochs, the model has {start}: nothing to compare")
    sizes = [int(m.sum()) for m in ref.masks]
    bad, worst = [], 0.0

    def compare(line, got):
        nonlocal worst
        for key in ("loss", "val_loss"):
            if key in got:
                rel = abs(line[key] - got[key]) / max(abs(got[key]), 1e-12)
                worst = max(worst, rel)
                if rel > args.rel_loss:
                    bad.append(f"epoch {line['epoch']} {key}: engine {line[key]:.8g}, reference {got[key]:.8g} "
                               f"(relative {rel:.2e} > {args.rel_loss:g})")
        for key, size in zip(("train_acc", "val_acc", "test_acc"), sizes):
            if abs(line[key] - got[key]) > 1.0 / max(size, 1) + 1e-9:
                bad.append(f"epoch {line['epoch']} {key}: engine {line[key]:.6f}, reference {got[key]:.6f} "
                           f"(more than one of {size} nodes apart)")

    # The model file is the state after epoch `start`: its evaluation is that epoch's line.
    compare(epochs[start - 1], ref.evaluate())
    for e in range(start, len(epochs)):
        got = {"loss": ref.train_epoch(e)}
        got.update(ref.evaluate())
        compare(epochs[e], got)
    last = epochs[-1]
    print(f"epochs {start}..{len(epochs)}: worst loss error {worst:.1e}; last epoch loss {last['loss']:.5f}, "
          f"accuracy train {last['train_acc']:.3f} val {last['val_acc']:.3f} test {last['test_acc']:.3f}")
    for b in bad[:10]:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
