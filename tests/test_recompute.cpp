// Activation recomputation (TrainConfig::recompute) on one rank: every GNN kind and layer order
// trains to the same losses, accuracies, parameters (and GAT attention) bit for bit as without it, with dropout
// on and off, and holds less activation memory — measured by the backend and predicted by the
// plan's dry run, which also counts the repeated aggregations. (Every grid: mpi_test_gnn_models.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plan/plan.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/graph.hpp"
#include "plexus/io.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "gnn_kind_cases.hpp"
#include "plan/gpt_plan.hpp"

namespace plexus {
namespace {

const GraphData& graph() {
  static const GraphData g = [] {
    SbmOptions o;
    o.nodes = 203;  // uneven against every block size
    o.classes = 5;
    o.features = 37;
    o.avg_degree = 6;
    o.seed = 17;
    return generate_sbm(o);
  }();
  return g;
}

using Case = testing::KindCase;

TrainConfig config(const Case& c, float dropout, bool recompute) {
  TrainConfig t;
  t.model = c.model;
  t.layer_order = c.order;
  t.layers = 3;
  t.hidden = 12;
  t.epochs = 6;
  t.dropout = dropout;
  t.lr = 0.02f;
  t.seed = 11;
  t.recompute = recompute;
  if (c.model.kind() == "gat") t.model.set("heads", 3).set("attn-dropout", 0.2);  // hidden 12 = 3 heads of 4
  return t;
}

struct TrainedRun {
  TrainResult result;
  ModelState state;
  std::vector<EdgeAttention> attention;  // gat
  std::size_t live_after = 0;            // tensor bytes still allocated after the last epoch
};

TrainedRun train(const TrainConfig& cfg) {
  auto grid = ProcessGrid::single();
  auto be = make_cpu_backend(1);
  GnnTrainer trainer(graph(), cfg, *be, *grid);
  TrainedRun r;
  r.result = trainer.run();
  r.live_after = be->live_bytes();
  r.state = trainer.state();
  r.attention = trainer.attention();  // (none but a GAT's)
  return r;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

class Recompute : public ::testing::TestWithParam<Case> {};

TEST_P(Recompute, SameLossesAndParametersBitForBitWithLessActivationMemory) {
  for (const float dropout : {0.5f, 0.0f}) {
    const std::string what = GetParam().name + (dropout > 0 ? " dropout" : " no dropout");
    const TrainedRun plain = train(config(GetParam(), dropout, false));
    const TrainedRun re = train(config(GetParam(), dropout, true));
    ASSERT_EQ(plain.result.epochs.size(), re.result.epochs.size()) << what;
    for (std::size_t e = 0; e < plain.result.epochs.size(); ++e) {
      const EpochMetrics &a = plain.result.epochs[e], &b = re.result.epochs[e];
      EXPECT_TRUE(same_bits(a.loss, b.loss)) << what << ": epoch " << e + 1 << " loss " << a.loss << " vs " << b.loss;
      EXPECT_TRUE(same_bits(a.val_loss, b.val_loss)) << what << ": epoch " << e + 1;
      EXPECT_TRUE(same_bits(a.train_acc, b.train_acc)) << what << ": epoch " << e + 1;
    }
    // A run that learns nothing would pass by itself.
    EXPECT_LT(re.result.epochs.back().loss, re.result.epochs.front().loss) << what;
    ASSERT_EQ(plain.state.parameters.size(), re.state.parameters.size()) << what;
    for (std::size_t k = 0; k < plain.state.parameters.size(); ++k) {
      const ParameterState &a = plain.state.parameters[k], &b = re.state.parameters[k];
      EXPECT_TRUE(same_bits(a.value, b.value)) << what << ": " << a.name;
      EXPECT_TRUE(same_bits(a.adam_m, b.adam_m)) << what << ": " << a.name << " (Adam m)";
      EXPECT_TRUE(same_bits(a.adam_v, b.adam_v)) << what << ": " << a.name << " (Adam v)";
    }
    // GAT's attention coefficients: computed again when asked for.
    ASSERT_EQ(plain.attention.size(), re.attention.size()) << what;
    for (std::size_t l = 0; l < plain.attention.size(); ++l) {
      EXPECT_FALSE(plain.attention[l].alpha.empty()) << what;
      EXPECT_TRUE(same_bits(plain.attention[l].alpha, re.attention[l].alpha)) << what << ": layer " << l << " attention";
    }
    // Less memory: the activations' peak and the whole peak.
    const auto act = static_cast<std::size_t>(MemoryKind::Activations);
    const auto edge = static_cast<std::size_t>(MemoryKind::EdgeValues);
    EXPECT_LT(re.result.max_kind_bytes[act], plain.result.max_kind_bytes[act]) << what;
    if (GetParam().model.kind() == "gat") {  // α, its dropped copy and its transpose: one layer's at a time
      EXPECT_LT(re.result.max_kind_bytes[edge], plain.result.max_kind_bytes[edge]) << what;
    }
    EXPECT_LT(re.result.max_peak_tensor_bytes, plain.result.max_peak_tensor_bytes) << what;
    // Aggregating first with dropout, a GCN layer holds dropout(H) [N × D_l padded to 4] and
    // AGG [N × D_l] from forward to backward; recomputing, only one layer's are live at a time,
    // so the peak falls by at least the sum over the layers less the largest layer's.
    if (GetParam().gcn() && GetParam().order == LayerOrder::AggregateFirst && dropout > 0) {
      const std::vector<index_t> dims{graph().num_features, 12, 12, graph().num_classes};
      std::size_t sum = 0, most = 0;
      for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
        const auto bytes = static_cast<std::size_t>(graph().num_nodes * (Matrix::padded_ld(dims[l]) + dims[l])) * sizeof(float);
        sum += bytes;
        most = std::max(most, bytes);
      }
      EXPECT_GE(plain.result.max_peak_tensor_bytes - re.result.max_peak_tensor_bytes, sum - most) << what;
    }
    // Between passes a recomputing layer holds none of its intermediates; aggregating first, a
    // GCN layer without recompute holds dropout(H) and AGG, every layer its own.
    EXPECT_LT(re.live_after, plain.live_after) << what;
    if (GetParam().gcn() && GetParam().order == LayerOrder::AggregateFirst) {
      const std::vector<index_t> dims{graph().num_features, 12, 12, graph().num_classes};
      std::size_t held = 0;
      for (std::size_t l = 0; l + 1 < dims.size(); ++l)
        held += static_cast<std::size_t>(graph().num_nodes * (Matrix::padded_ld(dims[l]) + dims[l])) * sizeof(float);
      EXPECT_EQ(plain.live_after - re.live_after, held) << what;
    }
    // The other kinds are not recomputation's to change.
    for (const MemoryKind k : {MemoryKind::Parameters, MemoryKind::Gradients, MemoryKind::Optimizer})
      EXPECT_EQ(re.result.max_kind_bytes[static_cast<std::size_t>(k)], plain.result.max_kind_bytes[static_cast<std::size_t>(k)])
          << what << ": " << memory_kind_name(k);

    // The plan's dry run sees the same: less memory, and more FLOPs (the aggregations again)
    // wherever a layer aggregates first and recomputes (layer 0 without dropout keeps its cache,
    // and transforming first only the dropout is drawn again).
    const RankCost p0 = testing::planned_on_one_rank(graph(), config(GetParam(), dropout, false));
    const RankCost p1 = testing::planned_on_one_rank(graph(), config(GetParam(), dropout, true));
    EXPECT_LT(p1.memory_bytes, p0.memory_bytes) << what;
    EXPECT_LT(p1.memory_by_kind[act], p0.memory_by_kind[act]) << what;
    EXPECT_EQ(p1.gemm_flops, p0.gemm_flops) << what;  // no GEMM is repeated
    // (Transforming first only GAT's attention multiplies again: α·Z, computed again.)
    if (layer_order_of(config(GetParam(), dropout, false)) == LayerOrder::TransformFirst &&
        GetParam().model.kind() != "gat") {
      EXPECT_EQ(p1.spmm_flops, p0.spmm_flops) << what;
    } else {
      EXPECT_GT(p1.spmm_flops, p0.spmm_flops) << what;
    }
    // The saving the plan predicts is the one the run measures.
    EXPECT_EQ(p0.memory_bytes - p1.memory_bytes,
              static_cast<double>(plain.result.max_peak_tensor_bytes - re.result.max_peak_tensor_bytes))
        << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, Recompute,
    ::testing::Values(Case{"gcn_aggregate_first", GnnSpec("gcn"), LayerOrder::AggregateFirst},
                      Case{"gcn_transform_first", GnnSpec("gcn"), LayerOrder::TransformFirst},
                      Case{"gcn_auto", GnnSpec("gcn"), LayerOrder::Auto},
                      Case{"sage_mean", GnnSpec("sage")},
                      Case{"sage_sum_normalize", GnnSpec("sage").set("aggregator", "sum").set("normalize", true)},
                      Case{"gin_fixed_eps", GnnSpec("gin").set("gin-eps", 0.1)},
                      Case{"gin_trained_eps", GnnSpec("gin").set("train-eps", true)},
                      Case{"gat", GnnSpec("gat")},
                      Case{"appnp", GnnSpec("appnp").set("steps", 3)}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// The GPT tests' tiny model: 2 heads of 8, sequences of 12 from a corpus of 23 tokens, batches of
// 3, dropout 0.2, no warm-up or evaluation.
TokenCorpus tiny_corpus() {
  TokenCorpus corpus;
  corpus.vocab = 23;
  for (int k = 0; k < 600; ++k) corpus.train.push_back(static_cast<std::int32_t>((k * 7 + k / 5) % 23));
  corpus.val.assign(corpus.train.begin(), corpus.train.begin() + 100);
  return corpus;
}
GptTrainConfig tiny_gpt(const TokenCorpus& corpus, int layers) {
  GptTrainConfig cfg;
  cfg.model.layers = layers;
  cfg.model.heads = 2;
  cfg.model.embed = 16;
  cfg.model.block = 12;
  cfg.model.vocab = corpus.vocab;
  cfg.batch = 3;
  cfg.iters = 4;
  cfg.warmup = 0;
  cfg.eval_every = 0;
  cfg.dropout = 0.2f;
  return cfg;
}

// GPT blocks (GptConfig::recompute): the same losses and weights bit for bit over steps with
// dropout and gradient accumulation, less activation memory — measured and planned.
TEST(RecomputeGpt, SameLossesAndWeightsBitForBitWithLessActivationMemory) {
  const TokenCorpus corpus = tiny_corpus();
  GptTrainConfig cfg = tiny_gpt(corpus, 3);
  cfg.grad_accum = 2;
  struct Out {
    std::vector<double> losses;
    GptWeights weights;
    std::size_t peak = 0, activations = 0, live = 0;
  };
  const auto run = [&](bool recompute) {
    GptTrainConfig c = cfg;
    c.model.recompute = recompute;
    auto grid = ProcessGrid::single();
    auto be = make_cpu_backend(1);
    GptTrainer trainer(corpus, c, *be, *grid);
    Out o;
    for (int i = 0; i < c.iters; ++i) o.losses.push_back(trainer.step().loss);
    o.peak = be->peak_bytes();
    o.activations = be->peak_bytes(MemoryKind::Activations);
    o.live = be->live_bytes();
    o.weights = trainer.weights();
    return o;
  };
  const Out plain = run(false), re = run(true);
  ASSERT_EQ(plain.losses.size(), re.losses.size());
  for (std::size_t i = 0; i < plain.losses.size(); ++i)
    EXPECT_TRUE(same_bits(plain.losses[i], re.losses[i])) << "step " << i + 1 << ": " << plain.losses[i] << " vs " << re.losses[i];
  EXPECT_LT(re.losses.back(), re.losses.front());
  ASSERT_EQ(plain.weights.size(), re.weights.size());
  for (const auto& [name, t] : plain.weights) EXPECT_TRUE(same_bits(t.data, re.weights.at(name).data)) << name;
  EXPECT_LT(re.activations, plain.activations);
  EXPECT_LT(re.peak, plain.peak);
  // Between steps neither holds an intermediate (backward frees each after its last reader):
  // what recomputation saves is the forward-to-backward span (the test below measures it).
  EXPECT_EQ(plain.live, re.live);

  GptConfig planned = cfg.model;
  const RankCost p0 = predict_gpt_ranks(planned, cfg.batch, cfg.grad_accum, GridShape{1, 1, 1})[0];
  planned.recompute = true;
  const RankCost p1 = predict_gpt_ranks(planned, cfg.batch, cfg.grad_accum, GridShape{1, 1, 1})[0];
  EXPECT_LT(p1.memory_bytes, p0.memory_bytes);
  EXPECT_GT(p1.gemm_flops, p0.gemm_flops);  // every block's forward GEMMs again
}

// What a training block holds from forward to backward, by the activation peak of a model one
// block deeper: per row qkv's output (3E), the attention's output (E) and log-sum-exps (one per
// head), mid (E), fc's output (4E), the GELU (4E) and out (E) — not the projections' outputs nor
// the LayerNorms' (released in forward: spent, or applied again in backward). Besides, each
// LayerNorm's statistics and backward sums (mean, var, 1/std, a, b: 5 per row; dγ, dβ of a pass:
// 2E) and each linear's bias sums of a pass (its output width: 3E, E, 4E, E).
TEST(RecomputeGpt, ATrainingBlockHoldsItsSevenIntermediatesFromForwardToBackward) {
  const TokenCorpus corpus = tiny_corpus();
  const auto activation_peak = [&](int layers) {
    GptTrainConfig c = tiny_gpt(corpus, layers);
    c.iters = 1;
    auto grid = ProcessGrid::single();
    auto be = make_cpu_backend(1);
    GptTrainer trainer(corpus, c, *be, *grid);
    trainer.step();
    return be->peak_bytes(MemoryKind::Activations);
  };
  const std::size_t rows = 3 * 12, e = 16, heads = 2;
  const std::size_t per_block =
      (rows * (3 * e + e + e + 4 * e + 4 * e + e) + rows * heads + 2 * (5 * rows + 2 * e) + (3 * e + e + 4 * e + e)) *
      sizeof(float);
  EXPECT_EQ(activation_peak(3) - activation_peak(2), per_block);
  EXPECT_EQ(activation_peak(2) - activation_peak(1), per_block);
}

}  // namespace
}  // namespace plexus
