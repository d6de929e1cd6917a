// --sparse-comm under MPI (mpi_test_sums, on 1 to 4, 6 and 8 ranks): on every grid shape of
// the rank count, every GNN kind and GCN layer order trains with the row-sparse sums (rows: the
// rows form wherever it moves fewer rows) to the losses and parameters of their dense form, bit
// for bit, and moves no more bytes, on a graph of low degree, where the rows form is taken and
// moves fewer, and as many as the plan predicts from the graph's held rows; on the last grid
// also auto (on one node: the rows form where it costs less counting its copies) as its plan
// says, a graph of degree 6 and the chunked, sharded, rs-ag and recomputing runs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "plan/plan.hpp"  // all_grids, predict_epoch
#include "plexus/backend.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/sparse.hpp"
#include "plexus/convert.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "train/graph_shards.hpp"  // ordered_in_memory
#include "mpi_grid_runs.hpp"
#include "problem_util.hpp"

namespace plexus {
namespace {

using testing::world_size;

// 157 nodes of degree 6 (most rows of a block hold entries), and 211 of degree 1.5 (a block of
// a few ranks' columns leaves most of its rows empty).
const GraphData& graph(bool sparse) {
  static const GraphData dense_graph = testing::uneven_sbm(23);
  static const GraphData sparse_graph = test::sparse_sbm();
  return sparse ? sparse_graph : dense_graph;
}

// 400 nodes of a road-like map in its own order: neighbours' rows close, a block's rows away from
// its diagonal mostly empty, so the rows form saves most of the rows — worth its copies.
const GraphData& road_graph() {
  static const GraphData road = [] {
    RoadOptions o;
    o.nodes = 400;
    o.classes = 4;
    o.features = 9;
    o.seed = 5;
    return generate_road(o);
  }();
  return road;
}

using Case = testing::KindRunCase;

TrainConfig config(const Case& c, SparseComm sums) {
  TrainConfig t = testing::kind_run_config(c, 2);
  t.sparse_comm = sums;
  return t;
}

struct SumsRun {
  std::vector<double> losses;
  ModelState state;
  double bytes = 0;  // every epoch's, every axis's, over the ranks
};

SumsRun train(ProcessGrid& grid, const TrainConfig& cfg, const GraphData& g) {
  auto be = make_cpu_backend(1);
  GnnTrainer t(g, cfg, *be, grid);
  SumsRun r;
  for (int e = 0; e < cfg.epochs; ++e) {
    const EpochMetrics m = t.epoch();
    r.losses.push_back(m.loss);
    for (const double b : m.comm_bytes) r.bytes += b;
  }
  r.state = t.state();
  return r;
}
SumsRun train(ProcessGrid& grid, const TrainConfig& cfg, bool sparse_graph) { return train(grid, cfg, graph(sparse_graph)); }

// The plan of a run on `g` (a plain graph, one order), with the graph's table of blocks and held
// rows, as plexus plan counts it for a small file: its bytes over every epoch of the run, and
// how many of its sums and gathers it planned dense for want of the held rows (the table does not
// cut them: an upper bound).
struct Planned {
  double bytes = 0;
  long long unknown = 0;
  long long rows_form = 0;  // the sums and gathers planned in the rows form, over the ranks
};
Planned planned_bytes(const GraphData& g, const TrainConfig& cfg, GridShape shape) {
  ProblemSize p;
  p.num_nodes = g.num_nodes;
  p.nnz = g.num_edges();
  p.num_features = g.num_features;
  p.num_classes = g.num_classes;
  p.directed = g.directed;
  p.config = cfg;
  if (cfg.balance == Balance::kNone) {
    p.blocks = std::make_shared<const AdjBlockCounts>(
        count_adj_blocks(gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values), HostCsr{}));
  } else {  // ordered in memory as the run orders it: two orders, a transpose's rows the other's
    const PreparedGraph ordered = ordered_in_memory(g, cfg, OrderParts{});
    p.two_orders = ordered.two_orders();
    p.blocks = std::make_shared<const AdjBlockCounts>(ordered.block_counts);
  }
  Planned out;
  for (int e = 0; e < cfg.epochs; ++e)
    for (const RankCost& rc : predict_ranks(p, shape, e == 0)) {
      for (int a = 0; a < 3; ++a) out.bytes += rc.bytes[static_cast<std::size_t>(a)];
      out.unknown += rc.sums.unknown;
      if (e == 0) out.rows_form += rc.sums.rows;
    }
  return out;
}

// Measured against planned: equal where the plan knew every sum's and gather's rows, else no more.
void expect_planned(double measured, const Planned& planned, const std::string& what) {
  if (planned.unknown == 0) {
    EXPECT_NEAR(measured, planned.bytes, 1e-9 * planned.bytes) << what << ": measured, planned";
  } else {
    EXPECT_LE(measured, planned.bytes * (1 + 1e-12)) << what << ": measured, planned (an upper bound)";
  }
}

// Auto against dense: the same bits, no more bytes; whether it moved fewer.
bool expect_same_and_no_more(const SumsRun& got, const SumsRun& want, const std::string& what) {
  testing::expect_same_training(got.losses, got.state, want.losses, want.state, what);
  EXPECT_LE(got.bytes, want.bytes) << what;
  return got.bytes < want.bytes;
}

TEST(SparseComm, EveryKindOnEveryGridSumsAsTheDenseFormBitForBit) {
  const std::vector<Case> cases = testing::every_kind_case();
  const int p = world_size();
  int fewer = 0, exact = 0, auto_fewer = 0, auto_more_than_rows = 0;
  for (const Case& c : cases) {
    // Every grid on the sparse graph; the graph of degree 6 (most rows held: the dense form
    // chosen for most sums) on the last grid.
    // The plan, from the graph's held rows, predicts the bytes of the form each sum takes.
    SumsRun rows, dense_run;  // the last grid's
    for (const GridShape& shape : all_grids(p)) {
      auto grid = ProcessGrid::from_mpi(shape);
      const SumsRun on = train(*grid, config(c, SparseComm::Rows), true);
      SumsRun dense = train(*grid, config(c, SparseComm::Dense), true);
      fewer += expect_same_and_no_more(on, dense, c.name + " on " + shape.str());
      rows = on;
      dense_run = std::move(dense);
      const Planned planned = planned_bytes(graph(true), config(c, SparseComm::Rows), shape);
      expect_planned(on.bytes, planned, c.name + " on " + shape.str());
      exact += planned.unknown == 0 && p > 1;
    }
    // Two node orders (the double permutation): a block's transpose planned from the other
    // order's held rows.
    if (c.name == "gcn aggregate-first" || c.name == "gat") {
      for (const GridShape& shape : all_grids(p)) {
        auto grid = ProcessGrid::from_mpi(shape);
        TrainConfig permuted = config(c, SparseComm::Rows);
        permuted.balance = Balance::kPermute;
        expect_planned(train(*grid, permuted, true).bytes, planned_bytes(graph(true), permuted, shape),
                       c.name + " permuted on " + shape.str());
      }
    }
    // The variants on the last (most mixed) grid, on the sparse graph. Auto: these ranks share
    // a node, and so does its plan's (ProblemSize::one_node): the forms that pay counting their
    // copies, on the SBM few (more bytes than rows'), on the road map most (fewer than dense's).
    const GridShape last = all_grids(p).back();
    auto grid = ProcessGrid::from_mpi(last);
    ASSERT_TRUE(grid->one_node());
    const SumsRun automatic = train(*grid, config(c, SparseComm::Auto), true);
    expect_same_and_no_more(automatic, dense_run, c.name + " auto");
    expect_planned(automatic.bytes, planned_bytes(graph(true), config(c, SparseComm::Auto), last), c.name + " auto");
    EXPECT_GE(automatic.bytes, rows.bytes) << c.name << ": auto took a rows form rows did not";
    auto_more_than_rows += automatic.bytes > rows.bytes;
    const SumsRun road = train(*grid, config(c, SparseComm::Auto), road_graph());
    auto_fewer += expect_same_and_no_more(road, train(*grid, config(c, SparseComm::Dense), road_graph()), c.name + " road, auto");
    expect_planned(road.bytes, planned_bytes(road_graph(), config(c, SparseComm::Auto), last), c.name + " road, auto");
    expect_same_and_no_more(train(*grid, config(c, SparseComm::Rows), false),
                            train(*grid, config(c, SparseComm::Dense), false), c.name + " (degree 6)");
    TrainConfig on = config(c, SparseComm::Rows), dense = config(c, SparseComm::Dense);
    if (c.model.kind() != "gat") {  // (GAT holds its blocks whole, unchunked)
      on.shard_adj = dense.shard_adj = true;
      on.agg_chunks = dense.agg_chunks = 3;
      expect_same_and_no_more(train(*grid, on, true), train(*grid, dense, true), c.name + " sharded, 3 chunks");
    }
    on = config(c, SparseComm::Rows);
    dense = config(c, SparseComm::Dense);
    on.comm_variant = dense.comm_variant = CommVariant::RsAgReuse;
    on.recompute = dense.recompute = true;
    expect_same_and_no_more(train(*grid, on, true), train(*grid, dense, true), c.name + " rs-ag-reuse, recompute");
    // The rs-ag variant's last layer transforming first reduce-scatters its product over o: in
    // the rows form too (one more rows-form collective than the default variant plans, where o
    // splits), as planned.
    if (c.name == "gcn transform-first") {
      int scattered_rows = 0;
      for (const GridShape& shape : all_grids(p)) {
        auto g = ProcessGrid::from_mpi(shape);
        TrainConfig rs_ag = config(c, SparseComm::Rows);
        rs_ag.comm_variant = CommVariant::RsAgReuse;
        const Planned plan_rs_ag = planned_bytes(graph(true), rs_ag, shape);
        expect_planned(train(*g, rs_ag, true).bytes, plan_rs_ag, c.name + " rs-ag on " + shape.str());
        const Planned plan_default = planned_bytes(graph(true), config(c, SparseComm::Rows), shape);
        EXPECT_GE(plan_rs_ag.rows_form, plan_default.rows_form) << shape.str();
        scattered_rows += plan_rs_ag.rows_form > plan_default.rows_form;
      }
      if (p > 1) {
        EXPECT_GT(scattered_rows, 0) << "the rs-ag variant's reduce-scatter never took the rows form";
      }
    }
  }
  // Some grid of several ranks splits the sums' axes: there the sparse graph's blocks leave rows
  // empty, and the rows form moves fewer bytes.
  if (p > 1) {
    EXPECT_GT(fewer, 0);
    EXPECT_GT(exact, 0) << "no grid's plan was exact";
  }
  // Where the rows form saves much, auto takes it too; where little, it keeps the dense form (on
  // 3 to 6 ranks some of the SBM's sums: on 8, a block of an eighth of its columns holds so few
  // rows that every rows form pays).
  if (p > 2) {
    EXPECT_GT(auto_fewer, 0) << "auto never took a rows form";
  }
  if (p > 2 && p < 8) {
    EXPECT_GT(auto_more_than_rows, 0) << "auto took every rows form rows did";
  }
}

// Layer 0 gathers its input over d (Z), which carries nothing else of a one-layer model on
// 1x1xP but its weights' gradient sum: the kinds that read their input only through their block's
// pattern (GCN aggregating first, SAGE with S, GIN with a trained ε) gather only the rows its
// columns hold, and move fewer bytes over Z than dense; the losses stay the dense ones.
TEST(SparseComm, LayerZeroOfEveryKindReadingThroughItsBlockGathersHeldRowsOnly) {
  const int p = world_size();
  if (p == 1) GTEST_SKIP() << "no gather on one rank";
  auto grid = ProcessGrid::from_mpi(GridShape{1, 1, p});
  for (const Case& c : testing::every_kind_case()) {
    if (c.name != "gcn aggregate-first" && c.model.kind() != "sage" && c.model.kind() != "gin") continue;
    const auto z_bytes = [&](SparseComm sums, std::vector<double>& losses) {
      TrainConfig cfg = config(c, sums);
      cfg.layers = 1;
      auto be = make_cpu_backend(1);
      GnnTrainer t(graph(true), cfg, *be, *grid);
      double z = 0;
      for (int e = 0; e < cfg.epochs; ++e) {
        const EpochMetrics m = t.epoch();
        losses.push_back(m.loss);
        z += m.comm_bytes[static_cast<std::size_t>(Axis::Z)];
      }
      return z;
    };
    std::vector<double> on, dense;
    const double z_on = z_bytes(SparseComm::Rows, on), z_dense = z_bytes(SparseComm::Dense, dense);
    EXPECT_EQ(on, dense) << c.name;
    EXPECT_LT(z_on, z_dense) << c.name << ": layer 0's input gathered whole";
  }
}

// Dense against off (MPI's all-reduce): the same model to float rounding (MPI may sum in
// another order).
TEST(SparseComm, TheDenseFormTrainsAsMpisAllReduce) {
  const int p = world_size();
  auto grid = ProcessGrid::from_mpi(all_grids(p).back());
  const Case c{"gcn", GnnSpec("gcn")};
  const SumsRun a = train(*grid, config(c, SparseComm::Dense), false), b = train(*grid, config(c, SparseComm::Off), false);
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (std::size_t e = 0; e < a.losses.size(); ++e) EXPECT_NEAR(a.losses[e], b.losses[e], 1e-5) << "epoch " << e + 1;
}

}  // namespace
}  // namespace plexus
