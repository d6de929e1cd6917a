// The hand-written backward pass against central finite differences, for every parameter of
// a 3-layer GNN of every kind (GCN in both layer orders, SAGE, GIN, GAT; all three role rotations
// run) on a *directed* graph: Â is not symmetric there, so using Â where Âᵀ belongs, or a wrong
// sign, fails this test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "models/gnn_network.hpp"
#include "plexus/graph.hpp"
#include "plexus/profiling.hpp"
#include "plexus/sparse.hpp"
#include "train/dist_loss.hpp"
#include "core/shard_layout.hpp"

namespace plexus {
namespace {

GraphData small_directed_graph() {
  GraphData g;
  g.num_nodes = 11;
  g.num_features = 5;
  g.num_classes = 3;
  g.directed = true;
  g.indptr = {0};
  for (index_t i = 0; i < g.num_nodes; ++i) {
    for (index_t j : {(i * 3 + 1) % g.num_nodes, (i * 7 + 4) % g.num_nodes})
      if (j != i) g.indices.push_back(j);
    std::sort(g.indices.begin() + g.indptr.back(), g.indices.end());
    g.indices.erase(std::unique(g.indices.begin() + g.indptr.back(), g.indices.end()), g.indices.end());
    g.indptr.push_back(static_cast<index_t>(g.indices.size()));
  }
  for (index_t k = 0; k < g.num_nodes * g.num_features; ++k)
    g.features.push_back(std::sin(0.7f * static_cast<float>(k)) + 0.1f);
  for (index_t i = 0; i < g.num_nodes; ++i) {
    g.labels.push_back(static_cast<std::int32_t>(i % 3));
    g.train_mask.push_back(i % 4 != 3);
    g.val_mask.push_back(i % 4 == 3);
    g.test_mask.push_back(0);
  }
  return g;
}

struct Harness {
  std::unique_ptr<Backend> be = make_reference_backend();
  std::unique_ptr<ProcessGrid> grid = ProcessGrid::single();
  GraphData g = small_directed_graph();
  GnnShards shards;
  std::unique_ptr<GnnNetwork> model;
  std::unique_ptr<DistLoss> loss;
  explicit Harness(const TrainConfig& cfg, const std::vector<bool>& transform_first = {}) {
    const HostCsr a_hat = gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values);
    shards = build_shards(g, a_hat, *grid, {5, 4, 6, 3}, false, transform_first);
    model = std::make_unique<GnnNetwork>(*be, *grid, shards, cfg);
    loss = std::make_unique<DistLoss>(*be, *grid, model->output_geometry(), shards);
  }
  double loss_value(Matrix& grad) { return loss->train_loss_and_grad(model->forward(3, true), grad); }
};

TrainConfig kind_config(float dropout, const GnnSpec& model) {
  TrainConfig c;
  c.dropout = dropout;
  c.seed = 7;
  c.model = model;
  return c;
}

// `noise`: the finite differences' own error per element (float32 losses differenced over 2·eps),
// allowed on top of the relative bound where a kind's gradients include some that small.
void check_gradients(const TrainConfig& cfg, float eps = 1e-3f, const std::vector<bool>& transform_first = {},
                     double noise = 0.0) {
  Harness h(cfg, transform_first);
  for (int l = 0; l < h.model->num_layers(); ++l)
    EXPECT_EQ(h.model->geometry_of_layer(l).transform_first,
              l < static_cast<int>(transform_first.size()) && transform_first[static_cast<std::size_t>(l)]);
  // Biases start at zero, so a row whose aggregated input is all zero sits exactly on a
  // ReLU kink, where central differences measure half a one-sided slope. Move every bias
  // off zero first.
  for (const ParamRef& p : h.model->parameters()) {
    if (p.decay) continue;
    std::vector<float> v(p.size);
    h.be->copy_to_host(v.data(), p.value, p.size * sizeof(float));
    for (std::size_t k = 0; k < p.size; ++k)
      if (v[k] == 0.0f) v[k] = 0.05f * std::cos(1.3f * static_cast<float>(k) + static_cast<float>(p.size));
    h.be->copy_from_host(p.value, v.data(), p.size * sizeof(float));
  }
  // GAT's scores start small (Glorot's ±√(6/(heads + F)) on small widths): the softmax is near
  // uniform and the attention vectors' gradients (a_dst's is only what the LeakyReLU's two
  // slopes make of it: a row's softmax does not change when one value is added to all its
  // scores) sit at float32's finite-difference noise. Scaled up, the attention is far from
  // uniform and every gradient is well above the noise.
  for (ModelParam& p : h.model->named_parameters())
    if (p.name.ends_with("att_src") || p.name.ends_with("att_dst")) {
      std::vector<float> v(p.slot->size());
      h.be->copy_to_host(v.data(), p.slot->data(), v.size() * sizeof(float));
      for (float& x : v) x *= 8.0f;
      p.slot->upload(v);
    }
  const LayerGeometry& out = h.model->output_geometry();
  Matrix grad(*h.be, out.out_rows.size(), out.out_cols.size());
  h.loss_value(grad);
  h.model->backward(grad, 3);
  int checked = 0;
  for (const ParamRef& p : h.model->parameters()) {
    std::vector<float> value(p.size), analytic(p.size);
    h.be->copy_to_host(value.data(), p.value, p.size * sizeof(float));
    h.be->copy_to_host(analytic.data(), p.grad, p.size * sizeof(float));
    double err2 = 0, ref2 = 0;
    for (std::size_t k = 0; k < p.size; ++k) {
      const float saved = value[k];
      Matrix scratch(*h.be, out.out_rows.size(), out.out_cols.size());
      value[k] = saved + eps;
      h.be->copy_from_host(p.value, value.data(), p.size * sizeof(float));
      const double up = h.loss_value(scratch);
      value[k] = saved - eps;
      h.be->copy_from_host(p.value, value.data(), p.size * sizeof(float));
      const double down = h.loss_value(scratch);
      value[k] = saved;
      h.be->copy_from_host(p.value, value.data(), p.size * sizeof(float));
      const double numeric = (up - down) / (2.0 * eps);
      err2 += (numeric - analytic[k]) * (numeric - analytic[k]);
      ref2 += numeric * numeric;
      ++checked;
    }
    EXPECT_GT(ref2, 0.0) << "a parameter with an all-zero gradient checks nothing";
    EXPECT_LT(std::sqrt(err2), 2e-3 * std::sqrt(ref2) + 1e-6 + noise * std::sqrt(static_cast<double>(p.size)))
        << "parameter of " << p.size << " elements: relative gradient error " << std::sqrt(err2 / ref2);
  }
  // Every element of every parameter: widths 5 -> 4 -> 6 -> 3.
  const int weights = 5 * 4 + 4 * 6 + 6 * 3, biases = 4 + 6 + 3;
  // GAT's last layer: out_heads × 3 columns of W, a_src and a_dst; its hidden ones: 4 and 6.
  const std::string& kind = cfg.model.kind();
  const int gat_last = kind == "gat" ? 3 * static_cast<int>(cfg.model.integer("out-heads")) : 0;
  const int want = kind == "gcn" || kind == "appnp" ? weights + biases
                   : kind == "sage" ? 2 * weights + biases
                   : kind == "gat"  ? (5 * 4 + 4 * 6 + 6 * gat_last) + 2 * (4 + 6 + gat_last) + biases
                                    : weights + biases + (4 * 4 + 6 * 6 + 3 * 3) + biases +
                                         (cfg.model.flag("train-eps") ? 3 : 0);
  EXPECT_EQ(checked, want);
}

TEST(GcnGradients, MatchFiniteDifferencesWithoutDropout) { check_gradients(kind_config(0.0f, GnnSpec("gcn"))); }
// Dropout masks are a pure function of (seed, epoch, layer, row, col), so the loss is a
// deterministic function of the weights and finite differences still apply.
TEST(GcnGradients, MatchFiniteDifferencesWithDropout) { check_gradients(kind_config(0.3f, GnnSpec("gcn"))); }

// Transform-first layers (Â·(H·W) + b, PyG's GCNConv), every layer and mixed with aggregate-first
// ones (5 -> 4 -> 6 -> 3: Auto's transform, aggregate, transform first, and the reverse).
TEST(GcnGradients, TransformFirstLayersMatchFiniteDifferences) {
  for (const std::vector<bool>& tf : {std::vector<bool>{true, true, true}, std::vector<bool>{true, false, true},
                                      std::vector<bool>{false, true, false}})
    for (const float dropout : {0.0f, 0.3f}) {
      SCOPED_TRACE(std::string(tf[0] ? "T" : "A") + (tf[1] ? "T" : "A") + (tf[2] ? "T" : "A") + " dropout " +
                   std::to_string(dropout));
      check_gradients(kind_config(dropout, GnnSpec("gcn")), 1e-3f, tf);
    }
}

TEST(SageGradients, MeanAndSumMatchFiniteDifferences) {
  for (const std::string a : {"mean", "sum"}) {
    const TrainConfig c = kind_config(0.3f, GnnSpec("sage").set("aggregator", a));
    SCOPED_TRACE(a);
    // With the mean a ReLU kink lies within 1e-3 of this point (the error grows with the
    // step: 3 % at 1e-3, 10 % at 1e-2); at 3e-4 the differences are clear of it and of
    // float32 rounding (which shows at 1e-4).
    check_gradients(c, a == "mean" ? 3e-4f : 1e-3f);
  }
}
TEST(SageGradients, NormalizedRowsMatchFiniteDifferences) {
  check_gradients(kind_config(0.0f, GnnSpec("sage").set("normalize", true)));
}
// GAT: 2 heads in the hidden layers (4 = 2 × 2, 6 = 2 × 3), 1 or 2 averaged in the last, with
// feature and attention dropout (masks keyed by the global entry: a fixed function of the
// weights again) and without.
TEST(GatGradients, HeadsAndAttentionDropoutMatchFiniteDifferences) {
  for (const int out_heads : {1, 2})
    for (const float dropout : {0.0f, 0.3f}) {
      const TrainConfig c = kind_config(
          dropout, GnnSpec("gat").set("heads", 2).set("out-heads", out_heads).set("attn-dropout", dropout));
      SCOPED_TRACE("out heads " + std::to_string(out_heads) + ", dropout " + std::to_string(dropout));
      // a_dst's gradients are small by nature (a row's softmax ignores a shift of all its scores:
      // only the LeakyReLU's two slopes make one of it), some at the differences' float32 noise
      // of ~3e-5 per element here: that much is allowed besides the relative bound.
      check_gradients(c, 1e-3f, {true, true, true}, 4e-5);
    }
}

// APPNP: the MLP's Linears and the propagation's K steps (0: none; 1; 3), with dropout and
// without.
TEST(AppnpGradients, StepsAndTeleportMatchFiniteDifferences) {
  for (const int steps : {0, 1, 3})
    for (const float dropout : {0.0f, 0.3f}) {
      SCOPED_TRACE("steps " + std::to_string(steps) + ", dropout " + std::to_string(dropout));
      check_gradients(kind_config(dropout, GnnSpec("appnp").set("steps", steps).set("alpha", 0.2)), 1e-3f,
                      {true, true, true});
    }
}

TEST(GinGradients, FixedAndTrainedEpsMatchFiniteDifferences) {
  for (const bool train : {false, true}) {
    TrainConfig c = kind_config(0.3f, GnnSpec("gin").set("gin-eps", 0.25).set("train-eps", train));
    // GIN's MLP puts a ReLU inside every layer: with PyTorch's Linear initialisation (biases
    // not zero) a kink lies within 1e-3 of the point for most seeds; seed 21's point is clear
    // of them (seed 7: 17 % error on one weight, shrinking with the step, so a kink).
    c.seed = 21;
    SCOPED_TRACE(train ? "trained eps" : "fixed eps");
    check_gradients(c);
  }
}

// Every Â block and its transpose is prepared for SpMM once, when the model is built (whole, or
// each row chunk with agg_chunks), and training passes prepare nothing more.
TEST(GnnNetwork, PreparesEachAdjacencyBlockOnce) {
  for (const int chunks : {1, 3}) {
    auto backend = make_reference_backend();
    Backend& be = *backend;
    KernelProfiler prof(be);
    auto grid = ProcessGrid::single();
    GraphData g = small_directed_graph();
    const HostCsr a_hat = gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values);
    GnnShards shards = build_shards(g, a_hat, *grid, {5, 4, 6, 3});
    const std::size_t blocks = shards.adj.size();
    TrainConfig cfg = kind_config(0.0f, GnnSpec("gcn"));
    cfg.agg_chunks = chunks;
    GnnNetwork model(be, *grid, shards, cfg);
    EXPECT_EQ(prof.entries().at("spmm_prepare").calls, 2u * blocks * static_cast<unsigned>(chunks));
    DistLoss loss(be, *grid, model.output_geometry(), shards);
    const LayerGeometry& out = model.output_geometry();
    Matrix grad(be, out.out_rows.size(), out.out_cols.size());
    loss.train_loss_and_grad(model.forward(1, true), grad);
    model.backward(grad, 1);
    EXPECT_EQ(prof.entries().at("spmm_prepare").calls, 2u * blocks * static_cast<unsigned>(chunks));
    EXPECT_GT(prof.entries().at("spmm").calls, 0u);
  }
}

}  // namespace
}  // namespace plexus
