// The shard layout (plexus/shard.hpp): with sharded Â, the parts the ranks of a layer's i axis
// hold reassemble, in axis order, exactly the block (and transpose) the replicated layout
// gives each of them — what the all-gather of src/pmm/device_adj.cpp relies on.
#include <gtest/gtest.h>

#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/shard.hpp"
#include "plexus/sparse.hpp"

namespace plexus {
namespace {

// Rows of `parts` stacked (all with the same columns).
HostCsr stack_rows(const std::vector<HostCsr>& parts) {
  HostCsr s;
  s.cols = parts.front().cols;
  for (const HostCsr& p : parts) {
    EXPECT_EQ(p.cols, s.cols);
    for (index_t r = 0; r < p.rows; ++r) s.indptr.push_back(s.nnz() + p.indptr[r + 1]);
    s.indices.insert(s.indices.end(), p.indices.begin(), p.indices.end());
    s.values.insert(s.values.end(), p.values.begin(), p.values.end());
    s.rows += p.rows;
  }
  return s;
}

void expect_same(const HostCsr& a, const HostCsr& b, const std::string& what) {
  EXPECT_EQ(a.rows, b.rows) << what;
  EXPECT_EQ(a.cols, b.cols) << what;
  EXPECT_EQ(a.indptr, b.indptr) << what;
  EXPECT_EQ(a.indices, b.indices) << what;
  EXPECT_EQ(a.values, b.values) << what;
}

// A stochastic block model graph with `nodes` nodes and its Â.
std::pair<GraphData, HostCsr> graph_and_a_hat(index_t nodes) {
  SbmOptions o;
  o.nodes = nodes;
  o.classes = 3;
  o.features = 4;
  o.avg_degree = 9;
  GraphData g = generate_sbm(o);
  HostCsr a = gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values);
  return {std::move(g), std::move(a)};
}

std::array<int, 3> coords_of(GridShape g, int rank) { return {(rank / g.y) % g.x, rank % g.y, rank / (g.x * g.y)}; }

TEST(ShardLayout, ShardedPartsReassembleTheReplicatedBlocks) {
  const auto [g, a] = graph_and_a_hat(103);  // prime: every block is uneven
  for (int P : {2, 3, 4, 6, 8}) {
    for (int x = 1; x <= P; ++x) {
      for (int y = 1; x * y <= P; ++y) {
        if (P % (x * y) != 0) continue;
        const GridShape shape{x, y, P / (x * y)};
        for (int layers = 1; layers <= 4; ++layers) {
          const std::vector<index_t> dims = gcn_dims(4, layers, 5, 3);
          for (int l = 0; l < std::min(layers, 3); ++l) {
            const Axis i = roles_for_layer(l).i;
            // Every i-group: the ranks that differ only in their coordinate on i.
            for (int rank = 0; rank < P; ++rank) {
              const std::array<int, 3> c0 = coords_of(shape, rank);
              if (c0[static_cast<int>(i)] != 0) continue;
              const std::string what = shape.str() + " L" + std::to_string(layers) + " layer " + std::to_string(l) +
                                       " rank " + std::to_string(rank);
              const ShardRanges whole = shard_ranges_at(shape, c0, g.num_nodes, dims);
              const AdjBlockRange& wb = whole.adj[whole.adj_of_layout[l]];
              EXPECT_FALSE(wb.sharded) << what;
              auto [block, block_t] = cut_adj_block(a, wb);
              std::vector<HostCsr> rows, rows_t;
              for (int k = 0; k < shape.dim(i); ++k) {
                std::array<int, 3> c = c0;
                c[static_cast<int>(i)] = k;
                const ShardRanges sr = shard_ranges_at(shape, c, g.num_nodes, dims, false, true);
                const AdjBlockRange& b = sr.adj[sr.adj_of_layout[l]];
                EXPECT_EQ(b.rows, wb.rows) << what;
                EXPECT_EQ(b.cols, wb.cols) << what;
                EXPECT_EQ(b.sharded, shape.dim(i) > 1) << what;
                if (b.sharded) {
                  EXPECT_EQ(b.axis, i) << what;
                }
                auto [part, part_t] = cut_adj_block(a, b);
                EXPECT_EQ(part.rows, b.part_rows.size()) << what;
                EXPECT_EQ(part_t.rows, b.part_cols.size()) << what;
                rows.push_back(std::move(part));
                rows_t.push_back(std::move(part_t));
              }
              expect_same(stack_rows(rows), block, what + " Â");
              expect_same(stack_rows(rows_t), block_t, what + " Âᵀ");
            }
          }
        }
      }
    }
  }
}

// With sharded Â the blocks of one layout, summed over all ranks, hold each entry of Â (and
// of Âᵀ) once; the replicated layout holds it G_i times.
TEST(ShardLayout, ShardedLayoutHoldsEachEntryOnce) {
  const auto [g, a] = graph_and_a_hat(97);
  for (GridShape shape : {GridShape{2, 3, 1}, GridShape{1, 4, 2}, GridShape{3, 1, 3}}) {
    for (bool shard : {false, true}) {
      index_t total = 0, total_t = 0;
      for (int rank = 0; rank < shape.size(); ++rank) {
        const ShardRanges sr = shard_ranges_at(shape, coords_of(shape, rank), g.num_nodes, {4, 3}, false, shard);
        auto [part, part_t] = cut_adj_block(a, sr.adj[sr.adj_of_layout[0]]);
        total += part.nnz();
        total_t += part_t.nnz();
      }
      const index_t copies = shard ? 1 : shape.y;  // layer 0's i axis is Y
      EXPECT_EQ(total, copies * a.nnz()) << shape.str();
      EXPECT_EQ(total_t, copies * a.nnz()) << shape.str();
    }
  }
}

}  // namespace
}  // namespace plexus
