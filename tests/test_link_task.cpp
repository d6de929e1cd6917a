// The link task through the trainer (TrainConfig::task = Link, src/train/tasks/link_prediction.*):
// every kind on grids of 2 to 8 ranks equals one rank epoch by epoch (losses and ROC-AUCs), the
// held-out links never reach message passing, the best epoch is the one its rule names, a GCN
// learns a planted graph's held-out links, the options it does not take are refused, and the
// validation loss is the cross-entropy of the gathered scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_model.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/io.hpp"
#include "plexus/link_split.hpp"
#include "link_graphs.hpp"
#include "train/graph_shards.hpp"
#include "train/tasks/link_metrics.hpp"
#include "train/tasks/link_passes.hpp"

namespace plexus {
namespace {

GraphData planted(index_t nodes, std::uint64_t seed, double signal = 0.3, std::int32_t communities = 3) {
  return test::with_edge_features(generate_sbm(test::link_sbm(nodes, seed, communities, signal)));
}

TrainConfig link_config(const std::string& kind, int epochs, float dropout) {
  TrainConfig c;
  c.task = GnnTask::Link;
  c.model = kind.starts_with("gat") ? test::model_spec(kind).set("heads", 2) : test::model_spec(kind);
  c.hidden = 12;
  c.link.embedding_width = 7;  // uneven over every axis of up to 8 ranks
  c.epochs = epochs;
  c.dropout = dropout;
  c.lr = 0.02f;
  c.weight_decay = 0;
  c.seed = 9;
  return c;
}

struct LinkRun {
  std::vector<double> losses, val_auc, test_auc, val_loss, val_mrr;
  std::int64_t best = -1;
};

LinkRun train(const GraphData& g, const TrainConfig& c, ProcessGrid& grid) {
  auto be = make_cpu_backend(1);
  GnnTrainer t(g, c, *be, grid);
  LinkRun r;
  for (int e = 0; e < c.epochs; ++e) {
    const EpochMetrics m = t.epoch();
    r.losses.push_back(m.loss);
    r.val_auc.push_back(m.val_auc);
    r.test_auc.push_back(m.test_auc);
    r.val_loss.push_back(m.val_loss);
    r.val_mrr.push_back(m.val_mrr);
  }
  r.best = t.best().epoch;
  return r;
}

// Every rank of each grid trains as one rank did (`want`): each epoch's loss within 1e-5
// relative, its ROC-AUCs within 2e-3 and (with `val_loss`) its validation loss within 1e-5.
void expect_grids_equal(const GraphData& g, const TrainConfig& c, const std::vector<GridShape>& shapes, const LinkRun& want,
                        bool val_loss = false) {
  for (const GridShape s : shapes) {
    SCOPED_TRACE(s.str());
    std::mutex mu;
    std::vector<LinkRun> got;
    run_in_process_grid(s, 1, [&](ProcessGrid& grid) {
      LinkRun r = train(g, c, grid);
      std::lock_guard<std::mutex> lock(mu);
      got.push_back(std::move(r));
    });
    ASSERT_EQ(got.size(), static_cast<std::size_t>(s.size()));
    for (const LinkRun& r : got)
      for (std::size_t e = 0; e < want.losses.size(); ++e) {
        EXPECT_NEAR(r.losses[e], want.losses[e], 1e-5 * std::abs(want.losses[e])) << "epoch " << e;
        EXPECT_NEAR(r.val_auc[e], want.val_auc[e], 2e-3) << "epoch " << e;
        EXPECT_NEAR(r.test_auc[e], want.test_auc[e], 2e-3) << "epoch " << e;
        if (val_loss) {
          EXPECT_NEAR(r.val_loss[e], want.val_loss[e], 1e-5 * std::abs(want.val_loss[e])) << "epoch " << e;
        }
      }
  }
}

// A checkpoint of `c`'s first `first_epochs` epochs, resumed with `c`: the remaining epochs'
// losses are `want`'s, bit for bit. Returns the checkpoint's path.
std::string expect_resumes(const GraphData& g, const TrainConfig& c, int first_epochs, const LinkRun& want,
                           const std::string& name) {
  auto single = ProcessGrid::single();
  const std::string path = testing::TempDir() + "/" + name;
  {
    auto be = make_cpu_backend(1);
    TrainConfig first = c;
    first.epochs = first_epochs;
    GnnTrainer t(g, first, *be, *single);
    t.run();
    t.save(path);
  }
  auto be = make_cpu_backend(1);
  GnnTrainer t(g, c, *be, *single);
  t.resume(path);
  for (int e = first_epochs; e < c.epochs; ++e) EXPECT_EQ(t.epoch().loss, want.losses[static_cast<std::size_t>(e)]) << e;
  return path;
}

// Resuming `path` with `c` changed by `change` is refused, in words naming `named`.
void expect_resume_refused(const GraphData& g, TrainConfig c, const std::function<void(TrainConfig&)>& change,
                           const std::string& path, const std::string& named) {
  auto single = ProcessGrid::single();
  auto be = make_cpu_backend(1);
  change(c);
  GnnTrainer t(g, c, *be, *single);
  try {
    t.resume(path);
    ADD_FAILURE() << "resumed with another " << named;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
  }
}

TEST(LinkTask, EveryKindOnGridsEqualsOneRank) {
  const GraphData g = planted(61, 4);
  const std::vector<GridShape> shapes = {{2, 1, 1}, {1, 2, 1}, {1, 1, 3}, {2, 2, 1}, {1, 2, 2}, {2, 1, 3}, {2, 2, 2}, {1, 1, 8}};
  for (const std::string& kind : test::model_names()) {
    SCOPED_TRACE(kind);
    const TrainConfig c = link_config(kind, 6, 0.3f);
    auto single = ProcessGrid::single();
    const LinkRun want = train(g, c, *single);
    for (double l : want.losses) ASSERT_TRUE(std::isfinite(l));
    expect_grids_equal(g, c, shapes, want, /*val_loss=*/true);
  }
}

// A graph balanced in memory (--balance permute, METIS) moves the pairs with its nodes, and the
// negatives the task draws as pairs of the input's nodes: without dropout (whose masks follow
// the rows) a balanced run's losses, ROC-AUCs and MRRs are the input order's; with it, every grid
// of a permuted run equals its one rank (METIS orders each grid apart: it is checked on one).
TEST(LinkTask, BalancedRunsMoveThePairsWithTheNodes) {
  const GraphData g = planted(61, 4);
  // (Three layers: the last layer's output rows are in the permutation's other order.)
  for (const auto& [kind, layers] : {std::pair{"gcn", 2}, std::pair{"sage", 3}, std::pair{"gat", 2}, std::pair{"gcn", 3}}) {
    SCOPED_TRACE(std::string(kind) + ", " + std::to_string(layers) + " layers");
    TrainConfig c = link_config(kind, 5, 0.0f);
    c.layers = layers;
    c.link.mrr_negatives = 4;
    auto single = ProcessGrid::single();
    const LinkRun want = train(g, c, *single);
    for (const Balance b : {Balance::kPermute, Balance::kMetis}) {
      TrainConfig balanced = c;
      balanced.balance = b;
      const LinkRun got = train(g, balanced, *single);
      for (std::size_t e = 0; e < want.losses.size(); ++e) {
        EXPECT_NEAR(got.losses[e], want.losses[e], 1e-5 * std::abs(want.losses[e])) << balance_name(b) << " epoch " << e;
        EXPECT_NEAR(got.val_auc[e], want.val_auc[e], 1e-6) << balance_name(b) << " epoch " << e;
        EXPECT_NEAR(got.test_auc[e], want.test_auc[e], 1e-6) << balance_name(b) << " epoch " << e;
        EXPECT_NEAR(got.val_mrr[e], want.val_mrr[e], 1e-6) << balance_name(b) << " epoch " << e;
      }
    }
  }
  TrainConfig c = link_config("gcn", 5, 0.3f);
  c.balance = Balance::kPermute;
  auto single = ProcessGrid::single();
  const LinkRun want = train(g, c, *single);
  expect_grids_equal(g, c, {{2, 1, 1}, {1, 2, 2}, {2, 2, 2}, {1, 1, 3}}, want, /*val_loss=*/true);
}

// With edge batches every grid still equals one rank, epoch by epoch, for kinds with dropout on
// (a GAT with attention dropout too); a batch as large as the training links (or larger) is the
// full batch, bit for bit; a run resumed from a checkpoint mid-way continues as uninterrupted,
// and one resumed with another batch size is refused.
TEST(LinkTask, EdgeBatchesOnGridsEqualOneRankAndResume) {
  const GraphData g = planted(61, 4);
  const std::vector<GridShape> shapes = {{2, 1, 1}, {1, 1, 3}, {2, 2, 1}, {1, 2, 2}, {2, 1, 3}, {2, 2, 2}};
  for (const std::string kind : {"gcn", "gat"}) {
    SCOPED_TRACE(kind);
    TrainConfig c = link_config(kind, 4, 0.3f);
    if (kind == "gat") c.model.set("attn-dropout", 0.2);
    c.link.edge_batch = 17;
    auto single = ProcessGrid::single();
    const LinkRun want = train(g, c, *single);
    for (double l : want.losses) ASSERT_TRUE(std::isfinite(l));
    expect_grids_equal(g, c, shapes, want);
  }
  // The full batch: 0, or a batch of at least every training link.
  auto single = ProcessGrid::single();
  TrainConfig c = link_config("sage", 3, 0.3f);
  const LinkRun full = train(g, c, *single);
  const auto links = static_cast<std::int64_t>(shards_of_graph(g, c, *single, true, false).links.train.size());
  for (const std::int64_t b : {links, links + 1, std::int64_t{1} << 30}) {
    c.link.edge_batch = b;
    EXPECT_EQ(train(g, c, *single).losses, full.losses) << b;
  }
  c.link.edge_batch = links - 1;  // two steps: another run
  EXPECT_NE(train(g, c, *single).losses, full.losses);

  // Resumed mid-way (Adam's steps count the batches), and refused with another batch size.
  c = link_config("gcn", 6, 0.3f);
  c.link.edge_batch = 9;
  const std::string path = expect_resumes(g, c, 3, train(g, c, *single), "link-batches-checkpoint.h5");
  EXPECT_EQ(read_gnn_model_info_h5(path).config.link.edge_batch, 9);
  expect_resume_refused(g, c, [](TrainConfig& o) { o.link.edge_batch = 10; }, path, "TrainConfig.link.edge_batch");
}

// The MLP decoder (OGB's LinkPredictor) through the trainer: every kind on every grid equals one
// rank epoch by epoch over 20 epochs with dropout on, the loss falls, a run resumed from a checkpoint continues as the
// uninterrupted one (and one resumed with another decoder or width is refused); the saved model
// scores given pairs alike on every grid, as the trainer's own weights do, and refuses a top-K
// search (which ranks by the dot product).
TEST(LinkTask, MlpDecoderOnGridsResumesAndScoresPairs) {
  const GraphData g = planted(61, 4);
  const std::vector<GridShape> shapes = {{2, 1, 1}, {1, 2, 1}, {1, 1, 3}, {2, 2, 1}, {5, 1, 1}, {2, 1, 3}, {1, 7, 1}, {2, 2, 2}};
  const auto mlp = [](const std::string& kind, int epochs) {
    TrainConfig c = link_config(kind, epochs, 0.3f);
    c.link.decoder = LinkDecoder::Mlp;
    c.link.decoder_hidden = 5;
    return c;
  };
  for (const std::string& kind : test::model_names()) {  // (acceptance 1: every kind, 20 epochs, dropout on)
    SCOPED_TRACE(kind);
    const TrainConfig c = mlp(kind, 20);
    auto single = ProcessGrid::single();
    const LinkRun want = train(g, c, *single);
    for (double l : want.losses) ASSERT_TRUE(std::isfinite(l));
    EXPECT_LT(want.losses.back(), want.losses.front());
    expect_grids_equal(g, c, shapes, want);
  }
  // Resumed mid-way; refused with another decoder or width.
  auto single = ProcessGrid::single();
  const TrainConfig c = mlp("sage", 6);
  const LinkRun want = train(g, c, *single);
  const std::string path = testing::TempDir() + "/link-mlp-checkpoint.h5";
  NodePairList pairs;
  for (const auto& [a, b] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 1}, {46, 3}, {3, 46}, {5, 5}, {17, 30}}) {
    pairs.u.push_back(a);  // (the planted graph's ids are its indices)
    pairs.v.push_back(b);
  }
  std::vector<float> live;
  {
    auto be = make_cpu_backend(1);
    TrainConfig first = c;
    first.epochs = 3;
    GnnTrainer t(g, first, *be, *single);
    const ModelState before = t.state();
    t.run();
    t.save(path);
    live = GnnModel(t).score_pairs(g, pairs, *be, *single);
    // The decoder trains: its parameters are the model's, Adam moves them.
    const ModelState after = t.state();
    ASSERT_EQ(before.parameters.size(), after.parameters.size());
    int decoder_params = 0;
    for (std::size_t k = 0; k < after.parameters.size(); ++k)
      if (after.parameters[k].name.rfind("decoder", 0) == 0) {
        ++decoder_params;
        EXPECT_NE(after.parameters[k].value, before.parameters[k].value) << after.parameters[k].name;
      }
    EXPECT_EQ(decoder_params, 6);  // 3 layers' weights and biases
    // Given pairs are scored as the trainer scores its held-out ones: on the graph it passes
    // messages over (the training links: the split drawn alike), the test split's ROC-AUC from
    // score_pairs is the trainer's.
    GraphData training_graph = g;
    const LinkSplit split = random_link_split(training_graph, first.link.val, first.link.test, first.seed);
    ASSERT_GT(split.test_pos.size(), 0u);
    const std::vector<float> pos = GnnModel(t).score_pairs(training_graph, split.test_pos, *be, *single),
                             neg = GnnModel(t).score_pairs(training_graph, split.test_neg, *be, *single);
    EXPECT_NEAR(roc_auc(pos, neg), t.evaluate().test_auc, 1e-9);
  }
  const GnnModelInfo info = read_gnn_model_info_h5(path);
  EXPECT_EQ(info.config.link.decoder, LinkDecoder::Mlp);
  EXPECT_EQ(info.config.link.decoder_hidden, 5);
  {
    auto be = make_cpu_backend(1);
    GnnTrainer t(g, c, *be, *single);
    t.resume(path);
    for (int e = 3; e < c.epochs; ++e) EXPECT_EQ(t.epoch().loss, want.losses[static_cast<std::size_t>(e)]) << e;
  }
  expect_resume_refused(g, c, [](TrainConfig& o) { o.link.decoder = LinkDecoder::Dot, o.link.decoder_hidden = 0; }, path,
                        "TrainConfig.link.decoder mlp");
  expect_resume_refused(g, c, [](TrainConfig& o) { o.link.decoder_hidden = 6; }, path, "TrainConfig.link.decoder_hidden");
  expect_resume_refused(g, c, [](TrainConfig& o) { o.link.decoder_layers = 2; }, path, "TrainConfig.link.decoder_layers");
  // The saved model's scores of given pairs: the trainer's, on every grid; no dot product.
  ASSERT_EQ(live.size(), pairs.size());
  EXPECT_EQ(live[1], live[2]);  // (z_u ⊙ z_v = z_v ⊙ z_u: both directions score alike)
  EXPECT_NE(live[0], live[1]);
  // (The file is read once, here: HDF5 is not for threads, which the ranks below are.)
  GnnModel loaded = GnnModel::load(path);
  {
    auto be = make_cpu_backend(1);
    (void)loaded.score_pairs(g, pairs, *be, *single);
  }
  for (const GridShape s : {GridShape{1, 1, 1}, GridShape{2, 1, 2}, GridShape{1, 3, 1}, GridShape{2, 2, 2}}) {
    SCOPED_TRACE(s.str());
    run_in_process_grid(s, 1, [&](ProcessGrid& grid) {
      auto be = make_cpu_backend(1);
      GnnModel m = loaded;
      const std::vector<float> got = m.score_pairs(g, pairs, *be, grid);
      ASSERT_EQ(got.size(), live.size());
      for (std::size_t p = 0; p < got.size(); ++p) EXPECT_NEAR(got[p], live[p], 1e-5 * (1 + std::abs(live[p]))) << p;
    });
  }
  auto be = make_cpu_backend(1);
  EXPECT_THROW(loaded.top_k_partners(g, 3, *be, *single), InputError);
}

// The shards of a link run: Â holds the training links (and the self-loops GCN adds), never a
// held-out one; the training positives are each training link once.
TEST(LinkTask, HeldOutLinksNeverReachMessagePassing) {
  const GraphData g = planted(80, 2);
  const TrainConfig c = link_config("gcn", 1, 0);
  auto grid = ProcessGrid::single();
  const GnnShards s = shards_of_graph(g, c, *grid, true, false);
  const HostCsr& a = s.adj_for_layer(0);
  std::set<std::pair<index_t, index_t>> in_a;
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t k = a.indptr[static_cast<std::size_t>(r)]; k < a.indptr[static_cast<std::size_t>(r) + 1]; ++k)
      in_a.insert({r, a.indices[static_cast<std::size_t>(k)]});
  const LinkPairs& l = s.links;
  ASSERT_GT(l.val_pos.size(), 0u);
  ASSERT_GT(l.test_pos.size(), 0u);
  for (const NodePairList* held : {&l.val_pos, &l.test_pos})
    for (std::size_t k = 0; k < held->size(); ++k) {
      EXPECT_FALSE(in_a.count({held->u[k], held->v[k]})) << held->u[k] << "-" << held->v[k];
      EXPECT_FALSE(in_a.count({held->v[k], held->u[k]})) << held->v[k] << "-" << held->u[k];
    }
  std::set<std::pair<index_t, index_t>> train;
  for (std::size_t k = 0; k < l.train.size(); ++k) {
    EXPECT_LT(l.train.u[k], l.train.v[k]);
    EXPECT_TRUE(in_a.count({l.train.u[k], l.train.v[k]}));
    EXPECT_TRUE(train.insert({l.train.u[k], l.train.v[k]}).second) << "a training link twice";
  }
  // Every link of the input is a training link or held out, once.
  std::size_t input_links = 0;
  for (index_t u = 0; u < g.num_nodes; ++u)
    for (index_t k = g.indptr[static_cast<std::size_t>(u)]; k < g.indptr[static_cast<std::size_t>(u) + 1]; ++k)
      input_links += u < g.indices[static_cast<std::size_t>(k)];
  EXPECT_EQ(l.train.size() + l.val_pos.size() + l.test_pos.size(), input_links);
  EXPECT_EQ(l.val_neg.size(), l.val_pos.size());
  EXPECT_EQ(l.test_neg.size(), l.test_pos.size());
}

// The best epoch is the one the rule names over every epoch's evaluation: the highest
// validation ROC-AUC (ties to the lower loss), or the lowest validation loss.
TEST(LinkTask, BestEpochIsTheOneItsRuleNames) {
  const GraphData g = planted(90, 6);
  for (const Selection s : {Selection{}, Selection{SelectBy::Auc, -1}, Selection{SelectBy::Loss, -1}}) {
    SCOPED_TRACE(selection_name(s));
    TrainConfig c = link_config("gcn", 25, 0.2f);
    c.select_by = s;
    auto grid = ProcessGrid::single();
    const LinkRun r = train(g, c, *grid);
    std::int64_t want = 0;
    for (std::size_t e = 1; e < r.losses.size(); ++e) {
      const auto w = static_cast<std::size_t>(want);
      const bool better = s.by == SelectBy::Loss
                              ? r.val_loss[e] < r.val_loss[w] || (r.val_loss[e] == r.val_loss[w] && r.val_auc[e] > r.val_auc[w])
                              : r.val_auc[e] > r.val_auc[w] || (r.val_auc[e] == r.val_auc[w] && r.val_loss[e] < r.val_loss[w]);
      if (better) want = static_cast<std::int64_t>(e);
    }
    EXPECT_EQ(r.best, want);
  }
}

TEST(LinkTask, LearnsPlantedHeldOutLinks) {
  // Ten communities (most uniform negatives join two), features that tell them apart.
  const GraphData g = planted(400, 11, 1.0, 10);
  TrainConfig c = link_config("gcn", 100, 0);
  c.hidden = 16;
  c.link.embedding_width = 16;
  c.lr = 0.01f;
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const TrainResult r = train_gnn(g, c, *be, *grid);
  EXPECT_GT(r.test_auc, 0.85);
  EXPECT_GT(r.best_val_auc, 0.75);  // (a model that learns nothing: 0.5)
  EXPECT_TRUE(std::isnan(r.test_acc)) << "node classification's metrics are not evaluated";
}

TEST(LinkTask, OptionsItDoesNotTakeAreRefused) {
  const auto refused = [](const std::function<void(TrainConfig&)>& change, const std::string& where) {
    TrainConfig c = link_config("gcn", 1, 0);
    change(c);
    try {
      validate(c);
      ADD_FAILURE() << where << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
    }
  };
  refused([](TrainConfig& c) { c.select_by = {SelectBy::MacroF1, -1}; }, "TrainConfig.select_by");
  refused([](TrainConfig& c) { c.select_by = {SelectBy::Recall, 0}; }, "TrainConfig.select_by");
  refused([](TrainConfig& c) { c.class_weights_auto = true; }, "TrainConfig.class_weights");
  refused([](TrainConfig& c) { c.comm_variant = CommVariant::RsAg; }, "TrainConfig.comm_variant");
  refused([](TrainConfig& c) { c.precision = Precision::BF16; }, "TrainConfig.precision");
  refused([](TrainConfig& c) { c.link.embedding_width = -1; }, "TrainConfig.link.embedding_width");
  refused([](TrainConfig& c) { c.link.val = -0.1; }, "TrainConfig.link.val");
  refused([](TrainConfig& c) { c.link.test = 1.0; }, "TrainConfig.link.test");
  refused([](TrainConfig& c) { c.link.val = 0.6, c.link.test = 0.4; }, "TrainConfig.link.val");
  refused([](TrainConfig& c) { c.link.hits_k = -1; }, "TrainConfig.link.hits_k");
  refused([](TrainConfig& c) { c.link.mrr_negatives = -1; }, "TrainConfig.link.mrr_negatives");
  refused([](TrainConfig& c) { c.link.mrr_negatives = 100001; }, "TrainConfig.link.mrr_negatives");
  refused([](TrainConfig& c) { c.link.edge_batch = -1; }, "TrainConfig.link.edge_batch");
  refused([](TrainConfig& c) { c.link.edge_batch = std::int64_t{1} << 40; }, "TrainConfig.link.edge_batch");
  refused([](TrainConfig& c) { c.task = GnnTask::NodeClassification, c.link.edge_batch = 5; }, "TrainConfig.link.edge_batch");
  refused([](TrainConfig& c) { c.task = GnnTask::NodeClassification, c.link.hits_k = 5; }, "TrainConfig.link.hits_k");
  refused([](TrainConfig& c) { c.link.decoder_layers = 2; }, "TrainConfig.link.decoder_layers");  // (with dot)
  refused([](TrainConfig& c) { c.link.decoder_hidden = 8; }, "TrainConfig.link.decoder_hidden");
  refused([](TrainConfig& c) { c.link.decoder = LinkDecoder::Mlp, c.link.decoder_layers = 17; }, "TrainConfig.link.decoder_layers");
  refused([](TrainConfig& c) { c.link.decoder = LinkDecoder::Mlp, c.link.decoder_hidden = -1; }, "TrainConfig.link.decoder_hidden");
  refused([](TrainConfig& c) { c.task = GnnTask::NodeClassification, c.link.decoder = LinkDecoder::Mlp; }, "TrainConfig.link.decoder");
  refused([](TrainConfig& c) { c.link.test = std::nan(""); }, "TrainConfig.link.test");
  refused([](TrainConfig& c) { c.task = GnnTask::NodeClassification, c.select_by = {SelectBy::Auc, -1}; },
          "TrainConfig.select_by");
  EXPECT_EQ(parse_gnn_task("link"), GnnTask::Link);
  EXPECT_EQ(parse_gnn_task("node"), GnnTask::NodeClassification);
  EXPECT_THROW(parse_gnn_task("edge"), InputError);
  // Each choice's name parses back to it, and a refusal lists them all (one table: gnn_tasks(),
  // link_decoders()).
  for (const auto& c : gnn_tasks()) EXPECT_EQ(parse_gnn_task(gnn_task_name(c.kind)), c.kind);
  for (const auto& c : link_decoders()) EXPECT_EQ(parse_link_decoder(link_decoder_name(c.kind)), c.kind);
  EXPECT_EQ(link_decoders().size(), 2u);
  try {
    parse_link_decoder("bilinear");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "TrainConfig.link.decoder");
    EXPECT_NE(std::string(e.what()).find("'bilinear' is not one of dot, mlp"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_selection("auc"), (Selection{SelectBy::Auc, -1}));
  // A link model predicts no classes: refused in words, never its embeddings taken for logits.
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer t(planted(40, 1), link_config("gcn", 1, 0), *be, *grid);
  t.epoch();
  EXPECT_THROW(t.predict(), InputError);
  const std::string path = testing::TempDir() + "/link-model.h5";
  t.save(path);
  GraphData unlabelled = planted(40, 1);
  unlabelled.num_classes = 0;  // (no classes to check against: the model's kind refuses)
  try {
    (void)GnnModel::load(path).predict(unlabelled, *be, *grid);
    ADD_FAILURE() << "a link model predicted classes";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a link-prediction model"), std::string::npos) << e.what();
  }
}

// A link run saved and resumed continues as the uninterrupted run (on another grid:
// tests/cli_link_task.sh, HDF5 being read by one thread at a time here): the file
// records the task, its options and the best epoch's ROC-AUCs; the split and each epoch's
// negatives follow from the seed and the epoch.
TEST(LinkTask, ResumedRunContinuesAsUninterrupted) {
  const GraphData g = planted(57, 8);
  TrainConfig c = link_config("sage", 8, 0.3f);
  c.link.hits_k = 3;
  c.link.mrr_negatives = 6;
  auto single = ProcessGrid::single();
  const LinkRun want = train(g, c, *single);
  const std::string path = testing::TempDir() + "/link-checkpoint.h5";
  {
    auto be = make_cpu_backend(1);
    TrainConfig first = c;
    first.epochs = 5;
    GnnTrainer t(g, first, *be, *single);
    t.run();
    t.save(path);
  }
  const GnnModelInfo info = read_gnn_model_info_h5(path);
  EXPECT_EQ(info.config.task, GnnTask::Link);
  EXPECT_EQ(info.config.link.embedding_width, 7);
  EXPECT_EQ(info.config.link.val, c.link.val);
  EXPECT_EQ(info.dims.back(), 7);
  EXPECT_EQ(info.best.val_auc, want.val_auc[static_cast<std::size_t>(info.best.epoch)]);
  EXPECT_EQ(info.config.link.hits_k, 3);
  EXPECT_TRUE(info.best.val_hits >= 0 && info.best.val_hits <= 1) << info.best.val_hits;
  EXPECT_EQ(info.config.link.mrr_negatives, 6);
  EXPECT_EQ(info.best.val_mrr, want.val_mrr[static_cast<std::size_t>(info.best.epoch)]);
  {
    auto be = make_cpu_backend(1);
    GnnTrainer t(g, c, *be, *single);
    t.resume(path);
    for (int e = 5; e < c.epochs; ++e) EXPECT_EQ(t.epoch().loss, want.losses[static_cast<std::size_t>(e)]) << e;
  }
  // Resumed as another task, or with other shares (another split), it is refused.
  auto be = make_cpu_backend(1);
  TrainConfig other = c;
  other.link.val = 0.1;
  GnnTrainer t(g, other, *be, *single);
  EXPECT_THROW(t.resume(path), InputError);
  TrainConfig other_k = c;
  other_k.link.hits_k = 5;
  GnnTrainer tk(g, other_k, *be, *single);
  EXPECT_THROW(tk.resume(path), InputError);
  TrainConfig other_mrr = c;
  other_mrr.link.mrr_negatives = 7;
  GnnTrainer tm(g, other_mrr, *be, *single);
  EXPECT_THROW(tm.resume(path), InputError);
  TrainConfig node = c;
  node.task = GnnTask::NodeClassification;
  node.link = LinkConfig{};  // (the link task's options are refused with another task)
  GnnTrainer n(g, node, *be, *single);
  try {
    n.resume(path);
    ADD_FAILURE() << "a link checkpoint resumed as node classification";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("TrainConfig.task link"), std::string::npos) << e.what();
  }
}

// A link model's recommendations: every node's K best partners on every grid equal a brute-force
// ranking of the embeddings (the same model's last layer, as a node model of the same widths
// and seed gives it), its neighbours and itself left out, your ids on the rows.
TEST(LinkTask, TopKPartnersOnGridsEqualBruteForce) {
  GraphData g = planted(47, 12);
  g.node_ids.resize(static_cast<std::size_t>(g.num_nodes));
  for (std::size_t k = 0; k < g.node_ids.size(); ++k) g.node_ids[k] = 1000 + 7 * static_cast<std::int64_t>(k);
  const TrainConfig c = link_config("gcn", 1, 0);
  const std::vector<index_t> dims = gnn_dims(g.num_features, c.layers, c.hidden, output_width(c, 0));
  // The embeddings: the same weights read as a node model's logits.
  TrainConfig node = c;
  node.task = GnnTask::NodeClassification;
  GraphData as_classes = g;
  as_classes.num_classes = static_cast<std::int32_t>(dims.back());
  for (auto& y : as_classes.labels) y = y % as_classes.num_classes;
  auto be = make_cpu_backend(1);
  auto single = ProcessGrid::single();
  const Predictions z = GnnModel::untrained(node, dims).predict(as_classes, *be, *single).predictions;
  const auto w = static_cast<std::size_t>(dims.back());
  const index_t k = 5;
  // Brute force, in double: (score, node) of each node's best k.
  std::vector<std::vector<std::pair<double, std::int64_t>>> want(static_cast<std::size_t>(g.num_nodes));
  for (index_t u = 0; u < g.num_nodes; ++u) {
    std::set<index_t> skip(g.indices.begin() + g.indptr[static_cast<std::size_t>(u)],
                           g.indices.begin() + g.indptr[static_cast<std::size_t>(u) + 1]);
    skip.insert(u);
    auto& best = want[static_cast<std::size_t>(u)];
    for (index_t v = 0; v < g.num_nodes; ++v) {
      if (skip.count(v)) continue;
      double dot = 0;
      for (std::size_t j = 0; j < w; ++j)
        dot += static_cast<double>(z.logits[static_cast<std::size_t>(u) * w + j]) * z.logits[static_cast<std::size_t>(v) * w + j];
      best.push_back({dot, v});
    }
    std::sort(best.begin(), best.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    best.resize(std::min<std::size_t>(best.size(), static_cast<std::size_t>(k)));
  }
  // `listed`: your ids of the nodes asked for (any order, repeats), else every node.
  const auto check = [&](GridShape s, const std::vector<std::int64_t>* listed) {
    SCOPED_TRACE(s.str() + (listed ? ", a list" : ""));
    std::set<std::size_t> asked;  // the nodes to be reported
    for (index_t u = 0; u < g.num_nodes; ++u)
      if (!listed || std::count(listed->begin(), listed->end(), g.node_ids[static_cast<std::size_t>(u)]))
        asked.insert(static_cast<std::size_t>(u));
    std::mutex mu;
    std::vector<TopKPartners> got;
    run_in_process_grid(s, 1, [&](ProcessGrid& grid) {
      auto rank_be = make_cpu_backend(1);
      GnnModel m = GnnModel::untrained(c, dims);
      TopKPartners t = listed ? m.top_k_partners(g, *listed, k, *rank_be, grid, 4) : m.top_k_partners(g, k, *rank_be, grid, 4);
      std::lock_guard<std::mutex> lock(mu);
      got.push_back(std::move(t));
    });
    std::vector<int> seen(static_cast<std::size_t>(g.num_nodes), 0);
    std::vector<int> row_taken(asked.size(), 0);
    for (const TopKPartners& t : got) {
      ASSERT_EQ(t.k, k);
      ASSERT_EQ(t.num_rows, static_cast<index_t>(asked.size()));
      for (std::size_t r = 0; r < t.node_ids.size(); ++r) {
        const auto u = static_cast<std::size_t>(t.node_ids[r]);
        // Its row among all ranks' rows is its place in node order among the nodes asked for.
        ASSERT_EQ(static_cast<std::size_t>(t.first_row) + r,
                  static_cast<std::size_t>(std::distance(asked.begin(), asked.find(u))));
        row_taken[static_cast<std::size_t>(t.first_row) + r] += 1;
        seen[u] += 1;
        EXPECT_EQ(t.ids[r], g.node_ids[u]);
        for (std::size_t j = 0; j < static_cast<std::size_t>(k); ++j) {
          const auto& [score, v] = want[u][j];
          EXPECT_NEAR(t.scores[r * k + j], score, 1e-5 * (1 + std::abs(score))) << "node " << u << ", partner " << j;
          const bool clear = (j == 0 || want[u][j - 1].first - score > 1e-4) &&
                             (j + 1 == want[u].size() || score - want[u][j + 1].first > 1e-4);
          if (clear) {
            EXPECT_EQ(t.partner_ids[r * k + j], g.node_ids[static_cast<std::size_t>(v)]) << "node " << u << ", partner " << j;
          }
        }
      }
    }
    for (index_t u = 0; u < g.num_nodes; ++u)
      EXPECT_EQ(seen[static_cast<std::size_t>(u)], asked.count(static_cast<std::size_t>(u))) << "node " << u;
    for (std::size_t r = 0; r < row_taken.size(); ++r) EXPECT_EQ(row_taken[r], 1) << "row " << r;
  };
  const std::vector<std::int64_t> listed = {g.node_ids[30], g.node_ids[2], g.node_ids[46], g.node_ids[2], g.node_ids[0]};
  for (const GridShape s : {GridShape{1, 1, 1}, GridShape{2, 1, 1}, GridShape{1, 3, 1}, GridShape{2, 1, 2}, GridShape{2, 2, 2}}) {
    check(s, nullptr);
    check(s, &listed);
  }
  // A listed id not in the graph, an empty list.
  EXPECT_THROW(GnnModel::untrained(c, dims).top_k_partners(g, std::vector<std::int64_t>{1000, 5}, k, *be, *single), InputError);
  EXPECT_THROW(GnnModel::untrained(c, dims).top_k_partners(g, std::vector<std::int64_t>{}, k, *be, *single), InputError);
  // A node model has no partners to score; k must be positive.
  EXPECT_THROW(GnnModel::untrained(node, dims).top_k_partners(g, k, *be, *single), InputError);
  EXPECT_THROW(GnnModel::untrained(c, dims).top_k_partners(g, 0, *be, *single), InputError);

  // Given pairs, by your ids, in any order (repeats, self-pairs, both directions): each score is
  // the dot product of the two embeddings, on every rank of every grid.
  NodePairList pairs;
  for (const auto& [a, b] : std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}, {46, 3}, {3, 46}, {5, 5}, {0, 1}, {17, 30}}) {
    pairs.u.push_back(g.node_ids[a]);
    pairs.v.push_back(g.node_ids[b]);
  }
  for (const GridShape s : {GridShape{1, 1, 1}, GridShape{2, 1, 2}, GridShape{1, 3, 1}}) {
    SCOPED_TRACE(s.str());
    run_in_process_grid(s, 1, [&](ProcessGrid& grid) {
      auto rank_be = make_cpu_backend(1);
      const std::vector<float> got = GnnModel::untrained(c, dims).score_pairs(g, pairs, *rank_be, grid);
      ASSERT_EQ(got.size(), pairs.size());
      for (std::size_t p = 0; p < pairs.size(); ++p) {
        const auto a = static_cast<std::size_t>((pairs.u[p] - 1000) / 7), b = static_cast<std::size_t>((pairs.v[p] - 1000) / 7);
        double dot = 0;
        for (std::size_t j = 0; j < w; ++j) dot += static_cast<double>(z.logits[a * w + j]) * z.logits[b * w + j];
        EXPECT_NEAR(got[p], dot, 1e-5 * (1 + std::abs(dot))) << "pair " << p;
      }
    });
  }
  NodePairList unknown = pairs;
  unknown.v[2] = 5;  // not an id of this graph
  EXPECT_THROW(GnnModel::untrained(c, dims).score_pairs(g, unknown, *be, *single), InputError);
  EXPECT_THROW(GnnModel::untrained(node, dims).score_pairs(g, pairs, *be, *single), InputError);
}

TEST(LinkTask, LossOfScoresIsTheMeanCrossEntropy) {
  const std::vector<double> s = {2.0, -1.0, 0.0, 40.0, -40.0, 0.5};
  double want = 0;
  for (std::size_t k = 0; k < s.size(); ++k) {
    // −log σ(x) = log(1 + e^−x) for a link, −log(1 − σ(x)) = log(1 + e^x) for a negative.
    const long double x = s[k];
    want += static_cast<double>(k < 2 ? std::log1p(std::exp(-x)) : std::log1p(std::exp(x)));
  }
  want /= static_cast<double>(s.size());
  EXPECT_NEAR(link_loss_of_scores(s, 2), want, 1e-12);
  EXPECT_TRUE(std::isnan(link_loss_of_scores({}, 0)));
}

}  // namespace
}  // namespace plexus
