// Edge features (GraphData::edge_features, format v1's /graph/edge_features) on their way to
// GINE: validated, written and read back, carried when the link task holds links out, refused
// where they would be ambiguous (an edge stored twice); and what GINE makes
// of them — a row's entries in any stored order train alike, other features train otherwise,
// and every backward pass writes the edge linear's gradient afresh.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "models/gnn_network.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/io.hpp"
#include "plexus/link_split.hpp"
#include "plexus/prepare.hpp"
#include "plexus/sparse.hpp"
#include "input_errors.hpp"
#include "link_graphs.hpp"
#include "scratch_dir.hpp"
#include "train/graph_shards.hpp"

namespace plexus {
namespace {

GraphData featured(index_t nodes = 60, std::uint64_t seed = 4) {
  return test::with_edge_features(generate_sbm(test::link_sbm(nodes, seed)));
}

// The one-line message ("where: what") of an InputError thrown by `f` ("" when none is).
template <class F>
std::string refusal(F&& f) {
  return test::input_error_message(std::forward<F>(f));
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TrainConfig gine(int epochs = 6) {
  TrainConfig c;
  c.model = GnnSpec("gine").set("train-eps", true);
  c.hidden = 6;
  c.epochs = epochs;
  c.dropout = 0.2f;
  c.lr = 0.02f;
  c.seed = 3;
  return c;
}

std::vector<double> losses(const GraphData& g, const TrainConfig& c) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer t(g, c, *be, *grid);
  std::vector<double> out;
  for (int e = 0; e < c.epochs; ++e) out.push_back(t.epoch().loss);
  return out;
}

TEST(EdgeFeatures, ValidationChecksTheirShapeAndValues) {
  GraphData g = featured();
  EXPECT_NO_THROW(validate(g, "graph", GraphNames::Memory));
  GraphData short_rows = g;
  short_rows.edge_features.pop_back();
  EXPECT_TRUE(contains(refusal([&] { validate(short_rows, "graph", GraphNames::Memory); }), "GraphData.edge_features: expected"));
  GraphData nan = g;
  nan.edge_features[7] = std::nanf("");
  EXPECT_TRUE(contains(refusal([&] { validate(nan, "g.h5"); }), "/graph/edge_features: NaN at [2, 1]"));
  GraphData negative = g;
  negative.num_edge_features = -1;
  EXPECT_TRUE(contains(refusal([&] { validate(negative, "graph", GraphNames::Memory); }), "negative width"));
  GraphData none = g;  // width 0 and no rows: a graph without edge features
  none.num_edge_features = 0;
  none.edge_features.clear();
  EXPECT_NO_THROW(validate(none, "graph", GraphNames::Memory));
}

TEST(EdgeFeatures, AFileKeepsThemAndSaysItsWidth) {
  const testing::ScratchDir dir;
  const GraphData g = featured();
  const std::string path = dir.file("g.h5");
  write_graph_h5(g, path);
  const GraphData back = read_graph_h5(path);
  EXPECT_EQ(back.num_edge_features, 3);
  EXPECT_EQ(back.edge_features, g.edge_features);
  EXPECT_EQ(read_graph_info_h5(path).num_edge_features, 3);
  GraphData plain = g;
  plain.num_edge_features = 0;
  plain.edge_features.clear();
  write_graph_h5(plain, dir.file("plain.h5"));
  EXPECT_EQ(read_graph_info_h5(dir.file("plain.h5")).num_edge_features, 0);
  EXPECT_TRUE(read_graph_h5(dir.file("plain.h5")).edge_features.empty());
  // A run whose model reads them reads the plain file whole; refused without them or prepared.
  EXPECT_TRUE(training_order(path, std::nullopt, GnnTask::NodeClassification, true).in_memory);
  EXPECT_FALSE(training_order(path).in_memory);
  EXPECT_TRUE(contains(refusal([&] { training_order(dir.file("plain.h5"), std::nullopt, GnnTask::NodeClassification, true); }),
                       "the model reads edge features and the file has none"));
}

// The link task holds links out of the training graph: every edge left keeps its own row.
TEST(EdgeFeatures, HeldOutLinksLeaveWithTheirRows) {
  GraphData g = featured(80, 6);
  const GraphData whole = g;
  const LinkSplit s = random_link_split(g, 0.1, 0.2, 5);
  ASSERT_GT(s.test_pos.size(), 0u);
  ASSERT_LT(g.num_edges(), whole.num_edges());
  EXPECT_NO_THROW(validate(g, "graph", GraphNames::Memory));
  const GraphData expected = test::with_edge_features(g);  // the rows are a function of (u, v)
  EXPECT_EQ(g.edge_features, expected.edge_features);
}

TEST(EdgeFeatures, WhatWouldDropOrConfuseThemIsRefused) {
  const GraphData g = featured();
  // Row 0's first edge stored twice (prepare keeps the first of them, tests/test_prepare_edges.cpp).
  GraphData twice = g;
  twice.indices.insert(twice.indices.begin() + twice.indptr[1], twice.indices[0]);
  for (std::size_t r = 1; r < twice.indptr.size(); ++r) ++twice.indptr[r];
  twice.edge_features.insert(twice.edge_features.begin() + twice.indptr[1] * 3 - 3, {1.0f, 2.0f, 3.0f});
  ASSERT_NO_THROW(validate(twice, "graph", GraphNames::Memory));
  const std::string why = refusal([&] { losses(twice, gine(1)); });
  EXPECT_TRUE(contains(why, "/graph/edge_features: the edge 0 -> " + std::to_string(g.indices[0]) + " is stored twice")) << why;
  // A graph without them, for a model that reads them.
  GraphData none = g;
  none.num_edge_features = 0;
  none.edge_features.clear();
  EXPECT_TRUE(contains(refusal([&] { losses(none, gine(1)); }), "the model reads edge features and the graph has none"));
}

// Each edge is its own message, wherever its row stores it: a row's entries reversed (their
// features with them) train the same model; other features train another.
TEST(EdgeFeatures, GineReadsEachEdgesOwnRowInAnyStoredOrder) {
  const GraphData g = featured();
  GraphData reversed = g;
  const auto w = static_cast<std::size_t>(g.num_edge_features);
  for (index_t u = 0; u < g.num_nodes; ++u) {
    const index_t b = g.indptr[u], e = g.indptr[u + 1];
    for (index_t k = b; k < e; ++k) {
      const index_t from = e - 1 - (k - b);
      reversed.indices[k] = g.indices[from];
      for (std::size_t f = 0; f < w; ++f)
        reversed.edge_features[static_cast<std::size_t>(k) * w + f] = g.edge_features[static_cast<std::size_t>(from) * w + f];
    }
  }
  const std::vector<double> want = losses(g, gine()), got = losses(reversed, gine());
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t e = 0; e < want.size(); ++e) EXPECT_NEAR(got[e], want[e], 1e-6 * std::abs(want[e])) << "epoch " << e + 1;
  GraphData other = g;
  for (float& x : other.edge_features) x = -x;
  EXPECT_GT(std::abs(losses(other, gine())[1] - want[1]), 1e-4 * std::abs(want[1]));
  // gin ignores them: the same losses with or without.
  TrainConfig gin = gine();
  gin.model = GnnSpec("gin").set("train-eps", true);
  GraphData bare = g;
  bare.num_edge_features = 0;
  bare.edge_features.clear();
  EXPECT_EQ(losses(g, gin), losses(bare, gin));
}

// The blocks find their edges by node id: in another node order (the double permutation) the
// model is the same, GINE's messages and GAT's edge scores alike.
TEST(EdgeFeatures, AnyNodeOrderTrainsTheSameModel) {
  const GraphData g = featured();
  for (const GnnSpec& spec : {GnnSpec("gine"), GnnSpec("gat").set("heads", 2).set("edge-features", true)}) {
    TrainConfig c = gine();
    c.model = spec;
    c.dropout = 0.0f;  // (its masks follow the node order)
    const std::vector<double> want = losses(g, c);
    c.balance = Balance::kPermute;
    const std::vector<double> got = losses(g, c);
    for (std::size_t e = 0; e < want.size(); ++e)
      EXPECT_NEAR(got[e], want[e], 1e-5 * std::abs(want[e])) << spec.kind() << ", epoch " << e + 1;
  }
}

// A backward pass writes the edge linear's gradient (as the Linear3Ds write theirs): the same
// pass twice gives the same gradient, not twice it.
TEST(EdgeFeatures, EveryBackwardWritesTheEdgeGradientsAfresh) {
  const GraphData g = featured();
  TrainConfig c = gine();
  c.dropout = 0.0f;
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnShards shards = shards_of_graph(g, c, *grid, false, false);
  GnnNetwork net(*be, *grid, shards, c);
  const auto edge_grads = [&] {
    std::vector<float> all;
    for (ModelParam& p : net.named_parameters())
      if (p.name.find("/edge_") != std::string::npos) {
        std::vector<float> h(p.slot->size());
        be->copy_to_host(h.data(), p.slot->grad(), h.size() * sizeof(float));
        all.insert(all.end(), h.begin(), h.end());
      }
    return all;
  };
  std::vector<std::vector<float>> passes;
  for (int k = 0; k < 2; ++k) {
    const Matrix& out = net.forward(0, /*training=*/true);
    Matrix d(*be, out.rows(), out.cols());
    be->fill(d.view(), 0.05f);
    net.backward(d, 0);
    passes.push_back(edge_grads());
  }
  ASSERT_EQ(passes[0].size(), static_cast<std::size_t>(c.layers) * (3 + 1) * 6);  // W_e and b_e of every layer
  double norm = 0;
  for (float x : passes[0]) norm += std::abs(x);
  EXPECT_GT(norm, 0.0);
  EXPECT_EQ(passes[1], passes[0]);
}

}  // namespace
}  // namespace plexus

namespace plexus {
namespace {

// `convert edgelist --edge-features N`: the last N columns of each line are its edge's features,
// both directions of a symmetrized edge take them, a repeated edge keeps its first line's.
TEST(EdgeFeatures, AnEdgeListsLastColumnsAreItsEdgesFeatures) {
  const testing::ScratchDir dir;
  const std::string path = dir.write("e.txt", "# u v w f1 f2\n10 20 1.5 0.25 -1\n20 30 2 3 4\n30 10 1 5 6\n20 10 9 7 8\n");
  EdgeListOptions o;
  o.edge_features = 2;
  const GraphData g = read_edge_list(path, o);  // ids 10, 20, 30: nodes 0, 1, 2
  ASSERT_EQ(g.num_edge_features, 2);
  ASSERT_EQ(g.num_edges(), 6);
  const auto row = [&](index_t u, index_t v) {
    for (index_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k)
      if (g.indices[k] == v) return std::vector<float>{g.edge_features[k * 2], g.edge_features[k * 2 + 1]};
    return std::vector<float>{};
  };
  EXPECT_EQ(row(0, 1), (std::vector<float>{0.25f, -1.0f}));  // line 1, and its reverse; line 4 repeats it
  EXPECT_EQ(row(1, 0), (std::vector<float>{0.25f, -1.0f}));
  EXPECT_EQ(row(1, 2), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(row(2, 1), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(row(2, 0), (std::vector<float>{5.0f, 6.0f}));
  EXPECT_EQ(g.values[static_cast<std::size_t>(g.indptr[0])], 1.5f);  // the weight stays a weight
  o.symmetrize = false;
  EXPECT_EQ(read_edge_list(path, o).num_edges(), 4);
  // Too few columns, a feature that is not a number, a width out of range; other readers refuse.
  const std::string short_line = dir.write("s.txt", "1 2 0.5\n");
  EXPECT_TRUE(contains(refusal([&] { read_edge_list(short_line, o); }), "expected 4 or 5 columns (u v [weight] 2 edge features)"));
  const std::string nan_line = dir.write("n.txt", "1 2 0.5 x\n");
  o.edge_features = 1;
  EXPECT_TRUE(contains(refusal([&] { read_edge_list(nan_line, o); }), "edge feature"));
  o.edge_features = -1;
  const std::string why = refusal([&] { read_edge_list(path, o); });
  EXPECT_TRUE(contains(why, "EdgeListOptions.edge_features: must be between 0 and 4096")) << why;
}

}  // namespace
}  // namespace plexus
