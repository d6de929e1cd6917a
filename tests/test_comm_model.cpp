// The epoch model (src/plan/plan.hpp: dry runs of the real trainer, src/plan/). The end-to-end check against
// measured bytes under MPI is tests/cli_mpi_comm_model.sh.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <string>
#include <vector>

#include "gcn_closed_form.hpp"
#include "plan/plan.hpp"
#include "problem_util.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/sparse.hpp"
#include "core/shard_layout.hpp"

using namespace plexus;

namespace {

ProblemSize problem(index_t n, std::vector<index_t> dims, bool dropout = true,
                    CommVariant variant = CommVariant::Baseline, int agg_chunks = 1,
                    LayerOrder order = LayerOrder::Auto) {
  ProblemSize p;
  p.config.layer_order = order;
  p.num_nodes = n;
  p.nnz = 10 * n;
  test::set_dims(p, dims);
  p.config.dropout = dropout ? 0.5f : 0.0f;
  p.config.comm_variant = variant;
  p.config.agg_chunks = agg_chunks;
  // The closed forms (gcn_closed_form.hpp) are the communicator's all-reduces'; the row-sparse
  // schedule's bytes are tests/test_sparse_comm's and mpi_test_sparse_comm's.
  p.config.sparse_comm = SparseComm::Off;
  return p;
}

constexpr CommVariant kVariants[] = {CommVariant::Baseline, CommVariant::RsAg, CommVariant::RsAgReuse};
constexpr LayerOrder kOrders[] = {LayerOrder::Auto, LayerOrder::AggregateFirst, LayerOrder::TransformFirst};

// Cora's sizes with `layers` layers of width 16: nothing divides evenly.
std::vector<index_t> cora_dims(int layers) {
  std::vector<index_t> dims{1433};
  for (int l = 0; l + 1 < layers; ++l) dims.push_back(16);
  dims.push_back(7);
  return dims;
}

// The geometry of layer l of p (its roles and order: layer_roles) at rank 0.
LayerGeometry geometry(const ProblemSize& p, int layer) {
  return layer_geometry_at(GridShape{}, {0, 0, 0}, layer, p.num_nodes, p.dims(), p.transform_first());
}

std::array<int, 4> summed_calls(const std::vector<RankCost>& ranks) {
  std::array<int, 4> sum{};
  for (const RankCost& rc : ranks)
    for (int a = 0; a < 4; ++a) sum[a] += rc.calls[a];
  return sum;
}

double largest_memory(const std::vector<RankCost>& ranks) {
  double m = 0;
  for (const RankCost& rc : ranks) m = std::max(m, rc.memory_bytes);
  return m;
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

// The memory of one rank counted by hand: N = 4 nodes, 6 edges (Â: 10 entries with the
// self-loops), F = 3 features, C = 2 classes, one layer, dropout on, 1x1x1. In bytes:
//   Â and Âᵀ: each (4 rows + 1) row pointers of 8 bytes, 10 entries of 4 + 4   2 x 120 = 240
//   features 4x3 floats                                                               48
//   W (3x2) and b (2): value, gradient, Adam m and v: 4 x 8 floats                   128
//   dropout copy of the input, rows padded to 4 floats: 4x4                           64
//   AGG 4x3, and layer 0's cached clean AGG 4x3                                       96
//   OUT 4x2                                                                           32
//   per logits row: label 4, two mask weights 8, row max and sum 8, argmax column 8,
//   split bits 1 = 29 bytes x 4 rows                                                  116
//   the three correct counts (doubles)                                                24
//   the loss's scratch gradient and dlogits, 4x2 each                                 64
//   one layer: no backward transient                                                   0
// => 812. The end-to-end check of the model against measured peaks, to the byte, on many grids
// and options is tests/cli_memory_model.sh.
TEST(CommModel, TinyMemoryCountedByHand) {
  ProblemSize p;
  p.num_nodes = 4;
  p.nnz = 6;
  test::set_dims(p, {3, 2});
  p.config.dropout = 0.5f;
  p.config.layer_order = LayerOrder::AggregateFirst;
  const std::vector<RankCost> ranks = predict_ranks(p, GridShape{1, 1, 1}, false);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_DOUBLE_EQ(ranks[0].memory_bytes, 812.0);
  // Two layers (F=3 -> H=2 -> C=2): layer 1 adds W (2x2) and b (2) x 4 = 96, its dropout copy
  // 4x4 floats = 64, AGG 4x2 = 32, OUT 4x2 = 32, and its backward holds dAGG and dH (4x2 each)
  // = 64 while dlogits is alive: 812 + 288 = 1100.
  test::set_dims(p, {3, 2, 2});
  EXPECT_DOUBLE_EQ(predict_ranks(p, GridShape{1, 1, 1}, false)[0].memory_bytes, 1100.0);
}

// The same one layer transforming first (F = 3 -> C = 2; what Auto picks for it):
//   Â and Âᵀ, features, W and b, dropout copy of the input: as above        240 + 48 + 128 + 64
//   Y = H·W 4x2 and OUT 4x2 (no AGG, nothing cached)                                       64
//   per logits row 116, correct counts 24, scratch gradient and dlogits 64                204
//   the backward's dY 4x2 while dlogits is alive                                           32
// => 780. Two layers (3 -> 2 -> 2: layer 1 aggregates first, a tie): layer 1 adds W and b
// 96, its dropout copy 64, AGG 32 and OUT 32; its backward holds dAGG and dH (4x2 each) = 64
// while dlogits is alive; layer 0's backward later holds dH and its dY (64) once dlogits (32)
// is freed, less than that peak: 780 - 32 + 224 + 64 = 1036.
TEST(CommModel, TinyTransformFirstMemoryCountedByHand) {
  ProblemSize p;
  p.num_nodes = 4;
  p.nnz = 6;
  test::set_dims(p, {3, 2});
  p.config.dropout = 0.5f;
  ASSERT_EQ(p.transform_first(), std::vector<bool>{true});
  EXPECT_DOUBLE_EQ(predict_ranks(p, GridShape{1, 1, 1}, false)[0].memory_bytes, 780.0);
  test::set_dims(p, {3, 2, 2});
  ASSERT_EQ(p.transform_first(), (std::vector<bool>{true, false}));
  EXPECT_DOUBLE_EQ(predict_ranks(p, GridShape{1, 1, 1}, false)[0].memory_bytes, 1036.0);
}

// Sizes that divide by every grid: the closed form is exact.
TEST(CommModel, ClosedFormMatchesExactWhenDivisible) {
  for (int layers : {1, 2, 3, 4}) {
    std::vector<index_t> dims{240};
    for (int l = 0; l + 1 < layers; ++l) dims.push_back(24);
    dims.push_back(48);
    for (LayerOrder order : kOrders) {
      const ProblemSize p = problem(960, dims, true, CommVariant::Baseline, 1, order);
      for (int P : {2, 4, 6, 8})
        for (GridShape g : all_grids(P))
          for (bool first : {true, false})
            expect_bytes_eq(predict_epoch(p, g, first), predict_epoch_closed_form(p, g, first),
                            g.str() + " L=" + std::to_string(layers) + " " + layer_order_name(order));
    }
  }
}

// The first epoch differs from the steady ones only by layer 0's clean aggregation:
// one all-reduce over X of [N/G_z x F/G_y], 8 (G_x - 1) N F bytes over all ranks. A layer 0
// that transforms first caches nothing (H·W changes every step): every epoch is the same.
TEST(CommModel, FirstEpochAddsLayerZeroAggregation) {
  const ProblemSize p = problem(2708, {1433, 16, 7}, true, CommVariant::Baseline, 1, LayerOrder::AggregateFirst);
  const ProblemSize t = problem(2708, {1433, 16, 7});  // Auto: both layers transform first
  ASSERT_EQ(t.transform_first(), (std::vector<bool>{true, true}));
  for (GridShape g : all_grids(6)) {
    const AxisBytes f = predict_epoch(p, g, true), s = predict_epoch(p, g, false);
    EXPECT_NEAR(f.bytes[0] - s.bytes[0], 8.0 * (g.x - 1) * 2708 * 1433, 1e-6) << g.str();
    EXPECT_EQ(f.bytes[1], s.bytes[1]);
    EXPECT_EQ(f.bytes[2], s.bytes[2]);
    const AxisBytes tf = predict_epoch(t, g, true), ts = predict_epoch(t, g, false);
    for (int a = 0; a < 3; ++a) EXPECT_EQ(tf.bytes[a], ts.bytes[a]) << g.str() << " axis " << a;
  }
}

// On Cora's widths (1433 -> 16 -> 7) layer 0's aggregation all-reduce over X is 16 columns
// wide transforming first instead of 1433. The features' all-gather moves from Z (layer 0's d,
// aggregating first) to Y (its i, transforming first), so the totals compare grid by grid; with
// the features gathered once per run (rs-ag-reuse), a steady epoch transforming first moves
// fewer bytes on every grid whose X has more than one rank.
TEST(CommModel, TransformFirstNarrowsTheAggregation) {
  for (GridShape g : all_grids(8)) {
    const auto bytes = [&](CommVariant v, LayerOrder o) {
      return predict_epoch(problem(2708, {1433, 16, 7}, true, v, 1, o), g, false);
    };
    const AxisBytes a = bytes(CommVariant::RsAgReuse, LayerOrder::AggregateFirst);
    const AxisBytes t = bytes(CommVariant::RsAgReuse, LayerOrder::Auto);
    if (g.x > 1) {
      EXPECT_LT(t.total(), a.total()) << g.str();
    }
    // The baseline's feature gathers, 2 per epoch, 4 (G - 1) N F over all ranks each.
    const double gathers_a = 2 * 4.0 * (g.z - 1) * 2708 * 1433, gathers_t = 2 * 4.0 * (g.y - 1) * 2708 * 1433;
    const AxisBytes ba = bytes(CommVariant::Baseline, LayerOrder::AggregateFirst);
    const AxisBytes bt = bytes(CommVariant::Baseline, LayerOrder::Auto);
    if (g.x > 1) {
      EXPECT_LT(bt.total() - gathers_t, ba.total() - gathers_a) << g.str();
    }
  }
}

// Summed over all ranks every term factorizes over the block coordinates (blocks partition
// each dimension), so the closed form is exact even when sizes do not divide by the grid;
// only the per-rank shares differ (by at most one row or column). The closed form of each
// comm variant is derived separately (docs/communication-variants.md), so this also checks
// the per-rank walk of the variants against it.
TEST(CommModel, ClosedFormExactForUnevenSizes) {
  for (int layers : {1, 2, 3}) {
    for (CommVariant v : kVariants) {
      for (LayerOrder order : kOrders) {
        ProblemSize p = problem(2708, cora_dims(layers), true, v, 1, order);
        for (bool shard : {false, true}) {
          p.config.shard_adj = shard;
          for (int P : {2, 3, 5, 6, 7, 8})
            for (GridShape g : all_grids(P))
              for (bool first : {true, false})
                expect_bytes_eq(predict_epoch(p, g, first), predict_epoch_closed_form(p, g, first),
                                g.str() + " L=" + std::to_string(layers) + " " + comm_variant_name(v) + " " +
                                    layer_order_name(order) + (shard ? " sharded" : ""));
        }
      }
    }
  }
  // A mixed order (widths that grow, then narrow): aggregate, aggregate, transform first.
  ProblemSize p = problem(2708, {50, 60, 60, 7});
  ASSERT_EQ(p.transform_first(), (std::vector<bool>{false, false, true}));
  for (CommVariant v : kVariants)
    for (GridShape g : all_grids(6)) {
      p.config.comm_variant = v;
      expect_bytes_eq(predict_epoch(p, g, false), predict_epoch_closed_form(p, g, false),
                      g.str() + " mixed " + comm_variant_name(v));
    }
}

// rs-ag by hand: one layer (F = C = 2), N = 4 on 1x2x1, so only Y (the layer's i axis)
// communicates. Per rank, baseline: OUT all-reduced in train and eval, 2 x 2(1/2)·4·2·4 = 64.
// rs-ag: OUT reduce-scattered twice, 4·(4 - 2)·2 = 16 each, dlogits all-gathered once (16), the
// 3 loss sums and the 3 correct counts all-reduced over Y, 2(1/2)·8 = 8 each, and the 9·C = 18
// per-class counts, 2(1/2)·18·8 = 144: 240 > 64 on so small a graph (the doubles outweigh the
// rows saved).
TEST(CommModel, RsAgCountedByHand) {
  const GridShape g{1, 2, 1};
  for (bool first : {true, false}) {
    const AxisBytes base = predict_epoch(problem(4, {2, 2}), g, first);
    const AxisBytes rs_ag = predict_epoch(problem(4, {2, 2}, true, CommVariant::RsAg), g, first);
    EXPECT_DOUBLE_EQ(base.bytes[1], 2 * 64.0);
    EXPECT_DOUBLE_EQ(rs_ag.bytes[1], 2 * 240.0);
    EXPECT_EQ(base.bytes[0] + base.bytes[2] + rs_ag.bytes[0] + rs_ag.bytes[2], 0.0);
  }
}

// rs-ag-reuse by hand: one layer (F = C = 2), N = 4 on 1x1x2, so only Z (the layer's d axis)
// communicates. Per rank: features all-gather 4·(4 - 2)·2 = 16, W all-gather and dW
// reduce-scatter 4·(2 - 1)·2 = 8 each, db 2(1/2)·2·4 = 8, 3 loss sums and 3 correct counts
// 8 each, the 9·C = 18 per-class counts 2(1/2)·18·8 = 144. Baseline: 2 feature and 3 W gathers,
// 32 + 24 + 8 + 8 + 24 + 24 + 144 = 264 (rs-ag the same: its i axis is Y, of one rank).
// rs-ag-reuse: the features once per run and W once per update (twice in epoch 0): steady
// 0 + 8 + 8 + 8 + 48 + 144 = 216, first 16 + 16 + 8 + 8 + 48 + 144 = 240.
TEST(CommModel, RsAgReuseCountedByHand) {
  const GridShape g{1, 1, 2};
  const auto z_bytes = [&](CommVariant v, bool first) { return predict_epoch(problem(4, {2, 2}, true, v), g, first).bytes[2]; };
  for (bool first : {true, false}) {
    EXPECT_DOUBLE_EQ(z_bytes(CommVariant::Baseline, first), 2 * 264.0);
    EXPECT_DOUBLE_EQ(z_bytes(CommVariant::RsAg, first), 2 * 264.0);
  }
  EXPECT_DOUBLE_EQ(z_bytes(CommVariant::RsAgReuse, false), 2 * 216.0);
  EXPECT_DOUBLE_EQ(z_bytes(CommVariant::RsAgReuse, true), 2 * 240.0);
}

// On a graph of Cora's size rs-ag saves bytes exactly when the axis the last layer's output is
// replicated on (i aggregating first, o transforming first) has more than one rank (its output
// rows are then split there); otherwise it moves what the baseline moves, axis by axis, and
// holds the same memory.
TEST(CommModel, RsAgSavesBytesIffLastLayerIAxisIsSplit) {
  for (LayerOrder order : kOrders)
  for (int layers : {1, 2, 3})
    for (int P : {4, 6, 8})
      for (GridShape g : all_grids(P))
        for (bool first : {true, false}) {
          const std::string what = g.str() + " L=" + std::to_string(layers) + " " + layer_order_name(order);
          const ProblemSize base = problem(2708, cora_dims(layers), true, CommVariant::Baseline, 1, order);
          const ProblemSize rs_ag = problem(2708, cora_dims(layers), true, CommVariant::RsAg, 1, order);
          const AxisBytes b = predict_epoch(base, g, first), r = predict_epoch(rs_ag, g, first);
          if (g.dim(geometry(base, layers - 1).out_repl()) > 1) {
            EXPECT_LT(r.total(), b.total()) << what;
          } else {
            expect_bytes_eq(r, b, what);
            EXPECT_EQ(largest_memory(predict_ranks(rs_ag, g, first)), largest_memory(predict_ranks(base, g, first)))
                << what;
          }
        }
}

// rs-ag-reuse differs from rs-ag only on the axes the gathers run over: per epoch it skips,
// summed over ranks, 4 (G - 1) N F per feature gather (over layer 0's in_repl axis: d
// aggregating first, i transforming first) and 4 (G - 1) D_l D_{l+1} per W gather (over the
// Linear3D's row axis: d aggregating first, o transforming first), 2 of each in a steady epoch
// and 1 of each in the first. Memory is the same (the gathered buffers exist anyway).
TEST(CommModel, RsAgReuseSkipsRepeatedGathers) {
  const std::vector<index_t> dims = cora_dims(3);
  for (LayerOrder order : kOrders)
  for (GridShape g : all_grids(8))
    for (bool first : {true, false}) {
      const ProblemSize rs_ag = problem(2708, dims, true, CommVariant::RsAg, 1, order);
      const ProblemSize reuse = problem(2708, dims, true, CommVariant::RsAgReuse, 1, order);
      const double skipped = first ? 1 : 2;
      std::array<double, 3> want{};
      const Axis f = geometry(rs_ag, 0).in_repl();
      want[static_cast<int>(f)] += skipped * 4.0 * (g.dim(f) - 1) * 2708 * dims[0];
      for (int l = 0; l < 3; ++l) {
        const LayerGeometry ge = geometry(rs_ag, l);
        const Axis w = ge.transform_first ? ge.roles.o : ge.roles.d;
        want[static_cast<int>(w)] += skipped * 4.0 * (g.dim(w) - 1) * static_cast<double>(dims[l] * dims[l + 1]);
      }
      const AxisBytes a = predict_epoch(rs_ag, g, first), b = predict_epoch(reuse, g, first);
      for (int k = 0; k < 3; ++k) EXPECT_NEAR(a.bytes[k] - b.bytes[k], want[k], 1e-6) << g.str() << " axis " << k;
      EXPECT_EQ(largest_memory(predict_ranks(rs_ag, g, first)), largest_memory(predict_ranks(reuse, g, first)));
    }
}

// --agg-chunks K: the same bytes; every aggregation all-reduce (forward over o, backward dH
// over d) becomes K calls. By hand, one layer on 2x1x1, steady epoch with dropout, ring steps
// over X per rank: the AGG all-reduce 2, the 3 masked losses 3 x 3 x 2, argmax 2 x 2: 24;
// with K = 4 the AGG all-reduce takes 4 x 2: 30.
// A plan under NCCL is a device backend's run, whose sums stay the communicator's all-reduces
// whatever --sparse-comm says: the default (auto) plans what off does.
TEST(CommModel, UnderNcclTheSumsAreAllReduces) {
  for (GridShape g : {GridShape{2, 1, 4}, GridShape{1, 2, 2}, GridShape{3, 1, 1}}) {
    ProblemSize off = problem(1001, cora_dims(2));
    off.transport = Transport::Nccl;
    ProblemSize dflt = off;
    dflt.config.sparse_comm = TrainConfig{}.sparse_comm;
    ASSERT_NE(dflt.config.sparse_comm, SparseComm::Off);
    expect_bytes_eq(predict_epoch(dflt, g, false), predict_epoch(off, g, false), g.str());
    EXPECT_EQ(summed_calls(predict_ranks(dflt, g, false)), summed_calls(predict_ranks(off, g, false))) << g.str();
  }
}

// --sparse-comm auto plans its forms by where the ranks are (ProblemSize::one_node, which
// plan_grid takes from the machine's ranks per node): across nodes rows' forms (fewer rows), on
// one node only those that pay counting their copies — on a sparse SBM, where the rows form saves
// little, more bytes than rows on some grid, never more than dense.
TEST(CommModel, AutoPlansItsFormsByWhereTheRanksAre) {
  const GraphData g = test::sparse_sbm();
  ProblemSize p;
  p.num_nodes = g.num_nodes;
  p.nnz = g.num_edges();
  p.num_features = g.num_features;
  p.num_classes = g.num_classes;
  p.blocks = std::make_shared<const AdjBlockCounts>(
      count_adj_blocks(gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values), HostCsr{}));
  p.config.layers = 2;
  p.config.hidden = 8;
  const auto bytes = [&](SparseComm s, GridShape grid, int ranks_per_node) {
    ProblemSize q = p;
    q.config.sparse_comm = s;
    MachineModel m;
    m.ranks_per_node = ranks_per_node;
    return plan_grid(q, grid, m).steady.total();
  };
  int auto_kept_dense = 0;
  for (const GridShape grid : all_grids(4)) {
    const double rows = bytes(SparseComm::Rows, grid, 4), dense = bytes(SparseComm::Dense, grid, 4);
    EXPECT_EQ(bytes(SparseComm::Rows, grid, 1), rows) << grid.str() << ": rows does not depend on the nodes";
    EXPECT_EQ(bytes(SparseComm::Auto, grid, 2), rows) << grid.str() << ": auto across nodes";
    const double one_node = bytes(SparseComm::Auto, grid, 4);
    EXPECT_GE(one_node, rows) << grid.str();
    EXPECT_LE(one_node, dense) << grid.str();
    auto_kept_dense += one_node > rows;
  }
  EXPECT_GT(auto_kept_dense, 0) << "auto on one node took every rows form rows took";
}

TEST(CommModel, AggChunksMultiplyAggregationCallsNotBytes) {
  EXPECT_EQ(predict_ranks(problem(4, {2, 2}), GridShape{2, 1, 1}, false)[0].calls[0], 24);
  EXPECT_EQ(predict_ranks(problem(4, {2, 2}, true, CommVariant::Baseline, 4), GridShape{2, 1, 1}, false)[0].calls[0], 30);
  MachineModel m;
  for (LayerOrder order : kOrders)
  for (CommVariant v : kVariants)
    for (GridShape g : all_grids(8))
      for (bool first : {true, false}) {
        const ProblemSize one = problem(2708, cora_dims(3), true, v, 1, order);
        const ProblemSize two = problem(2708, cora_dims(3), true, v, 2, order);
        const ProblemSize five = problem(2708, cora_dims(3), true, v, 5, order);
        // The axes some SpMM sums over: each layer's o (forward; dropout is on, so layer 0's
        // aggregation is not all cached) and its d (the backward SpMM: every layer but an
        // aggregate-first layer 0).
        std::array<bool, 3> summed{};
        for (int l = 0; l < 3; ++l) {
          const LayerGeometry ge = geometry(one, l);
          summed[static_cast<int>(ge.roles.o)] = true;
          if (l > 0 || ge.transform_first) summed[static_cast<int>(ge.roles.d)] = true;
        }
        expect_bytes_eq(predict_epoch(five, g, first), predict_epoch(one, g, first), g.str());
        // Linear in K: calls(K) = calls(1) + (K - 1)·(the aggregation all-reduces' steps).
        const std::array<int, 4> c1 = summed_calls(predict_ranks(one, g, first));
        const std::array<int, 4> c2 = summed_calls(predict_ranks(two, g, first));
        const std::array<int, 4> c5 = summed_calls(predict_ranks(five, g, first));
        for (int a = 0; a < 3; ++a) {
          EXPECT_EQ(c5[a] - c1[a], 4 * (c2[a] - c1[a])) << g.str() << " axis " << a;
          // Chunks add steps on exactly the axes of more than one rank that some SpMM sums over
          // (aggregating first, 3 layers make every axis o once; Auto's T, A, T leaves Y out).
          EXPECT_EQ(c2[a] > c1[a], summed[a] && g.dim(static_cast<Axis>(a)) > 1)
              << g.str() << " axis " << a << " " << layer_order_name(order);
        }
        bool some_summed = false;
        for (int a = 0; a < 3; ++a) some_summed = some_summed || (summed[a] && g.dim(static_cast<Axis>(a)) > 1);
        if (!first && some_summed) {
          const GridPlan p1 = plan_grid(one, g, m), p5 = plan_grid(five, g, m);
          EXPECT_GT(p5.latency_steps, p1.latency_steps) << g.str();
          EXPECT_GT(p5.comm_seconds, p1.comm_seconds) << g.str();
        }
      }
}

// The memory budget keeps the ranking's order and drops exactly the grids that do not fit.
TEST(CommModel, PlanAllWithinMemoryBudget) {
  const ProblemSize p = problem(2708, cora_dims(2));
  const MachineModel m;
  const std::vector<GridPlan> all = plan_all(p, 8, m);
  EXPECT_EQ(plan_all(p, 8, m, 0).size(), all.size());
  std::vector<double> memory;
  for (const GridPlan& g : all) memory.push_back(g.memory_bytes);
  std::sort(memory.begin(), memory.end());
  const double limit = memory[memory.size() / 2];
  std::vector<std::string> want;
  for (const GridPlan& g : all)
    if (g.memory_bytes <= limit) want.push_back(g.grid.str());
  std::vector<std::string> got;
  for (const GridPlan& g : plan_all(p, 8, m, limit)) got.push_back(g.grid.str());
  EXPECT_EQ(got, want);
  EXPECT_LT(got.size(), all.size());
  EXPECT_TRUE(plan_all(p, 8, m, 1.0).empty());
}

// gnn_problem: what a `plexus train` configuration means to the model.
TEST(CommModel, ProblemOfATrainConfig) {
  GraphInfo info;
  info.num_nodes = 2708;
  info.nnz = 10556;
  info.num_features = 1433;
  info.num_classes = 7;
  TrainConfig cfg;
  cfg.layers = 3;
  cfg.hidden = 32;
  cfg.dropout = 0;
  cfg.shard_adj = true;
  cfg.comm_variant = CommVariant::RsAgReuse;
  cfg.agg_chunks = 3;
  const ProblemSize p = gnn_problem(info, cfg);
  EXPECT_EQ(p.num_nodes, 2708);
  EXPECT_EQ(p.nnz, 10556);
  EXPECT_EQ(p.dims(), (std::vector<index_t>{1433, 32, 32, 7}));
  EXPECT_FALSE(p.config.dropout > 0);
  EXPECT_TRUE(p.config.shard_adj);
  EXPECT_EQ(p.config.comm_variant, CommVariant::RsAgReuse);
  EXPECT_EQ(p.config.agg_chunks, 3);
  EXPECT_EQ(p.transport, Transport::Mpi);
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
    s.config.shard_adj = true;
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

// Recomputation's extra work as the dry run records it, counted by hand, and its time in the
// plan. Both layers transforming first, recompute adds no SpMM, GEMM or collective: per layer
// l of input width F_l, the dropped-out input [N × ceil4(F_l)] is allocated (zero-filled) in
// forward and again in backward (without recompute, once with the layer) and drawn again
// (N·F_l draws). The plan's epoch is longer by exactly that work at the machine's memory-bound
// and dropout rates.
TEST(CommModel, RecomputePlansTheExtraWorkItRecords) {
  const index_t N = 50;
  const std::vector<index_t> dims{12, 6, 3};
  ProblemSize plain = problem(N, dims, true, CommVariant::Baseline, 1, LayerOrder::TransformFirst);
  ProblemSize rc = plain;
  rc.config.recompute = true;
  const RankCost a = predict_ranks(plain, GridShape{1, 1, 1}, false)[0];
  const RankCost b = predict_ranks(rc, GridShape{1, 1, 1}, false)[0];
  double bytes = 0, draws = 0;
  for (index_t f : {dims[0], dims[1]}) {
    const index_t ld = (f + 3) / 4 * 4;
    bytes += 2 * 4.0 * N * ld;
    draws += static_cast<double>(N * f);
  }
  EXPECT_DOUBLE_EQ(b.stream_bytes - a.stream_bytes, bytes);
  EXPECT_DOUBLE_EQ(b.random_draws - a.random_draws, draws);
  EXPECT_EQ(b.gemm_flops, a.gemm_flops);
  EXPECT_EQ(b.spmm_bytes, a.spmm_bytes);
  EXPECT_GT(a.stream_bytes, 0.0);
  EXPECT_GT(a.random_draws, 0.0);

  MachineModel m;
  m.stream_gbs = 3;
  m.dropout_gdraws = 0.25;
  const GridPlan pa = plan_grid(plain, GridShape{1, 1, 1}, m), pb = plan_grid(rc, GridShape{1, 1, 1}, m);
  EXPECT_NEAR(pb.total_seconds - pa.total_seconds, bytes / 3e9 + draws / 0.25e9, 1e-15);
  EXPECT_DOUBLE_EQ(pa.compute_seconds, compute_seconds(a, m));
  EXPECT_DOUBLE_EQ(compute_seconds(a, m), a.spmm_bytes / (m.spmm_gbs * 1e9) + a.gemm_flops / (m.gemm_gflops * 1e9) +
                                              a.stream_bytes / 3e9 + a.random_draws / 0.25e9);
  // Faster memory-bound kernels or dropout draws make every plan faster, and aggregating
  // layers' recomputation costs time on every grid.
  MachineModel fast = m;
  fast.stream_gbs = 30;
  fast.dropout_gdraws = 2.5;
  ProblemSize agg = problem(N, dims, true, CommVariant::Baseline, 1, LayerOrder::AggregateFirst), agg_rc = agg;
  agg_rc.config.recompute = true;
  for (GridShape g : all_grids(8)) {
    EXPECT_LT(plan_grid(agg, g, fast).compute_seconds, plan_grid(agg, g, m).compute_seconds) << g.str();
    EXPECT_GT(plan_grid(agg_rc, g, m).total_seconds, plan_grid(agg, g, m).total_seconds) << g.str();
  }
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

namespace {

// Whether every axis-a group of the job (dp replicas of g; rank = d·X·Y·Z + z·X·Y + x·Y + y)
// lies within one node of K ranks, rank by rank along the axis: the definition the O(1) test
// of plan_from_costs must equal.
bool axis_within_nodes(GridShape g, int dp, int K, int a) {
  const int n = a == 3 ? dp : g.dim(static_cast<Axis>(a));
  for (int rank = 0; rank < dp * g.size(); ++rank) {
    std::array<int, 4> q = grid_coords(g, rank);
    q[static_cast<std::size_t>(a)] = 0;
    const auto rank_of = [&](const std::array<int, 4>& k) { return k[3] * g.size() + k[2] * g.x * g.y + k[0] * g.y + k[1]; };
    const int node = rank_of(q) / K;
    for (int k = 1; k < n; ++k) {
      q[static_cast<std::size_t>(a)] = k;
      if (rank_of(q) / K != node) return false;
    }
  }
  return true;
}

}  // namespace

// The intra-node flags of a plan are those of the definition for every grid, replica count and
// node size, uneven node sizes included.
TEST(CommModel, IntraNodeFlagsMatchTheDefinitionOnEveryGrid) {
  for (int dp : {1, 2, 3})
    for (int ranks : {6, 8, 12, 16, 18})
      for (GridShape g : all_grids(ranks))
        for (int K = 1; K <= dp * ranks + 1; ++K) {
          std::vector<RankCost> costs;
          for (int rank = 0; rank < dp * ranks; ++rank) {
            const std::array<int, 4> c = grid_coords(g, rank);
            RankCost rc;
            rc.coords = {c[0], c[1], c[2]};
            rc.d = c[3];
            costs.push_back(rc);
          }
          MachineModel m;
          m.ranks_per_node = K;
          const GridPlan plan = plan_from_costs(g, costs, costs, m, dp);
          for (int a = 0; a < 4; ++a)
            EXPECT_EQ(plan.intra_node[static_cast<std::size_t>(a)], axis_within_nodes(g, dp, K, a))
                << g.str() << " dp " << dp << " K " << K << " axis " << a;
        }
}
