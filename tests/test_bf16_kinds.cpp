// --precision bf16 for every GNN kind on one rank (docs/precision.md; the layers hold their tensors
// through pmm/layer_tensors.hpp): each kind's losses follow fp32's to bf16's precision, repeat bit
// for bit, learn; its peak tensor memory is below fp32's and is what the plan's dry run predicts,
// to the byte; --recompute gives the same losses bit for bit and no more memory (GAT's per-edge
// arrays, which stay fp32, less). Every grid: mpi_test_bf16.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gnn_kind_cases.hpp"
#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {
namespace {

const GraphData& graph() {
  static const GraphData g = [] {
    SbmOptions o;
    o.nodes = 241;  // uneven against the chunks
    o.classes = 4;
    o.features = 48;  // wider than the hidden layers, as real features are
    o.avg_degree = 6;
    o.seed = 3;
    return generate_sbm(o);
  }();
  return g;
}

using Case = testing::KindCase;

TrainConfig config(const Case& c, Precision precision, bool recompute) {
  TrainConfig t;
  t.model = c.model;
  t.layer_order = c.order;
  t.layers = 3;
  t.hidden = 16;
  t.epochs = 12;
  t.dropout = 0.3f;
  t.lr = 0.02f;
  t.seed = 5;
  t.precision = precision;
  t.recompute = recompute;
  if (c.model.kind() == "gat") t.model.set("heads", 4).set("attn-dropout", 0.2);  // hidden 16 = 4 heads of 4
  return t;
}

struct TrainedRun {
  std::vector<double> losses;
  TrainResult result;
};

TrainedRun train(const TrainConfig& cfg) {
  auto grid = ProcessGrid::single();
  auto be = make_cpu_backend(1);
  GnnTrainer trainer(graph(), cfg, *be, *grid);
  TrainedRun r;
  r.result = trainer.run();
  for (const EpochMetrics& e : r.result.epochs) r.losses.push_back(e.loss);
  return r;
}

double planned_peak(const TrainConfig& cfg) { return testing::planned_on_one_rank(graph(), cfg).memory_bytes; }

std::size_t kind_peak(const TrainedRun& r, MemoryKind k) { return r.result.max_kind_bytes[static_cast<std::size_t>(k)]; }

class Bf16Kinds : public ::testing::TestWithParam<Case> {};

TEST_P(Bf16Kinds, FollowFp32WithLessMemoryAsPlanned) {
  const Case& c = GetParam();
  const TrainedRun fp32 = train(config(c, Precision::FP32, false));
  const TrainedRun half = train(config(c, Precision::BF16, false));
  ASSERT_EQ(half.losses.size(), fp32.losses.size());
  EXPECT_NE(half.losses, fp32.losses) << "bf16 rounds";
  for (std::size_t e = 0; e < fp32.losses.size(); ++e)
    EXPECT_NEAR(half.losses[e], fp32.losses[e], 2e-2 * fp32.losses[e]) << "epoch " << e + 1;
  EXPECT_LT(half.losses.back(), 0.9 * half.losses.front()) << "learns";
  EXPECT_EQ(train(config(c, Precision::BF16, false)).losses, half.losses) << "a rerun, bit for bit";

  const std::size_t peak16 = half.result.max_peak_tensor_bytes, peak32 = fp32.result.max_peak_tensor_bytes;
  std::printf("%s: peak tensor bytes bf16 %zu, fp32 %zu (%.3f)\n", c.name.c_str(), peak16, peak32,
              static_cast<double>(peak16) / static_cast<double>(peak32));
  EXPECT_LT(peak16, peak32);
  EXPECT_LT(kind_peak(half, MemoryKind::Activations), kind_peak(fp32, MemoryKind::Activations));
  for (const MemoryKind k : {MemoryKind::Parameters, MemoryKind::Gradients, MemoryKind::Optimizer})
    EXPECT_EQ(kind_peak(half, k), kind_peak(fp32, k)) << memory_kind_name(k) << " stay fp32";
  EXPECT_EQ(planned_peak(config(c, Precision::BF16, false)), static_cast<double>(peak16)) << "plan = measured";

  // --recompute: a graph tensor backward reads stays in bf16 (computing it again would take fp32
  // operands larger than it), what is fp32 (GAT's per-edge arrays) is computed again.
  const TrainedRun re = train(config(c, Precision::BF16, true));
  EXPECT_EQ(re.losses, half.losses) << "--recompute, bit for bit";
  EXPECT_LE(re.result.max_peak_tensor_bytes, peak16) << "--recompute";
  if (c.model.kind() == "gat") {
    EXPECT_LT(kind_peak(re, MemoryKind::EdgeValues), kind_peak(half, MemoryKind::EdgeValues)) << "--recompute";
  }
  EXPECT_EQ(planned_peak(config(c, Precision::BF16, true)), static_cast<double>(re.result.max_peak_tensor_bytes))
      << "--recompute: plan = measured";
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, Bf16Kinds,
    ::testing::Values(Case{"gcn_auto", GnnSpec("gcn")}, Case{"gcn_aggregate_first", GnnSpec("gcn"), LayerOrder::AggregateFirst},
                      Case{"sage_mean", GnnSpec("sage")},
                      Case{"sage_sum_normalize", GnnSpec("sage").set("aggregator", "sum").set("normalize", true)},
                      Case{"gin_fixed_eps", GnnSpec("gin").set("gin-eps", 0.1)},
                      Case{"gin_trained_eps", GnnSpec("gin").set("train-eps", true)}, Case{"gat", GnnSpec("gat")},
                      Case{"gat_averaged_heads", GnnSpec("gat").set("out-heads", 3)}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
}  // namespace plexus
