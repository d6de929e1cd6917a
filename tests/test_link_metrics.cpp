// Link prediction's ranking metrics (src/train/tasks/link_metrics.hpp): hand-computed cases of
// each definition (ties, fewer negatives than K, OGB's MRR ranks), and ROC-AUC against the
// brute-force count over every positive-negative pair on random scores with many ties.
#include <gtest/gtest.h>

#include <cmath>
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

TEST(LinkMetrics, NonFiniteScoresAreRefused) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_THROW(roc_auc({nan}, {0}), std::invalid_argument);
  EXPECT_THROW(roc_auc({0}, {inf}), std::invalid_argument);
  EXPECT_THROW(hits_at({0}, {nan}, 1), std::invalid_argument);
  EXPECT_THROW(mrr({inf}, {0}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace plexus
