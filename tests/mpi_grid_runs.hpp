#pragma once
// What the grid-against-one-rank MPI tests share (mpi_test_gnn_models, mpi_test_layer_order):
// a small uneven graph, a run of a GcnTrainer for cfg.epochs epochs (losses, transform-first
// layers, final state), and the comparison of two runs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/trainer.hpp"

namespace plexus::testing {

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// 157 nodes, 11 features, 5 classes: every size uneven over every grid axis.
inline GraphData uneven_sbm(std::uint64_t seed) {
  SbmOptions o;
  o.nodes = 157;
  o.classes = 5;
  o.features = 11;
  o.avg_degree = 6;
  o.seed = seed;
  return generate_sbm(o);
}

struct GridRun {
  std::vector<double> losses;
  std::vector<bool> transform_first;
  ModelState state;
};

inline GridRun train_run(ProcessGrid& grid, const GraphData& graph, const TrainConfig& cfg) {
  auto be = make_cpu_backend(1);
  GcnTrainer t(graph, cfg, *be, grid);
  GridRun r;
  r.transform_first = t.transform_first();
  for (int e = 0; e < cfg.epochs; ++e) r.losses.push_back(t.epoch().loss);
  r.state = t.state();
  return r;
}

// Losses within 1e-5 relative per epoch, every parameter within 1e-4 of the largest.
inline void expect_same(const GridRun& got, const GridRun& want, const std::string& what) {
  ASSERT_EQ(got.losses.size(), want.losses.size()) << what;
  for (std::size_t e = 0; e < got.losses.size(); ++e)
    EXPECT_NEAR(got.losses[e], want.losses[e], 1e-5 * std::abs(want.losses[e])) << what << ": epoch " << e + 1;
  ASSERT_EQ(got.state.parameters.size(), want.state.parameters.size()) << what;
  for (std::size_t k = 0; k < got.state.parameters.size(); ++k) {
    const ParameterState& g = got.state.parameters[k];
    const ParameterState& w = want.state.parameters[k];
    EXPECT_EQ(g.name, w.name) << what;
    ASSERT_EQ(g.value.size(), w.value.size()) << what << ": " << w.name;
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < g.value.size(); ++i) {
      err = std::max(err, std::abs(static_cast<double>(g.value[i]) - w.value[i]));
      ref = std::max(ref, std::abs(static_cast<double>(w.value[i])));
    }
    EXPECT_LE(err, 1e-4 * std::max(ref, 1.0)) << what << ": " << w.name;
  }
}

}  // namespace plexus::testing
