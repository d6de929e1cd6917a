// The shard layout (plexus/shard.hpp): the layers' roles as their orders make them, geometries
// that chain; with sharded Â, the parts the ranks of a layer's i axis hold reassemble, in axis
// order, exactly the block (and transpose) the replicated layout gives each of them — what the
// all-gather of src/pmm/device_adj.cpp relies on.
#include <gtest/gtest.h>

#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/shard.hpp"
#include "plexus/sparse.hpp"
#include "core/shard_layout.hpp"

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

// Each layer's order, as written in the tables below: 'A' aggregate first, 'T' transform first.
std::vector<bool> orders(const std::string& s) {
  std::vector<bool> tf;
  for (char c : s) tf.push_back(c == 'T');
  return tf;
}
std::string roles_text(const LayerRoles& r) {
  return std::string(axis_name(r.o)) + axis_name(r.i) + axis_name(r.d);
}

// The role table (include/plexus/process_grid.hpp): layer 0 takes (X, Y, Z); a layer that
// aggregates first reads (rows o, features i, replicated d) and writes (rows d, features o,
// replicated i); one that transforms first reads (rows o, features d, replicated i) and writes
// (rows d, features i, replicated o). Roles written "oid".
TEST(ShardLayout, LayerRolesFollowTheOrders) {
  const struct {
    const char* orders;
    std::vector<std::string> roles;
  } table[] = {
      {"A", {"xyz"}},
      {"T", {"xyz"}},
      {"AAAA", {"xyz", "zxy", "yzx", "xyz"}},  // the rotation of period 3
      {"TTTT", {"xyz", "zxy", "yzx", "xyz"}},  // the same rotation
      {"TA", {"xyz", "zyx"}},   // T writes rows z, features y, replicated x: A reads (o, i, d) = (z, y, x)
      {"AT", {"xyz", "zyx"}},   // A writes rows z, features x, replicated y: T reads (o, d, i) = (z, x, y)
      {"TAT", {"xyz", "zyx", "xyz"}},
      {"ATA", {"xyz", "zyx", "xyz"}},
      {"TTA", {"xyz", "zxy", "yxz"}},
      {"AAT", {"xyz", "zxy", "yxz"}},
      {"TAA", {"xyz", "zyx", "xzy"}},  // A writes rows x, features z, replicated y
  };
  for (const auto& row : table) {
    const std::vector<LayerRoles> roles = layer_roles(static_cast<int>(row.roles.size()), orders(row.orders));
    ASSERT_EQ(roles.size(), row.roles.size()) << row.orders;
    for (std::size_t l = 0; l < roles.size(); ++l) EXPECT_EQ(roles_text(roles[l]), row.roles[l]) << row.orders << " layer " << l;
  }
  // Missing entries aggregate first: {true} is "TAA".
  EXPECT_EQ(roles_text(layer_roles(3, {true})[2]), "xzy");
  EXPECT_EQ(roles_text(layer_roles(3)[2]), "yzx");
}

TEST(ShardLayout, AutoTransformsFirstWhereTheLayerNarrows) {
  EXPECT_EQ(transform_first_layers(LayerOrder::Auto, {1433, 16, 7}), orders("TT"));
  EXPECT_EQ(transform_first_layers(LayerOrder::Auto, {4, 16, 16, 7}), orders("AAT"));  // ties aggregate first
  EXPECT_EQ(transform_first_layers(LayerOrder::Auto, {128, 128, 47}), orders("AT"));
  EXPECT_EQ(transform_first_layers(LayerOrder::AggregateFirst, {1433, 16, 7}), orders("AA"));
  EXPECT_EQ(transform_first_layers(LayerOrder::TransformFirst, {4, 16, 7}), orders("TT"));
}

// Every rank's geometries chain, whatever the orders: layer l's input block is layer l-1's
// output block, replicated over the same axis; W's rows split the input columns over the
// Linear3D's row axis; and the stored features and the blocks of Â follow the roles.
TEST(ShardLayout, GeometriesChainForEveryOrder) {
  const std::vector<index_t> dims{11, 7, 5, 9, 3};
  for (const char* o : {"AAAA", "TTTT", "TATA", "ATAT", "TTAA", "AATT", "ATTA", "TAAT"}) {
    const std::vector<bool> tf = orders(o);
    for (GridShape shape : {GridShape{2, 3, 1}, GridShape{1, 2, 3}, GridShape{3, 1, 2}, GridShape{2, 2, 2}}) {
      for (int rank = 0; rank < shape.size(); ++rank) {
        const std::array<int, 3> c = coords_of(shape, rank);
        const auto at = [&](Axis a) { return c[static_cast<int>(a)]; };
        const std::string what = std::string(o) + " " + shape.str() + " rank " + std::to_string(rank);
        for (int l = 0; l < 4; ++l) {
          const LayerGeometry g = layer_geometry_at(shape, c, l, 41, dims, tf);
          EXPECT_EQ(g.transform_first, tf[l]) << what;
          EXPECT_EQ(g.in_cols, block_range(dims[l], shape.dim(g.in_feat()), at(g.in_feat()))) << what;
          EXPECT_EQ(g.out_cols, block_range(dims[l + 1], shape.dim(g.out_feat()), at(g.out_feat()))) << what;
          EXPECT_EQ(g.w_rows, sub_range(g.in_cols, shape.dim(tf[l] ? g.roles.o : g.roles.d),
                                        at(tf[l] ? g.roles.o : g.roles.d)))
              << what;
          // The three axes are distinct and each dense layout names all three.
          EXPECT_NE(g.in_feat(), g.in_repl()) << what;
          EXPECT_NE(g.in_feat(), g.roles.o) << what;
          EXPECT_NE(g.out_feat(), g.out_repl()) << what;
          EXPECT_NE(g.out_feat(), g.roles.d) << what;
          if (l == 0) continue;
          const LayerGeometry p = layer_geometry_at(shape, c, l - 1, 41, dims, tf);
          EXPECT_EQ(g.roles.o, p.roles.d) << what << " layer " << l;
          EXPECT_EQ(g.in_feat(), p.out_feat()) << what << " layer " << l;
          EXPECT_EQ(g.in_repl(), p.out_repl()) << what << " layer " << l;
          EXPECT_EQ(g.in_rows, p.out_rows) << what << " layer " << l;
          EXPECT_EQ(g.in_cols, p.out_cols) << what << " layer " << l;
        }
        const ShardRanges sr = shard_ranges_at(shape, c, 41, dims, false, false, tf);
        const LayerGeometry g0 = layer_geometry_at(shape, c, 0, 41, dims, tf);
        EXPECT_EQ(sr.transform_first, tf) << what;
        EXPECT_EQ(sr.feat_cols, g0.in_cols) << what;
        EXPECT_EQ(sr.feat_rows, sub_range(g0.in_rows, shape.dim(g0.in_repl()), at(g0.in_repl()))) << what;
        ASSERT_EQ(sr.adj_of_layer.size(), 4u) << what;
        for (int l = 0; l < 4; ++l) {
          const LayerGeometry g = layer_geometry_at(shape, c, l, 41, dims, tf);
          const AdjBlockRange& b = sr.adj[static_cast<std::size_t>(sr.adj_of_layer[l])];
          EXPECT_EQ(b.rows, g.out_rows) << what << " layer " << l;
          EXPECT_EQ(b.cols, g.in_rows) << what << " layer " << l;
        }
      }
    }
  }
}

// The layouts (the first layer of each distinct roles and Â) are the same list on every rank,
// so that the loaders' collective reads match; with two orders the parity counts.
TEST(ShardLayout, LayoutsAreTheSameOnEveryRank) {
  const std::vector<index_t> dims{11, 7, 5, 9, 3, 4, 6, 2};
  for (const char* o : {"AAAAAAA", "TATATAT", "TTAATTA"})
    for (bool two : {false, true}) {
      const std::vector<bool> tf = orders(o);
      const std::vector<LayerRoles> roles = layer_roles(7, tf);
      std::vector<int> want;
      for (int l = 0; l < 7; ++l) {
        bool seen = false;
        for (int m : want) seen = seen || (roles[m] == roles[l] && which_adj(m, two) == which_adj(l, two));
        if (!seen) want.push_back(l);
      }
      const GridShape shape{2, 3, 2};
      for (int rank = 0; rank < shape.size(); ++rank) {
        const ShardRanges sr = shard_ranges_at(shape, coords_of(shape, rank), 41, dims, two, false, tf);
        EXPECT_EQ(sr.layouts, want) << o << " two orders " << two << " rank " << rank;
        for (int l = 0; l < 7; ++l)
          EXPECT_EQ(sr.adj[static_cast<std::size_t>(sr.adj_of_layer[l])].which, which_adj(l, two)) << o << " layer " << l;
      }
    }
}

TEST(ShardLayout, ShardedPartsReassembleTheReplicatedBlocks) {
  const auto [g, a] = graph_and_a_hat(103);  // prime: every block is uneven
  for (const char* order : {"AAAA", "TATA", "TTAA"})
  for (int P : {2, 3, 4, 6, 8}) {
    for (int x = 1; x <= P; ++x) {
      for (int y = 1; x * y <= P; ++y) {
        if (P % (x * y) != 0) continue;
        const GridShape shape{x, y, P / (x * y)};
        for (int layers = 1; layers <= 4; ++layers) {
          const std::vector<index_t> dims = gnn_dims(4, layers, 5, 3);
          std::vector<bool> tf = orders(order);
          tf.resize(static_cast<std::size_t>(layers));
          const std::vector<LayerRoles> roles = layer_roles(layers, tf);
          for (int l = 0; l < layers; ++l) {
            const Axis i = roles[static_cast<std::size_t>(l)].i;
            // Every i-group: the ranks that differ only in their coordinate on i.
            for (int rank = 0; rank < P; ++rank) {
              const std::array<int, 3> c0 = coords_of(shape, rank);
              if (c0[static_cast<int>(i)] != 0) continue;
              const std::string what = shape.str() + " " + order + " L" + std::to_string(layers) + " layer " +
                                       std::to_string(l) + " rank " + std::to_string(rank);
              const ShardRanges whole = shard_ranges_at(shape, c0, g.num_nodes, dims, false, false, tf);
              const AdjBlockRange& wb = whole.adj[static_cast<std::size_t>(whole.adj_of_layer[l])];
              EXPECT_FALSE(wb.sharded) << what;
              auto [block, block_t] = cut_adj_block(a, wb);
              std::vector<HostCsr> rows, rows_t;
              for (int k = 0; k < shape.dim(i); ++k) {
                std::array<int, 3> c = c0;
                c[static_cast<int>(i)] = k;
                const ShardRanges sr = shard_ranges_at(shape, c, g.num_nodes, dims, false, true, tf);
                const AdjBlockRange& b = sr.adj[static_cast<std::size_t>(sr.adj_of_layer[l])];
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
        auto [part, part_t] = cut_adj_block(a, sr.adj[static_cast<std::size_t>(sr.adj_of_layer[0])]);
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
