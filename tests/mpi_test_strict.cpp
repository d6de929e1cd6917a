// The strict checks across ranks (plexus/graph_checks.hpp) on 1 to 3 ranks: the same graph on
// every rank passes; one rank's other graph ends every rank with the same InputError (never a
// rank left waiting); the checks of a file's shards; and a predictions file whose /node_id
// holds the ids a library caller passes from memory (PredictionsFileOptions::node_ids).
//
// Every rank runs every check in the same order: checks are EXPECTs.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/graph_checks.hpp"
#include "plexus/io.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "mpi_job.hpp"

namespace plexus {
namespace {

using mpi_job::error_of;
using mpi_job::rank;
using mpi_job::same_everywhere;
using mpi_job::size;

GraphData sbm() {
  SbmOptions o;
  o.nodes = 40;
  o.classes = 3;
  o.features = 5;
  o.seed = 7;
  return generate_sbm(o);
}

std::unique_ptr<ProcessGrid> row_grid() { return ProcessGrid::create(GridShape{size(), 1, 1}); }

std::string shared_path(const std::string& name) { return mpi_job::shared_path("plexus-strict", name); }

TEST(RequireSameGraph, TheSameGraphOnEveryRankPasses) {
  auto grid = row_grid();
  EXPECT_EQ(error_of([&] { require_same_graph(sbm(), *grid, "graph"); }), "");
}

TEST(RequireSameGraph, OneRankWithAnotherGraphEndsEveryRankAlike) {
  auto grid = row_grid();
  for (int odd = 0; odd < size(); ++odd) {
    GraphData g = sbm();
    if (rank() == odd) g.features[3] += 1.0f;  // one value on one rank
    const std::string got = error_of([&] { require_same_graph(g, *grid, "graph"); });
    if (size() == 1) {
      EXPECT_EQ(got, "");
      continue;
    }
    EXPECT_TRUE(same_everywhere(got)) << got;
    EXPECT_EQ(got, "graph: GraphData: ranks 0 and " + std::to_string(odd == 0 ? 1 : odd) +
                       " hold different graphs (every rank of the grid must pass the same graph)");
  }
}

TEST(RequireSameGraph, TheStrictTrainerRefusesDifferentGraphsOnEveryRank) {
  auto grid = row_grid();
  auto be = make_cpu_backend(1);
  TrainConfig c;
  c.hidden = 4;
  c.epochs = 1;
  c.strict = true;
  GraphData g = sbm();
  EXPECT_EQ(error_of([&] { GnnTrainer t(g, c, *be, *grid); }), "");
  if (rank() == size() - 1) g.labels[0] = g.labels[0] == 0 ? 1 : 0;
  std::string got = error_of([&] { GnnTrainer t(g, c, *be, *grid); });
  EXPECT_TRUE(same_everywhere(got)) << got;
  if (size() > 1) {
    EXPECT_NE(got.find("hold different graphs"), std::string::npos) << got;
  } else {
    EXPECT_EQ(got, "");
  }
  // A graph invalid on one rank only: every rank refuses it alike, none waits in a collective.
  g = sbm();
  if (rank() == size() - 1) g.features[0] = std::nanf("");
  got = error_of([&] { GnnTrainer t(g, c, *be, *grid); });
  EXPECT_TRUE(same_everywhere(got)) << got;
  EXPECT_NE(got.find(size() > 1 ? "hold different graphs" : "GraphData.features: NaN at [0, 0]"), std::string::npos)
      << got;
}

// The checks of a file's shards: every rank holds part of the masks and of Â.
TEST(ValidateStrictShards, MasksAndSymmetryOverTheRanks) {
  auto grid = row_grid();
  const std::string path = shared_path("g.h5");
  const auto shards_of = [&](const GraphData& g) {
    if (rank() == 0) write_graph_h5(g, path);
    MPI_Barrier(MPI_COMM_WORLD);
    return load_shards_h5(path, *grid, 2, 4);
  };
  GraphData g = sbm();
  EXPECT_EQ(error_of([&] { validate_strict(shards_of(g), false, *grid, path); }), "");
  // The last node in train and test: whichever rank holds its label row, all say it.
  const index_t last = g.num_nodes - 1;
  g.train_mask[last] = 1;
  g.val_mask[last] = 0;
  g.test_mask[last] = 1;
  std::string got = error_of([&] { validate_strict(shards_of(g), false, *grid, path); });
  EXPECT_TRUE(same_everywhere(got)) << got;
  EXPECT_EQ(got, path + ": /masks/test: node " + std::to_string(last) + " is also in /masks/train");
  // Node 0's first edge dropped: stored one way only.
  g = sbm();
  const index_t dropped = g.indptr[1] - 1;
  g.indices.erase(g.indices.begin() + dropped);
  if (!g.values.empty()) g.values.erase(g.values.begin() + dropped);
  for (std::size_t k = 1; k < g.indptr.size(); ++k) --g.indptr[k];
  ASSERT_GT(g.indptr[1], -1);
  got = error_of([&] { validate_strict(shards_of(g), false, *grid, path); });
  EXPECT_TRUE(same_everywhere(got)) << got;
  EXPECT_EQ(got, path + ": /graph/indices: undirected graph, but an edge is stored one way only");
  EXPECT_EQ(error_of([&] { validate_strict(shards_of(g), true, *grid, path); }), "");  // directed: may
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() == 0) std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

std::vector<std::int64_t> read_node_id_column(const std::string& path) {
  std::vector<std::int64_t> ids;
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return ids;
  const hid_t d = H5Dopen2(f, "/node_id", H5P_DEFAULT);
  const hid_t s = H5Dget_space(d);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(s, &n, nullptr);
  ids.resize(n);
  H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids.data());
  H5Sclose(s);
  H5Dclose(d);
  H5Fclose(f);
  return ids;
}

TEST(PredictionsFile, NodeIdsFromMemory) {
  auto grid = row_grid();
  auto be = make_cpu_backend(1);
  GraphData g = sbm();
  for (index_t k = 0; k < g.num_nodes; ++k) g.node_ids.push_back(900000000000 + 7 * (g.num_nodes - k));
  TrainConfig c;
  c.hidden = 4;
  c.epochs = 1;
  GnnTrainer trainer(g, c, *be, *grid);
  const Predictions p = trainer.predict();
  const std::string path = shared_path("p.h5");
  PredictionsFileOptions o;
  o.node_ids = g.node_ids;
  EXPECT_EQ(error_of([&] { write_predictions_h5(p, g.num_nodes, 1, *grid, path, o); }), "");
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(read_node_id_column(path), g.node_ids);
  // The old call, without ids: 0..N-1.
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(error_of([&] { write_predictions_h5(p, g.num_nodes, 1, *grid, path); }), "");
  MPI_Barrier(MPI_COMM_WORLD);
  const std::vector<std::int64_t> plain = read_node_id_column(path);
  ASSERT_EQ(plain.size(), static_cast<std::size_t>(g.num_nodes));
  for (index_t k = 0; k < g.num_nodes; ++k) EXPECT_EQ(plain[k], k);
  // A wrong list on one rank: every rank refuses, none waits.
  PredictionsFileOptions bad;
  bad.node_ids = g.node_ids;
  if (rank() == size() - 1) bad.node_ids[1] = bad.node_ids[0];
  std::string got = error_of([&] { write_predictions_h5(p, g.num_nodes, 1, *grid, path, bad); });
  EXPECT_NE(got.find("PredictionsFileOptions.node_ids: "), std::string::npos) << got;
  if (rank() == size() - 1) {
    EXPECT_NE(got.find("names two nodes"), std::string::npos) << got;
  }
  bad.node_ids = g.node_ids;
  bad.node_ids.pop_back();
  got = error_of([&] { write_predictions_h5(p, g.num_nodes, 1, *grid, path, bad); });
  EXPECT_EQ(got, "PredictionsFileOptions.node_ids: 39 ids for 40 nodes");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() == 0) std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace
}  // namespace plexus
