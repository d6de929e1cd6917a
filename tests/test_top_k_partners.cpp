// The best K partners of every node on the 3D grid (src/pmm/top_k_partners_3d.hpp) against a
// brute-force float64 ranking: every grid of up to 8 ranks as threads, uneven blocks (ranks
// with no feature column, or no row to select for), tiles of 1 row to the whole block,
// exclusions (a node's neighbours) and rows with fewer than K candidates.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "grid_shapes.hpp"
#include "core/shard_layout.hpp"
#include "plexus/buffer.hpp"
#include "pmm/top_k_partners_3d.hpp"

namespace plexus {
namespace {

struct Case {
  index_t n = 0, width = 0, k = 0;
  std::vector<float> z;                             // n × width
  std::vector<std::vector<std::int64_t>> exclude;   // per node, sorted
};

Case make_case(index_t n, index_t width, index_t k, std::uint64_t seed) {
  Case c{n, width, k, {}, std::vector<std::vector<std::int64_t>>(static_cast<std::size_t>(n))};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (index_t i = 0; i < n * width; ++i) c.z.push_back(normal(rng));
  std::uniform_int_distribution<std::int64_t> node(0, n - 1);
  for (index_t u = 0; u < n; ++u) {
    auto& ex = c.exclude[static_cast<std::size_t>(u)];
    const int many = u == 1 ? static_cast<int>(n) : static_cast<int>(u % 4);  // node 1: everything excluded
    for (int e = 0; e < many; ++e) ex.push_back(u == 1 ? e : node(rng));
    std::sort(ex.begin(), ex.end());
    ex.erase(std::unique(ex.begin(), ex.end()), ex.end());
  }
  return c;
}

double score(const Case& c, std::int64_t u, std::int64_t v) {
  double s = 0;
  for (index_t j = 0; j < c.width; ++j)
    s += static_cast<double>(c.z[static_cast<std::size_t>(u * c.width + j)]) * c.z[static_cast<std::size_t>(v * c.width + j)];
  return s;
}

// The reference's best scores of u, best first.
std::vector<double> best_scores(const Case& c, std::int64_t u) {
  std::vector<double> all;
  const auto& ex = c.exclude[static_cast<std::size_t>(u)];
  for (std::int64_t v = 0; v < c.n; ++v)
    if (v != u && !std::binary_search(ex.begin(), ex.end(), v)) all.push_back(score(c, u, v));
  std::sort(all.begin(), all.end(), std::greater<double>());
  all.resize(std::min<std::size_t>(all.size(), static_cast<std::size_t>(c.k)));
  return all;
}

// `list`: search for these nodes only (ascending), else for every node.
void check(const Case& c, GridShape shape, int layers, bool tf, index_t tile,
           const std::vector<std::int64_t>* list = nullptr) {
  const std::vector<index_t> dims = layers == 1 ? std::vector<index_t>{4, c.width} : std::vector<index_t>{4, 3, c.width};
  const std::vector<bool> order(static_cast<std::size_t>(layers), tf);
  std::vector<std::atomic<int>> covered(static_cast<std::size_t>(c.n));
  const std::string where = shape.str() + ", " + std::to_string(layers) + " layers" + (tf ? " tf" : "") + ", tile " +
                            std::to_string(tile) + (list ? ", " + std::to_string(list->size()) + " listed" : "");
  run_in_process_grid(shape, 1, [&](ProcessGrid& grid) {
    auto be = make_cpu_backend();
    const LayerGeometry last = layer_geometry(grid, layers - 1, c.n, dims, order);
    TopKPartners3D search(*be, grid, last, c.n);
    std::vector<float> z_host;
    for (index_t i = last.out_rows.begin; i < last.out_rows.end; ++i)
      for (index_t j = last.out_cols.begin; j < last.out_cols.end; ++j) z_host.push_back(c.z[static_cast<std::size_t>(i * c.width + j)]);
    Matrix z(*be, last.out_rows.size(), last.out_cols.size());
    z.upload(z_host);
    if (list) search.only(*list);
    const std::vector<std::int64_t> rows = search.reported();
    // The slice's rows, or the listed ones among them.
    const Range slice = sub_range(last.out_rows, grid.dim(last.out_feat()), grid.coord(last.out_feat()));
    for (std::int64_t u = slice.begin; u < slice.end; ++u)
      ASSERT_EQ(std::count(rows.begin(), rows.end(), u), !list || std::binary_search(list->begin(), list->end(), u))
          << where << ", node " << u;
    std::vector<std::vector<std::int64_t>> exclude;
    for (const std::int64_t u : rows) exclude.push_back(c.exclude[static_cast<std::size_t>(u)]);
    const TopKRows got = search.search(z, c.k, exclude, tile);
    ASSERT_EQ(got.rows, rows);
    if (grid.coord(last.out_repl()) == 0)
      for (const std::int64_t u : rows) ++covered[static_cast<std::size_t>(u)];
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::int64_t u = rows[r];
      const std::vector<double> want = best_scores(c, u);
      const auto i = r * static_cast<std::size_t>(c.k);
      for (std::size_t j = 0; j < static_cast<std::size_t>(c.k); ++j) {
        const Partner& p = got.best[i + j];
        if (j >= want.size()) {
          ASSERT_EQ(p.node, -1) << where << ": node " << u << " has " << want.size() << " candidates";
          continue;
        }
        ASSERT_GE(p.node, 0) << where << ", node " << u;
        ASSERT_NE(p.node, u);
        const auto& ex = c.exclude[static_cast<std::size_t>(u)];
        ASSERT_FALSE(std::binary_search(ex.begin(), ex.end(), p.node)) << where << ": excluded " << p.node;
        ASSERT_NEAR(p.score, score(c, u, p.node), 1e-5) << where;            // its own score
        ASSERT_NEAR(p.score, want[j], 1e-5) << where << ", node " << u << " #" << j;  // the j-th best
        if (j > 0) {
          ASSERT_GE(got.best[i + j - 1].score, p.score);
        }
      }
    }
  });
  for (index_t u = 0; u < c.n; ++u)
    ASSERT_EQ(covered[static_cast<std::size_t>(u)].load(), !list || std::binary_search(list->begin(), list->end(), u))
        << where << ": node " << u;
}

TEST(TopKPartners, EveryGridUpTo8RanksFindsTheBruteForceBest) {
  const Case wide = make_case(41, 6, 5, 3), narrow = make_case(19, 2, 30, 4);  // narrow: fewer candidates than K
  for (const GridShape shape : test::grids_up_to(8))
    for (const int layers : {1, 2})
      for (const bool tf : {false, true}) {
        check(wide, shape, layers, tf, shape.size() % 2 ? 1000 : 4);
        if (shape.size() >= 4) check(narrow, shape, layers, tf, 1);
      }
}

// A list of nodes (some ranks' slices with none of them, runs of consecutive rows and single
// ones, the first and the last node): those nodes and no other, each with the brute-force best.
TEST(TopKPartners, AListOfNodesOnEveryGridFindsTheirBruteForceBest) {
  const Case wide = make_case(41, 6, 5, 3);
  const std::vector<std::int64_t> list = {0, 1, 2, 7, 19, 20, 33, 40}, one = {23};
  for (const GridShape shape : test::grids_up_to(8))
    for (const bool tf : {false, true}) {
      check(wide, shape, 2, tf, shape.size() % 2 ? 1000 : 3, &list);
      check(wide, shape, 1, tf, 5, &one);
    }
}

TEST(TopKPartners, BadArgumentsAreRefused) {
  auto be = make_cpu_backend();
  auto grid = ProcessGrid::single();
  const LayerGeometry last = layer_geometry(*grid, 0, 5, {3, 2});
  TopKPartners3D search(*be, *grid, last, 5);
  Matrix z(*be, 5, 2), wrong(*be, 4, 2);
  EXPECT_THROW(search.search(z, 0, {}, 3), std::invalid_argument);
  EXPECT_THROW(search.search(z, 2, {}, 0), std::invalid_argument);
  EXPECT_THROW(search.search(wrong, 2, {}, 3), std::invalid_argument);
  EXPECT_THROW(search.search(z, 2, {{}, {}}, 3), std::invalid_argument);
  EXPECT_THROW(search.only({0, 5}), std::invalid_argument);   // out of range
  EXPECT_THROW(search.only({-1, 2}), std::invalid_argument);  // out of range
  EXPECT_THROW(search.only({3, 1}), std::invalid_argument);   // out of order
  EXPECT_THROW(search.only({2, 2}), std::invalid_argument);   // a repeat
  const TopKRows r = search.search(z, 2, {}, 3);  // all scores 0: ties go to the lower node
  EXPECT_EQ(r.best[0].node, 1);
  EXPECT_EQ(r.best[1].node, 2);
  EXPECT_EQ(r.best[2].node, 0);
}

}  // namespace
}  // namespace plexus
