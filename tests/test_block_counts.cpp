// Â's entries counted by block (plexus/block_counts.hpp): every block a grid of the listed part
// counts cuts is counted exactly, for both node orders; other ranges are refused, not guessed;
// plexus prepare stores the table and the reader gives back the same, for this graph only.
#include <gtest/gtest.h>

#include <random>

#include "plexus/block_counts.hpp"
#include "plan/plan.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "scratch_dir.hpp"

namespace plexus {
namespace {

HostCsr random_square(index_t n, double density, unsigned seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution keep(density);
  HostCsr a;
  a.rows = a.cols = n;
  for (index_t r = 0; r < n; ++r) {
    for (index_t c = 0; c < n; ++c)
      if (keep(rng) || r == c) a.indices.push_back(static_cast<col_t>(c));
    a.indptr.push_back(static_cast<index_t>(a.indices.size()));
  }
  a.values.assign(a.indices.size(), 1.0f);
  return a;
}

index_t brute_force(const HostCsr& a, Range rows, Range cols) {
  index_t n = 0;
  for (index_t r = rows.begin; r < rows.end; ++r)
    for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) n += a.indices[k] >= cols.begin && a.indices[k] < cols.end;
  return n;
}

TEST(BlockCounts, EveryBlockOfTheListedPartCountsIsExact) {
  const index_t n = 211;  // prime: every part count splits it unevenly
  const HostCsr a1 = random_square(n, 0.05, 1), a2 = random_square(n, 0.2, 2);
  const AdjBlockCounts c = count_adj_blocks(a1, a2);
  EXPECT_EQ(c.cuts.front(), 0);
  EXPECT_EQ(c.cuts.back(), n);
  for (int pr : {1, 3, 7, 16, 64})
    for (int pc : {2, 5, 13, 32})
      for (int i = 0; i < pr; ++i)
        for (int j = 0; j < pc; ++j) {
          const Range rows = block_range(n, pr, i), cols = block_range(n, pc, j);
          EXPECT_EQ(c.entries(0, rows, cols), brute_force(a1, rows, cols));
          EXPECT_EQ(c.entries(1, rows, cols), brute_force(a2, rows, cols));
        }
  // One order: Â2 is Â1.
  const AdjBlockCounts one = count_adj_blocks(a1, HostCsr{});
  EXPECT_EQ(one.entries(1, Range{0, n}, block_range(n, 3, 1)), brute_force(a1, Range{0, n}, block_range(n, 3, 1)));
}

TEST(BlockCounts, RangesOffTheCutsAreRefusedNotGuessed) {
  const HostCsr a = random_square(100, 0.1, 3);
  const AdjBlockCounts c = count_adj_blocks(a, HostCsr{});
  EXPECT_EQ(c.entries(0, Range{1, 50}, Range{0, 100}), -1);  // 1 starts no block of any listed part count
  EXPECT_EQ(c.entries(0, Range{0, 100}, Range{1, 99}), -1);
  EXPECT_EQ(AdjBlockCounts{}.entries(0, Range{0, 1}, Range{0, 1}), -1);
}

TEST(BlockCounts, PrepareStoresTheTableOfItsOwnGraph) {
  const plexus::testing::ScratchDir scratch;
  SbmOptions o;
  o.nodes = 300;
  o.classes = 3;
  o.avg_degree = 6;
  o.features = 4;
  GraphData g = generate_sbm(o);
  const std::string plain = scratch.file("plain.h5"), prepared = scratch.file("prep.h5");
  write_graph_h5(g, plain);
  PrepareOptions po;
  po.balance = Balance::kPermute;
  const PreparedGraph p = prepare_graph(g, po);
  ASSERT_TRUE(p.two_orders());
  write_prepared_h5(p, prepared);
  const AdjBlockCounts read = read_adj_block_counts_h5(prepared);
  EXPECT_EQ(read.cuts, p.block_counts.cuts);
  EXPECT_EQ(read.tiles, p.block_counts.tiles);
  for (int k = 0; k < 4; ++k)
    for (int o2 = 0; o2 < 2; ++o2)
      EXPECT_EQ(read.entries(o2, block_range(300, 4, k), Range{0, 300}),
                brute_force(o2 == 0 ? p.a1 : p.a2, block_range(300, 4, k), Range{0, 300}));
  EXPECT_TRUE(read_adj_block_counts_h5(plain).empty());  // a plain file has none
  // Plans of the prepared file know both orders and use the table; the plain one counts its own.
  TrainConfig cfg;
  const ProblemSize pp = gnn_problem(prepared, cfg);
  EXPECT_TRUE(pp.two_orders);
  ASSERT_TRUE(pp.blocks);
  EXPECT_EQ(pp.blocks->tiles, p.block_counts.tiles);
  const ProblemSize plain_problem = gnn_problem(plain, cfg);
  EXPECT_FALSE(plain_problem.two_orders);
  ASSERT_TRUE(plain_problem.blocks);
  EXPECT_EQ(plain_problem.blocks->entries(0, Range{0, 300}, Range{0, 300}), p.a1.nnz());
  cfg.balance = Balance::kPermute;  // ordered in memory: two orders, blocks unknown here
  const ProblemSize balanced = gnn_problem(plain, cfg);
  EXPECT_TRUE(balanced.two_orders);
  EXPECT_FALSE(balanced.blocks);
}

}  // namespace
}  // namespace plexus
