// Link prediction's ranking metrics (src/train/tasks/link_metrics.hpp): hand-computed cases of
// each definition (ties, fewer negatives than K, OGB's MRR ranks), ROC-AUC against the
// brute-force count over every positive-negative pair on random scores with many ties, and every
// metric against NumPy's (tests/link_metrics_numpy.py) on the same scores.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "train/tasks/link_metrics.hpp"

namespace plexus {
namespace {

TEST(LinkMetrics, RocAucHandComputed) {
  EXPECT_DOUBLE_EQ(roc_auc({0.9f, 0.8f}, {0.1f, 0.85f}), 0.75);  // 3 of the 4 pairs ordered
  EXPECT_DOUBLE_EQ(roc_auc({0.5f}, {0.5f}), 0.5);                // a tie counts one half
  EXPECT_DOUBLE_EQ(roc_auc({3, 2}, {1, 0, -1}), 1.0);
  EXPECT_DOUBLE_EQ(roc_auc({-3}, {1, 0, -1}), 0.0);
  EXPECT_DOUBLE_EQ(roc_auc({1, 1, 0}, {1, 0}), (1.5 + 1.5 + 0.5) / 6);
  EXPECT_TRUE(std::isnan(roc_auc({}, {1})));
  EXPECT_TRUE(std::isnan(roc_auc({1}, {})));
}

TEST(LinkMetrics, RocAucIsTheShareOfOrderedPairsTiesHalf) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> tenth(0, 12);
  for (const auto& [p, n] : {std::pair{1, 1}, std::pair{7, 3}, std::pair{200, 333}, std::pair{1000, 17}}) {
    std::vector<float> pos, neg;
    for (int i = 0; i < p; ++i) pos.push_back(static_cast<float>(tenth(rng) + 1) / 10.0f);  // many ties
    for (int i = 0; i < n; ++i) neg.push_back(static_cast<float>(tenth(rng)) / 10.0f);
    double ordered = 0;
    for (const float a : pos)
      for (const float b : neg) ordered += a > b ? 1.0 : a == b ? 0.5 : 0.0;
    EXPECT_NEAR(roc_auc(pos, neg), ordered / (static_cast<double>(p) * n), 1e-12) << p << "x" << n;
  }
}

TEST(LinkMetrics, HitsAtKAgainstTheKthNegative) {
  const std::vector<float> neg{0.9f, 0.7f, 0.5f};
  EXPECT_DOUBLE_EQ(hits_at({0.8f, 0.7f, 0.95f}, neg, 2), 2.0 / 3);  // 0.7 ties the 2nd negative: a miss
  EXPECT_DOUBLE_EQ(hits_at({0.8f, 0.7f, 0.95f}, neg, 1), 1.0 / 3);
  EXPECT_DOUBLE_EQ(hits_at({0.8f, 0.7f, 0.95f}, neg, 3), 1.0);
  EXPECT_DOUBLE_EQ(hits_at({0.0f}, neg, 4), 1.0);  // fewer negatives than K: OGB counts a hit
  EXPECT_TRUE(std::isnan(hits_at({}, neg, 1)));
  EXPECT_THROW(hits_at({1}, neg, 0), std::invalid_argument);
}

TEST(LinkMetrics, MrrRanksEachPositiveAmongItsOwnNegatives) {
  // Positive 0.5 against 0.9, 0.5, 0.1: one above, one tied: rank 2.5. Positive 2 against
  // 1, 0, -1: rank 1.
  EXPECT_DOUBLE_EQ(mrr({0.5f, 2.0f}, {0.9f, 0.5f, 0.1f, 1.0f, 0.0f, -1.0f}, 3), (1 / 2.5 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(mrr({0.0f}, {1, 2, 3, 4}, 4), 1 / 5.0);
  EXPECT_THROW(mrr({0.0f}, {1, 2, 3}, 4), std::invalid_argument);
  EXPECT_TRUE(std::isnan(mrr({}, {}, 4)));
}

// Scores with many ties, as tests/link_metrics_numpy.py builds them: float32 arithmetic on both
// sides, so the two hold the same bits.
std::vector<float> formula_scores(int count, std::int64_t mult, std::int64_t add, std::int64_t mod, float shift) {
  std::vector<float> s;
  for (std::int64_t i = 0; i < count; ++i) s.push_back(static_cast<float>((i * mult + add) % mod) / 20.0f - shift);
  return s;
}

// Issue 46's fourth acceptance: each metric equals an independent NumPy computation of OGB's
// and scikit-learn's definitions on the same scores (tests/link_metrics_numpy.py; its output,
// pasted below, is the oracle), to 1e-6 and here to 1e-12.
TEST(LinkMetrics, EqualNumpyOnTheSameScores) {
  const std::vector<float> pos = formula_scores(200, 7919, 13, 101, 2.5f), neg = formula_scores(300, 104729, 7, 97, 2.6f),
                           own = formula_scores(200 * 20, 15485863, 3, 89, 2.2f);
  // /usr/bin/python3 tests/link_metrics_numpy.py:
  const double auc = 0.5377083333333333;
  const double hits_1 = 0.06;
  const double hits_10 = 0.09;
  const double hits_50 = 0.22;
  const double hits_400 = 1.0;
  const double mrr_20 = 0.20356485016801706;
  EXPECT_NEAR(roc_auc(pos, neg), auc, 1e-12);
  EXPECT_NEAR(hits_at(pos, neg, 1), hits_1, 1e-12);
  EXPECT_NEAR(hits_at(pos, neg, 10), hits_10, 1e-12);
  EXPECT_NEAR(hits_at(pos, neg, 50), hits_50, 1e-12);
  EXPECT_NEAR(hits_at(pos, neg, 400), hits_400, 1e-12);
  EXPECT_NEAR(mrr(pos, own, 20), mrr_20, 1e-12);
}

TEST(LinkMetrics, NonFiniteScoresAreRefused) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_THROW(roc_auc({nan}, {0}), std::invalid_argument);
  EXPECT_THROW(roc_auc({0}, {inf}), std::invalid_argument);
  EXPECT_THROW(hits_at({0}, {nan}, 1), std::invalid_argument);
  EXPECT_THROW(mrr({inf}, {0}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace plexus
