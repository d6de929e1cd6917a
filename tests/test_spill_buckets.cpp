// The spill between passes (src/comm/spill_buckets.hpp) and its round sorting
// (src/comm/item_rounds.hpp): sort_round_sparse groups a round exactly as the dense sort_round
// does, listing only the destinations that get items; SpillBuckets gives each bucket back its
// items in the order they were added, over many buckets and many small rounds — the case of a
// conversion in 10,000 or 100,000 passes, whose bookkeeping (a dense list of every bucket per
// run) once grew as passes² (2.5 GB at 10,000 passes, the OOM killer at 100,000).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <vector>

#include "comm/item_rounds.hpp"
#include "comm/spill_buckets.hpp"

namespace plexus::comm {
namespace {

namespace fs = std::filesystem;

struct Item {
  std::int32_t dest;
  std::int64_t value;
};

TEST(SortRoundSparse, GroupsAsTheDenseSortDoes) {
  std::mt19937 rng(4);
  for (const int dests : {1, 3, 1000, 100000}) {
    std::vector<Item> items(700);
    for (std::size_t k = 0; k < items.size(); ++k)
      items[k] = {static_cast<std::int32_t>(rng() % static_cast<unsigned>(dests)), static_cast<std::int64_t>(k)};
    auto produce = [&](index_t i0, index_t i1, auto&& emit) {
      for (index_t i = i0; i < i1; ++i) emit(items[static_cast<std::size_t>(i)].dest, &items[static_cast<std::size_t>(i)]);
    };
    for (const auto& [i0, i1] : {std::pair<index_t, index_t>{0, 700}, {5, 6}, {100, 350}, {7, 7}}) {
      std::vector<char> dense, sparse;
      std::vector<std::size_t> starts;
      std::vector<DestGroup> groups;
      sort_round(produce, i0, i1, sizeof(Item), dests, dense, starts);
      sort_round_sparse(produce, i0, i1, sizeof(Item), sparse, groups);
      EXPECT_EQ(sparse, dense) << dests << " destinations, items " << i0 << ".." << i1;
      std::vector<DestGroup> want;
      for (int d = 0; d < dests; ++d)
        if (starts[static_cast<std::size_t>(d) + 1] > starts[static_cast<std::size_t>(d)])
          want.push_back({d, starts[static_cast<std::size_t>(d)], starts[static_cast<std::size_t>(d) + 1]});
      ASSERT_EQ(groups.size(), want.size());
      for (std::size_t g = 0; g < groups.size(); ++g) {
        EXPECT_EQ(groups[g].dest, want[g].dest);
        EXPECT_EQ(groups[g].begin, want[g].begin);
        EXPECT_EQ(groups[g].end, want[g].end);
      }
    }
  }
}

// Adds 1 to 3 items to random buckets (values counting up from `next`) in rounds of `round`;
// `want` records each bucket's values in the order they were added.
void add_scattered(SpillBuckets& spill, std::mt19937& rng, index_t round, std::int64_t& next,
                   std::vector<std::vector<std::int64_t>>& want) {
  std::vector<Item> items(1 + rng() % 3);
  for (Item& it : items) {
    it = {static_cast<std::int32_t>(rng() % want.size()), next++};
    want[static_cast<std::size_t>(it.dest)].push_back(it.value);
  }
  spill.add(static_cast<index_t>(items.size()), round, [&](index_t i0, index_t i1, auto&& emit) {
    for (index_t i = i0; i < i1; ++i) emit(items[static_cast<std::size_t>(i)].dest, &items[static_cast<std::size_t>(i)]);
  });
}

// Every bucket gives back exactly its values, in order, in non-empty pieces of its own items;
// `items` in all.
void expect_buckets(const SpillBuckets& spill, const std::vector<std::vector<std::int64_t>>& want, std::int64_t items) {
  std::int64_t total = 0;
  for (int j = 0; j < static_cast<int>(want.size()); ++j) {
    std::vector<std::int64_t> got;
    spill.read(j, [&](const char* data, index_t count) {
      ASSERT_GT(count, 0);
      const auto* piece = reinterpret_cast<const Item*>(data);
      for (index_t k = 0; k < count; ++k) {
        EXPECT_EQ(piece[k].dest, j);
        got.push_back(piece[k].value);
      }
    });
    EXPECT_EQ(got, want[static_cast<std::size_t>(j)]) << "bucket " << j;
    EXPECT_EQ(spill.count(j), static_cast<index_t>(got.size()));
    total += static_cast<std::int64_t>(got.size());
  }
  EXPECT_EQ(total, items);
}

TEST(SpillBuckets, ManyBucketsAndManySmallRoundsGiveEveryItemBackInOrder) {
  const fs::path dir = fs::temp_directory_path() / ("plexus-spill-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    // 100,000 buckets, 20,000 rounds of one to three items: a dense bucket list per run would be
    // 16 GB here.
    constexpr int kBuckets = 100000;
    SpillBuckets spill(dir.string(), sizeof(Item), kBuckets);
    std::mt19937 rng(9);
    std::vector<std::vector<std::int64_t>> want(kBuckets);
    std::int64_t next = 0;
    for (int add = 0; add < 20000; ++add) add_scattered(spill, rng, 1, next, want);
    expect_buckets(spill, want, next);
  }
  fs::remove_all(dir);
}

// Scattered items list a segment each; past the bookkeeping limit the file is compacted (a
// segment per bucket), and every bucket still gives back its items in the order they came,
// through compactions between adds.
TEST(SpillBuckets, CompactionKeepsTheListWithinItsLimitAndTheOrder) {
  const fs::path dir = fs::temp_directory_path() / ("plexus-spill-c-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    constexpr int kBuckets = 1000;
    constexpr std::size_t kLimit = 2 * kBuckets + 64;  // 64 KiB of bookkeeping: below the floor
    SpillBuckets spill(dir.string(), sizeof(Item), kBuckets, std::size_t{64} << 10);
    std::mt19937 rng(5);
    std::vector<std::vector<std::int64_t>> want(kBuckets);
    std::int64_t next = 0;
    for (int add = 0; add < 20000; ++add) {
      add_scattered(spill, rng, 2, next, want);
      ASSERT_LE(spill.segments(), kLimit) << "after add " << add;
    }
    EXPECT_GE(spill.compactions(), 10);
    expect_buckets(spill, want, next);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace plexus::comm
