// GnnModel, the inference object: from a trainer or a model file, on the training graph, on an
// unlabelled copy and on a larger snapshot; its embeddings against a float64 forward pass; its
// refusals. (Every grid against one rank: mpi_test_gnn_models.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plan/plan.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_model.hpp"
#include "plexus/sparse.hpp"
#include "plexus/gnn_trainer.hpp"
#include "scratch_dir.hpp"

namespace plexus {
namespace {

GraphData sbm(index_t nodes, std::uint64_t seed) {
  SbmOptions o;
  o.nodes = nodes;
  o.classes = 4;
  o.features = 6;
  o.avg_degree = 5;
  o.seed = seed;
  return generate_sbm(o);
}

TrainConfig config(const std::string& kind) {
  TrainConfig c;
  c.model = GnnSpec(kind);
  if (kind == "gat") c.model.set("heads", 2);
  c.layers = 3;
  c.hidden = 8;
  c.epochs = 5;
  c.seed = 3;
  return c;
}

// node id → row, from one rank's rows (every node exactly once).
std::map<index_t, std::vector<float>> by_node(const std::vector<index_t>& ids, index_t width,
                                              const std::vector<float>& values) {
  std::map<index_t, std::vector<float>> m;
  for (std::size_t k = 0; k < ids.size(); ++k)
    EXPECT_TRUE(m.emplace(ids[k], std::vector<float>(values.begin() + static_cast<std::ptrdiff_t>(k * width),
                                                     values.begin() + static_cast<std::ptrdiff_t>((k + 1) * width)))
                    .second)
        << "node " << ids[k] << " twice";
  return m;
}

class GnnModelKinds : public ::testing::TestWithParam<std::string> {};

TEST_P(GnnModelKinds, PredictsWhatTheTrainerPredictsFromATrainerAndFromItsFile) {
  const GraphData g = sbm(60, 1);
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer trainer(g, config(GetParam()), *be, *grid);
  for (int e = 0; e < 5; ++e) trainer.epoch();
  const Predictions want = trainer.predict();
  const std::vector<NodeRows> want_embeddings = trainer.embeddings();
  ASSERT_EQ(want_embeddings.size(), 2u);
  testing::ScratchDir dir;
  trainer.save(dir.file("m.h5"));

  GnnModel from_trainer(trainer);
  GnnModel from_file = GnnModel::load(dir.file("m.h5"));
  EXPECT_EQ(from_file.dims(), trainer.dims());
  EXPECT_EQ(from_trainer.dims(), (std::vector<index_t>{6, 8, 8, 4}));
  EXPECT_EQ(from_file.config().model.kind(), GetParam());
  EXPECT_EQ(from_file.epochs_done(), 5);
  for (GnnModel* m : {&from_trainer, &from_file})
    for (int pass = 0; pass < 2; ++pass) {  // the file's weights are read once, then kept
      auto be2 = make_cpu_backend(1);
      const Inference got = m->predict(g, *be2, *grid, {.embeddings = true});
      EXPECT_EQ(got.predictions.node_ids, want.node_ids);
      EXPECT_EQ(got.predictions.classes, want.classes);
      EXPECT_EQ(got.predictions.logits, want.logits);  // the same forward pass: bit for bit
      ASSERT_EQ(got.embeddings.size(), 2u);
      for (std::size_t l = 0; l < 2; ++l) {
        EXPECT_EQ(got.embeddings[l].width, 8);
        EXPECT_EQ(got.embeddings[l].node_ids, want_embeddings[l].node_ids);
        EXPECT_EQ(got.embeddings[l].values, want_embeddings[l].values);
      }
      EXPECT_TRUE(got.attention.empty());
    }
}

// A model's forward pass holds what the plan of plexus predict says it will (its dry run:
// ProblemSize::inference), to the byte, and less than a training epoch holds (no gradients, no
// optimizer state, no more activations); the metrics of
// the same pass are the trainer's evaluation.
TEST_P(GnnModelKinds, InferenceHoldsWhatItsPlanPredictsAndLessThanTraining) {
  const GraphData g = sbm(60, 1);
  testing::ScratchDir dir;
  const std::string data = dir.file("g.h5");
  write_graph_h5(g, data);
  const TrainConfig cfg = config(GetParam());
  auto grid = ProcessGrid::single();
  auto train_be = make_cpu_backend(1);
  GnnTrainer trainer(load_shards_h5(data, *grid, cfg.layers, cfg.hidden, cfg.shard_adj, layer_order_of(cfg)), cfg,
                     *train_be, *grid);
  trainer.epoch();
  const EvalMetrics want = trainer.evaluate();
  const std::size_t training_peak = train_be->peak_bytes();
  GnnModel model(trainer);
  auto be = make_cpu_backend(1);
  const Inference got =
      model.predict(load_shards_h5(data, *grid, cfg.layers, cfg.hidden, cfg.shard_adj, layer_order_of(cfg),
                                   ShardsFor::Inference),
                    *be, *grid);
  EXPECT_TRUE(std::isnan(got.metrics.test_acc));  // not asked for
  ProblemSize p = gnn_problem(data, cfg);
  p.inference = true;
  EXPECT_EQ(predict_ranks(p, GridShape{1, 1, 1}, true)[0].memory_bytes, static_cast<double>(be->peak_bytes()));
  EXPECT_LT(be->peak_bytes(), training_peak);
  EXPECT_EQ(be->peak_bytes(MemoryKind::Optimizer), 0u);
  EXPECT_EQ(be->peak_bytes(MemoryKind::Gradients), 0u);  // a network built for inference
  // and what backward would read is not kept: at most the activations of a recomputing trainer
  EXPECT_LE(be->peak_bytes(MemoryKind::Activations), train_be->peak_bytes(MemoryKind::Activations));
  auto be2 = make_cpu_backend(1);
  const Inference with_metrics =
      model.predict(load_shards_h5(data, *grid, cfg.layers, cfg.hidden, cfg.shard_adj, layer_order_of(cfg),
                                   ShardsFor::Inference),
                    *be2, *grid, {.metrics = true});
  EXPECT_EQ(with_metrics.metrics.test_acc, want.test_acc);
  EXPECT_EQ(with_metrics.metrics.val_acc, want.val_acc);
}

TEST_P(GnnModelKinds, ScoresAnUnlabelledGraphAndASnapshotWithNewNodes) {
  const GraphData g = sbm(60, 1);
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer trainer(g, config(GetParam()), *be, *grid);
  for (int e = 0; e < 5; ++e) trainer.epoch();
  GnnModel model(trainer);
  const Inference labelled = model.predict(g, *be, *grid);

  GraphData unlabelled = g;  // no labels, no masks, no class count: the same scores
  unlabelled.labels.clear();
  unlabelled.train_mask.clear();
  unlabelled.val_mask.clear();
  unlabelled.test_mask.clear();
  unlabelled.num_classes = 0;
  const Inference scored = model.predict(unlabelled, *be, *grid);
  EXPECT_EQ(scored.predictions.logits, labelled.predictions.logits);

  const GraphData snapshot = sbm(85, 2);  // more nodes, another graph
  const Inference next = model.predict(snapshot, *be, *grid, {.embeddings = true});
  const auto rows = by_node(next.predictions.node_ids, 4, next.predictions.logits);
  ASSERT_EQ(static_cast<index_t>(rows.size()), snapshot.num_nodes);
  EXPECT_EQ(rows.begin()->first, 0);
  EXPECT_EQ(rows.rbegin()->first, snapshot.num_nodes - 1);
  for (const auto& [node, row] : rows)
    for (float v : row) EXPECT_TRUE(std::isfinite(v)) << "node " << node;
  for (const NodeRows& e : next.embeddings) EXPECT_EQ(static_cast<index_t>(e.node_ids.size()), snapshot.num_nodes);
}

INSTANTIATE_TEST_SUITE_P(Kinds, GnnModelKinds, ::testing::Values("gcn", "sage", "gin", "gat", "appnp"),
                         [](const auto& info) { return info.param; });

// A forward pass that overflows float32 gives no result (as training stops on a NaN loss): an
// InputError naming the first layer whose output is not finite and the lowest node id there.
// Node 37's features are 3e38 and layer 0's weights all 1, transforming first: X·W is +Inf in row
// 37 only, Â·(X·W) in the rows of 37 and its neighbours, and the ReLU keeps +Inf — so layer0 and
// the lowest of those nodes, with or without embeddings; the same graph with finite outputs passes.
TEST(GnnModelOverflow, NamesTheFirstLayerAndTheLowestNodeWhoseOutputIsNotFinite) {
  GraphData g = sbm(60, 1);
  const index_t bad = 37;
  index_t lowest = bad;
  for (index_t e = g.indptr[bad]; e < g.indptr[bad + 1]; ++e) lowest = std::min(lowest, g.indices[e]);
  ASSERT_LT(lowest, bad) << "the case needs a neighbour of a lower id";
  TrainConfig cfg = config("gcn");
  cfg.layers = 2;
  cfg.layer_order = LayerOrder::TransformFirst;
  auto grid = ProcessGrid::single();
  auto be = make_cpu_backend(1);
  GnnTrainer trainer(g, cfg, *be, *grid);
  ModelState state = trainer.state();
  for (ParameterState& p : state.parameters)
    if (p.name == "layer0/weight") std::fill(p.value.begin(), p.value.end(), 1.0f);
  trainer.set_state(state);
  GnnModel model(trainer);
  EXPECT_NO_THROW(model.predict(g, *be, *grid));
  for (index_t f = 0; f < g.num_features; ++f) g.features[static_cast<std::size_t>(bad * g.num_features + f)] = 3e38f;
  for (const bool embeddings : {false, true}) {
    InferenceOptions options;
    options.embeddings = embeddings;
    try {
      model.predict(g, *be, *grid, options);
      ADD_FAILURE() << "no error for non-finite outputs (embeddings " << embeddings << ")";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("layer0 "), std::string::npos) << what;
      EXPECT_NE(what.find("node " + std::to_string(lowest) + " "), std::string::npos) << what;
    }
  }
}

// A GCN's embeddings are its hidden layers' outputs after the ReLU: H1 = ReLU(Â·X·W0 + b0),
// H2 = ReLU(Â·H1·W1 + b1), computed here in float64 from the model's own weights.
TEST(GnnModel, GcnEmbeddingsAreTheHiddenLayersAfterTheirActivation) {
  const GraphData g = sbm(40, 4);
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer trainer(g, config("gcn"), *be, *grid);
  for (int e = 0; e < 3; ++e) trainer.epoch();
  const ModelState state = trainer.state();
  std::map<std::string, const ParameterState*> p;
  for (const ParameterState& s : state.parameters) p[s.name] = &s;
  const HostCsr a = gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values);
  const auto n = static_cast<std::size_t>(g.num_nodes);
  std::vector<std::vector<double>> h(n, std::vector<double>(6));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < 6; ++c) h[i][c] = g.features[i * 6 + c];
  GnnModel model(trainer);
  const Inference got = model.predict(g, *be, *grid, {.embeddings = true});
  for (int l = 0; l < 2; ++l) {
    const ParameterState& w = *p.at("layer" + std::to_string(l) + "/weight");
    const ParameterState& b = *p.at("layer" + std::to_string(l) + "/bias");
    std::vector<std::vector<double>> next(n, std::vector<double>(static_cast<std::size_t>(w.cols), 0.0));
    for (std::size_t i = 0; i < n; ++i)
      for (index_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) {
        const auto j = static_cast<std::size_t>(a.indices[static_cast<std::size_t>(k)]);
        for (index_t r = 0; r < w.rows; ++r)
          for (index_t c = 0; c < w.cols; ++c)
            next[i][static_cast<std::size_t>(c)] += a.values[static_cast<std::size_t>(k)] * h[j][static_cast<std::size_t>(r)] *
                                                    w.value[static_cast<std::size_t>(r * w.cols + c)];
      }
    for (auto& row : next)
      for (std::size_t c = 0; c < row.size(); ++c) row[c] = std::max(0.0, row[c] + b.value[c]);
    h = next;
    const auto rows = by_node(got.embeddings[static_cast<std::size_t>(l)].node_ids, 8,
                              got.embeddings[static_cast<std::size_t>(l)].values);
    ASSERT_EQ(rows.size(), n);
    for (const auto& [node, row] : rows)
      for (std::size_t c = 0; c < row.size(); ++c)
        EXPECT_NEAR(row[c], h[static_cast<std::size_t>(node)][c], 1e-4 * (1.0 + std::abs(h[static_cast<std::size_t>(node)][c])))
            << "layer " << l << " node " << node << " column " << c;
  }
}

TEST(GnnModel, RefusesGraphsThatDoNotFitAndAttentionOfOtherKinds) {
  const GraphData g = sbm(40, 4);
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer trainer(g, config("sage"), *be, *grid);
  GnnModel model(trainer);
  GraphData wide = sbm(40, 4);
  wide.num_features = 5;
  wide.features.resize(40 * 5);
  EXPECT_THROW(
      {
        try {
          model.predict(wide, *be, *grid);
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find("GraphData.num_features is 5, the model reads 6 features"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      InputError);
  GraphData classes = g;
  classes.num_classes = 7;
  EXPECT_THROW(model.predict(classes, *be, *grid), InputError);
  EXPECT_THROW(model.predict(g, *be, *grid, {.attention = true}), InputError);
  EXPECT_THROW(GnnModel::load("/nonexistent/model.h5"), InputError);
}

TEST(GnnModel, GatAttentionComesWithThePredictions) {
  const GraphData g = sbm(40, 4);
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer trainer(g, config("gat"), *be, *grid);
  trainer.epoch();
  GnnModel model(trainer);
  const Inference got = model.predict(g, *be, *grid, {.attention = true});
  ASSERT_EQ(got.attention.size(), 3u);
  for (const EdgeAttention& a : got.attention) {
    EXPECT_EQ(static_cast<index_t>(a.dst.size()), g.num_edges() + g.num_nodes);
    std::map<std::pair<index_t, index_t>, double> sums;
    for (std::size_t k = 0; k < a.dst.size(); ++k)
      for (index_t h = 0; h < a.heads; ++h) sums[{a.dst[k], h}] += a.alpha[k * static_cast<std::size_t>(a.heads) + static_cast<std::size_t>(h)];
    for (const auto& [key, sum] : sums) EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

}  // namespace
}  // namespace plexus
