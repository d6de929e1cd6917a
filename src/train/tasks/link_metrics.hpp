#pragma once
// The ranking metrics of link prediction, as OGB's linkproppred Evaluator and scikit-learn
// define them, on the scores of a split's positive pairs and its negative pairs (gathered from
// the ranks that scored them). Pure functions of host values; every sum in double.
//
//   roc_auc   scikit-learn's roc_auc_score with the positives labelled 1: the probability that
//             a positive outscores a negative, ties counting one half (Mann–Whitney U over the
//             pooled ranks, tied scores sharing their mean rank). NaN without a positive or
//             without a negative.
//   hits_at   OGB's Hits@K against one shared negative set: the fraction of positives scoring
//             strictly above the K-th highest negative; 1 when there are fewer than K negatives
//             (OGB's convention). NaN without a positive.
//   mrr       OGB's MRR with each positive against its own negatives (`per_positive` of them,
//             row-major: negatives[i·m .. i·m + m) belong to positive i): rank = 1 + (#negatives
//             above + #negatives above or equal) / 2, the mean of 1/rank. NaN without a positive.
#include <cstddef>
#include <vector>

namespace plexus {

double roc_auc(const std::vector<float>& positives, const std::vector<float>& negatives);
double hits_at(const std::vector<float>& positives, const std::vector<float>& negatives, std::size_t k);
double mrr(const std::vector<float>& positives, const std::vector<float>& negatives, std::size_t per_positive);

}  // namespace plexus
