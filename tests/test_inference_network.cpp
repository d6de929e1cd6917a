// A GnnNetwork built for inference (NetworkUse::Inference; LayerCommOptions::inference): for every
// kind, in fp32 and bf16, it holds no gradient memory and peaks below the training network on the
// same graph, on the CPU backend and on the shape-only one (the plans' dry runs); after a pass it
// holds no more activations than a training network under --recompute (nothing kept for
// backward); it gives the logits of the training network's evaluation forward with the same
// weights, bit for bit; and a training pass or a backward on it is a std::logic_error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/gnn_network.hpp"
#include "plan/dry_run.hpp"
#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "train/graph_shards.hpp"

namespace plexus {
namespace {

const GraphData& graph() {
  static const GraphData g = [] {
    SbmOptions o;
    o.nodes = 157;
    o.classes = 5;
    o.features = 23;
    o.avg_degree = 6;
    o.seed = 8;
    return generate_sbm(o);
  }();
  return g;
}

TrainConfig config(const GnnSpec& model, Precision precision) {
  TrainConfig c;
  c.model = model;
  c.layers = 3;
  c.hidden = 12;
  c.dropout = 0.4f;
  c.seed = 2;
  c.precision = precision;
  if (model.kind() == "gat") c.model.set("heads", 3).set("attn-dropout", 0.3);  // hidden 12 = 3 heads of 4
  return c;
}

const std::vector<GnnSpec>& kinds() {
  static const std::vector<GnnSpec> k{GnnSpec("gcn"), GnnSpec("sage").set("normalize", true),
                                      GnnSpec("gin").set("train-eps", true), GnnSpec("gat").set("out-heads", 2)};
  return k;
}

std::string name(const GnnSpec& m, Precision p) { return m.kind() + (p == Precision::BF16 ? " bf16" : " fp32"); }

// One training step's passes (forward, backward with a fixed logits gradient), then an
// evaluation pass: what a trainer's epoch allocates.
void training_epoch(Backend& be, GnnNetwork& net) {
  const Matrix& logits = net.forward(0, /*training=*/true);
  Matrix d_logits(be, logits.rows(), logits.cols());
  be.fill(d_logits.view(), 0.01f);
  net.backward(d_logits, 0);
  net.forward(0, /*training=*/false);
}

// Every parameter of `net` set to the same values whatever the network (drawn from its name).
void set_weights(GnnNetwork& net) {
  for (ModelParam& p : net.named_parameters()) {
    std::vector<float> v(p.slot->size());
    for (std::size_t k = 0; k < v.size(); ++k)
      v[k] = 0.3f * std::sin(0.7f * static_cast<float>(k) + static_cast<float>(p.name.size()));
    p.slot->upload(v);
  }
  net.weights_updated();
}

TEST(InferenceNetwork, SameLogitsAsTheTrainingNetworkWithoutGradientsOrWhatBackwardKeeps) {
  auto grid = ProcessGrid::single();
  for (const GnnSpec& m : kinds())
    for (const Precision p : {Precision::FP32, Precision::BF16}) {
      const std::string what = name(m, p);
      const TrainConfig cfg = config(m, p);
      auto train_be = make_cpu_backend(1), infer_be = make_cpu_backend(1);
      GnnShards s1 = shards_of_graph(graph(), cfg, *grid, /*for_training=*/true, false);
      GnnShards s2 = shards_of_graph(graph(), cfg, *grid, /*for_training=*/false, false);
      GnnNetwork trained(*train_be, *grid, s1, cfg);
      GnnNetwork inferring(*infer_be, *grid, s2, cfg, NetworkUse::Inference);
      ASSERT_EQ(trained.named_parameters().size(), inferring.named_parameters().size()) << what;
      for (ModelParam& q : inferring.named_parameters()) EXPECT_EQ(q.slot->grad(), nullptr) << what << ": " << q.name;

      training_epoch(*train_be, trained);  // (its buffers as a trainer leaves them)
      set_weights(trained);
      set_weights(inferring);
      const std::vector<float> want = trained.forward(1, /*training=*/false).to_host();
      const std::vector<float> got = inferring.forward(1, /*training=*/false).to_host();
      ASSERT_EQ(got.size(), want.size()) << what;
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << what << ": logits bit for bit";
      EXPECT_EQ(inferring.forward(2, /*training=*/false).to_host(), got) << what << ": a second pass";
      // The attention coefficients are computed again from what the pass kept.
      if (m.kind() == "gat") {
        const std::vector<EdgeAttention> a = trained.attention(), b = inferring.attention();
        ASSERT_EQ(a.size(), b.size()) << what;
        for (std::size_t l = 0; l < a.size(); ++l) EXPECT_EQ(a[l].alpha, b[l].alpha) << what << ": layer " << l;
      }

      std::printf("%s: peak tensor bytes inference %zu, training %zu (%.3f)\n", what.c_str(), infer_be->peak_bytes(),
                  train_be->peak_bytes(),
                  static_cast<double>(infer_be->peak_bytes()) / static_cast<double>(train_be->peak_bytes()));
      EXPECT_EQ(infer_be->peak_bytes(MemoryKind::Gradients), 0u) << what;
      EXPECT_GT(train_be->peak_bytes(MemoryKind::Gradients), 0u) << what;
      EXPECT_LT(infer_be->peak_bytes(), train_be->peak_bytes()) << what;
      EXPECT_LT(infer_be->peak_bytes(MemoryKind::Activations), train_be->peak_bytes(MemoryKind::Activations)) << what;
      EXPECT_EQ(infer_be->peak_bytes(MemoryKind::Parameters), train_be->peak_bytes(MemoryKind::Parameters)) << what;

      // Nothing kept for backward: no more activations after a pass than a network that
      // recomputes them holds after its evaluation pass (which also holds backward's buffers).
      TrainConfig re = cfg;
      re.recompute = true;
      auto re_be = make_cpu_backend(1);
      GnnShards s3 = shards_of_graph(graph(), re, *grid, /*for_training=*/true, false);
      GnnNetwork recomputing(*re_be, *grid, s3, re);
      training_epoch(*re_be, recomputing);
      EXPECT_LE(infer_be->live_bytes(MemoryKind::Activations), re_be->live_bytes(MemoryKind::Activations)) << what;

      EXPECT_THROW(inferring.forward(3, /*training=*/true), std::logic_error) << what;
      Matrix d(*infer_be, 1, 1);
      EXPECT_THROW(inferring.backward(d, 3), std::logic_error) << what;
    }
}

// The same networks dry, on the shape-only backend of a plan: the inference network's memory is
// what the real one allocates, and as on the CPU it holds no gradients and peaks lower.
TEST(InferenceNetwork, OnTheShapeBackendNoGradientsAndALowerPeak) {
  for (const GnnSpec& m : kinds())
    for (const Precision p : {Precision::FP32, Precision::BF16}) {
      const std::string what = name(m, p);
      const TrainConfig cfg = config(m, p);
      const auto peaks = [&](NetworkUse use) {
        DryRun run(GridShape{1, 1, 1}, 1, 0, Transport::Mpi);
        GnnShards s = shards_of_graph(graph(), cfg, run.grid(), use == NetworkUse::Train, false);
        GnnNetwork net(run.backend(), run.grid(), s, cfg, use);
        if (use == NetworkUse::Train)
          training_epoch(run.backend(), net);
        else
          net.forward(0, /*training=*/false);
        return std::pair{run.backend().peak_bytes(), run.backend().peak_bytes(MemoryKind::Gradients)};
      };
      const auto [train_peak, train_grads] = peaks(NetworkUse::Train);
      const auto [infer_peak, infer_grads] = peaks(NetworkUse::Inference);
      EXPECT_EQ(infer_grads, 0u) << what;
      EXPECT_GT(train_grads, 0u) << what;
      EXPECT_LT(infer_peak, train_peak) << what;

      // The CPU backend allocates what the shape backend counts.
      auto grid = ProcessGrid::single();
      auto be = make_cpu_backend(1);
      GnnShards s = shards_of_graph(graph(), cfg, *grid, false, false);
      GnnNetwork net(*be, *grid, s, cfg, NetworkUse::Inference);
      net.forward(0, /*training=*/false);
      EXPECT_EQ(be->peak_bytes(), infer_peak) << what;
    }
}

}  // namespace
}  // namespace plexus
