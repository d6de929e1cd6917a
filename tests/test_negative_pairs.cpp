// Link prediction's negative pairs (src/train/tasks/negative_pairs.hpp): the documented key,
// the same negatives whichever parts they are drawn in, each epoch its own, nodes in range and
// uniform (a chi-square test over the ordered pairs of a small graph).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "plexus/rng.hpp"
#include "train/tasks/negative_pairs.hpp"

namespace plexus {
namespace {

TEST(NegativePairs, NegativeKIsItsDocumentedKeysWordsScaledToTheNodes) {
  const NodePairList p = negative_pairs(42, 3, 1000, 7, 9);
  ASSERT_EQ(p.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const Philox4x32 w = counter_block(DropoutKey{42, 3, 0x11E6}, 7 + i, 0);
    const long double u = (w.v[0] + 4294967296.0L * w.v[1]) / 18446744073709551616.0L * 1000;
    const long double v = (w.v[2] + 4294967296.0L * w.v[3]) / 18446744073709551616.0L * 1000;
    EXPECT_EQ(p.u[i], static_cast<std::int64_t>(std::floor(u)));
    EXPECT_EQ(p.v[i], static_cast<std::int64_t>(std::floor(v)));
  }
}

TEST(NegativePairs, PartsDrawnApartAreTheWholeAndEachEpochDrawsAnew) {
  const NodePairList whole = negative_pairs(1, 0, 37, 0, 500);
  NodePairList parts;
  for (const auto& [b, e] : {std::pair{0, 123}, std::pair{123, 124}, std::pair{124, 500}}) {
    const NodePairList p = negative_pairs(1, 0, 37, b, e);
    parts.u.insert(parts.u.end(), p.u.begin(), p.u.end());
    parts.v.insert(parts.v.end(), p.v.begin(), p.v.end());
  }
  EXPECT_EQ(parts.u, whole.u);
  EXPECT_EQ(parts.v, whole.v);
  const NodePairList next = negative_pairs(1, 1, 37, 0, 500), other_seed = negative_pairs(2, 0, 37, 0, 500);
  EXPECT_NE(next.u, whole.u);
  EXPECT_NE(other_seed.v, whole.v);
  EXPECT_THROW(negative_pairs(1, 0, 0, 0, 1), std::invalid_argument);
  EXPECT_THROW(negative_pairs(1, 0, 5, 3, 2), std::invalid_argument);
  EXPECT_EQ(negative_pairs(1, 0, 1, 0, 3).u, (std::vector<std::int64_t>{0, 0, 0}));
}

TEST(NegativePairs, UniformOverTheOrderedPairs) {
  const index_t n = 7;
  const std::int64_t draws = 49 * 400;
  const NodePairList p = negative_pairs(9, 0, n, 0, draws);
  std::vector<double> count(static_cast<std::size_t>(n * n), 0.0);
  for (std::size_t k = 0; k < p.size(); ++k) {
    ASSERT_GE(p.u[k], 0);
    ASSERT_LT(p.u[k], n);
    ASSERT_GE(p.v[k], 0);
    ASSERT_LT(p.v[k], n);
    count[static_cast<std::size_t>(p.u[k] * n + p.v[k])] += 1;
  }
  double chi2 = 0;
  for (const double c : count) chi2 += (c - 400.0) * (c - 400.0) / 400.0;
  EXPECT_LT(chi2, 90.0);  // 48 degrees of freedom: P(χ² > 90) < 2e-4
  EXPECT_GT(chi2, 20.0);  // and not suspiciously even: P(χ² < 20) < 3e-4
}

}  // namespace
}  // namespace plexus
