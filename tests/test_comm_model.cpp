// The analytic epoch model (include/plexus/comm_model.hpp). The end-to-end check against
// measured bytes under MPI is tests/cli_mpi_comm_model.sh.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <string>
#include <vector>

#include "plexus/comm_model.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"

using namespace plexus;

namespace {

ProblemSize problem(index_t n, std::vector<index_t> dims, bool dropout = true) {
  ProblemSize p;
  p.num_nodes = n;
  p.nnz = 10 * n;
  p.dims = std::move(dims);
  p.dropout = dropout;
  return p;
}

void expect_bytes_eq(const AxisBytes& a, const AxisBytes& b, const std::string& what) {
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(a.bytes[k], b.bytes[k], 1e-9 * std::max(1.0, std::abs(b.bytes[k]))) << what << " axis " << k;
}

}  // namespace

TEST(CommModel, OneRankCommunicatesNothing) {
  for (bool first : {true, false}) {
    const AxisBytes b = predict_epoch(problem(2708, {1433, 16, 7}), GridShape{1, 1, 1}, first);
    EXPECT_EQ(b.total(), 0.0);
  }
}

TEST(CommModel, OneRankAxesCarryNothing) {
  const ProblemSize p = problem(1000, {50, 16, 16, 7});
  for (GridShape g : all_grids(12))
    for (bool first : {true, false}) {
      const AxisBytes b = predict_epoch(p, g, first);
      for (Axis a : {Axis::X, Axis::Y, Axis::Z})
        if (g.dim(a) == 1) EXPECT_EQ(b[a], 0.0) << g.str();
        else EXPECT_GT(b[a], 0.0) << g.str();
    }
}

// One layer (F = C = 2), N = 4 on 2x1x1: only X (the o axis) communicates. Per rank:
//   train AGG all-reduce 4x2 floats:            2*(1/2)*32 = 32
//   masked loss: 2 row vectors (4 floats) 16+16, one double 8    = 40, three of them = 120
//   argmax value and column (4 floats each):    16 + 16 = 32
//   eval AGG (first epoch only, then cached):   32
// => steady 184, first 216 per rank; two ranks.
TEST(CommModel, TinyCaseCountedByHand) {
  const ProblemSize p = problem(4, {2, 2});
  const AxisBytes steady = predict_epoch(p, GridShape{2, 1, 1}, false);
  const AxisBytes first = predict_epoch(p, GridShape{2, 1, 1}, true);
  EXPECT_DOUBLE_EQ(steady.bytes[0], 2 * 184.0);
  EXPECT_DOUBLE_EQ(first.bytes[0], 2 * 216.0);
  EXPECT_EQ(steady.bytes[1] + steady.bytes[2], 0.0);
  // Without dropout, the train pass fills the cache: the eval pass never aggregates again.
  const ProblemSize nd = problem(4, {2, 2}, false);
  EXPECT_DOUBLE_EQ(predict_epoch(nd, GridShape{2, 1, 1}, false).bytes[0], 2 * (184.0 - 32.0));
  EXPECT_DOUBLE_EQ(predict_epoch(nd, GridShape{2, 1, 1}, true).bytes[0], 2 * 184.0);
}

// Sizes that divide by every grid: the closed form is exact.
TEST(CommModel, ClosedFormMatchesExactWhenDivisible) {
  for (int layers : {1, 2, 3, 4}) {
    std::vector<index_t> dims{240};
    for (int l = 0; l + 1 < layers; ++l) dims.push_back(24);
    dims.push_back(48);
    const ProblemSize p = problem(960, dims);
    for (int P : {2, 4, 6, 8})
      for (GridShape g : all_grids(P))
        for (bool first : {true, false})
          expect_bytes_eq(predict_epoch(p, g, first), predict_epoch_closed_form(p, g, first),
                          g.str() + " L=" + std::to_string(layers));
  }
}

// The first epoch differs from the steady ones only by layer 0's clean aggregation:
// one all-reduce over X of [N/G_z x F/G_y], 8 (G_x - 1) N F bytes over all ranks.
TEST(CommModel, FirstEpochAddsLayerZeroAggregation) {
  const ProblemSize p = problem(2708, {1433, 16, 7});
  for (GridShape g : all_grids(6)) {
    const AxisBytes f = predict_epoch(p, g, true), s = predict_epoch(p, g, false);
    EXPECT_NEAR(f.bytes[0] - s.bytes[0], 8.0 * (g.x - 1) * 2708 * 1433, 1e-6) << g.str();
    EXPECT_EQ(f.bytes[1], s.bytes[1]);
    EXPECT_EQ(f.bytes[2], s.bytes[2]);
  }
}

// Summed over all ranks every term factorizes over the block coordinates (blocks partition
// each dimension), so the closed form is exact even when sizes do not divide by the grid;
// only the per-rank shares differ (by at most one row or column).
TEST(CommModel, ClosedFormExactForUnevenSizes) {
  for (int layers : {2, 3}) {
    std::vector<index_t> dims{1433};
    for (int l = 0; l + 1 < layers; ++l) dims.push_back(16);
    dims.push_back(7);
    ProblemSize p = problem(2708, dims);
    for (bool shard : {false, true}) {
      p.shard_adj = shard;
      for (int P : {2, 3, 5, 6, 7, 8})
        for (GridShape g : all_grids(P))
          for (bool first : {true, false})
            expect_bytes_eq(predict_epoch(p, g, first), predict_epoch_closed_form(p, g, first),
                            g.str() + (shard ? " sharded" : ""));
    }
  }
}

// Sharding Â adds, per axis, 8 (G_i - 1) nnz(Â) bytes for every use of a block whose layer
// has that axis as i, and cuts the memory of Â's blocks by G_i, for the price of one gathered
// block (the workspace) and the row pointers of the whole blocks.
TEST(CommModel, ShardedAdjacencyTradesBytesForMemory) {
  ProblemSize p = problem(960, {24, 24, 24, 24});  // 3 layers: every axis is some layer's i
  p.nnz = 200 * 960;                                // Â dominates the memory
  const double nnz_hat = static_cast<double>(p.nnz + p.num_nodes);
  for (GridShape g : all_grids(8)) {
    ProblemSize s = p;
    s.shard_adj = true;
    const AxisBytes plain = predict_epoch(p, g, false), sharded = predict_epoch(s, g, false);
    // Steady epoch with dropout: layer 0 (i = Y) aggregates once and has no backward SpMM;
    // layers 1 (i = X) and 2 (i = Z) aggregate twice and run one backward SpMM.
    const double want[3] = {3 * 8.0 * (g.x - 1) * nnz_hat, 1 * 8.0 * (g.y - 1) * nnz_hat,
                            3 * 8.0 * (g.z - 1) * nnz_hat};
    for (int a = 0; a < 3; ++a)
      EXPECT_NEAR(sharded.bytes[a] - plain.bytes[a], want[a], 1e-6 * want[a] + 1e-6) << g.str() << " axis " << a;
    double mem_plain = 0, mem_sharded = 0;
    for (const RankCost& rc : predict_ranks(p, g, false)) mem_plain = std::max(mem_plain, rc.memory_bytes);
    for (const RankCost& rc : predict_ranks(s, g, false)) mem_sharded = std::max(mem_sharded, rc.memory_bytes);
    EXPECT_LT(mem_sharded, mem_plain) << g.str();
  }
}

// Symmetry: on a fully divisible problem every rank receives the same bytes and holds the
// same memory; on an uneven one (Cora rows over 3 ranks of Z: 903, 903, 902) shares differ.
TEST(CommModel, PerRankSymmetry) {
  const ProblemSize even = problem(960, {24, 24, 24, 24});
  for (GridShape g : all_grids(8)) {
    const std::vector<RankCost> ranks = predict_ranks(even, g, false);
    double lo = ranks.front().memory_bytes, hi = lo;
    for (const RankCost& rc : ranks) {
      EXPECT_EQ(rc.bytes, ranks.front().bytes) << g.str();
      lo = std::min(lo, rc.memory_bytes);
      hi = std::max(hi, rc.memory_bytes);
    }
    // Memory differs only where a rank's Â blocks of two rotations coincide (held once).
    EXPECT_LE(hi, 1.5 * lo) << g.str();
  }
  const std::vector<RankCost> uneven = predict_ranks(problem(2708, {1433, 16, 7}), GridShape{1, 1, 3}, false);
  EXPECT_NE(uneven[0].bytes, uneven[2].bytes);
}

TEST(CommModel, AllGridsEnumeratesOrderedFactorizations) {
  EXPECT_EQ(all_grids(1).size(), 1u);
  EXPECT_EQ(all_grids(8).size(), 10u);
  EXPECT_EQ(all_grids(12).size(), 18u);
  for (GridShape g : all_grids(12)) EXPECT_EQ(g.size(), 12);
}

TEST(CommModel, PlanRanksByPredictedTime) {
  const ProblemSize p = problem(2708, {1433, 16, 7});
  MachineModel m;
  m.ranks_per_node = 4;
  const std::vector<GridPlan> plans = plan_all(p, 8, m);
  ASSERT_EQ(plans.size(), 10u);
  for (std::size_t k = 1; k < plans.size(); ++k) EXPECT_LE(plans[k - 1].total_seconds, plans[k].total_seconds);
  for (const GridPlan& g : plans) {
    EXPECT_GT(g.memory_bytes, 0);
    EXPECT_GT(g.compute_seconds, 0);
    // Y is contiguous: with 4 ranks per node a Y axis of <= 4 ranks stays on the node.
    if (g.grid.y <= 4) {
      EXPECT_TRUE(g.intra_node[1]) << g.grid.str();
    }
    if (g.grid.z > 1) {
      EXPECT_FALSE(g.intra_node[2]) << g.grid.str();
    }
  }
  // Slower links between nodes can only make a plan slower.
  MachineModel slow = m;
  slow.bw_inter_gbs = 1;
  for (GridShape g : all_grids(8)) EXPECT_GE(plan_grid(p, g, slow).total_seconds, plan_grid(p, g, m).total_seconds);
}

TEST(CommModel, GraphInfoOfBundledCora) {
  const GraphInfo info = read_graph_info_h5(std::string(PLEXUS_DATA_DIR) + "/cora.h5");
  EXPECT_EQ(info.num_nodes, 2708);
  EXPECT_EQ(info.num_features, 1433);
  EXPECT_EQ(info.num_classes, 7);
  EXPECT_GT(info.nnz, 0);
  EXPECT_THROW(read_graph_info_h5("/nonexistent/file.h5"), InputError);
  EXPECT_THROW(read_graph_info_h5(std::string(PLEXUS_TEST_DIR) + "/test_comm_model.cpp"), InputError);
}
