#!/usr/bin/env python3
"""An independent brute-force check of `plexus predict --top-k K --nodes FILE` for a GCN link model.

    top_k_brute.py GRAPH.h5 MODEL.h5 TOPK.h5 NODES.txt

From the model file's weights (docs/gcn-model.md) and the graph alone, numpy/scipy compute every
node's embedding in float64 (Â = D^-1/2 (A+I) D^-1/2, self-loops replaced by one of weight 1,
duplicates summed; layer l: Â·H·W + b, ReLU but on the last), then for each listed node the
scores against every node, its neighbours and itself left out, and its K best. Nothing is shared
with the engine but the file formats. Checks: the file's rows are the listed nodes (each once, in
node order); each partner's score is its float64 score within 1e-4 relative; the j-th score is
the j-th best within the same; each partner is one of the best K up to such near-ties. Prints one
line and exits 1 on a mismatch.
"""
import sys

import h5py
import numpy as np
import scipy.sparse as sp


def embeddings(graph, model):
    with h5py.File(graph) as g:
        indptr, indices = g["graph/indptr"][...], g["graph/indices"][...]
        x = g["features"][...].astype(np.float64)
    n = len(indptr) - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    keep = rows != indices
    a = sp.csr_matrix((np.ones(keep.sum()), (rows[keep], indices[keep])), shape=(n, n))
    a = a + sp.identity(n, format="csr")
    d = 1.0 / np.sqrt(np.asarray(a.sum(axis=1)).ravel())
    a_hat = sp.diags(d) @ a @ sp.diags(d)
    with h5py.File(model) as f:
        assert f["options"].attrs.get("model", "gcn") in ("gcn", b"gcn"), "a GCN link model is checked here"
        layers = int(f.attrs["layers"])
        params = [(f[f"value/layer{l}/weight"][...].astype(np.float64), f[f"value/layer{l}/bias"][...].astype(np.float64))
                  for l in range(layers)]
    h = x
    for l, (w, b) in enumerate(params):
        h = a_hat @ (h @ w) + b
        if l + 1 < layers:
            h = np.maximum(h, 0.0)
    return h, indptr, indices


def main():
    graph, model, topk, nodes_txt = sys.argv[1:5]
    z, indptr, indices = embeddings(graph, model)
    listed = sorted({int(l) for l in open(nodes_txt) if l.strip() and not l.startswith("#")})
    with h5py.File(topk) as f:
        k = int(f.attrs["k"])
        ids, partners, scores = f["node_id"][...], f["partners"][...], f["scores"][...]
    if list(ids) != listed:
        sys.exit(f"top_k_brute: the file's rows are not the {len(listed)} listed nodes")
    worst = 0.0
    for r, u in enumerate(listed):
        s = z @ z[u]
        s[u] = -np.inf
        s[indices[indptr[u]:indptr[u + 1]]] = -np.inf
        best = np.argsort(-s, kind="stable")[:k]
        want = s[best]
        tol = 1e-4 * (1.0 + np.abs(want).max())
        got_s = scores[r].astype(np.float64)
        worst = max(worst, np.abs(got_s - want).max() / (1.0 + np.abs(want).max()))
        if np.abs(got_s - want).max() > tol:
            sys.exit(f"top_k_brute: node {u}: the scores {got_s} are not the best {want}")
        if np.abs(s[partners[r]] - got_s).max() > tol:
            sys.exit(f"top_k_brute: node {u}: a partner's score is not its own")
        cut = want[-1] - tol  # partners past a near-tie at the K-th place may differ
        for v in partners[r]:
            if v not in best and s[v] > cut + 2 * tol:
                sys.exit(f"top_k_brute: node {u}: partner {v} is not among the best {k}")
    print(f"top_k_brute: {len(listed)} nodes x {k} partners equal the float64 brute force "
          f"(largest relative score difference {worst:.2e})")


if __name__ == "__main__":
    main()
