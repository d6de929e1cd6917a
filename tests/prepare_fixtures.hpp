#pragma once
// The graphs and checks the tests of the prepares in slices share (mpi_test_prepare: on P ranks;
// test_prepare_in_process: on ranks as threads; test_prepare_passes: in passes): messy random
// graphs, uneven slices of them, and a prepared slice's rows compared with the one-process
// prepare_graph's, dataset by dataset.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "plexus/prepare.hpp"
#include "plexus/prepare_distributed.hpp"

namespace plexus::test {

// A messy graph: duplicates (different weights), self-loops, edges stored one way only.
inline GraphData messy_graph(index_t n, index_t f, int edges, bool weighted, unsigned seed) {
  std::mt19937 rng(seed);
  GraphData g;
  g.num_nodes = n;
  g.num_features = f;
  g.num_classes = 4;
  g.directed = true;
  std::vector<std::vector<std::pair<index_t, float>>> rows(static_cast<std::size_t>(n));
  for (int e = 0; e < edges; ++e) {
    // Skewed ids (like R-MAT): low ids hold most edges, the last quarter stays isolated-ish.
    const auto u = static_cast<index_t>(rng() % static_cast<unsigned>(n / (1 + e % 3)));
    const auto v = static_cast<index_t>(rng() % static_cast<unsigned>(n * 3 / 4));
    const float w = 0.25f + static_cast<float>(rng() % 16) / 8.0f;
    rows[static_cast<std::size_t>(u)].emplace_back(v, w);
    if (e % 7 == 0) rows[static_cast<std::size_t>(u)].emplace_back(v, w + 1.0f);  // a duplicate
    if (e % 11 == 0) rows[static_cast<std::size_t>(u)].emplace_back(u, 1.0f);     // a self-loop
  }
  g.indptr.push_back(0);
  for (const auto& r : rows) {
    for (const auto& [v, w] : r) {
      g.indices.push_back(v);
      if (weighted) g.values.push_back(w);
    }
    g.indptr.push_back(static_cast<index_t>(g.indices.size()));
  }
  for (index_t i = 0; i < n * f; ++i) g.features.push_back(static_cast<float>(rng() % 1000) / 100.0f);
  for (index_t u = 0; u < n; ++u) {
    g.labels.push_back(static_cast<std::int32_t>(u % 5) - 1);  // -1 .. 3
    g.train_mask.push_back(u % 3 == 0);
    g.val_mask.push_back(u % 3 == 1);
    g.test_mask.push_back(u % 3 == 2);
    g.node_weights.push_back(0.5f + static_cast<float>(u % 4));
    g.node_ids.push_back(900000000000 + 17 * u);
  }
  return g;
}

// `g` with `width` edge features on every stored entry, each entry's row its own (a duplicate's
// second copy differs from its first).
inline GraphData with_entry_rows(GraphData g, index_t width = 2) {
  g.num_edge_features = width;
  g.edge_features.resize(g.indices.size() * static_cast<std::size_t>(width));
  for (std::size_t k = 0; k < g.edge_features.size(); ++k) g.edge_features[k] = 0.5f * static_cast<float>(k) - 3.0f;
  return g;
}

// Rank k's rows of n among `size` ranks: uneven cuts (rank 1 of 3 or more gets none).
inline Range slice_rows(index_t n, int rank, int size) {
  std::vector<index_t> starts(static_cast<std::size_t>(size) + 1, n);
  starts[0] = 0;
  for (int k = 1; k < size; ++k) starts[static_cast<std::size_t>(k)] = std::min(n, n * k * k / (size * size) + (k >= 2 ? 0 : 1));
  if (size >= 3) starts[2] = starts[1];
  return Range{starts[static_cast<std::size_t>(rank)], starts[static_cast<std::size_t>(rank) + 1]};
}

inline GraphSlice slice_of(const GraphData& g, Range rows, bool with_extras) {
  GraphSlice s;
  s.num_nodes = g.num_nodes;
  s.num_features = g.num_features;
  s.num_classes = g.num_classes;
  s.directed = g.directed;
  s.weighted = !g.values.empty();
  s.rows = rows;
  const index_t e0 = g.indptr[rows.begin], e1 = g.indptr[rows.end];
  for (index_t u = rows.begin; u <= rows.end; ++u) s.indptr.push_back(g.indptr[u] - e0);
  s.indices.assign(g.indices.begin() + e0, g.indices.begin() + e1);
  if (s.weighted) s.values.assign(g.values.begin() + e0, g.values.begin() + e1);
  s.num_edge_features = g.num_edge_features;
  s.edge_features.assign(g.edge_features.begin() + e0 * g.num_edge_features,
                         g.edge_features.begin() + e1 * g.num_edge_features);
  s.features.assign(g.features.begin() + rows.begin * g.num_features, g.features.begin() + rows.end * g.num_features);
  s.labels.assign(g.labels.begin() + rows.begin, g.labels.begin() + rows.end);
  s.train_mask.assign(g.train_mask.begin() + rows.begin, g.train_mask.begin() + rows.end);
  s.val_mask.assign(g.val_mask.begin() + rows.begin, g.val_mask.begin() + rows.end);
  s.test_mask.assign(g.test_mask.begin() + rows.begin, g.test_mask.begin() + rows.end);
  if (with_extras) {
    s.node_weights.assign(g.node_weights.begin() + rows.begin, g.node_weights.begin() + rows.end);
    s.node_ids.assign(g.node_ids.begin() + rows.begin, g.node_ids.begin() + rows.end);
  }
  s.class_names = {"a", "b", "c", "d"};
  return s;
}

template <class T>
std::vector<T> rows_of(const std::vector<T>& v, Range r, index_t width = 1) {
  return std::vector<T>(v.begin() + r.begin * width, v.begin() + r.end * width);
}

// This rank's rows of a whole CSR against its CsrSlice.
template <class Idx, class WholeIdx>
void expect_rows(const char* what, const std::vector<index_t>& ip, const std::vector<WholeIdx>& idx,
                 const std::vector<float>& val, index_t total, const CsrSlice<Idx>& s, Range r) {
  SCOPED_TRACE(what);
  EXPECT_EQ(s.total, total);
  EXPECT_EQ(s.indptr, std::vector<index_t>(ip.begin() + r.begin, ip.begin() + r.end + 1));
  const index_t e0 = ip[r.begin], e1 = ip[r.end];
  std::vector<Idx> want(idx.begin() + e0, idx.begin() + e1);
  EXPECT_EQ(s.indices, want);
  if (!val.empty()) {
    EXPECT_EQ(s.values, std::vector<float>(val.begin() + e0, val.begin() + e1));
  }
}

// The rows [r) of every dataset of `got` against the one-process result `want` of graph `g`
// (and the whole graph's block counts, with `counts`).
inline void expect_prepared_rows(const GraphData& g, const PreparedGraph& want, const PreparedSlice& got, Range r,
                                 bool with_extras, bool counts = true) {
  ASSERT_EQ(got.rows, r);
  EXPECT_EQ(got.two_orders, want.two_orders());
  EXPECT_EQ(got.directed, want.graph.directed);
  expect_rows("graph", want.graph.indptr, want.graph.indices, want.graph.values, want.graph.num_edges(), got.graph, r);
  expect_rows("a1", want.a1.indptr, want.a1.indices, want.a1.values, want.a1.nnz(), got.a1, r);
  if (want.two_orders()) expect_rows("a2", want.a2.indptr, want.a2.indices, want.a2.values, want.a2.nnz(), got.a2, r);
  EXPECT_EQ(got.links.has_value(), want.links.has_value());
  if (got.links && want.links)
    for (auto [a, b] : {std::pair{&got.links->val_pos, &want.links->val_pos}, std::pair{&got.links->val_neg, &want.links->val_neg},
                        std::pair{&got.links->test_pos, &want.links->test_pos},
                        std::pair{&got.links->test_neg, &want.links->test_neg}}) {
      EXPECT_EQ(a->u, b->u);
      EXPECT_EQ(a->v, b->v);
    }
  EXPECT_EQ(got.num_edge_features, want.graph.num_edge_features);
  {  // the entries' rows of [r)
    const index_t d = want.graph.num_edge_features, e0 = want.graph.indptr[r.begin], e1 = want.graph.indptr[r.end];
    EXPECT_EQ(got.edge_features, std::vector<float>(want.graph.edge_features.begin() + e0 * d,
                                                    want.graph.edge_features.begin() + e1 * d));
  }
  EXPECT_EQ(got.features, rows_of(want.graph.features, r, g.num_features));
  EXPECT_EQ(got.labels, rows_of(want.graph.labels, r));
  EXPECT_EQ(got.train_mask, rows_of(want.graph.train_mask, r));
  EXPECT_EQ(got.val_mask, rows_of(want.graph.val_mask, r));
  EXPECT_EQ(got.test_mask, rows_of(want.graph.test_mask, r));
  EXPECT_EQ(got.node_id_p, rows_of(want.node_id_p, r));
  EXPECT_EQ(got.node_id_p2, rows_of(want.node_id_p2, r));
  if (want.two_orders()) {
    EXPECT_EQ(got.labels_p, rows_of(want.labels_p, r));
    EXPECT_EQ(got.train_p, rows_of(want.train_p, r));
    EXPECT_EQ(got.val_p, rows_of(want.val_p, r));
    EXPECT_EQ(got.test_p, rows_of(want.test_p, r));
  }
  EXPECT_EQ(got.has_node_weights, with_extras);
  EXPECT_EQ(got.has_node_ids, with_extras);
  if (with_extras) {
    EXPECT_EQ(got.node_weights, rows_of(want.graph.node_weights, r));
    std::vector<std::int64_t> ids(static_cast<std::size_t>(r.size()));  // /node_ids in P2 order
    for (index_t k = 0; k < r.size(); ++k) ids[k] = g.node_ids[want.node_id_p2[r.begin + k]];
    EXPECT_EQ(got.node_ids, ids);
  }
  if (counts) {
    EXPECT_EQ(got.block_counts.cuts, want.block_counts.cuts);
    EXPECT_EQ(got.block_counts.tiles[0], want.block_counts.tiles[0]);
    EXPECT_EQ(got.block_counts.tiles[1], want.block_counts.tiles[1]);
    EXPECT_EQ(got.block_counts.held[0], want.block_counts.held[0]);
    EXPECT_EQ(got.block_counts.held[1], want.block_counts.held[1]);
  }
  EXPECT_EQ(got.class_names.size(), 4u);
}

}  // namespace plexus::test
