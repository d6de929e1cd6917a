// The training options a user expects (TrainConfig: class_weights, class_weights_auto,
// GraphData::node_weights, patience, restore_best), on every grid of the job's ranks: the
// weighted loss against a float64 reference, early stopping's epoch, the restored weights, and
// checkpoints that carry the kept weights through a resume.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mpi_grid_runs.hpp"
#include "mpi_scratch.hpp"
#include "plexus/backend.hpp"
#include "plan/plan.hpp"  // all_grids
#include "plexus/error.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"

namespace plexus {
namespace {

using testing::all_gather;
using testing::expect_same;
using testing::shared_scratch;
using testing::train_run;
using testing::uneven_sbm;
using testing::world_size;

// The SBM with node weights in [0, 2), a few 0, and some training nodes unlabelled-free.
GraphData weighted_graph() {
  GraphData g = uneven_sbm(7);
  g.node_weights.resize(static_cast<std::size_t>(g.num_nodes));
  for (std::size_t v = 0; v < g.node_weights.size(); ++v)
    g.node_weights[v] = v % 7 == 3 ? 0.0f : static_cast<float>((v * 37) % 20) / 10.0f;
  return g;
}

// Every node's logits (gathered from every rank's predictions): node → row.
std::map<index_t, std::vector<float>> all_logits(ProcessGrid& grid, GnnTrainer& t) {
  testing::GridRun r;
  const Predictions p = t.predict();
  testing::gather_rows(grid, NodeRows{p.node_ids, p.num_classes, p.logits}, r);
  return r.node_outputs.front();
}

// Σ_train w·CE / Σ_train w in float64 from the logits, w = class weight × node weight.
double weighted_loss(const GraphData& g, const std::map<index_t, std::vector<float>>& logits,
                     const std::vector<double>& class_w) {
  double num = 0, den = 0;
  for (index_t v = 0; v < g.num_nodes; ++v) {
    const auto k = static_cast<std::size_t>(v);
    if (!g.train_mask[k] || g.labels[k] < 0) continue;
    const std::vector<float>& z = logits.at(v);
    double top = z[0], sum = 0;
    for (const float x : z) top = std::max(top, static_cast<double>(x));
    for (const float x : z) sum += std::exp(x - top);
    const double ce = std::log(sum) + top - z[static_cast<std::size_t>(g.labels[k])];
    const double w = class_w[static_cast<std::size_t>(g.labels[k])] * (g.node_weights.empty() ? 1.0 : g.node_weights[k]);
    num += w * ce;
    den += w;
  }
  return num / den;
}

TrainConfig base_config() {
  TrainConfig cfg;
  cfg.hidden = 8;
  cfg.epochs = 12;
  cfg.dropout = 0.0f;  // the first epoch's loss is then the initial weights' evaluation loss
  return cfg;
}

TEST(TrainingOptions, WeightedLossIsTheFloat64WeightedMeanOnEveryGrid) {
  const GraphData g = weighted_graph();
  // Inverse frequency over the training nodes, n / (C·n_c), as scikit-learn's "balanced".
  std::vector<double> count(static_cast<std::size_t>(g.num_classes), 0.0);
  for (std::size_t v = 0; v < g.labels.size(); ++v)
    if (g.train_mask[v] && g.labels[v] >= 0) count[static_cast<std::size_t>(g.labels[v])] += 1;
  double n = 0, present = 0;
  for (const double c : count) n += c, present += c > 0;
  std::vector<double> balanced;
  for (const double c : count) balanced.push_back(c > 0 ? n / (present * c) : 0.0);
  const std::vector<float> given = {0.5f, 2.0f, 1.0f, 0.0f, 3.0f};

  for (const bool automatic : {false, true}) {
    TrainConfig cfg = base_config();
    cfg.class_weights_auto = automatic;
    if (!automatic) cfg.class_weights = given;
    const std::vector<double> class_w = automatic ? balanced : std::vector<double>(given.begin(), given.end());
    const std::string what = automatic ? "auto class weights" : "given class weights";
    for (const GridShape& shape : all_grids(world_size())) {
      auto grid = ProcessGrid::from_mpi(shape);
      auto be = make_cpu_backend(1);
      GnnTrainer t(g, cfg, *be, *grid);
      const double want = weighted_loss(g, all_logits(*grid, t), class_w);
      const double got = t.epoch().loss;
      EXPECT_NEAR(got, want, 1e-5 * want) << what << " on " << shape.str();
    }
    // Under a renumbering (balance permute) the node weights follow their nodes: without
    // dropout the permuted graph's first loss is the plain order's.
    {
      TrainConfig permuted = cfg;
      permuted.balance = Balance::kPermute;
      auto one = ProcessGrid::single();
      auto be = make_cpu_backend(1);
      GnnTrainer plain_t(g, cfg, *be, *one), permuted_t(g, permuted, *be, *one);
      const double a = plain_t.epoch().loss, b = permuted_t.epoch().loss;
      EXPECT_NEAR(b, a, 1e-5 * a) << what << ": permuted";
    }
    // A run on every grid equals one rank's, node weights following their nodes under a
    // renumbering (balance permute).
    for (const Balance balance : {Balance::kNone, Balance::kPermute}) {
      cfg.balance = balance;
      auto single = ProcessGrid::single();
      const testing::GridRun want = train_run(*single, g, cfg);
      for (const GridShape& shape : all_grids(world_size())) {
        auto grid = ProcessGrid::from_mpi(shape);
        expect_same(train_run(*grid, g, cfg), want, what + (balance == Balance::kNone ? "" : " permute") + " on " + shape.str());
      }
    }
  }
}

TEST(TrainingOptions, UnweightedOptionsLeaveTheLossBitForBit) {
  // Node weights of 1 everywhere and no class weights are the plain mean; an empty
  // node_weights must not change a bit of the plain path.
  GraphData g = uneven_sbm(7);
  const TrainConfig cfg = base_config();
  auto one = ProcessGrid::single();
  const testing::GridRun plain = train_run(*one, g, cfg);
  g.node_weights.assign(static_cast<std::size_t>(g.num_nodes), 1.0f);
  const testing::GridRun ones = train_run(*one, g, cfg);
  for (std::size_t e = 0; e < plain.losses.size(); ++e)
    EXPECT_NEAR(ones.losses[e], plain.losses[e], 1e-6 * plain.losses[e]) << "epoch " << e + 1;
}

TEST(TrainingOptions, BadWeightsAndPatienceAreRefused) {
  auto grid = ProcessGrid::from_mpi(GridShape{world_size(), 1, 1});
  auto be = make_cpu_backend(1);
  const auto refused = [&](const GraphData& g, const TrainConfig& cfg, const std::string& where, const std::string& text) {
    try {
      GnnTrainer t(g, cfg, *be, *grid);
      ADD_FAILURE() << "accepted: " << where;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), where);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  const GraphData g = uneven_sbm(7);
  TrainConfig cfg = base_config();
  cfg.class_weights = {1.0f, 2.0f};
  refused(g, cfg, "TrainConfig.class_weights", "2 weights for 5 classes");
  cfg.class_weights = {0, 0, 0, 0, 0};
  refused(g, cfg, "TrainConfig.class_weights", "every class weight is 0");
  cfg.class_weights = {1, -1, 1, 1, 1};
  refused(g, cfg, "TrainConfig.class_weights", "not a finite number >= 0");
  cfg.class_weights.clear();
  GraphData bad = g;
  bad.node_weights = {1.0f, 2.0f};
  refused(bad, cfg, "graph", "GraphData.node_weights: expected 157 entries");
  bad.node_weights.assign(static_cast<std::size_t>(g.num_nodes), 1.0f);
  bad.node_weights[5] = std::nanf("");
  refused(bad, cfg, "graph", "GraphData.node_weights: weight nan of node 5");
  bad.node_weights.assign(static_cast<std::size_t>(g.num_nodes), 0.0f);
  refused(bad, cfg, "node weights", "sum to 0");
  GraphData no_val = g;
  no_val.val_mask.assign(no_val.val_mask.size(), 0);
  cfg.patience = 3;
  refused(no_val, cfg, "TrainConfig.patience", "needs validation nodes");
  EXPECT_EQ(parse_class_weights("1,0.5,2e-1"), (std::vector<float>{1.0f, 0.5f, 0.2f}));
  for (const char* text : {"", "1,,2", "1;2", "one", "1,2,"}) EXPECT_THROW(parse_class_weights(text), InputError) << text;
}

// The epochs' metrics through run(), each after its epoch.
struct Recorded {
  std::vector<EpochMetrics> epochs;
  std::vector<std::map<index_t, std::vector<float>>> logits;  // every node's, after each epoch
};

TEST(TrainingOptions, PatienceStopsWhenThePickIsThatManyEpochsOld) {
  const GraphData g = uneven_sbm(11);
  TrainConfig cfg = base_config();
  cfg.epochs = 400;
  cfg.dropout = 0.5f;
  cfg.patience = 6;
  for (const GridShape& shape : all_grids(world_size())) {
    auto grid = ProcessGrid::from_mpi(shape);
    auto be = make_cpu_backend(1);
    GnnTrainer t(g, cfg, *be, *grid);
    std::vector<EpochMetrics> seen;
    const TrainResult r = t.run([&](const EpochMetrics& m) { seen.push_back(m); });
    const std::string what = shape.str();
    ASSERT_TRUE(r.stopped_early) << what;
    EXPECT_EQ(t.epochs_done(), r.best_epoch + 1 + cfg.patience) << what;
    EXPECT_EQ(static_cast<int>(seen.size()), t.epochs_done()) << what;
    // No epoch after the pick is better than it (else it would have been picked), and the pick
    // is the epoch whose metrics run() reports.
    const EpochMetrics& pick = seen.at(static_cast<std::size_t>(r.best_epoch));
    EXPECT_EQ(pick.val_acc, r.best_val_acc) << what;
    for (std::size_t e = static_cast<std::size_t>(r.best_epoch) + 1; e < seen.size(); ++e)
      EXPECT_FALSE(seen[e].val_acc > pick.val_acc || (seen[e].val_acc == pick.val_acc && seen[e].val_loss < pick.val_loss))
          << what << ": epoch " << e + 1;
    // A run() on a trainer out of patience trains nothing more.
    EXPECT_TRUE(t.run().epochs.empty()) << what;
  }
}

TEST(TrainingOptions, RestoreBestEndsWithThePickedEpochsWeights) {
  const GraphData g = uneven_sbm(11);
  TrainConfig cfg = base_config();
  cfg.epochs = 120;
  cfg.lr = 0.05f;  // overfits: the validation set picks an early epoch
  cfg.dropout = 0.5f;
  cfg.restore_best = true;
  for (const GridShape& shape : all_grids(world_size())) {
    auto grid = ProcessGrid::from_mpi(shape);
    auto be = make_cpu_backend(1);
    GnnTrainer t(g, cfg, *be, *grid);
    Recorded rec;
    const TrainResult r = t.run([&](const EpochMetrics& m) {
      rec.epochs.push_back(m);
      rec.logits.push_back(all_logits(*grid, t));
    });
    const std::string what = shape.str();
    ASSERT_GE(r.best_epoch, 0) << what;
    ASSERT_LT(r.best_epoch + 1, cfg.epochs) << what << ": pick the seed so that the last epoch is not the best";
    EXPECT_EQ(t.weights_epoch(), r.best_epoch) << what;
    EXPECT_EQ(all_logits(*grid, t), rec.logits.at(static_cast<std::size_t>(r.best_epoch))) << what;
    const EvalMetrics e = t.evaluate();
    EXPECT_EQ(e.val_acc, r.best_val_acc) << what;
    EXPECT_EQ(e.test_acc, r.test_acc) << what;
    // The state carries the kept weights and says which epoch its values are.
    const ModelState s = t.state();
    EXPECT_EQ(s.weights_epoch, r.best_epoch) << what;
    for (const ParameterState& p : s.parameters) EXPECT_EQ(p.value, p.best_value) << what << ": " << p.name;
  }
}

TEST(TrainingOptions, ResumedRunEndsWithTheUninterruptedRunsWeights) {
  const GraphData g = uneven_sbm(11);
  TrainConfig cfg = base_config();
  cfg.epochs = 120;
  cfg.lr = 0.05f;
  cfg.dropout = 0.5f;
  cfg.restore_best = true;
  cfg.class_weights_auto = true;
  const std::string path = shared_scratch("resume.h5"), plain = shared_scratch("plain.h5");
  for (const GridShape& shape : all_grids(world_size())) {
    auto grid = ProcessGrid::from_mpi(shape);
    auto be = make_cpu_backend(1);
    GnnTrainer whole(g, cfg, *be, *grid);
    const TrainResult want = whole.run();
    const ModelState want_state = whole.state();
    ASSERT_LT(want.best_epoch + 1, cfg.epochs) << shape.str() << ": the last epoch must not be the pick";
    // Interrupted after 30 epochs (past the pick or not), checkpointed, resumed.
    GnnTrainer first(g, cfg, *be, *grid);
    int n = 0;
    first.run({}, [&] { return ++n == 30; });
    EXPECT_EQ(first.weights_epoch(), 29) << "an interrupted run keeps its last weights";
    first.save(path);
    GnnTrainer second(g, cfg, *be, *grid);
    second.resume(path);
    const TrainResult got = second.run();
    const ModelState got_state = second.state();
    const std::string what = shape.str();
    EXPECT_EQ(got.best_epoch, want.best_epoch) << what;
    EXPECT_EQ(got_state.weights_epoch, want_state.weights_epoch) << what;
    for (std::size_t k = 0; k < want_state.parameters.size(); ++k)
      EXPECT_EQ(got_state.parameters[k].value, want_state.parameters[k].value) << what << ": " << want_state.parameters[k].name;
    // A finished run's model (restored weights) resumed for more epochs goes on from its last
    // epoch's weights: 60 then 120 epochs end as 120 did.
    TrainConfig short_cfg = cfg;
    short_cfg.epochs = 60;
    GnnTrainer shorter(g, short_cfg, *be, *grid);
    shorter.run();
    shorter.save(path);
    GnnTrainer longer(g, cfg, *be, *grid);
    longer.resume(path);
    longer.run();
    const ModelState longer_state = longer.state();
    EXPECT_EQ(longer_state.weights_epoch, want_state.weights_epoch) << what << ": 60 + 60 epochs";
    for (std::size_t k = 0; k < want_state.parameters.size(); ++k)
      EXPECT_EQ(longer_state.parameters[k].value, want_state.parameters[k].value) << what << ": 60 + 60 epochs";
    // A checkpoint written without restore_best (no kept weights) past its pick cannot end a
    // restore_best run as the uninterrupted one would: refused.
    TrainConfig off = cfg;
    off.restore_best = false;
    GnnTrainer without(g, off, *be, *grid);
    without.run();
    if (without.best().epoch + 1 < without.epochs_done()) {
      without.save(plain);
      GnnTrainer again(g, cfg, *be, *grid);
      EXPECT_THROW(again.resume(plain), InputError) << what;
    }
  }
  if (world_size() > 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
      std::filesystem::remove(path);
      std::filesystem::remove(plain);
    }
  }
}

}  // namespace
}  // namespace plexus
