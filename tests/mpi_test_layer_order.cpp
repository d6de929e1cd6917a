// GCN layer orders under MPI (mpi_test_trainer, on 1, 2, 3, 4 and 6 ranks): aggregate first
// (Â·H)·W, transform first Â·(H·W), and Auto (here transform, aggregate, transform first: the
// widths 11 -> 7 -> 7 -> 5) compute the same model. On every grid each order matches the
// one-rank aggregate-first run epoch by epoch, with dropout on, on an uneven graph (157 nodes),
// with one node order and with the double permutation (two orders); sharded Â, chunked
// aggregation and the comm variants on the last (most mixed) grid. A state saved with one order
// (ModelState, and a model file) loads into a model of the other and continues the run.
// Every rank runs every collective in the same order: checks are EXPECTs, never early returns.
#include <gtest/gtest.h>
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plan/plan.hpp"  // all_grids
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "mpi_grid_runs.hpp"

namespace plexus {
namespace {

using testing::expect_same;
using testing::world_size;
using OrderRun = testing::GridRun;

const GraphData& uneven_graph() {
  static const GraphData g = testing::uneven_sbm(13);
  return g;
}

constexpr LayerOrder kOrders[] = {LayerOrder::AggregateFirst, LayerOrder::TransformFirst, LayerOrder::Auto};

TrainConfig config(LayerOrder order, Balance balance = Balance::kNone, bool shard_adj = false, int chunks = 1,
                   CommVariant variant = CommVariant::Baseline) {
  TrainConfig c;
  c.layers = 3;
  c.hidden = 7;
  c.epochs = 12;
  c.dropout = 0.3f;
  c.lr = 0.03f;
  c.seed = 9;
  c.layer_order = order;
  c.balance = balance;
  c.shard_adj = shard_adj;
  c.agg_chunks = chunks;
  c.comm_variant = variant;
  return c;
}

OrderRun train_on(ProcessGrid& grid, const TrainConfig& cfg) { return testing::train_run(grid, uneven_graph(), cfg); }

std::vector<bool> expected_orders(LayerOrder order) {
  switch (order) {
    case LayerOrder::AggregateFirst: return {false, false, false};
    case LayerOrder::TransformFirst: return {true, true, true};
    case LayerOrder::Auto: return {true, false, true};  // 11 -> 7 narrows, 7 -> 7 ties, 7 -> 5 narrows
  }
  return {};
}

TEST(LayerOrder, EveryOrderOnEveryGridMatchesOneRankAggregateFirst) {
  const int p = world_size();
  for (const Balance balance : {Balance::kNone, Balance::kPermute}) {
    const std::string b = balance == Balance::kNone ? "" : " permute";
    auto single = ProcessGrid::single();
    const OrderRun want = train_on(*single, config(LayerOrder::AggregateFirst, balance));
    EXPECT_LT(want.losses.back(), 0.9 * want.losses.front()) << "the reference run learns" << b;
    for (const LayerOrder order : kOrders) {
      const std::string name = std::string(layer_order_name(order)) + b;
      const OrderRun one = train_on(*single, config(order, balance));
      EXPECT_EQ(one.transform_first, expected_orders(order)) << name;
      expect_same(one, want, name + " on 1 rank");
      for (const GridShape& shape : all_grids(p)) {
        auto grid = ProcessGrid::from_mpi(shape);
        expect_same(train_on(*grid, config(order, balance)), want, name + " on " + shape.str());
      }
      // Sharded Â and chunked aggregation, and the comm variants, on the last grid.
      auto grid = ProcessGrid::from_mpi(all_grids(p).back());
      const std::string last = " on " + all_grids(p).back().str();
      expect_same(train_on(*grid, config(order, balance, true, 3)), want, name + " sharded, 3 chunks" + last);
      for (const CommVariant v : {CommVariant::RsAg, CommVariant::RsAgReuse})
        expect_same(train_on(*grid, config(order, balance, true, 3, v)), want,
                    name + " sharded, 3 chunks, " + comm_variant_name(v) + last);
    }
  }
}

// A state taken from a model of one order, on one grid, continues the run in a model of the
// other order on another grid as the uninterrupted run does: W and b are the same whole tensors
// whichever way round a layer computes.
TEST(LayerOrder, StateMovesBetweenOrders) {
  const int p = world_size();
  for (const LayerOrder from : kOrders)
    for (const LayerOrder to : kOrders) {
      if (from == to) continue;
      const std::string what = std::string(layer_order_name(from)) + " -> " + layer_order_name(to);
      TrainConfig cfg = config(from, Balance::kPermute);
      auto single = ProcessGrid::single();
      const OrderRun whole = train_on(*single, cfg);
      auto be = make_cpu_backend(1);
      auto a = ProcessGrid::from_mpi(all_grids(p).back());
      GnnTrainer first(uneven_graph(), cfg, *be, *a);
      for (int e = 0; e < 6; ++e) first.epoch();
      const ModelState half = first.state();
      auto b = ProcessGrid::from_mpi(all_grids(p).front());
      GnnTrainer second(uneven_graph(), config(to, Balance::kPermute), *be, *b);
      EXPECT_EQ(second.transform_first(), expected_orders(to)) << what;
      second.set_state(half);
      // The whole tensors are those set, whatever the layout that holds them.
      const ModelState back = second.state();
      ASSERT_EQ(back.parameters.size(), half.parameters.size()) << what;
      for (std::size_t k = 0; k < back.parameters.size(); ++k)
        EXPECT_EQ(back.parameters[k].value, half.parameters[k].value) << what << ": " << half.parameters[k].name;
      for (int e = 6; e < cfg.epochs; ++e)
        EXPECT_NEAR(second.epoch().loss, whole.losses[static_cast<std::size_t>(e)],
                    1e-5 * whole.losses[static_cast<std::size_t>(e)])
            << what << ": epoch " << e + 1;
    }
}

// The same through a model file (GnnTrainer::save, load): saved transforming first, loaded
// aggregating first (and back), bit for bit the same state.
TEST(LayerOrder, ModelFileLoadsIntoTheOtherOrder) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int pid = static_cast<int>(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("plexus-layer-order-" + std::to_string(pid) + ".h5")).string();
  const std::vector<GridShape> shapes = all_grids(world_size());
  auto be = make_cpu_backend(1);
  for (const LayerOrder from : {LayerOrder::TransformFirst, LayerOrder::AggregateFirst}) {
    const LayerOrder to = from == LayerOrder::TransformFirst ? LayerOrder::AggregateFirst : LayerOrder::TransformFirst;
    const std::string what = std::string(layer_order_name(from)) + " -> " + layer_order_name(to);
    auto a = ProcessGrid::from_mpi(shapes.back());
    GnnTrainer first(uneven_graph(), config(from), *be, *a);
    for (int e = 0; e < 3; ++e) first.epoch();
    const ModelState saved = first.state();
    first.save(path);
    auto b = ProcessGrid::from_mpi(shapes.front());
    GnnTrainer second(uneven_graph(), config(to), *be, *b);
    second.load(path);
    const ModelState loaded = second.state();
    EXPECT_EQ(second.epochs_done(), 3) << what;
    ASSERT_EQ(loaded.parameters.size(), saved.parameters.size()) << what;
    for (std::size_t k = 0; k < saved.parameters.size(); ++k) {
      EXPECT_EQ(loaded.parameters[k].value, saved.parameters[k].value) << what << ": " << saved.parameters[k].name;
      EXPECT_EQ(loaded.parameters[k].adam_m, saved.parameters[k].adam_m) << what << ": " << saved.parameters[k].name;
      EXPECT_EQ(loaded.parameters[k].adam_v, saved.parameters[k].adam_v) << what << ": " << saved.parameters[k].name;
    }
    // Both continue alike.
    const double want = first.epoch().loss, got = second.epoch().loss;
    EXPECT_NEAR(got, want, 1e-5 * want) << what;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0) std::filesystem::remove(path);
}

// SAGE and GIN layers aggregate first: Auto leaves them so, transform-first is refused.
TEST(LayerOrder, SageAndGinAggregateFirst) {
  auto grid = ProcessGrid::from_mpi(all_grids(world_size()).back());
  auto be = make_cpu_backend(1);
  for (const std::string kind : {"sage", "gin"}) {
    TrainConfig cfg = config(LayerOrder::Auto);
    cfg.model = GnnSpec(kind);
    GnnTrainer t(uneven_graph(), cfg, *be, *grid);
    EXPECT_EQ(t.transform_first(), expected_orders(LayerOrder::AggregateFirst)) << kind;
    cfg.layer_order = LayerOrder::TransformFirst;
    EXPECT_THROW(validate(cfg), InputError) << kind;
  }
}

}  // namespace
}  // namespace plexus
