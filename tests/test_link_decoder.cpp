// The dot-product link decoder on the 3D grid (src/pmm/dot_link_decoder_3d.hpp) against a
// float64 reference on one rank: every grid of up to 8 ranks (ranks as threads,
// run_in_process_grid), uneven node and feature blocks (some ranks with no feature column),
// the last layer's axes in every role; each pair scored by exactly one block, the whole dZ on
// every replica, and the bytes of the gather over R as its header says.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "grid_shapes.hpp"
#include "random_pairs.hpp"
#include "core/shard_layout.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "pmm/dot_link_decoder_3d.hpp"

namespace plexus {
namespace {

struct Problem {
  index_t n = 0, width = 0;
  std::vector<double> z;              // n × width
  std::vector<std::int64_t> u, v;     // the pairs
  std::vector<double> g;              // dL/ds per pair
  std::vector<double> scores, dz;     // the reference: s per pair, dZ (n × width)
};

Problem make_problem(index_t n, index_t width, std::size_t pairs, std::uint64_t seed) {
  Problem p;
  p.n = n;
  p.width = width;
  test::RandomPairs r = test::random_pairs(n, width, pairs, seed);
  p.z = std::move(r.z);
  p.u = std::move(r.u);
  p.v = std::move(r.v);
  p.g = std::move(r.g);
  p.u.push_back(p.u[0]);  // a pair twice
  p.v.push_back(p.v[0]);
  p.g.push_back(0.5f);
  p.dz.assign(static_cast<std::size_t>(n * width), 0.0);
  for (std::size_t k = 0; k < p.u.size(); ++k) {
    const auto a = static_cast<std::size_t>(p.u[k] * width), b = static_cast<std::size_t>(p.v[k] * width);
    double s = 0;
    for (std::size_t j = 0; j < static_cast<std::size_t>(width); ++j) {
      s += p.z[a + j] * p.z[b + j];
      p.dz[a + j] += p.g[k] * p.z[b + j];
      p.dz[b + j] += p.g[k] * p.z[a + j];
    }
    p.scores.push_back(s);
  }
  return p;
}

// Every rank: its block of Z, its pairs scored and differentiated, compared with the reference.
void check_grid(const Problem& p, GridShape shape, int layers, bool transform_first) {
  std::vector<index_t> dims{6};
  for (int l = 1; l < layers; ++l) dims.push_back(5);
  dims.push_back(p.width);
  const std::vector<bool> tf(static_cast<std::size_t>(layers), transform_first);
  std::vector<std::atomic<int>> scored(p.u.size());
  const std::string where = shape.str() + ", " + std::to_string(layers) + " layers" + (transform_first ? ", transform first" : "");
  run_in_process_grid(shape, 1, [&](ProcessGrid& grid) {
    auto be = make_cpu_backend();
    const LayerGeometry last = layer_geometry(grid, layers - 1, p.n, dims, tf);
    DotLinkDecoder3D dec(*be, grid, last, p.n);
    ASSERT_EQ(dec.rows(), last.out_rows);
    ASSERT_EQ(dec.features(), last.out_cols);
    const Range rows = last.out_rows, cols = last.out_cols;
    std::vector<float> z_host;
    for (index_t i = rows.begin; i < rows.end; ++i)
      for (index_t j = cols.begin; j < cols.end; ++j)
        z_host.push_back(static_cast<float>(p.z[static_cast<std::size_t>(i * p.width + j)]));
    Matrix z(*be, rows.size(), cols.size()), dz(*be, rows.size(), cols.size());
    z.upload(z_host);
    const PairBlock pairs = dec.select(p.u, p.v);
    const auto n = static_cast<std::size_t>(pairs.pairs());
    for (const std::int64_t k : pairs.index) ++scored[static_cast<std::size_t>(k)];

    Buffer<float> s(*be, n), g(*be, n);
    grid.reset_stats();
    dec.forward(z, pairs, s.data());
    const Axis r = last.roles.d;
    if (grid.dim(r) > 1) {  // the gather over R: the Q block's rows that other ranks of R hold
      const Range q = dec.q_rows();
      const index_t own = std::max<index_t>(0, std::min(rows.end, q.end) - std::max(rows.begin, q.begin));
      EXPECT_DOUBLE_EQ(grid.axis_stats(r).bytes, static_cast<double>((q.size() - own) * cols.size() * 4)) << where;
    }
    const std::vector<float> got = s.to_host();
    std::vector<float> g_host;
    for (std::size_t e = 0; e < n; ++e) {
      const auto k = static_cast<std::size_t>(pairs.index[e]);
      ASSERT_NEAR(got[e], p.scores[k], 1e-5 * (1 + std::abs(p.scores[k]))) << where << ", pair " << k;
      g_host.push_back(static_cast<float>(p.g[k]));
    }
    if (n) g.upload(g_host.data());
    dec.backward(z, pairs, g.data(), dz);
    const std::vector<float> dz_host = dz.to_host();
    for (index_t i = 0; i < rows.size(); ++i)
      for (index_t j = 0; j < cols.size(); ++j) {
        const double want = p.dz[static_cast<std::size_t>((rows.begin + i) * p.width + cols.begin + j)];
        ASSERT_NEAR(dz_host[static_cast<std::size_t>(i * cols.size() + j)], want, 1e-5 * (1 + std::abs(want)))
            << where << ", dZ[" << rows.begin + i << "," << cols.begin + j << "]";
      }
  });
  for (std::size_t k = 0; k < scored.size(); ++k) ASSERT_EQ(scored[k].load(), 1) << where << ": pair " << k;
}

TEST(DotLinkDecoder, EveryGridUpTo8RanksScoresAndDifferentiatesAsOneRank) {
  const Problem wide = make_problem(37, 10, 120, 7), narrow = make_problem(23, 3, 60, 8);
  for (const GridShape shape : test::grids_up_to(8))
    for (const int layers : {1, 2, 3})
      for (const bool tf : {false, true}) {
        check_grid(wide, shape, layers, tf);
        if (shape.size() >= 4) check_grid(narrow, shape, layers, tf);  // 3 features over 4 ranks: some hold none
      }
}

// Pieces larger than a chunk (kMinPairChunk pairs) go round the F line in several chunks: each
// pair still scored once, by the rank that keeps it, and the pieces of a block even in size.
TEST(DotLinkDecoder, PiecesLargerThanAChunkGoRoundInChunks) {
  const Problem many = make_problem(301, 6, 4 * static_cast<std::size_t>(kMinPairChunk) + 321, 11);
  for (const GridShape shape : {GridShape{1, 1, 1}, GridShape{2, 1, 1}, GridShape{1, 2, 1}, GridShape{1, 1, 2}})
    for (const int layers : {1, 2}) check_grid(many, shape, layers, false);
  // The hash that picks a pair's rank of F spreads a block's pairs evenly.
  std::atomic<int> split{0};  // configurations whose F line has 4 ranks
  run_in_process_grid(GridShape{1, 4, 1}, 1, [&](ProcessGrid& grid) {
    auto be = make_cpu_backend();
    for (const int layers : {1, 2, 3}) {
      std::vector<index_t> dims{6};
      for (int l = 1; l < layers; ++l) dims.push_back(5);
      dims.push_back(many.width);
      const LayerGeometry last = layer_geometry(grid, layers - 1, many.n, dims);
      DotLinkDecoder3D dec(*be, grid, last, many.n);
      const PairBlock pairs = dec.select(many.u, many.v);
      std::vector<index_t> pieces(static_cast<std::size_t>(grid.dim(last.out_feat())), 0);
      split += pieces.size() == 4;
      for (const PairChunkShape& c : pairs.chunks) {
        EXPECT_EQ(c.offset, pieces[static_cast<std::size_t>(c.owner)]);  // each piece from its start
        EXPECT_LE(c.size, std::max(kMinPairChunk, static_cast<index_t>(many.u.size()) / 16 + 1));
        pieces[static_cast<std::size_t>(c.owner)] += c.size;
      }
      EXPECT_EQ(pieces[static_cast<std::size_t>(grid.coord(last.out_feat()))], pairs.pairs());
      index_t block = 0, in_block = 0;
      for (const index_t p : pieces) block += p;
      for (std::size_t k = 0; k < many.u.size(); ++k) in_block += dec.layout().in_block(many.u[k], many.v[k]);
      EXPECT_EQ(block, in_block);
      for (const index_t p : pieces)
        EXPECT_LE(static_cast<double>(p), 1.05 * static_cast<double>(block) / static_cast<double>(pieces.size()));
    }
  });
  EXPECT_GT(split.load(), 0);
}

// A block whose largest piece holds 16·kMinPairChunk pairs or more is cut into tiles: no chunk
// crosses one, so its pattern spans a tile's rows and columns.
TEST(DotLinkDecoder, LargeBlocksGoRoundTileByTile) {
  const Problem many = make_problem(997, 4, 16 * static_cast<std::size_t>(kMinPairChunk) + 1234, 13);
  check_grid(many, GridShape{1, 1, 1}, 1, false);
  check_grid(many, GridShape{1, 1, 1}, 2, true);
  auto be = make_cpu_backend();
  auto grid = ProcessGrid::single();
  const LayerGeometry last = layer_geometry(*grid, 0, many.n, {3, many.width});
  DotLinkDecoder3D dec(*be, *grid, last, many.n);
  const PairBlock pairs = dec.select(many.u, many.v);
  const auto tile = [&](index_t row) { return row * kPairTiles / many.n; };  // (one rank: the block is every node)
  index_t total = 0;
  for (const PairChunkShape& c : pairs.chunks) {
    EXPECT_EQ(tile(c.row0), tile(c.row0 + c.span - 1)) << "a chunk crosses a tile's rows";
    EXPECT_EQ(tile(c.col0), tile(c.col0 + c.cspan - 1)) << "a chunk crosses a tile's columns";
    total += c.size;
  }
  EXPECT_EQ(total, static_cast<index_t>(many.u.size()));
  EXPECT_GE(pairs.chunks.size(), static_cast<std::size_t>(kPairTiles * kPairTiles));
}

// Issue 46's fifth acceptance, small: the pair tensors of a rank (the Pairs memory kind: its
// piece's node ids, its scores and gradients, one chunk) at 8 ranks are near an eighth of one
// rank's, whichever axis splits the features — not a block's share held alike by its F line.
TEST(DotLinkDecoder, PairMemoryOfARankFallsAsOneOverP) {
  const Problem p = make_problem(2003, 8, 400000, 17);
  const auto peak_pairs = [&](GridShape shape, int layers) {
    std::vector<index_t> dims{6};
    for (int l = 1; l < layers; ++l) dims.push_back(5);
    dims.push_back(p.width);
    std::atomic<std::size_t> peak{0};
    run_in_process_grid(shape, 1, [&](ProcessGrid& grid) {
      auto be = make_cpu_backend(1);
      const LayerGeometry last = layer_geometry(grid, layers - 1, p.n, dims);
      DotLinkDecoder3D dec(*be, grid, last, p.n);
      Matrix z(*be, last.out_rows.size(), last.out_cols.size()), dz(*be, last.out_rows.size(), last.out_cols.size());
      be->fill(z.view(), 0.25f);
      const PairBlock pairs = dec.select(p.u, p.v);
      {
        MemoryScope scope(*be, MemoryKind::Pairs, "the scores and their gradients");
        Buffer<float> s(*be, static_cast<std::size_t>(pairs.pairs())), g(*be, static_cast<std::size_t>(pairs.pairs()));
        dec.forward(z, pairs, s.data());
        be->fill(MatrixView{g.data(), pairs.pairs(), 1, 1}, 1.0f);
        dec.backward(z, pairs, g.data(), dz);
      }
      const std::size_t mine = be->peak_bytes(MemoryKind::Pairs);
      for (std::size_t now = peak.load(); mine > now && !peak.compare_exchange_weak(now, mine);) {
      }
    });
    return static_cast<double>(peak.load());
  };
  const double one = peak_pairs(GridShape{1, 1, 1}, 1);
  for (const int layers : {1, 2, 3}) {  // the last layer's features over each axis in turn
    const double eight = peak_pairs(GridShape{2, 2, 2}, layers);
    EXPECT_LE(eight, 1.2 / 8 * one) << layers << " layers: " << eight << " bytes at 8 ranks, " << one << " at one";
  }
}

// The ranks of an F line know every piece's chunks from their own lists: a rank whose list holds
// other pairs of the block than its line's would go round chunks of other shapes, and is stopped.
TEST(PairBlock, RanksOfALineSelectingFromDifferentListsAreALogicError) {
  const Problem p = make_problem(41, 6, 300, 19);
  int lines = 0;
  for (const GridShape shape : {GridShape{2, 1, 1}, GridShape{1, 2, 1}, GridShape{1, 1, 2}}) {
    std::atomic<bool> split{false};
    run_in_process_grid(shape, 1, [&](ProcessGrid& grid) {
      split = grid.dim(layer_geometry(grid, 0, p.n, {6, p.width}).out_feat()) == 2;
    });
    if (!split) continue;
    ++lines;
    EXPECT_THROW(run_in_process_grid(shape, 1,
                                     [&](ProcessGrid& grid) {
                                       auto be = make_cpu_backend(1);
                                       const LayerGeometry last = layer_geometry(grid, 0, p.n, {6, p.width});
                                       DotLinkDecoder3D dec(*be, grid, last, p.n);
                                       std::vector<std::int64_t> u = p.u, v = p.v;
                                       if (grid.coord(last.out_feat()) == 1) {  // this rank lacks 10 of the pairs
                                         u.resize(u.size() - 10);
                                         v.resize(v.size() - 10);
                                       }
                                       dec.select(u, v);
                                     }),
                 std::logic_error)
        << shape.str();
  }
  EXPECT_EQ(lines, 1);
}

TEST(DotLinkDecoder, PairsOfNodesOutOfRangeAreRefused) {
  auto be = make_cpu_backend();
  auto grid = ProcessGrid::single();
  const LayerGeometry last = layer_geometry(*grid, 0, 5, {3, 2});
  DotLinkDecoder3D dec(*be, *grid, last, 5);
  EXPECT_THROW(dec.select({0, 5}, {1, 1}), std::invalid_argument);
  EXPECT_THROW(dec.select({0, 1}, {1, -1}), std::invalid_argument);
  EXPECT_THROW(dec.select({0, 1}, {1}), std::invalid_argument);
  EXPECT_EQ(dec.select({0, 4}, {4, 0}).pairs(), 2);
}

}  // namespace
}  // namespace plexus
