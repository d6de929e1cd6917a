// Link prediction's passes over node pairs (link_passes.hpp).
#include "train/tasks/link_passes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "train/tasks/link_metrics.hpp"

namespace plexus {

namespace {

// This rank's block of positives ++ negatives; entry k's pair is a positive when its index in
// that list is below positives.size().
PairBlock select_both(const DotLinkDecoder3D& decoder, const NodePairList& positives, const NodePairList& negatives) {
  std::vector<std::int64_t> u(positives.u), v(positives.v);
  u.insert(u.end(), negatives.u.begin(), negatives.u.end());
  v.insert(v.end(), negatives.v.begin(), negatives.v.end());
  return decoder.select(u, v);
}

}  // namespace

double link_loss_and_grad(Backend& be, ProcessGrid& grid, DotLinkDecoder3D& decoder, const Matrix& z,
                          const NodePairList& positives, const NodePairList& negatives, Matrix& dz) {
  return link_loss_and_grad(be, grid, decoder, z, select_both(decoder, positives, negatives),
                            static_cast<std::int64_t>(positives.size()),
                            static_cast<std::int64_t>(positives.size() + negatives.size()), dz);
}

double link_loss_and_grad(Backend& be, ProcessGrid& grid, LinkDecoder3D& decoder, const Matrix& z,
                          const PairBlock& pairs, std::int64_t positives, std::int64_t total, Matrix& dz) {
  const auto n = static_cast<std::size_t>(pairs.pairs());
  const float weight = 1.0f / static_cast<float>(total);
  std::vector<float> labels(n);
  for (std::size_t e = 0; e < n; ++e) labels[e] = pairs.index[e] < positives ? 1.0f : 0.0f;
  MemoryScope scope(be, MemoryKind::Pairs, "the pairs' scores");
  Buffer<float> scores(be, n), label(be, labels), weights(be, std::vector<float>(n, weight)), grad(be, n);
  decoder.forward(z, pairs, scores.data());
  // Each pair is kept (and scored) by one rank: the sum over the grid counts each once.
  double loss = be.sigmoid_xent(n, scores.data(), label.data(), weights.data(), grad.data()).loss_sum;
  grid.world().all_reduce(&loss, 1, ReduceOp::Sum);
  decoder.backward(z, pairs, grad.data(), dz);
  return loss;
}

std::vector<double> link_scores(Backend& be, ProcessGrid& grid, DotLinkDecoder3D& decoder, const Matrix& z,
                                const NodePairList& positives, const NodePairList& negatives) {
  return link_scores(be, grid, decoder, z, select_both(decoder, positives, negatives),
                     positives.size() + negatives.size());
}

std::vector<double> link_scores(Backend& be, ProcessGrid& grid, LinkDecoder3D& decoder, const Matrix& z,
                                const PairBlock& pairs, std::size_t total) {
  MemoryScope scope(be, MemoryKind::Pairs, "the pairs' scores");
  Buffer<float> scores(be, static_cast<std::size_t>(pairs.pairs()));
  decoder.forward(z, pairs, scores.data());
  // Each score once: every rank adds its own pairs' into a list of every pair.
  std::vector<double> all(total, 0.0);
  const std::vector<float> mine = scores.to_host();
  for (std::size_t e = 0; e < mine.size(); ++e) all[static_cast<std::size_t>(pairs.index[e])] = mine[e];
  grid.world().all_reduce(all.data(), all.size(), ReduceOp::Sum);
  return all;
}

double link_loss_of_scores(const std::vector<double>& scores, std::size_t positives) {
  if (scores.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (std::size_t k = 0; k < scores.size(); ++k) {
    // −log σ(x) for a positive, −log(1 − σ(x)) = −log σ(−x) for a negative, computed stably:
    // max(x, 0) − x·y + log(1 + e^−|x|).
    const double x = scores[k], y = k < positives ? 1.0 : 0.0;
    sum += std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));
  }
  return sum / static_cast<double>(scores.size());
}

double link_roc_auc(Backend& be, ProcessGrid& grid, DotLinkDecoder3D& decoder, const Matrix& z,
                    const NodePairList& positives, const NodePairList& negatives) {
  const std::vector<double> all = link_scores(be, grid, decoder, z, positives, negatives);
  const auto p = static_cast<std::ptrdiff_t>(positives.size());
  return roc_auc(std::vector<float>(all.begin(), all.begin() + p), std::vector<float>(all.begin() + p, all.end()));
}

}  // namespace plexus
