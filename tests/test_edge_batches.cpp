// Link prediction's epoch orders of the training links (src/train/tasks/edge_batches.hpp): a
// bijection of [0, n) for every n, small and large, odd and even bit counts, a pure function of
// (seed, epoch, n) that moves with each, and the batches' count.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "train/tasks/edge_batches.hpp"

namespace plexus {
namespace {

std::vector<std::int64_t> order(std::uint64_t seed, std::uint32_t epoch, std::int64_t n) {
  const EdgeOrder o(seed, epoch, n);
  std::vector<std::int64_t> places(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) places[static_cast<std::size_t>(i)] = o.place(i);
  return places;
}

TEST(EdgeOrder, IsABijectionOfEveryRange) {
  for (const std::int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 1000, 4095, 4096, 4097, 65537, 300001}) {
    SCOPED_TRACE(n);
    const std::vector<std::int64_t> places = order(3, 1, n);
    std::vector<char> seen(static_cast<std::size_t>(n), 0);
    for (const std::int64_t p : places) {
      ASSERT_GE(p, 0);
      ASSERT_LT(p, n);
      ASSERT_FALSE(seen[static_cast<std::size_t>(p)]) << "place " << p << " twice";
      seen[static_cast<std::size_t>(p)] = 1;
    }
  }
}

TEST(EdgeOrder, IsKeyedBySeedAndEpochAndShuffles) {
  const std::int64_t n = 1000;
  const std::vector<std::int64_t> a = order(3, 1, n);
  EXPECT_EQ(a, order(3, 1, n));  // a pure function of its key
  EXPECT_NE(a, order(3, 2, n));
  EXPECT_NE(a, order(4, 1, n));
  int fixed = 0, ascending = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    fixed += a[static_cast<std::size_t>(i)] == i;
    if (i > 0) ascending += a[static_cast<std::size_t>(i)] > a[static_cast<std::size_t>(i - 1)];
  }
  EXPECT_LT(fixed, 20);  // about one fixed point in a random order
  EXPECT_GT(ascending, 400);  // about half the neighbours rise
  EXPECT_LT(ascending, 600);
  EXPECT_THROW(EdgeOrder(3, 1, 0), std::invalid_argument);
  EXPECT_THROW(EdgeOrder(3, 1, 5).place(5), std::invalid_argument);
  EXPECT_THROW(EdgeOrder(3, 1, 5).place(-1), std::invalid_argument);
}

TEST(EdgeOrder, BatchesCoverTheLinks) {
  EXPECT_EQ(edge_batches(10, 10), 1);
  EXPECT_EQ(edge_batches(10, 11), 1);
  EXPECT_EQ(edge_batches(11, 10), 2);
  EXPECT_EQ(edge_batches(20, 10), 2);
  EXPECT_EQ(edge_batches(21, 1), 21);
}

}  // namespace
}  // namespace plexus
