// The CPU backend's cache of freed buffers (kernels/common/block_cache.hpp): a buffer freed and
// asked for again at the same size comes back zeroed without a new allocation, and live plus
// cached bytes never exceed the most live bytes the backend ever held.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/common/block_cache.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "plexus/buffer.hpp"

namespace plexus {
namespace {

constexpr index_t kMiB = (1 << 20) / sizeof(float);  // floats in a MiB

TEST(BlockCache, SameSizeComesBackZeroedWithoutANewAllocation) {
  cpu::CpuBackend be(1);
  const float* first = nullptr;
  {
    Matrix m(be, 4, kMiB);
    first = m.data();
    std::memset(m.data(), 0x7f, static_cast<std::size_t>(m.rows() * m.cols()) * sizeof(float));
  }
  EXPECT_EQ(be.cached_bytes(), 4u << 20);
  EXPECT_EQ(be.live_bytes(), 0u);
  Matrix again(be, 4, kMiB);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(be.cached_bytes(), 0u);
  for (index_t i = 0; i < again.rows() * again.cols(); i += 4093) ASSERT_EQ(again.data()[i], 0.0f) << i;
}

TEST(BlockCache, AMissFreesCachedBlocksToStayUnderTheHighWaterMark) {
  cpu::CpuBackend be(1);
  {
    Matrix a(be, 1, kMiB), b(be, 2, kMiB), c(be, 3, kMiB);
  }
  EXPECT_EQ(be.high_water_bytes(), 6u << 20);
  EXPECT_EQ(be.cached_bytes(), 6u << 20);
  Matrix d(be, 5, kMiB);  // no 5 MiB block cached: at most 1 MiB may stay cached beside it
  EXPECT_EQ(be.high_water_bytes(), 6u << 20);
  EXPECT_LE(be.live_bytes() + be.cached_bytes(), 6u << 20);
  EXPECT_EQ(be.cached_bytes(), 1u << 20);  // the largest blocks went first
  Matrix e(be, 1, kMiB);                   // served from the cache
  EXPECT_EQ(be.cached_bytes(), 0u);
  Matrix f(be, 1, kMiB);  // past the old mark: the mark moves up, nothing is cached to free
  EXPECT_EQ(be.high_water_bytes(), 7u << 20);
}

TEST(BlockCache, LivePlusCachedNeverAboveTheMarkOverARandomWorkload) {
  cpu::CpuBackend be(1);
  std::mt19937 rng(7);
  std::vector<std::unique_ptr<Matrix>> held;
  std::size_t mark = 0;
  for (int step = 0; step < 2000; ++step) {
    if (held.size() < 6 && (held.empty() || rng() % 2)) {
      held.push_back(std::make_unique<Matrix>(be, 1 + static_cast<index_t>(rng() % 5), 1024));
    } else {
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(rng() % held.size()));
    }
    mark = std::max(mark, be.live_bytes());
    ASSERT_EQ(be.high_water_bytes(), mark) << step;
    ASSERT_LE(be.live_bytes() + be.cached_bytes(), mark) << step;
  }
}

TEST(BlockCache, TrimFreesTheLargestFirst) {
  detail::BlockCache cache;
  std::vector<std::size_t> freed_sizes;
  int blocks[4];
  ASSERT_TRUE(cache.keep(&blocks[0], 10));
  ASSERT_TRUE(cache.keep(&blocks[1], 30));
  ASSERT_TRUE(cache.keep(&blocks[2], 20));
  ASSERT_TRUE(cache.keep(&blocks[3], 30));
  std::vector<void*> freed;
  cache.trim_to(25, [&](void* p) { freed.push_back(p); });
  EXPECT_EQ(cache.cached_bytes(), 10u);  // 90 -> 60 -> 30 -> 10: both 30s, then the 20
  ASSERT_EQ(freed.size(), 3u);
  EXPECT_EQ(freed[2], &blocks[2]);
  EXPECT_EQ(cache.take(10), &blocks[0]);
  EXPECT_EQ(cache.take(20), nullptr);
}

}  // namespace
}  // namespace plexus
