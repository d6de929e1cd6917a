// Â's entries counted by block (plexus/block_counts.hpp): every block a grid of the listed part
// counts cuts is counted exactly, for both node orders; other ranges are refused, not guessed;
// plexus prepare stores the table and the reader gives back the same, for this graph only.
#include <gtest/gtest.h>
#include <hdf5.h>

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

index_t brute_force_held(const HostCsr& a, Range rows, Range cols) {
  index_t n = 0;
  for (index_t r = rows.begin; r < rows.end; ++r) {
    bool held = false;
    for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) held |= a.indices[k] >= cols.begin && a.indices[k] < cols.end;
    n += held;
  }
  return n;
}

// The rows that hold entries (what row-sparse sums move): every row range on the cuts and every
// column block of every listed part count, both orders, rows without entries included; columns
// that are no part count's block, and rows off the cuts, are refused.
TEST(BlockCounts, HeldRowsOfEveryBlockOfTheListedPartCountsAreExact) {
  const index_t n = 211;
  HostCsr a1 = random_square(n, 0.02, 4);
  const HostCsr a2 = random_square(n, 0.1, 5);
  // Rows without entries (a CSR from a graph without self-loops): every third row emptied.
  HostCsr sparse;
  sparse.rows = sparse.cols = n;
  sparse.indptr.push_back(0);
  for (index_t r = 0; r < n; ++r) {
    if (r % 3 != 0)
      for (index_t k = a1.indptr[r]; k < a1.indptr[r + 1]; ++k) sparse.indices.push_back(a1.indices[k]);
    sparse.indptr.push_back(static_cast<index_t>(sparse.indices.size()));
  }
  sparse.values.assign(sparse.indices.size(), 1.0f);
  const AdjBlockCounts c = count_adj_blocks(sparse, a2);
  ASSERT_TRUE(c.has_held());
  std::vector<int> parts(kBlockCountParts.begin(), kBlockCountParts.end());
  for (int pr : {1, 2, 5, 16, 64})
    for (int i = 0; i < pr; ++i)
      for (int pc : parts)
        for (int j = 0; j < pc; ++j) {
          const Range rows = block_range(n, pr, i), cols = block_range(n, pc, j);
          ASSERT_EQ(c.held_rows(0, rows, cols), brute_force_held(sparse, rows, cols)) << pr << " " << i << " " << pc << " " << j;
          ASSERT_EQ(c.held_rows(1, rows, cols), brute_force_held(a2, rows, cols)) << pr << " " << i << " " << pc << " " << j;
        }
  // A range of several blocks' rows (on cuts) sums them.
  EXPECT_EQ(c.held_rows(0, Range{block_range(n, 4, 1).begin, n}, block_range(n, 7, 3)),
            brute_force_held(sparse, Range{block_range(n, 4, 1).begin, n}, block_range(n, 7, 3)));
  EXPECT_EQ(c.held_rows(0, Range{1, 50}, Range{0, n}), -1);                 // rows off the cuts
  EXPECT_EQ(c.held_rows(0, Range{0, n}, Range{0, 100}), -1);                // no part count's block
  EXPECT_EQ(c.held_rows(0, Range{0, n}, block_range(n, 17, 0)), -1);       // 17 is not listed
  EXPECT_EQ(c.held_rows(0, Range{0, n}, Range{0, 0}), 0);                   // no columns, no rows
  EXPECT_EQ(held_slot(n, Range{0, n}), 0);
  EXPECT_EQ(held_slot(n, block_range(n, 3, 2)), 1 + 2 + 2);
  EXPECT_EQ(held_slot(n, block_range(n, 64, 63)), kHeldSlots - 1);
  EXPECT_EQ(AdjBlockCounts{}.held_rows(0, Range{0, 1}, Range{0, 1}), -1);
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
  EXPECT_EQ(read.held, p.block_counts.held);
  ASSERT_TRUE(read.has_held());
  for (int k = 0; k < 4; ++k)
    for (int o2 = 0; o2 < 2; ++o2)
      EXPECT_EQ(read.held_rows(o2, Range{0, 300}, block_range(300, 4, k)),
                brute_force_held(o2 == 0 ? p.a1 : p.a2, Range{0, 300}, block_range(300, 4, k)));
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
  cfg.balance = Balance::kPermute;  // ordered here as the run orders it in memory: two orders, counted
  const ProblemSize balanced = gnn_problem(plain, cfg);
  EXPECT_TRUE(balanced.two_orders);
  ASSERT_TRUE(balanced.blocks);
  EXPECT_EQ(balanced.blocks->tiles, p.block_counts.tiles);  // prepare's permutation of the same seed
  EXPECT_EQ(balanced.blocks->held, p.block_counts.held);
  cfg.balance = Balance::kMetis;  // METIS cuts for each grid: not counted here
  EXPECT_FALSE(gnn_problem(plain, cfg).blocks);
}

// Rewrites the int64 dataset `name` of `path` in place.
void rewrite_int64(const std::string& path, const std::string& name, const std::vector<index_t>& values) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  ASSERT_GE(d, 0);
  EXPECT_GE(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(d);
  H5Fclose(f);
}

// A table whose tiles overflow — four of 2^62 more than they hold, summing to the entry count
// modulo 2^64 — or one tile above what its rows × columns can hold is refused naming the tile;
// a plan never reads it (5e12 ms epochs, --grid auto ranking grids by them).
TEST(BlockCounts, TilesBeyondTheirBoundsAreRefusedWithoutOverflow) {
  const plexus::testing::ScratchDir scratch;
  SbmOptions o;
  o.nodes = 120;
  o.classes = 3;
  o.avg_degree = 5;
  o.features = 3;
  const GraphData g = generate_sbm(o);
  PrepareOptions po;
  po.balance = Balance::kPermute;
  const PreparedGraph p = prepare_graph(g, po);
  const std::string path = scratch.file("prep.h5");
  const auto refusal = [&] {
    try {
      read_adj_block_counts_h5(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  write_prepared_h5(p, path);
  std::vector<index_t> tiles = p.block_counts.tiles[0];
  ASSERT_GE(tiles.size(), 4u);
  for (int k = 0; k < 4; ++k) tiles[static_cast<std::size_t>(k)] += index_t{1} << 62;  // 4 · 2^62 = 2^64
  rewrite_int64(path, "/prepared/block_counts/a1", tiles);
  EXPECT_NE(refusal().find("/prepared/block_counts/a1: tile (0, 0) counts"), std::string::npos) << refusal();
  TrainConfig cfg;
  EXPECT_THROW(gnn_problem(path, cfg), InputError);
  // One tile more than its nodes can hold, another less by as much (the sum right).
  write_prepared_h5(p, path);
  tiles = p.block_counts.tiles[0];
  const index_t first = p.block_counts.cuts[1] - p.block_counts.cuts[0];
  const std::size_t t = p.block_counts.cuts.size() - 1;
  const index_t extra = first * first + 1 - tiles[0];
  tiles[0] += extra;
  index_t owed = extra;  // taken from the later tiles, one entry at a time
  for (std::size_t k = 1; k < tiles.size() && owed > 0; ++k)
    if (tiles[k] > 0) --tiles[k], --owed;
  ASSERT_EQ(owed, 0) << "no tiles to take the surplus from";
  rewrite_int64(path, "/prepared/block_counts/a1", tiles);
  EXPECT_NE(refusal().find("tile (0, 0) counts " + std::to_string(first * first + 1) + " entries: more than its " +
                           std::to_string(first) + " x " + std::to_string(first) + " nodes"),
            std::string::npos)
      << refusal() << " (t = " << t << ")";
  write_prepared_h5(p, path);
  EXPECT_EQ(refusal(), "");
  // Held rows: a block with more rows than its tile holds with any entry, and a part count whose
  // blocks together hold fewer rows than hold an entry at all, are refused naming the tile.
  std::vector<index_t> held = p.block_counts.held[0];
  held[1] = held[0] + 1;
  rewrite_int64(path, "/prepared/block_counts/held_a1", held);
  EXPECT_NE(refusal().find("/prepared/block_counts/held_a1: tile 0: " + std::to_string(held[0] + 1) +
                           " rows with entries in a block of 2"),
            std::string::npos)
      << refusal();
  write_prepared_h5(p, path);
  held = p.block_counts.held[1];
  ASSERT_GT(held[1] + held[2], 0);
  held[1] = held[2] = 0;  // part count 2's blocks hold no row, where rows hold entries
  rewrite_int64(path, "/prepared/block_counts/held_a2", held);
  EXPECT_NE(refusal().find("/prepared/block_counts/held_a2: tile 0: its rows hold 0 blocks of 2"), std::string::npos)
      << refusal();
  write_prepared_h5(p, path);
  EXPECT_EQ(refusal(), "");
}

}  // namespace
}  // namespace plexus
