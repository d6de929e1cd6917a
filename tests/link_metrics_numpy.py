#!/usr/bin/env python3
"""The oracle of tests/test_link_metrics.cpp (LinkMetrics.EqualNumpyOnTheSameScores): ROC-AUC,
Hits@K and MRR computed with NumPy, independently of the engine, on the scores that test builds
(float32 arithmetic on both sides, so the scores are the same bits). Prints the values the test
holds; re-run after changing the scores and paste its output there.

    /usr/bin/python3 tests/link_metrics_numpy.py

Definitions: ROC-AUC is the share of (positive, negative) pairs the positive wins, ties one half
(scikit-learn's roc_auc_score); Hits@K and MRR are OGB's linkproppred Evaluator's (Hits@K: the
share of positives strictly above the K-th highest negative, 1 with fewer than K negatives; MRR:
rank = 1 + (#own negatives above + #own negatives at or above) / 2, the mean of 1/rank).
"""
import numpy as np


def scores(count, mult, add, mod, shift):
    k = (np.arange(count, dtype=np.int64) * mult + add) % mod
    return k.astype(np.float32) / np.float32(20) - np.float32(shift)


pos = scores(200, 7919, 13, 101, 2.5)
neg = scores(300, 104729, 7, 97, 2.6)
own = scores(200 * 20, 15485863, 3, 89, 2.2).reshape(200, 20)

p, n = pos.astype(np.float64)[:, None], neg.astype(np.float64)[None, :]
auc = ((p > n).sum() + 0.5 * (p == n).sum()) / (len(pos) * len(neg))
print(f"  const double auc = {auc!r};")
for k in (1, 10, 50, 400):
    hits = 1.0 if len(neg) < k else float((pos > np.sort(neg)[-k]).mean())
    print(f"  // Hits@{k}\n  const double hits_{k} = {hits!r};")
opt = (own > pos[:, None]).sum(axis=1)
pes = (own >= pos[:, None]).sum(axis=1)
mrr = float((1.0 / (0.5 * (opt + pes) + 1)).mean())
print(f"  const double mrr_20 = {mrr!r};")
