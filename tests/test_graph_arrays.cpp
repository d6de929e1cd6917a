// build_graph (your ids to a GraphData), GraphData::node_ids' validation, and one table of the
// predictions keyed by those ids (gather_table on one rank, write_table_csv). Several ranks:
// mpi_test_outputs.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_model.hpp"
#include "plexus/tables.hpp"
#include "scratch_dir.hpp"

namespace plexus {
namespace {

// Five accounts with 12-digit ids, one of them isolated; a duplicate edge, a self-loop.
EdgeArrays account_edges() {
  EdgeArrays e;
  e.src = {100000000007, 100000000003, 100000000007, 100000000005, 100000000005, 100000000003};
  e.dst = {100000000003, 100000000005, 100000000003, 100000000005, 100000000007, 100000000007};
  e.weights = {1.0f, 2.0f, 9.0f, 4.0f, 5.0f, 6.0f};
  return e;
}

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.message();
  }
  return "(no error)";
}

TEST(BuildGraph, MapsIdsSymmetrisesDeduplicatesAndDropsSelfLoops) {
  NodeArrays nodes;
  nodes.ids = {100000000005, 100000000003, 100000000007, 100000000009};  // 9: no edge
  nodes.num_features = 2;
  nodes.features = {1, 2, 3, 4, 5, 6, 7, 8};
  nodes.labels = {1, 0, -1, 2};
  nodes.split = {1, 2, 0, 3};
  const GraphData g = build_graph(account_edges(), nodes);
  EXPECT_EQ(g.num_nodes, 4);
  EXPECT_EQ(g.node_ids, nodes.ids);
  EXPECT_FALSE(g.directed);
  // Rows by node: 5 ↔ 3, 7 ↔ 3 (the first of the two 7→3 keeps weight 1), 5 ↔ 7; 5→5 dropped.
  const std::vector<index_t> indptr{0, 2, 4, 6, 6}, indices{1, 2, 0, 2, 0, 1};
  EXPECT_EQ(g.indptr, indptr);
  EXPECT_EQ(g.indices, indices);
  const std::vector<float> values{2, 5, 2, 1, 5, 1};
  EXPECT_EQ(g.values, values);
  EXPECT_EQ(g.num_classes, 3);
  EXPECT_EQ(g.labels, nodes.labels);
  EXPECT_EQ(g.train_mask, (std::vector<std::uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(g.val_mask, (std::vector<std::uint8_t>{0, 1, 0, 0}));
  EXPECT_EQ(g.test_mask, (std::vector<std::uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(g.features, nodes.features);

  // No nodes given: the ids of the edges, ascending; a degree feature; nothing labelled.
  GraphBuildOptions directed;
  directed.symmetrize = false;
  const GraphData d = build_graph(account_edges(), {}, directed);
  EXPECT_EQ(d.node_ids, (std::vector<std::int64_t>{100000000003, 100000000005, 100000000007}));
  EXPECT_TRUE(d.directed);
  EXPECT_EQ(d.num_edges(), 4);  // 7→3, 3→5, 5→7, 3→7
  EXPECT_EQ(d.num_features, 1);
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{-1, -1, -1}));
}

TEST(BuildGraph, NamesTheArrayAndPositionOfEveryProblem) {
  NodeArrays nodes;
  nodes.ids = {100000000005, 100000000003};
  EXPECT_NE(message([&] { build_graph(account_edges(), nodes); })
                .find("EdgeArrays.src: id 100000000007 at position 0 is not one of NodeArrays.ids"),
            std::string::npos);
  nodes.ids = {100000000005, 100000000003, 100000000007, 100000000005};
  EXPECT_NE(message([&] { build_graph(account_edges(), nodes); }).find("NodeArrays.ids: id 100000000005 given twice"),
            std::string::npos);
  EdgeArrays e = account_edges();
  e.dst.pop_back();
  EXPECT_NE(message([&] { build_graph(e); }).find("EdgeArrays.dst: 5 entries, EdgeArrays.src has 6"), std::string::npos);
  nodes.ids = {100000000005, 100000000003, 100000000007};
  nodes.labels = {0, 5, 1};
  nodes.num_classes = 3;
  EXPECT_NE(message([&] { build_graph(account_edges(), nodes); }).find("NodeArrays.labels: label 5 of node 100000000003"),
            std::string::npos);
  nodes.labels.clear();
  nodes.split = {0, 4, 1};
  EXPECT_NE(message([&] { build_graph(account_edges(), nodes); }).find("NodeArrays.split: value 4"), std::string::npos);
  GraphData g = build_graph(account_edges());
  g.node_ids[2] = g.node_ids[0];
  EXPECT_NE(message([&] { validate(g, "GraphData"); }).find("GraphData: node_ids: id 100000000003 names two nodes"),
            std::string::npos);
}

TEST(NodeTables, OneTableKeyedByIdsAndItsCsv) {
  SbmOptions o;
  o.nodes = 50;
  o.classes = 3;
  o.features = 4;
  GraphData g = generate_sbm(o);
  for (index_t k = 0; k < g.num_nodes; ++k) g.node_ids.push_back(900000000000 + 7 * k);
  TrainConfig cfg;
  cfg.hidden = 5;
  cfg.epochs = 3;
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer trainer(g, cfg, *be, *grid);
  for (int e = 0; e < 3; ++e) trainer.epoch();
  GnnModel model(trainer);
  const Inference out = model.predict(g, *be, *grid, {.embeddings = true});
  const NodeTable t = gather_table(out, g, *grid);
  ASSERT_EQ(t.rows(), 50u);
  EXPECT_EQ(t.ids, g.node_ids);
  EXPECT_EQ(t.num_classes, 3);
  ASSERT_EQ(t.embeddings.size(), 1u);
  EXPECT_EQ(t.embeddings[0].width, 5);
  for (std::size_t k = 0; k < out.predictions.node_ids.size(); ++k) {  // row = node
    const auto node = static_cast<std::size_t>(out.predictions.node_ids[k]);
    EXPECT_EQ(t.classes[node], out.predictions.classes[k]);
    for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(t.logits[node * 3 + c], out.predictions.logits[k * 3 + c]);
  }
  testing::ScratchDir dir;
  write_table_csv(t, dir.file("t.csv"));
  std::ifstream in(dir.file("t.csv"));
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  EXPECT_EQ(header, "id,class,logit_0,logit_1,logit_2,emb0_0,emb0_1,emb0_2,emb0_3,emb0_4");
  std::istringstream fields(first);
  std::string id, cls, logit;
  std::getline(fields, id, ',');
  std::getline(fields, cls, ',');
  std::getline(fields, logit, ',');
  EXPECT_EQ(id, "900000000000");
  EXPECT_EQ(cls, std::to_string(t.classes[0]));
  EXPECT_EQ(std::stof(logit), t.logits[0]);  // shortest round-trip form
  int lines = 2;
  for (std::string l; std::getline(in, l);) ++lines;
  EXPECT_EQ(lines, 51);
}

}  // namespace
}  // namespace plexus
