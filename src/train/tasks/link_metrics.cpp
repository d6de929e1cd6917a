// Link prediction's ranking metrics (link_metrics.hpp has the definitions).
#include "train/tasks/link_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

namespace plexus {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void require_finite(const std::vector<float>& v, const char* what) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw std::invalid_argument(std::string("link metrics: ") + what + " score " + std::to_string(i) +
                                  " is not finite (" + std::to_string(v[i]) + ")");
}
}  // namespace

double roc_auc(const std::vector<float>& positives, const std::vector<float>& negatives) {
  require_finite(positives, "positive");
  require_finite(negatives, "negative");
  if (positives.empty() || negatives.empty()) return kNaN;
  // Pooled, sorted ascending; a run of equal scores shares the mean of its ranks.
  std::vector<std::pair<float, bool>> all;
  all.reserve(positives.size() + negatives.size());
  for (const float s : positives) all.emplace_back(s, true);
  for (const float s : negatives) all.emplace_back(s, false);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double positive_ranks = 0;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    double in_run = 0;
    while (j < all.size() && all[j].first == all[i].first) in_run += all[j++].second;
    positive_ranks += in_run * (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;  // mean of ranks i+1..j
    i = j;
  }
  const auto p = static_cast<double>(positives.size()), n = static_cast<double>(negatives.size());
  return (positive_ranks - p * (p + 1) / 2) / (p * n);
}

double hits_at(const std::vector<float>& positives, const std::vector<float>& negatives, std::size_t k) {
  if (k == 0) throw std::invalid_argument("hits_at: K must be at least 1");
  require_finite(positives, "positive");
  require_finite(negatives, "negative");
  if (positives.empty()) return kNaN;
  if (negatives.size() < k) return 1.0;
  std::vector<float> top(negatives);
  std::nth_element(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(k - 1), top.end(), std::greater<float>());
  const float kth = top[k - 1];
  std::size_t hits = 0;
  for (const float s : positives) hits += s > kth;
  return static_cast<double>(hits) / static_cast<double>(positives.size());
}

double mrr(const std::vector<float>& positives, const std::vector<float>& negatives, std::size_t per_positive) {
  require_finite(positives, "positive");
  require_finite(negatives, "negative");
  if (negatives.size() != positives.size() * per_positive)
    throw std::invalid_argument("mrr: " + std::to_string(negatives.size()) + " negatives for " +
                                std::to_string(positives.size()) + " positives of " + std::to_string(per_positive) +
                                " each");
  if (positives.empty()) return kNaN;
  double sum = 0;
  for (std::size_t i = 0; i < positives.size(); ++i) {
    std::size_t above = 0, tied = 0;
    for (std::size_t j = i * per_positive; j < (i + 1) * per_positive; ++j) {
      above += negatives[j] > positives[i];
      tied += negatives[j] == positives[i];
    }
    sum += 1.0 / (1.0 + static_cast<double>(above) + static_cast<double>(tied) / 2.0);
  }
  return sum / static_cast<double>(positives.size());
}

}  // namespace plexus
