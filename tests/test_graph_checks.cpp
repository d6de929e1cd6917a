// The strict checks of an in-memory graph (plexus/graph_checks.hpp) and where they run
// (TrainConfig::strict, InferenceOptions::strict); validate()'s names for in-memory graphs
// (GraphNames::Memory); and the calls of plexus/launch.hpp (the grid of --grid auto, threads
// per rank, each rank's backend). The cross-rank checks on several ranks: mpi_test_strict.cpp.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_model.hpp"
#include "plexus/graph_checks.hpp"
#include "plexus/io.hpp"
#include "plexus/launch.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plan/plan.hpp"

namespace plexus {
namespace {

// 0 - 1 - 2 - 3, undirected, stored both ways; node 0 train, 1 val, 2 test.
GraphData path4(bool weighted = false) {
  GraphData g;
  g.num_nodes = 4;
  g.num_features = 2;
  g.num_classes = 2;
  g.indptr = {0, 1, 3, 5, 6};
  g.indices = {1, 0, 2, 1, 3, 2};
  if (weighted) g.values = {0.5f, 0.5f, 2.0f, 2.0f, 1.0f, 1.0f};
  g.features = {1, 0, 0, 1, 1, 1, 0, 0};
  g.labels = {0, 1, 0, 1};
  g.train_mask = {1, 0, 0, 0};
  g.val_mask = {0, 1, 0, 0};
  g.test_mask = {0, 0, 1, 0};
  return g;
}

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.message();
  }
  return "(no InputError)";
}

TEST(ValidateStrict, AcceptsASymmetricGraphWithDisjointMasks) {
  EXPECT_NO_THROW(validate_strict(path4(), "g"));
  EXPECT_NO_THROW(validate_strict(path4(true), "g"));
  SbmOptions o;
  o.nodes = 60;
  EXPECT_NO_THROW(validate_strict(generate_sbm(o), "sbm"));  // the generators' graphs pass
}

TEST(ValidateStrict, AnEdgeStoredOneWayOnly) {
  GraphData g = path4();
  // Row 2 loses its edge to 3: 3 -> 2 has no 2 -> 3 (the first violation in CSR order).
  g.indptr = {0, 1, 3, 4, 5};
  g.indices = {1, 0, 2, 1, 2};
  EXPECT_EQ(message([&] { validate_strict(g, "graph"); }),
            "graph: GraphData.indices: undirected graph, but edge 3 -> 2 has no 2 -> 3");
  EXPECT_EQ(message([&] { validate_strict(g, "g.h5", GraphNames::File); }),
            "g.h5: /graph/indices: undirected graph, but edge 3 -> 2 has no 2 -> 3");
  g.directed = true;  // a directed graph may
  EXPECT_NO_THROW(validate_strict(g, "graph"));
}

TEST(ValidateStrict, DifferentValuesEachWay) {
  GraphData g = path4(true);
  g.values[3] = 3.0f;  // 2 -> 1
  EXPECT_EQ(message([&] { validate_strict(g, "graph"); }),
            "graph: GraphData.values: undirected graph, but edge 1 -> 2 has value 2 and 2 -> 1 has 3");
  // A multi-edge: 1 -> 2 twice (values 2 and 3), 2 -> 1 twice with the same values, passes.
  GraphData m = path4(true);
  m.indptr = {0, 1, 4, 7, 8};
  m.indices = {1, 0, 2, 2, 1, 1, 3, 2};
  m.values = {0.5f, 0.5f, 2.0f, 3.0f, 3.0f, 2.0f, 1.0f, 1.0f};
  EXPECT_NO_THROW(validate_strict(m, "graph"));
}

TEST(ValidateStrict, ANodeInTwoMasks) {
  GraphData g = path4();
  g.test_mask[0] = 1;
  EXPECT_EQ(message([&] { validate_strict(g, "graph"); }), "graph: GraphData.test_mask: node 0 is also in train_mask");
  EXPECT_EQ(message([&] { validate_strict(g, "f.h5", GraphNames::File); }),
            "f.h5: /masks/test: node 0 is also in /masks/train");
  g = path4();
  g.val_mask[2] = 1;
  EXPECT_EQ(message([&] { validate_strict(g, "graph"); }), "graph: GraphData.test_mask: node 2 is also in val_mask");
  g = path4();
  g.val_mask[0] = 1;
  EXPECT_EQ(message([&] { validate_strict(g, "graph"); }), "graph: GraphData.val_mask: node 0 is also in train_mask");
  g = path4();
  g.train_mask[3] = 1;  // the last node too
  g.test_mask[3] = 1;
  EXPECT_EQ(message([&] { validate_strict(g, "graph"); }), "graph: GraphData.test_mask: node 3 is also in train_mask");
}

TEST(GraphHash, EveryPartOfTheGraphCounts) {
  const GraphData g = path4(true);
  const std::uint64_t h = graph_hash(g);
  EXPECT_EQ(graph_hash(path4(true)), h);
  const std::vector<std::function<void(GraphData&)>> edits = {
      [](GraphData& x) { x.num_classes = 3; },       [](GraphData& x) { x.directed = true; },
      [](GraphData& x) { x.indptr[2] = 2; },         [](GraphData& x) { x.indices[0] = 2; },
      [](GraphData& x) { x.values[5] = 1.5f; },      [](GraphData& x) { x.values.clear(); },
      [](GraphData& x) { x.features[7] = 1; },       [](GraphData& x) { x.labels[3] = 0; },
      [](GraphData& x) { x.train_mask[3] = 1; },     [](GraphData& x) { x.val_mask[3] = 1; },
      [](GraphData& x) { x.test_mask[3] = 1; },      [](GraphData& x) { x.node_ids = {7, 8, 9, 10}; },
      [](GraphData& x) { x.num_features = 4; },      [](GraphData& x) { x.num_nodes = 5; }};
  for (std::size_t k = 0; k < edits.size(); ++k) {
    GraphData x = path4(true);
    edits[k](x);
    EXPECT_NE(graph_hash(x), h) << "edit " << k;
  }
  // The same bytes split otherwise between two arrays hash differently (lengths count).
  GraphData a = path4(), b = path4();
  a.node_ids = {1, 2, 3, 4};
  b.node_ids = {1, 2, 3, 5};
  EXPECT_NE(graph_hash(a), graph_hash(b));
}

TEST(RequireSameGraph, OneRankHasNothingToCompare) {
  auto grid = ProcessGrid::single();
  EXPECT_NO_THROW(require_same_graph(path4(), *grid, "graph"));
}

// validate() names GraphData's members for a graph from memory, the datasets for a file's.
TEST(GraphNamesTest, InMemoryMessagesNameTheMembers) {
  GraphData g = path4();
  g.indptr[0] = 1;
  EXPECT_EQ(message([&] { validate(g, "graph", GraphNames::Memory); }),
            "graph: GraphData.indptr: must start at 0, got 1");
  EXPECT_EQ(message([&] { validate(g, "f.h5"); }), "f.h5: /graph/indptr: must start at 0, got 1");
  g = path4();
  g.indptr.back() = 5;
  EXPECT_NE(message([&] { validate(g, "graph", GraphNames::Memory); })
                .find("GraphData.indptr: last entry 5 != number of edges (length of GraphData.indices) 6"),
            std::string::npos);
  g = path4();
  g.train_mask[1] = 2;
  EXPECT_EQ(message([&] { validate(g, "graph", GraphNames::Memory); }),
            "graph: GraphData.train_mask: value 2 at node 1, expected 0 or 1");
  g = path4();
  g.labels[0] = 5;
  EXPECT_NE(message([&] { validate(g, "graph", GraphNames::Memory); }).find("graph: GraphData.labels: label 5"),
            std::string::npos);
  g = path4();
  g.train_mask = {0, 0, 0, 0};
  EXPECT_EQ(message([&] { require_labelled_training_node(g, "graph", GraphNames::Memory); }),
            "graph: GraphData.train_mask: empty train mask: nothing to train on");
  EXPECT_EQ(message([&] { require_labelled_training_node(g, "f.h5"); }),
            "f.h5: /masks/train: empty train mask: nothing to train on");
}

TrainConfig tiny_config() {
  TrainConfig c;
  c.hidden = 4;
  c.epochs = 2;
  c.dropout = 0;
  return c;
}

// The library's entry points name the members, and run the strict checks only when asked.
TEST(GraphNamesTest, TrainerAndModelOnAGraphFromMemory) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GraphData g = path4();
  g.features.pop_back();
  EXPECT_NE(message([&] { GnnTrainer t(g, tiny_config(), *be, *grid); }).find("graph: GraphData.features: expected"),
            std::string::npos);
  g = path4();
  g.train_mask = {0, 0, 0, 0};
  EXPECT_EQ(message([&] { train_gnn(g, tiny_config(), *be, *grid); }),
            "graph: GraphData.train_mask: empty train mask: nothing to train on");
}

TEST(StrictConfig, TrainerAndTrainGcnCheckOnlyWhenAsked) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GraphData g = path4();
  g.test_mask[0] = 1;
  TrainConfig c = tiny_config();
  EXPECT_NO_THROW(GnnTrainer(g, c, *be, *grid));  // off by default
  c.strict = true;
  EXPECT_EQ(message([&] { GnnTrainer t(g, c, *be, *grid); }), "graph: GraphData.test_mask: node 0 is also in train_mask");
  GraphData one_way = path4();
  one_way.indptr = {0, 1, 3, 4, 5};
  one_way.indices = {1, 0, 2, 1, 2};
  EXPECT_EQ(message([&] { train_gnn(one_way, c, *be, *grid); }),
            "graph: GraphData.indices: undirected graph, but edge 3 -> 2 has no 2 -> 3");
  EXPECT_NO_THROW(train_gnn(path4(), c, *be, *grid));
}

TEST(StrictConfig, PredictChecksWithTheOption) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer trainer(path4(), tiny_config(), *be, *grid);
  GnnModel model(trainer);
  GraphData g = path4();
  g.val_mask[2] = 1;
  EXPECT_NO_THROW(model.predict(g, *be, *grid));
  InferenceOptions strict;
  strict.strict = true;
  EXPECT_EQ(message([&] { model.predict(g, *be, *grid, strict); }),
            "graph: GraphData.test_mask: node 2 is also in val_mask");
  EXPECT_NO_THROW(model.predict(path4(), *be, *grid, strict));
}

// ---- plexus/launch.hpp ----

TEST(Launch, ThreadsPerRank) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(cpu_threads_per_rank(3), 3);
  EXPECT_EQ(cpu_threads_per_rank(0), std::max(1, cores / ProcessGrid::ranks_on_this_node()));
  EXPECT_EQ(message([] { cpu_threads_per_rank(-1, "--threads"); }), "--threads: must be 0 (all cores) or positive");
  EXPECT_EQ(message([] { cpu_threads_per_rank(-1); }), "threads: must be 0 (all cores) or positive");
  const int most = std::max(1024, 4 * cores);
  EXPECT_EQ(cpu_threads_per_rank(most), most);
  EXPECT_NE(message([&] { cpu_threads_per_rank(most + 1); }).find("is too many"), std::string::npos);
}

TEST(Launch, BackendsByName) {
  EXPECT_EQ(make_backend("cpu", 1)->device(), Device::CPU);
  EXPECT_EQ(make_backend("reference", 1)->name(), make_reference_backend()->name());
  EXPECT_EQ(make_backend("cpu", 1)->name(), make_cpu_backend(1)->name());
  if (!cuda_available()) {
    EXPECT_EQ(make_backend("auto", 1)->device(), Device::CPU);
    EXPECT_EQ(message([] { make_backend("cuda", 1); }), "make_backend(name): cuda requested but no CUDA device is available");
  }
  auto grid = ProcessGrid::single();
  std::string how = "stale";
  auto b = make_node_backend("cpu", 1, *grid, &how);
  EXPECT_EQ(b->device(), Device::CPU);
  EXPECT_EQ(how, "");  // nothing to arrange on one rank
}

TEST(Launch, GridChoice) {
  TrainConfig c;
  GraphData g = path4();
  EXPECT_EQ(choose_gnn_grid(g, c, 1).shape.str(), "1x1x1");
  EXPECT_EQ(choose_gnn_grid(g, c, 1).why, "");
  SbmOptions o;
  o.nodes = 2000;
  o.features = 64;
  const GraphData big = generate_sbm(o);
  GraphInfo info;
  info.num_nodes = big.num_nodes;
  info.num_features = big.num_features;
  info.nnz = big.num_edges();
  info.num_classes = big.num_classes;
  for (int ranks : {2, 4, 8}) {
    const GridChoice got = choose_gnn_grid(big, c, ranks);
    EXPECT_EQ(got.shape.size(), ranks);
    // plexus plan's first grid (no memory budget set here).
    MachineModel m;
    m.ranks_per_node = ProcessGrid::ranks_on_this_node();
    EXPECT_EQ(got.shape.str(), plan_all(gnn_problem(info, c), ranks, m).front().grid.str()) << ranks;
    EXPECT_NE(got.why.find("grids for " + std::to_string(ranks) + " ranks"), std::string::npos) << got.why;
  }
  EXPECT_NE(message([&] { choose_gnn_grid(g, c, 0); }).find("ranks: must be >= 1"), std::string::npos);
  GptTrainConfig gpt;
  EXPECT_EQ(choose_gpt_grid(gpt, 2, 2).shape.str(), "1x1x1");
  EXPECT_EQ(choose_gpt_grid(gpt, 4, 2).shape.size(), 2);
  EXPECT_EQ(message([&] { choose_gpt_grid(gpt, 3, 2); }), "choose_gpt_grid(dp): 2 replicas need a multiple of 2 ranks; 3 were started");
}

}  // namespace
}  // namespace plexus
