// The library under MPI when a pipeline passes different things on different ranks (issue 45,
// section 7), on 1 to 4 ranks: what differs is found and refused on every rank alike — by
// default, not only with `strict` — never a crash, a hang or a wrong answer. A graph or a
// configuration that differs on one rank; a GPT corpus or configuration that differs, or ids
// beyond the vocabulary; a table written on every rank; a table labelled by another graph.
//
// Every rank runs every check in the same order: checks are EXPECTs.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_model.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/tables.hpp"
#include "plexus/train.hpp"
#include "mpi_job.hpp"

namespace plexus {
namespace {

using mpi_job::error_of;
using mpi_job::rank;
using mpi_job::same_everywhere;
using mpi_job::size;

GraphData sbm(index_t nodes = 40) {
  SbmOptions o;
  o.nodes = nodes;
  o.classes = 3;
  o.features = 5;
  o.seed = 7;
  return generate_sbm(o);
}

TrainConfig small_config() {
  TrainConfig c;
  c.hidden = 4;
  c.epochs = 1;
  return c;
}

// The grids a pipeline would use on these ranks: all on X, and (on 4 ranks) 2×2×1.
std::vector<GridShape> grids() {
  std::vector<GridShape> g{{size(), 1, 1}};
  if (size() == 4) g.push_back({2, 2, 1});
  return g;
}

// `got` is every rank's error, alike, naming `want` (or, on one rank, nothing).
void expect_refused_alike(const std::string& got, const std::string& want) {
  EXPECT_TRUE(same_everywhere(got)) << got;
  if (size() == 1) {
    EXPECT_EQ(got, "");
  } else {
    EXPECT_NE(got.find(want), std::string::npos) << got;
  }
}

// Without `strict`: a rank with a graph of another size cut shards of other sizes, and the
// collectives corrupted the heap (SIGABRT); one feature different trained silently.
TEST(LibraryMisuse, AGraphThatDiffersOnOneRankIsRefusedByDefault) {
  auto be = make_cpu_backend(1);
  for (const GridShape shape : grids()) {
    auto grid = ProcessGrid::create(shape);
    const TrainConfig c = small_config();
    ASSERT_FALSE(c.strict);
    EXPECT_EQ(error_of([&] { GnnTrainer t(sbm(), c, *be, *grid); }), "");
    const int odd = size() - 1;
    std::string got = error_of([&] { GnnTrainer t(sbm(rank() == odd ? 41 : 40), c, *be, *grid); });
    expect_refused_alike(got, "graph: GraphData: ranks 0 and " + std::to_string(odd) + " hold different graphs");
    GraphData g = sbm();
    if (rank() == odd) g.features[7] += 0.5f;
    got = error_of([&] { GnnTrainer t(g, c, *be, *grid); });
    expect_refused_alike(got, "hold different graphs");
    // Scoring: the model alike, the graphs not.
    GnnModel model = GnnModel::untrained(c, {5, 4, 3});
    got = error_of([&] { (void)model.predict(sbm(rank() == odd ? 41 : 40), *be, *grid); });
    expect_refused_alike(got, "hold different graphs");
  }
}

// hidden 16 on one rank and 32 on another, or a seed per rank, trained silently even with strict.
TEST(LibraryMisuse, AConfigurationThatDiffersOnOneRankIsRefused) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::create(GridShape{size(), 1, 1});
  const GraphData g = sbm();
  const int odd = size() - 1;
  for (int what = 0; what < 4; ++what) {
    TrainConfig c = small_config();
    if (rank() == odd) {
      if (what == 0) c.hidden = 8;
      if (what == 1) c.seed = 42 + static_cast<std::uint64_t>(rank());
      if (what == 2) c.lr = 0.02f;
      if (what == 3) c.class_weights = {1.0f, 2.0f, 1.0f};
    }
    const std::string got = error_of([&] { GnnTrainer t(g, c, *be, *grid); });
    expect_refused_alike(got, "config: TrainConfig: ranks 0 and " + std::to_string(odd) +
                                  " hold different configurations");
  }
  // The model of predict() alike too.
  TrainConfig c = small_config();
  if (rank() == odd) c.hidden = 8;
  GnnModel model = GnnModel::untrained(c, {5, c.hidden, 3});
  expect_refused_alike(error_of([&] { (void)model.predict(g, *be, *grid); }), "hold different configurations");
}

GptTrainConfig gpt_config() {
  GptTrainConfig c;
  c.model.layers = 1;
  c.model.heads = 2;
  c.model.embed = 8;
  c.model.block = 4;
  c.model.vocab = 11;
  c.batch = 12;  // (a whole number of sequences per replica on 1 to 4 ranks)
  c.iters = 1;
  c.eval_every = 0;
  return c;
}

TokenCorpus gpt_corpus() {
  TokenCorpus t;
  t.vocab = 11;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> tok(0, 10);
  for (int i = 0; i < 80; ++i) t.train.push_back(tok(rng));
  for (int i = 0; i < 20; ++i) t.val.push_back(tok(rng));
  return t;
}

TEST(LibraryMisuse, AGptCorpusOrConfigurationThatDiffersOrIdsBeyondTheVocabularyAreRefused) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::create(GridShape{1, 1, 1}, size());  // data parallel over the ranks
  const int odd = size() - 1;
  EXPECT_EQ(error_of([&] { GptTrainer t(gpt_corpus(), gpt_config(), *be, *grid); }), "");
  TokenCorpus other = gpt_corpus();
  if (rank() == odd) other.train[5] = (other.train[5] + 1) % 11;
  expect_refused_alike(error_of([&] { GptTrainer t(other, gpt_config(), *be, *grid); }),
                       "corpus: TokenCorpus: ranks 0 and " + std::to_string(odd) + " hold different corpora");
  GptTrainConfig c = gpt_config();
  if (rank() == odd) c.seed = 7;
  expect_refused_alike(error_of([&] { GptTrainer t(gpt_corpus(), c, *be, *grid); }),
                       "config: GptTrainConfig: ranks 0 and " + std::to_string(odd) + " hold different configurations");
  // An id beyond the vocabulary (every rank alike): refused before any row is read, naming it.
  for (const int bad : {11, -1}) {
    TokenCorpus beyond = gpt_corpus();
    beyond.val[3] = bad;
    const std::string got = error_of([&] { GptTrainer t(beyond, gpt_config(), *be, *grid); });
    EXPECT_EQ(got, "TokenCorpus.val: token 3 is id " + std::to_string(bad) + ", outside the vocabulary [0, 11)");
  }
}

std::string shared_path(const std::string& name) { return mpi_job::shared_path("plexus-misuse", name); }

int lines_of(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// write_table_csv called on every rank: the other ranks' empty tables overwrote the real file,
// leaving the header only.
TEST(LibraryMisuse, ATableWrittenOnEveryRankKeepsItsRows) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::create(GridShape{size(), 1, 1});
  const GraphData g = sbm();
  GnnModel model = GnnModel::untrained(small_config(), {5, 4, 3});
  const Inference mine = model.predict(g, *be, *grid);
  const std::string path = shared_path("table.csv");
  const NodeTable t = gather_table(mine, *grid, 0);
  const std::string got = error_of([&] { write_table_csv(t, path); });
  if (rank() == 0) {
    EXPECT_EQ(got, "");
  } else {
    EXPECT_EQ(got, path + ": this rank's NodeTable holds no rows: gather_table gave them to rank 0 (write the table "
                          "there, or gather with root -1)");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(lines_of(path), 41);
  // Gathered on every rank, each may write its own copy.
  const NodeTable everywhere = gather_table(mine, *grid, -1);
  EXPECT_EQ(everywhere.rows(), 40u);
  EXPECT_EQ(everywhere.rows_on_rank, -1);
}

// gather_table took the graph again: a reordered graph put wrong ids on every row silently, one
// of another size threw a std::logic_error about internals.
TEST(LibraryMisuse, ATableTakesItsIdsFromThePredictionsNotAnotherGraph) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::create(GridShape{size(), 1, 1});
  GraphData g = sbm();
  g.node_ids.resize(40);
  for (index_t k = 0; k < 40; ++k) g.node_ids[static_cast<std::size_t>(k)] = 1000 + 7 * k;
  GnnModel model = GnnModel::untrained(small_config(), {5, 4, 3});
  const Inference mine = model.predict(g, *be, *grid);
  ASSERT_EQ(mine.predictions.ids.size(), mine.predictions.node_ids.size());
  const NodeTable t = gather_table(mine, *grid, -1);
  ASSERT_EQ(t.rows(), 40u);
  for (index_t k = 0; k < 40; ++k) EXPECT_EQ(t.ids[static_cast<std::size_t>(k)], 1000 + 7 * k);
  // The graph they were made on gives the same table.
  EXPECT_EQ(gather_table(mine, g, *grid, -1).ids, t.ids);
  // A reordered copy (ids reversed) and a smaller graph are refused on every rank.
  GraphData reordered = g;
  std::reverse(reordered.node_ids.begin(), reordered.node_ids.end());
  std::string got = error_of([&] { (void)gather_table(mine, reordered, *grid, 0); });
  EXPECT_TRUE(same_everywhere(got)) << got;
  EXPECT_NE(got.find("graph: GraphData's node "), std::string::npos) << got;
  EXPECT_NE(got.find("not the graph they were made on"), std::string::npos) << got;
  const GraphData smaller = sbm(30);
  got = error_of([&] { (void)gather_table(mine, smaller, *grid, 0); });
  EXPECT_TRUE(same_everywhere(got)) << got;
  EXPECT_NE(got.find("not the graph they were made on"), std::string::npos) << got;
  // A larger graph whose first nodes carry the same ids: rows missing.
  GraphData larger = sbm(50);
  larger.node_ids.resize(50);
  for (index_t k = 0; k < 50; ++k) larger.node_ids[static_cast<std::size_t>(k)] = 1000 + 7 * k;
  got = error_of([&] { (void)gather_table(mine, larger, *grid, 0); });
  EXPECT_TRUE(same_everywhere(got)) << got;
  EXPECT_EQ(got, "graph: GraphData has 50 nodes, the predictions 40 rows: not the graph they were made on (or not "
                 "every rank's share)");
  // Predictions that carry no ids (made on shards) need the graph.
  Inference bare = mine;
  bare.predictions.ids.clear();
  got = error_of([&] { (void)gather_table(bare, *grid, 0); });
  EXPECT_TRUE(same_everywhere(got)) << got;
  EXPECT_NE(got.find("Predictions.ids: rank 0's predictions carry no node ids"), std::string::npos) << got;
  EXPECT_EQ(gather_table(bare, g, *grid, -1).ids, t.ids);
  // A trainer built from the graph labels its predictions alike.
  GnnTrainer trainer(g, small_config(), *be, *grid);
  EXPECT_EQ(gather_table(trainer.predict(), *grid, -1).ids, t.ids);
}

}  // namespace
}  // namespace plexus
