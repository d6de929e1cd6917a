// Link prediction composed from its pieces on the grid, before the task is wired into the
// trainer (docs/link-prediction.md): a GNN encoder of every kind whose last layer is the
// embedding, the dot decoder (src/pmm/dot_link_decoder_3d.hpp), binary cross-entropy with
// logits over the training links and as many fresh negatives (keyed by global index), Adam.
//  * On every grid of 1 to 8 ranks (threads), 20 epochs with dropout on: each epoch's loss
//    equals one rank's within 1e-5 relative.
//  * It learns: on a planted SBM, the held-out links' ROC-AUC after training is high.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "models/gnn_network.hpp"
#include "optim/adam.hpp"
#include "plexus/convert.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/rng.hpp"
#include "link_graphs.hpp"
#include "pmm/dot_link_decoder_3d.hpp"
#include "train/graph_shards.hpp"
#include "train/tasks/link_metrics.hpp"
#include "train/tasks/link_passes.hpp"
#include "train/tasks/negative_pairs.hpp"

namespace plexus {
namespace {

struct LinkData {
  GraphData graph;  // the training links only
  NodePairList train;
  LinkSplit split;
};

using test::link_sbm;

LinkData link_data(index_t nodes, std::uint64_t seed, std::int32_t communities = 3, double signal = 0.3) {
  LinkData d{test::with_edge_features(generate_sbm(link_sbm(nodes, seed, communities, signal))), {}, {}};
  d.split = random_link_split(d.graph, 0.05, 0.1, seed);
  const GraphData& g = d.graph;
  for (index_t u = 0; u < g.num_nodes; ++u)
    for (index_t e = g.indptr[static_cast<std::size_t>(u)]; e < g.indptr[static_cast<std::size_t>(u) + 1]; ++e)
      if (u < g.indices[static_cast<std::size_t>(e)]) {
        d.train.u.push_back(u);
        d.train.v.push_back(g.indices[static_cast<std::size_t>(e)]);
      }
  // The encoder's last layer is the embedding: its width stands where the classes would.
  d.graph.num_classes = 8;
  d.graph.labels.assign(static_cast<std::size_t>(g.num_nodes), -1);
  return d;
}

struct RunResult {
  std::vector<double> losses;
  double test_auc = 0;
  double test_hits3 = 0;  // Hits@3 of the test links against their negatives
  double test_mrr8 = 0;   // MRR of each test link (u, v) against 8 negatives (u, w) of its own
};

// Where link i goes in an epoch's order, by the documented key alone (docs/link-prediction.md,
// "Edge batches"): a 4-round Feistel network over the smallest even number of bits (≥ 2)
// covering n, walked until it lands in [0, n).
std::int64_t documented_place(std::uint64_t seed, std::uint32_t epoch, std::int64_t n, std::int64_t i) {
  int bits = 2;
  while ((std::int64_t{1} << bits) < n) bits += 2;
  const int h = bits / 2;
  const std::uint64_t mask = (std::uint64_t{1} << h) - 1;
  const DropoutKey key{seed, epoch, 0x11E8};
  std::uint64_t x = static_cast<std::uint64_t>(i);
  do {
    std::uint64_t l = x >> h, r = x & mask;
    for (std::uint32_t round = 0; round < 4; ++round) {
      const std::uint64_t next = l ^ (counter_block(key, r, round).v[0] & mask);
      l = r;
      r = next;
    }
    x = (l << h) | r;
  } while (x >= static_cast<std::uint64_t>(n));
  return static_cast<std::int64_t>(x);
}

// Every rank's part of `epochs` epochs; the losses (summed over the grid) and, at the end, the
// test links' ROC-AUC against their negatives. Full-batch, or with `batch` > 0 links a step:
// each epoch's links in the documented order, batch b the places [b·batch, (b+1)·batch) with
// the epoch's negatives at the same places, a pass and an Adam step each, dropout keyed by the
// step's index; the epoch's loss the batches' losses weighed by their links.
RunResult train_links(ProcessGrid& grid, const LinkData& d, const std::string& kind, int epochs, float dropout,
                      std::int64_t batch = 0) {
  auto be = make_cpu_backend(1);
  TrainConfig cfg;
  cfg.model = test::model_spec(kind);
  cfg.layers = 2;
  cfg.hidden = 16;
  cfg.dropout = dropout;
  cfg.weight_decay = 0;
  cfg.lr = 0.01f;
  cfg.seed = 5;
  GnnShards shards = shards_of_graph(d.graph, cfg, grid, false, false);
  GnnNetwork net(*be, grid, shards, cfg);
  AdamParams hp;
  hp.lr = cfg.lr;
  Adam adam(*be, net.parameters(), hp);
  const LayerGeometry last = net.output_geometry();
  DotLinkDecoder3D dec(*be, grid, last, d.graph.num_nodes);
  const auto positives = static_cast<std::int64_t>(d.train.size());
  RunResult out;
  Matrix z(*be, last.out_rows.size(), last.out_cols.size());
  if (batch > 0) {
    const std::int64_t steps = (positives + batch - 1) / batch;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      std::vector<std::int64_t> at(static_cast<std::size_t>(positives));  // the link at each place
      for (std::int64_t i = 0; i < positives; ++i)
        at[static_cast<std::size_t>(documented_place(cfg.seed, static_cast<std::uint32_t>(epoch), positives, i))] = i;
      double loss = 0;
      for (std::int64_t b = 0; b < steps; ++b) {
        const int pass = static_cast<int>(epoch * steps + b);
        const std::int64_t first = b * batch, n = std::min(batch, positives - first);
        NodePairList links;
        for (std::int64_t p = first; p < first + n; ++p) {
          links.u.push_back(d.train.u[static_cast<std::size_t>(at[static_cast<std::size_t>(p)])]);
          links.v.push_back(d.train.v[static_cast<std::size_t>(at[static_cast<std::size_t>(p)])]);
        }
        be->copy(net.forward(pass, true).view(), z.view());
        Matrix dz(*be, z.rows(), z.cols());
        loss += link_loss_and_grad(
                    *be, grid, dec, z, links,
                    negative_pairs(cfg.seed, static_cast<std::uint32_t>(epoch), d.graph.num_nodes, first, first + n), dz) *
                static_cast<double>(n) / static_cast<double>(positives);
        net.backward(dz, pass);
        adam.step();
        net.weights_updated();
      }
      out.losses.push_back(loss);
    }
  }
  for (int epoch = 0; batch == 0 && epoch < epochs; ++epoch) {
    be->copy(net.forward(epoch, true).view(), z.view());
    Matrix dz(*be, z.rows(), z.cols());
    out.losses.push_back(link_loss_and_grad(
        *be, grid, dec, z, d.train,
        negative_pairs(cfg.seed, static_cast<std::uint32_t>(epoch), d.graph.num_nodes, 0, positives), dz));
    net.backward(dz, epoch);
    adam.step();
    net.weights_updated();
  }
  // The test links against their negatives, scored once.
  be->copy(net.forward(epochs, false).view(), z.view());
  out.test_auc = link_roc_auc(*be, grid, dec, z, d.split.test_pos, d.split.test_neg);
  const std::vector<double> s = link_scores(*be, grid, dec, z, d.split.test_pos, d.split.test_neg);
  const auto p = static_cast<std::ptrdiff_t>(d.split.test_pos.size());
  out.test_hits3 = hits_at(std::vector<float>(s.begin(), s.begin() + p), std::vector<float>(s.begin() + p, s.end()), 3);
  // MRR's negatives by the documented key (docs/link-prediction.md, "Random streams"): link i's
  // j-th is (u_i, v of draw 8i + j of the MRR stream, its epoch word 2 for the test split).
  const std::int64_t k = 8, links = static_cast<std::int64_t>(d.split.test_pos.size());
  NodePairList own = negative_pairs(cfg.seed, 2, d.graph.num_nodes, 0, links * k, kMrrNegativeStream);
  for (std::int64_t i = 0; i < links * k; ++i) own.u[static_cast<std::size_t>(i)] = d.split.test_pos.u[static_cast<std::size_t>(i / k)];
  const std::vector<double> o = link_scores(*be, grid, dec, z, d.split.test_pos, own);
  out.test_mrr8 = mrr(std::vector<float>(o.begin(), o.begin() + p), std::vector<float>(o.begin() + p, o.end()), 8);
  return out;
}

RunResult on_grid(GridShape shape, const LinkData& d, const std::string& kind, int epochs, float dropout,
                  std::int64_t batch = 0) {
  RunResult result;
  std::mutex m;
  run_in_process_grid(shape, 1, [&](ProcessGrid& grid) {
    RunResult r = train_links(grid, d, kind, epochs, dropout, batch);
    if (grid.rank() == 0) {
      std::lock_guard<std::mutex> lock(m);
      result = r;
    }
  });
  return result;
}

TEST(LinkTraining, EveryKindOnEveryGridUpTo8RanksLosesAsOneRank) {
  const LinkData d = link_data(61, 3);
  const std::vector<GridShape> grids{{2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {3, 1, 1}, {1, 1, 3}, {2, 2, 1}, {1, 2, 2},
                                     {2, 1, 2}, {5, 1, 1}, {1, 5, 1}, {3, 2, 1}, {1, 2, 3}, {7, 1, 1}, {1, 1, 7},
                                     {2, 2, 2}, {4, 2, 1}, {1, 2, 4}, {8, 1, 1}};
  for (const std::string& kind : test::model_names()) {
    const RunResult one = on_grid({1, 1, 1}, d, kind, 20, 0.5f);
    ASSERT_EQ(one.losses.size(), 20u);
    for (const double l : one.losses) ASSERT_TRUE(std::isfinite(l)) << kind;
    EXPECT_LT(one.losses.back(), one.losses.front()) << kind << ": the loss does not fall";
    for (const GridShape g : grids) {
      const RunResult r = on_grid(g, d, kind, 20, 0.5f);
      for (std::size_t e = 0; e < one.losses.size(); ++e)
        ASSERT_NEAR(r.losses[e], one.losses[e], 1e-5 * std::abs(one.losses[e]))
            << kind << " on " << g.str() << ", epoch " << e;
    }
  }
}

// The trainer's link task (TrainConfig::task = Link) runs exactly these passes: the split of
// the configuration's seed, each epoch's negatives by the documented key, the loss and Adam —
// its losses are this loop's, and its test ROC-AUC the loop's after the same epochs.
TEST(LinkTraining, TheTrainersLinkTaskRunsThesePasses) {
  const LinkData d = link_data(61, 5);  // (split with seed 5: train_links's TrainConfig::seed)
  for (const std::string kind : {"gcn", "sage"}) {
    const RunResult want = on_grid({1, 1, 1}, d, kind, 8, 0.5f);
    TrainConfig c;
    c.task = GnnTask::Link;
    c.model = GnnSpec(kind);
    c.hidden = 16;
    c.link.embedding_width = 8;  // (link_data's stand-in class count)
    c.dropout = 0.5f;
    c.weight_decay = 0;
    c.lr = 0.01f;
    c.seed = 5;
    c.epochs = 8;
    c.link.hits_k = 3;
    c.link.mrr_negatives = 8;
    auto be = make_cpu_backend(1);
    auto grid = ProcessGrid::single();
    GnnTrainer t(generate_sbm(link_sbm(61, 5)), c, *be, *grid);
    for (int e = 0; e < c.epochs; ++e) {
      const EpochMetrics m = t.epoch();
      EXPECT_NEAR(m.loss, want.losses[static_cast<std::size_t>(e)], 1e-6 * std::abs(m.loss)) << kind << ", epoch " << e;
      if (e + 1 == c.epochs) {
        EXPECT_NEAR(m.test_auc, want.test_auc, 1e-9) << kind;
        EXPECT_NEAR(m.test_hits, want.test_hits3, 1e-9) << kind;
        EXPECT_GT(want.test_hits3, 0) << kind;
        EXPECT_LT(want.test_hits3, 1) << kind;
        EXPECT_NEAR(m.test_mrr, want.test_mrr8, 1e-9) << kind;
        EXPECT_GT(want.test_mrr8, 1.0 / 9) << kind;  // (1/9 is the lowest rank among 8 negatives)
        EXPECT_LT(want.test_mrr8, 1) << kind;
      }
    }
  }
}

// The trainer's link task with train_links's model (GCN 16 -> 8, dropout 0.5, Adam 0.01, seed 5).
TrainConfig pieces_config(int epochs) {
  TrainConfig c;
  c.task = GnnTask::Link;
  c.hidden = 16;
  c.link.embedding_width = 8;
  c.dropout = 0.5f;
  c.weight_decay = 0;
  c.lr = 0.01f;
  c.seed = 5;
  c.epochs = epochs;
  return c;
}

// A split that brings each link's own negatives (LinkSplit::negatives_per_link, as
// ogbl-citation2's) ranks each link against them without --mrr-negatives: given the documented
// MRR draws as its negatives, the trainer's MRR is the loop's, its losses untouched.
TEST(LinkTraining, ASplitsOwnNegativesRankItsLinks) {
  const LinkData d = link_data(61, 5);
  const RunResult want = on_grid({1, 1, 1}, d, "gcn", 8, 0.5f);
  const auto own = [&](const NodePairList& pos, std::uint32_t split) {
    const auto n = static_cast<std::int64_t>(pos.size()) * 8;
    NodePairList o = negative_pairs(5, split, d.graph.num_nodes, 0, n, kMrrNegativeStream);
    for (std::int64_t i = 0; i < n; ++i) o.u[static_cast<std::size_t>(i)] = pos.u[static_cast<std::size_t>(i / 8)];
    return o;
  };
  LinkSplit s = d.split;
  s.val_neg = own(s.val_pos, 1);
  s.test_neg = own(s.test_pos, 2);
  s.negatives_per_link = 8;
  s.as_published = true;  // (a drawn w may be a link)
  const TrainConfig c = pieces_config(8);
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainingData data;
  data.order.in_memory = true;
  data.whole = d.graph;
  data.held_out = s;
  GnnTrainer t(std::move(data), c, *be, *grid);
  for (int e = 0; e < c.epochs; ++e) {
    const EpochMetrics m = t.epoch();
    EXPECT_NEAR(m.loss, want.losses[static_cast<std::size_t>(e)], 1e-6 * std::abs(m.loss)) << "epoch " << e;
    if (e + 1 == c.epochs) {
      EXPECT_NEAR(m.test_mrr, want.test_mrr8, 1e-9);
      EXPECT_GT(want.test_mrr8, 1.0 / 9);
      EXPECT_LT(want.test_mrr8, 1);
      EXPECT_TRUE(std::isfinite(m.val_mrr));
    }
  }
}

// The trainer's link task of `c` on the planted graph of `nodes` nodes: rank 0's epochs on grid `g`.
std::vector<EpochMetrics> trainer_epochs(GridShape g, index_t nodes, const TrainConfig& c) {
  std::vector<EpochMetrics> got;
  std::mutex m;
  run_in_process_grid(g, 1, [&](ProcessGrid& grid) {
    auto be = make_cpu_backend(1);
    GnnTrainer t(generate_sbm(link_sbm(nodes, 5)), c, *be, grid);
    std::vector<EpochMetrics> mine;
    for (int e = 0; e < c.epochs; ++e) mine.push_back(t.epoch());
    if (grid.rank() == 0) {
      std::lock_guard<std::mutex> lock(m);
      got = mine;
    }
  });
  return got;
}
// Each epoch's loss within 1e-5 relative of the pieces' and the last test ROC-AUC within 1e-6.
void expect_pieces(const std::vector<EpochMetrics>& got, const RunResult& want, const std::string& where) {
  ASSERT_EQ(got.size(), want.losses.size()) << where;
  for (std::size_t e = 0; e < got.size(); ++e)
    EXPECT_NEAR(got[e].loss, want.losses[e], 1e-5 * want.losses[e]) << where << ", epoch " << e;
  EXPECT_NEAR(got.back().test_auc, want.test_auc, 1e-6) << where;
}

// With edge batches (LinkConfig::edge_batch) the trainer runs the batches of the documented
// order: each epoch's loss is the loop's above, on one rank and on a grid, with dropout on (a mask
// per step), an uneven last batch, and Adam stepping once a batch; the test ROC-AUC after them
// is the loop's.
TEST(LinkTraining, EdgeBatchesAreTheDocumentedOrdersBatches) {
  const LinkData d = link_data(61, 5);
  const std::int64_t batch = 23;
  ASSERT_NE(d.train.size() % batch, 0u);
  ASSERT_GT(d.train.size(), 3 * batch);
  const RunResult want = on_grid({1, 1, 1}, d, "gcn", 4, 0.5f, batch);
  const RunResult full = on_grid({1, 1, 1}, d, "gcn", 4, 0.5f);
  EXPECT_NE(want.losses[1], full.losses[1]);  // (batches do train otherwise)
  TrainConfig c = pieces_config(4);
  c.link.edge_batch = batch;
  for (const GridShape g : {GridShape{1, 1, 1}, GridShape{2, 1, 2}, GridShape{1, 3, 1}})
    expect_pieces(trainer_epochs(g, 61, c), want, g.str());
}

// On a graph of more training links than the task draws and cuts to blocks at a time (65,536),
// its chunks make the whole draw: the loss of every epoch, the test ROC-AUC and an MRR of 8
// negatives a link (more than one chunk too) equal the pieces' on whole lists, on one rank and
// on a grid.
TEST(LinkTraining, PairsDrawnInChunksAreTheWholeDraw) {
  const LinkData d = link_data(30000, 5);
  ASSERT_GT(d.train.size(), 65536u * 1.1);
  ASSERT_GT(d.split.test_pos.size() * 8, 65536u * 1.05);
  const RunResult want = on_grid({1, 1, 1}, d, "gcn", 2, 0.5f);
  TrainConfig c = pieces_config(2);
  c.link.mrr_negatives = 8;  // (train_links's test_mrr8)
  for (const GridShape g : {GridShape{1, 1, 1}, GridShape{2, 1, 2}}) {
    const std::vector<EpochMetrics> got = trainer_epochs(g, 30000, c);
    expect_pieces(got, want, g.str());
    EXPECT_NEAR(got.back().test_mrr, want.test_mrr8, 1e-6) << g.str();
  }
}

TEST(LinkTraining, AGcnLearnsThePlantedLinks) {
  // Ten communities (most uniform negatives join two), features that tell them apart.
  const LinkData d = link_data(400, 11, 10, 1.0);
  const RunResult r = on_grid({2, 1, 2}, d, "gcn", 100, 0.0f);
  EXPECT_GT(r.test_auc, 0.85) << "test ROC-AUC after 100 epochs";
  EXPECT_LT(r.losses.back(), 0.5 * r.losses.front());
}

// The whole chain — encoder, decoder, loss — differentiated by backward, against central
// differences of the loss in every parameter of every kind (one rank; the grids equal it above).
TEST(LinkTraining, EveryKindsGradientMatchesFiniteDifferences) {
  const LinkData d = link_data(24, 5);
  for (const std::string& kind : test::model_names()) {
    auto grid = ProcessGrid::single();
    auto be = make_cpu_backend(1);
    TrainConfig cfg;
    cfg.model = test::model_spec(kind);
    cfg.layers = 2;
    cfg.hidden = 8;  // (a multiple of the GAT's heads)
    cfg.dropout = 0;
    cfg.weight_decay = 0;  // the loss alone
    // GIN's MLP has a ReLU inside every layer and biases that are not zero: a kink lies within
    // the step of most points (as in GinGradients, tests/test_gcn_gradients.cpp); this seed's
    // point is clear of them.
    if (kind == "gin") cfg.seed = 21;
    GnnShards shards = shards_of_graph(d.graph, cfg, *grid, false, false);
    GnnNetwork net(*be, *grid, shards, cfg);
    const LayerGeometry last = net.output_geometry();
    DotLinkDecoder3D dec(*be, *grid, last, d.graph.num_nodes);
    const NodePairList neg = negative_pairs(1, 0, d.graph.num_nodes, 0, static_cast<std::int64_t>(d.train.size()));
    Matrix z(*be, last.out_rows.size(), last.out_cols.size());
    const auto loss = [&](bool backward) {
      net.weights_updated();
      be->copy(net.forward(0, true).view(), z.view());
      Matrix dz(*be, z.rows(), z.cols());
      const double l = link_loss_and_grad(*be, *grid, dec, z, d.train, neg, dz);
      if (backward) net.backward(dz, 0);
      return l;
    };
    loss(true);
    const std::vector<ParamRef> params = net.parameters();
    std::vector<std::vector<float>> grads;
    for (const ParamRef& p : params) grads.emplace_back(p.grad, p.grad + p.size);
    int checked = 0;
    for (std::size_t k = 0; k < params.size(); ++k)
      for (std::size_t j = 0; j < params[k].size; j += std::max<std::size_t>(1, params[k].size / 5)) {
        float& x = params[k].value[j];
        const float x0 = x;
        x = x0 + 1e-3f;
        const double up = loss(false);
        const float xu = x;
        x = x0 - 1e-3f;
        const double down = loss(false);
        const float xd = x;
        x = x0;
        const double fd = (up - down) / (static_cast<double>(xu) - xd);
        EXPECT_NEAR(grads[k][j], fd, 2e-4 + 0.05 * std::abs(fd))
            << kind << ": parameter " << k << " (" << net.named_parameters()[k].name << ")[" << j << "]";
        ++checked;
      }
    EXPECT_GT(checked, 10) << kind;
  }
}

}  // namespace
}  // namespace plexus
