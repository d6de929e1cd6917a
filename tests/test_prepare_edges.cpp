// What `prepare` (on one process) carries besides the nodes: each stored edge's feature row,
// through cleaning and the P2 renumbering, and a link split, renumbered with the graph — and
// how a prepared file comes back for the models that read the whole graph (read_whole_graph_h5:
// the order of the graph that was prepared, so it trains as the cleaned plain file).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/io.hpp"
#include "plexus/link_split.hpp"
#include "plexus/prepare.hpp"
#include "graph_equality.hpp"
#include "input_errors.hpp"
#include "link_graphs.hpp"
#include "scratch_dir.hpp"

namespace plexus {
namespace {

constexpr index_t kWidth = 3;

// Each stored entry's own row: a function of its position, so no two entries share one.
GraphData numbered_rows(GraphData g) {
  g.num_edge_features = kWidth;
  g.edge_features.resize(g.indices.size() * kWidth);
  for (std::size_t k = 0; k < g.edge_features.size(); ++k) g.edge_features[k] = 0.25f * static_cast<float>(k) + 1.0f;
  return g;
}

// A graph cleaning changes: rows out of column order, a duplicate (its second copy with another
// row), a self-loop, edges stored one way only (symmetrizing adds their reverse) and a node
// without neighbours; features, labels, masks and ids on every node.
GraphData messy(index_t n = 9) {
  GraphData g;
  g.num_nodes = n;
  g.num_features = 2;
  g.num_classes = 2;
  g.directed = true;
  const std::vector<std::vector<index_t>> rows = {{3, 1, 3, 0}, {0, 2}, {1, 5}, {0}, {}, {2, 6, 4}, {5, 7}, {6}, {}};
  g.indptr = {0};
  for (index_t u = 0; u < n; ++u) {
    for (index_t v : rows[static_cast<std::size_t>(u)]) g.indices.push_back(v);
    g.indptr.push_back(static_cast<index_t>(g.indices.size()));
  }
  for (index_t k = 0; k < g.num_edges(); ++k) g.values.push_back(1.0f + 0.5f * static_cast<float>(k));
  for (index_t u = 0; u < n * 2; ++u) g.features.push_back(static_cast<float>(u) * 0.1f);
  for (index_t u = 0; u < n; ++u) {
    g.labels.push_back(static_cast<std::int32_t>(u % 2));
    g.train_mask.push_back(u % 3 == 0);
    g.val_mask.push_back(u % 3 == 1);
    g.test_mask.push_back(u % 3 == 2);
    g.node_ids.push_back(1000 + 7 * u);
  }
  return numbered_rows(std::move(g));
}

// What every entry's row must be, computed here without the library: the first stored row of
// (u, v) in row order, else (an edge symmetrizing added) the first of (v, u).
std::vector<float> expected_rows(const GraphData& in, const GraphData& out, const std::vector<index_t>& source_of) {
  std::map<std::pair<index_t, index_t>, index_t> first;
  for (index_t u = 0; u < in.num_nodes; ++u)
    for (index_t k = in.indptr[u]; k < in.indptr[u + 1]; ++k) first.emplace(std::pair{u, in.indices[k]}, k);
  std::vector<float> rows;
  for (index_t q = 0; q < out.num_nodes; ++q)
    for (index_t k = out.indptr[q]; k < out.indptr[q + 1]; ++k) {
      const index_t u = source_of[q], v = source_of[out.indices[k]];
      auto it = first.find({u, v});
      if (it == first.end()) it = first.find({v, u});
      EXPECT_NE(it, first.end()) << "entry (" << q << ", " << out.indices[k] << ") comes from no edge";
      if (it == first.end()) return {};
      for (index_t f = 0; f < kWidth; ++f) rows.push_back(in.edge_features[it->second * kWidth + f]);
    }
  return rows;
}

std::vector<index_t> identity(index_t n) {
  std::vector<index_t> v;
  for (index_t u = 0; u < n; ++u) v.push_back(u);
  return v;
}

TEST(PrepareEdges, CleaningCarriesEachEntrysRow) {
  const GraphData in = messy();
  for (const bool symmetrize : {false, true}) {
    const GraphData out = clean_graph(in, symmetrize);
    EXPECT_EQ(out.num_edge_features, kWidth);
    EXPECT_EQ(out.edge_features, expected_rows(in, out, identity(in.num_nodes))) << "symmetrize " << symmetrize;
    // Row 0 cleaned is {1, 3}: the duplicate (0, 3) keeps its first row (entry 0), not its second.
    ASSERT_EQ(out.indices[out.indptr[0] + 1], 3);
    EXPECT_EQ(out.edge_features[static_cast<std::size_t>((out.indptr[0] + 1) * kWidth)], in.edge_features[0]);
    EXPECT_NE(in.edge_features[0], in.edge_features[2 * kWidth]);
  }
  // Without edge features, as before.
  GraphData plain = in;
  plain.num_edge_features = 0;
  plain.edge_features.clear();
  EXPECT_TRUE(clean_graph(plain, true).edge_features.empty());
}

TEST(PrepareEdges, EveryOrderCarriesEachEntrysRow) {
  const std::vector<GraphData> graphs = {messy(), numbered_rows(generate_sbm(test::link_sbm(120, 3)))};
  for (const GraphData& in : graphs)
    for (const Balance b : {Balance::kNone, Balance::kPermute, Balance::kMetis}) {
      PrepareOptions o;
      o.balance = b;
      o.metis_parts = 3;
      const PreparedGraph p = prepare_graph(in, o);
      EXPECT_EQ(p.graph.num_edge_features, kWidth);
      EXPECT_EQ(p.graph.edge_features, expected_rows(in, p.graph, p.node_id_p2)) << balance_name(b);
      // Back in the input's order it is the cleaned input, every dataset of it (the ids travel
      // apart, as NodeNames: write_prepared_h5 stores them in P2 order as /node_ids).
      GraphData cleaned = clean_graph(in, true);
      cleaned.node_ids.clear();
      test::expect_same_graph(original_order(p.graph, p.node_id_p2), cleaned);
    }
}

TEST(PrepareEdges, ALinkSplitIsRenumberedWithTheGraph) {
  GraphData g = test::with_edge_features(generate_sbm(test::link_sbm(150, 8)));
  const LinkSplit s = random_link_split(g, 0.1, 0.2, 4);
  ASSERT_GT(s.val_pos.size(), 0u);
  PrepareOptions o;
  o.balance = Balance::kPermute;
  const PreparedGraph p = prepare_graph(g, o, s);
  ASSERT_TRUE(p.links);
  // Pair k of the prepared split is pair k of the input's, its nodes at their P2 positions.
  const LinkSplit back = renumbered(*p.links, p.node_id_p2);
  for (auto [a, b] : {std::pair{&back.val_pos, &s.val_pos}, std::pair{&back.val_neg, &s.val_neg},
                      std::pair{&back.test_pos, &s.test_pos}, std::pair{&back.test_neg, &s.test_neg}}) {
    EXPECT_EQ(a->u, b->u);
    EXPECT_EQ(a->v, b->v);
  }
  EXPECT_NE(p.links->val_pos.u, s.val_pos.u);  // (the permutation moved them)
  EXPECT_NO_THROW(validate_link_split(p.graph, *p.links, "prepared"));
}

TEST(PrepareEdges, AHeldOutLinkCleaningWouldRestoreIsRefused) {
  LinkSplit s;
  s.test_pos.u = {1};
  s.test_pos.v = {4};  // no edge either way
  s.test_neg.u = {4};
  s.test_neg.v = {8};
  EXPECT_NO_THROW(prepare_graph(messy(), PrepareOptions{}, s));
  // messy() without its 3 -> 0, which is held out: the directed graph never stores it (0 -> 3
  // stays), but symmetrizing stores it again from 0 -> 3, so message passing would see it.
  GraphData g = messy();
  const index_t at = g.indptr[3];
  ASSERT_EQ(g.indices[at], 0);
  g.indices.erase(g.indices.begin() + at);
  g.values.erase(g.values.begin() + at);
  g.edge_features.erase(g.edge_features.begin() + at * kWidth, g.edge_features.begin() + (at + 1) * kWidth);
  for (std::size_t r = 4; r < g.indptr.size(); ++r) --g.indptr[r];
  s.test_pos.u = {3};
  s.test_pos.v = {0};
  ASSERT_NO_THROW(validate_link_split(g, s, "graph"));
  const std::string why = test::input_error_message([&] { prepare_graph(g, PrepareOptions{}, s); });
  EXPECT_NE(why.find("the prepared graph: /links/test_pos"), std::string::npos) << why;
  PrepareOptions keep;
  keep.symmetrize = false;
  EXPECT_NO_THROW(prepare_graph(g, keep, s));
}

TEST(PrepareEdges, OriginalOrderRefusesWhatIsNoPermutation) {
  const PreparedGraph p = prepare_graph(messy(), PrepareOptions{});
  std::vector<index_t> bad = p.node_id_p2;
  bad[1] = bad[0];
  EXPECT_NE(test::input_error_message([&] { original_order(p.graph, bad); }).find("/prepared/node_id_p2: not a permutation"),
            std::string::npos);
  bad.pop_back();
  EXPECT_NE(test::input_error_message([&] { original_order(p.graph, bad); }), "");
}

// Written and read back: a prepared file holds the graph in P2 order with its rows and /links,
// and read_whole_graph_h5 returns the cleaned input and its split, as a plain file would.
TEST(PrepareEdges, APreparedFileReadsBackAsTheCleanedInput) {
  testing::ScratchDir dir;
  GraphData g = test::with_edge_features(generate_sbm(test::link_sbm(130, 2)));
  const LinkSplit s = random_link_split(g, 0.1, 0.1, 9);
  PrepareOptions o;
  o.balance = Balance::kPermute;
  const PreparedGraph p = prepare_graph(g, o, s);
  NodeNames names;  // your ids, stored in P2 order in the prepared file
  for (index_t u = 0; u < g.num_nodes; ++u) names.ids.push_back(5000 + 3 * u);
  write_prepared_h5(p, names, dir.file("p.h5"));
  write_graph_h5(g, names, s, dir.file("plain.h5"));
  const GraphData stored = read_graph_h5(dir.file("p.h5"));
  EXPECT_EQ(stored.edge_features, p.graph.edge_features);  // P2 order on disk
  EXPECT_EQ(read_link_split_h5(dir.file("p.h5"))->test_pos.u, p.links->test_pos.u);
  const WholeGraph prepared = read_whole_graph_h5(dir.file("p.h5")), plain = read_whole_graph_h5(dir.file("plain.h5"));
  GraphData cleaned = clean_graph(g, true);  // (ids are read apart: node k's is the file's k-th)
  test::expect_same_graph(prepared.graph, cleaned);
  EXPECT_EQ(read_original_node_ids_h5(dir.file("p.h5"), 0, g.num_nodes), names.ids);
  test::expect_same_graph(prepared.graph, plain.graph);  // (the SBM is clean already)
  ASSERT_TRUE(prepared.held_out && plain.held_out);
  EXPECT_EQ(prepared.held_out->val_neg.u, plain.held_out->val_neg.u);
  EXPECT_EQ(prepared.held_out->val_neg.v, plain.held_out->val_neg.v);
  EXPECT_EQ(prepared.held_out->test_pos.v, s.test_pos.v);
  // So the link task and GINE train on it exactly as on the plain file.
  for (const char* model : {"gcn", "gine"}) {
    TrainConfig c;
    c.task = GnnTask::Link;
    c.model = GnnSpec(model);
    c.hidden = 8;
    c.epochs = 3;
    c.seed = 5;
    std::vector<double> losses[2];
    int i = 0;
    for (const std::string& f : {dir.file("p.h5"), dir.file("plain.h5")}) {
      auto be = make_cpu_backend(1);
      auto grid = ProcessGrid::single();
      const TrainingOrder order = training_order(f, std::nullopt, c.task, c.model.reads_edge_features());
      EXPECT_TRUE(order.in_memory);
      GnnTrainer t(read_training_data(f, c, *grid, order), c, *be, *grid);
      for (int e = 0; e < c.epochs; ++e) losses[i].push_back(t.epoch().loss);
      ++i;
    }
    EXPECT_EQ(losses[0], losses[1]) << model;
  }
}

}  // namespace
}  // namespace plexus
