// --precision bf16 under MPI (mpi_test_trainer, on 1, 2, 3, 4, 6 and 8 ranks): the GCN with bf16
// graph tensors (docs/precision.md) on every grid of the ranks, on an uneven graph (157 nodes,
// 11 features: every size uneven over every axis), in each layer order, matches the one-rank bf16
// run and the one-rank fp32 run to bf16's precision epoch by epoch, with dropout on; a second run
// on the same grid gives the same losses bit for bit; chunked aggregation, sharded Â and the comm
// variants on the last grid. Every other kind the same (SAGE, GIN, GAT), with --recompute bit for
// bit on the last grid. Every rank runs every collective in the same order: checks are EXPECTs,
// never early returns.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <utility>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plan/plan.hpp"  // all_grids
#include "plexus/convert.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "mpi_grid_runs.hpp"

namespace plexus {
namespace {

using testing::world_size;

const GraphData& graph() {
  static const GraphData g = testing::uneven_sbm(21);
  return g;
}

TrainConfig config(Precision precision, LayerOrder order, bool shard_adj = false, int chunks = 1,
                   CommVariant variant = CommVariant::Baseline) {
  TrainConfig c;
  c.layers = 3;
  c.hidden = 7;
  c.epochs = 10;
  c.dropout = 0.3f;
  c.lr = 0.03f;
  c.seed = 11;
  c.precision = precision;
  c.layer_order = order;
  c.shard_adj = shard_adj;
  c.agg_chunks = chunks;
  c.comm_variant = variant;
  return c;
}

std::vector<double> losses(ProcessGrid& grid, const TrainConfig& cfg) {
  return testing::train_run(grid, graph(), cfg).losses;
}

// bf16 rounds the features once and every activation sum once per all-reduce: a few 1e-3 of
// the loss over ten epochs.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t e = 0; e < got.size(); ++e)
    EXPECT_NEAR(got[e], want[e], rel * want[e]) << what << ": epoch " << e + 1;
}

TEST(Bf16Grids, EveryGridMatchesOneRankToBf16Precision) {
  const int p = world_size();
  for (const LayerOrder order : {LayerOrder::Auto, LayerOrder::AggregateFirst, LayerOrder::TransformFirst}) {
    const std::string name = layer_order_name(order);
    auto single = ProcessGrid::single();
    const std::vector<double> fp32 = losses(*single, config(Precision::FP32, order));
    const std::vector<double> one = losses(*single, config(Precision::BF16, order));
    EXPECT_LT(one.back(), 0.9 * one.front()) << name << ": the one-rank bf16 run learns";
    expect_close(one, fp32, 5e-3, name + ": one rank, bf16 against fp32");
    for (const GridShape& shape : all_grids(p)) {
      auto grid = ProcessGrid::from_mpi(shape);
      const std::vector<double> got = losses(*grid, config(Precision::BF16, order));
      expect_close(got, one, 5e-3, name + " on " + shape.str() + " against one rank");
      expect_close(got, fp32, 1e-2, name + " on " + shape.str() + " against fp32");
      EXPECT_EQ(losses(*grid, config(Precision::BF16, order)), got) << name << " on " << shape.str() << ": rerun";
    }
    auto grid = ProcessGrid::from_mpi(all_grids(p).back());
    const std::string last = " on " + all_grids(p).back().str();
    expect_close(losses(*grid, config(Precision::BF16, order, true, 3)), one, 5e-3, name + " sharded, 3 chunks" + last);
    for (const CommVariant v : {CommVariant::RsAg, CommVariant::RsAgReuse})
      expect_close(losses(*grid, config(Precision::BF16, order, false, 2, v)), one, 5e-3,
                   name + " 2 chunks, " + comm_variant_name(v) + last);
  }
}

// SAGE, GIN and GAT in bf16 (their tensors held by pmm/layer_tensors.hpp, as the GCN's): on every
// grid within 5e-3 of the one-rank bf16 run and 1e-2 of the one-rank fp32 one, a rerun bit for
// bit; on the last grid --recompute bit for bit, sharded Â with chunked aggregation (not GAT,
// whose blocks are whole) and rs-ag-reuse within 5e-3.
TEST(Bf16Grids, EveryKindOnEveryGridMatchesOneRank) {
  const int p = world_size();
  const std::vector<std::pair<std::string, GnnSpec>> kinds{
      {"sage mean", GnnSpec("sage")},
      {"sage sum normalize", GnnSpec("sage").set("aggregator", "sum").set("normalize", true)},
      {"gin trained eps", GnnSpec("gin").set("train-eps", true)},
      {"gat", GnnSpec("gat").set("heads", 2).set("out-heads", 2).set("attn-dropout", 0.2)}};
  for (const auto& kind : kinds) {
    const auto& name = kind.first;
    const GnnSpec& model = kind.second;  // (not a structured binding: the lambda below reads it)
    const auto cfg = [&](Precision precision) {
      TrainConfig c = config(precision, LayerOrder::Auto);
      c.model = model;
      c.epochs = 6;
      c.lr = 0.01f;  // (GIN's unnormalised sums at 0.03: a trajectory that amplifies any rounding)
      if (model.kind() == "gat") c.hidden = 8;  // 2 heads of 4 (on 3 ranks of i a head's columns are split)
      return c;
    };
    auto single = ProcessGrid::single();
    const std::vector<double> fp32 = losses(*single, cfg(Precision::FP32));
    const std::vector<double> one = losses(*single, cfg(Precision::BF16));
    EXPECT_LT(one.back(), one.front()) << name << ": the one-rank bf16 run learns";
    expect_close(one, fp32, 5e-3, name + ": one rank, bf16 against fp32");
    for (const GridShape& shape : all_grids(p)) {
      auto grid = ProcessGrid::from_mpi(shape);
      const std::vector<double> got = losses(*grid, cfg(Precision::BF16));
      expect_close(got, one, 5e-3, name + " on " + shape.str() + " against one rank");
      expect_close(got, fp32, 1e-2, name + " on " + shape.str() + " against fp32");
      EXPECT_EQ(losses(*grid, cfg(Precision::BF16)), got) << name << " on " << shape.str() << ": rerun";
    }
    auto grid = ProcessGrid::from_mpi(all_grids(p).back());
    const std::string last = " on " + all_grids(p).back().str();
    TrainConfig c = cfg(Precision::BF16);
    const std::vector<double> plain = losses(*grid, c);
    c.recompute = true;
    EXPECT_EQ(losses(*grid, c), plain) << name << last << ": --recompute, bit for bit";
    c.recompute = false;
    if (model.kind() != "gat") {
      c.shard_adj = true;
      c.agg_chunks = 3;
      expect_close(losses(*grid, c), one, 5e-3, name + " sharded, 3 chunks" + last);
      c.shard_adj = false;
      c.agg_chunks = 1;
    }
    c.comm_variant = CommVariant::RsAgReuse;
    expect_close(losses(*grid, c), one, 5e-3, name + " rs-ag-reuse" + last);
  }
}

// The hidden-wide case (docs/precision.md): a graph whose hidden width is its feature width (2000
// nodes, 64 features, hidden 64), where the layers' outputs, the aggregations kept for backward
// and the gradients between layers weigh as much as the features, all in bf16. On one rank and
// on 2x2x2 (mpi_trainer_np1, mpi_trainer_np8) the largest rank's peak tensor bytes are at most
// 0.55x fp32's on the same grid, the losses within 2 % of fp32's, and a rerun equal bit for bit.
TEST(Bf16Grids, HiddenWidePeakIsAtMost055OfFp32) {
  const int p = world_size();
  if (p != 1 && p != 8) GTEST_SKIP() << "on 1 and 8 ranks";  // (every rank alike)
  static const GraphData g = [] {
    SbmOptions o;
    o.nodes = 2000;
    o.classes = 4;
    o.features = 64;
    o.avg_degree = 8;
    o.seed = 6;
    return generate_sbm(o);
  }();
  auto grid = ProcessGrid::from_mpi(p == 8 ? GridShape{2, 2, 2} : GridShape{});
  struct Run {
    std::vector<double> losses;
    double peak = 0;  // the largest rank's
  };
  const auto run = [&](Precision precision) {
    TrainConfig cfg;
    cfg.epochs = 8;
    cfg.hidden = 64;
    cfg.precision = precision;
    cfg.seed = 3;
    auto be = make_cpu_backend(1);
    GnnTrainer t(g, cfg, *be, *grid);
    Run r;
    for (int e = 0; e < cfg.epochs; ++e) r.losses.push_back(t.epoch().loss);
    double mine = static_cast<double>(be->peak_bytes());
    MPI_Allreduce(&mine, &r.peak, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return r;
  };
  const Run fp32 = run(Precision::FP32), half = run(Precision::BF16);
  const std::string where = "on " + grid->shape().str();
  expect_close(half.losses, fp32.losses, 2e-2, "bf16 against fp32 " + where);
  EXPECT_EQ(run(Precision::BF16).losses, half.losses) << where << ": rerun";
  EXPECT_LE(half.peak, 0.55 * fp32.peak) << where << ": peak tensor bytes bf16 " << half.peak << ", fp32 " << fp32.peak;
  if (grid->rank() == 0)
    std::printf("%s: peak tensor bytes bf16 %.0f, fp32 %.0f (%.3f)\n", where.c_str(), half.peak, fp32.peak,
                half.peak / fp32.peak);
}

}  // namespace
}  // namespace plexus
