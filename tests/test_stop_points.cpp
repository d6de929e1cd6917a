// The stop points of a graceful stop (plexus/stop_check.hpp, docs/checkpoints.md), one rank:
//  - GnnTrainer: a stop check that answers true at its k-th question abandons the epoch at
//    each of the epoch's stop points — in the training forward, after the loss, in the
//    backward pass and in the evaluation after the Adam step — leaving the weights, Adam
//    moments, epochs done and best epoch exactly as before the epoch, and the run continues
//    bit for bit as the uninterrupted one; run() ends on an abandoned epoch after `stop`;
//  - GptTrainer: a stop before a micro-batch abandons the step (the run as before it); a stop
//    during the evaluation after a step keeps the step and abandons the evaluation, which a
//    resumed trainer makes up, reaching the uninterrupted run's best validation loss; a stop
//    during the initial evaluation leaves it undone.
// (tests/mpi_test_trainer.cpp checks the GCN's stop points on every grid under MPI.)
#include <gtest/gtest.h>

#include <cmath>

#include <optional>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/gnn_trainer.hpp"
#include "scratch_dir.hpp"

namespace plexus {
namespace {

// A stop check that answers true from its `k`-th question on, counting the questions.
struct StopAt {
  int k = 0, asked = 0;
  StopCheck check() {
    return [this] { return ++asked >= k; };
  }
};

const GraphData& graph() {
  static const GraphData g = [] {
    SbmOptions o;
    o.nodes = 90;
    o.classes = 4;
    o.features = 9;
    o.avg_degree = 5;
    o.seed = 3;
    return generate_sbm(o);
  }();
  return g;
}

TrainConfig gcn_config() {
  TrainConfig c;
  c.layers = 3;
  c.hidden = 6;
  c.epochs = 6;
  c.dropout = 0.3f;
  c.lr = 0.05f;
  c.seed = 9;
  return c;
}

void expect_same_state(const ModelState& got, const ModelState& want) {
  EXPECT_EQ(got.epochs_done, want.epochs_done);
  EXPECT_EQ(got.best.epoch, want.best.epoch);
  EXPECT_EQ(got.best.val_loss, want.best.val_loss);
  ASSERT_EQ(got.parameters.size(), want.parameters.size());
  for (std::size_t k = 0; k < got.parameters.size(); ++k) {
    EXPECT_EQ(got.parameters[k].value, want.parameters[k].value) << got.parameters[k].name;
    EXPECT_EQ(got.parameters[k].adam_m, want.parameters[k].adam_m) << got.parameters[k].name;
    EXPECT_EQ(got.parameters[k].adam_v, want.parameters[k].adam_v) << got.parameters[k].name;
  }
}

// 3 layers: 2 points in the training forward, 1 after the loss, 2 in the backward pass, 2 in
// the evaluation forward (after the Adam step).
constexpr int kGcnStopPoints = 7;

TEST(StopPoints, GcnEpochStopsAtEveryPointWithTheLastFinishedEpochsState) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer whole(graph(), gcn_config(), *be, *grid);
  const TrainResult want = whole.run();
  for (int k = 1; k <= kGcnStopPoints + 1; ++k) {
    SCOPED_TRACE("stop at question " + std::to_string(k));
    GnnTrainer t(graph(), gcn_config(), *be, *grid);
    t.epoch();
    t.epoch();
    const ModelState before = t.state();
    StopAt stop{k};
    t.set_stop_check(stop.check());
    const std::optional<EpochMetrics> m = t.epoch_unless_stopped();
    if (k > kGcnStopPoints) {  // past the last stop point: the epoch finishes
      ASSERT_TRUE(m.has_value());
      EXPECT_EQ(stop.asked, kGcnStopPoints);
      EXPECT_EQ(m->loss, want.epochs[2].loss);
      continue;
    }
    EXPECT_FALSE(m.has_value());
    EXPECT_EQ(stop.asked, k);
    EXPECT_EQ(t.epochs_done(), 2);
    expect_same_state(t.state(), before);
    // The abandoned epoch, run again, and the rest: the uninterrupted run's numbers.
    t.set_stop_check({});
    const TrainResult rest = t.run();
    ASSERT_EQ(rest.epochs.size(), 4u);
    for (std::size_t e = 0; e < 4; ++e) {
      EXPECT_EQ(rest.epochs[e].loss, want.epochs[e + 2].loss) << e;
      EXPECT_EQ(rest.epochs[e].val_acc, want.epochs[e + 2].val_acc) << e;
    }
    EXPECT_EQ(rest.best_epoch, want.best_epoch);
    EXPECT_EQ(rest.test_acc, want.test_acc);
  }
}

TEST(StopPoints, GcnRunEndsOnAnAbandonedEpochAfterAskingStop) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer t(graph(), gcn_config(), *be, *grid);
  StopAt stop{kGcnStopPoints + 3};  // within the second epoch
  t.set_stop_check(stop.check());
  int epochs_seen = 0, stops_asked = 0;
  const TrainResult r = t.run([&](const EpochMetrics&) { ++epochs_seen; }, [&] {
    ++stops_asked;
    return stop.asked >= stop.k;
  });
  EXPECT_EQ(epochs_seen, 1);
  EXPECT_EQ(r.epochs.size(), 1u);
  EXPECT_EQ(t.epochs_done(), 1);
  EXPECT_EQ(stops_asked, 2);  // after epoch 1, and after the abandoned epoch 2
}

// ---- GPT ---------------------------------------------------------------------------------
GptTrainConfig gpt_config() {
  GptTrainConfig c;
  c.model.layers = 1;
  c.model.heads = 2;
  c.model.embed = 8;
  c.model.block = 8;
  c.model.vocab = 11;
  c.batch = 2;
  c.iters = 4;
  c.warmup = 1;
  c.grad_accum = 3;
  c.eval_every = 2;
  c.eval_iters = 3;
  c.dropout = 0.1f;
  return c;
}

const TokenCorpus& corpus() {
  static const TokenCorpus c = [] {
    TokenCorpus t;
    t.vocab = 11;
    for (int k = 0; k < 300; ++k) t.train.push_back((k * 7 + k / 5) % 11);
    for (int k = 0; k < 120; ++k) t.val.push_back((k * 3 + 1) % 11);
    return t;
  }();
  return c;
}

void expect_same_checkpoint(const GptCheckpoint& got, const GptCheckpoint& want) {
  EXPECT_EQ(got.iters_done, want.iters_done);
  EXPECT_EQ(got.best_val_loss, want.best_val_loss);
  ASSERT_EQ(got.model.weights.size(), want.model.weights.size());
  for (const auto& [name, w] : want.model.weights) {
    EXPECT_EQ(got.model.weights.at(name).data, w.data) << name;
    EXPECT_EQ(got.adam_m.at(name).data, want.adam_m.at(name).data) << name;
    EXPECT_EQ(got.adam_v.at(name).data, want.adam_v.at(name).data) << name;
  }
}

TEST(StopPoints, GptStopBeforeAMicroBatchAbandonsTheStep) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GptTrainer whole(corpus(), gpt_config(), *be, *grid);
  const GptTrainResult want = whole.run();
  for (int k = 1; k <= 3; ++k) {  // before micro-batch 0, 1 and 2 of step 2
    SCOPED_TRACE("stop at question " + std::to_string(k));
    GptTrainer t(corpus(), gpt_config(), *be, *grid);
    t.step();
    const GptCheckpoint before = t.state();
    StopAt stop{k};
    t.set_stop_check(stop.check());
    EXPECT_FALSE(t.step_unless_stopped().has_value());
    EXPECT_EQ(stop.asked, k);
    EXPECT_EQ(t.iters_done(), 1);
    expect_same_checkpoint(t.state(), before);
    t.set_stop_check({});
    const GptTrainResult rest = t.run();
    ASSERT_EQ(rest.steps.size(), 3u);
    for (std::size_t s = 0; s < 3; ++s) {
      EXPECT_EQ(rest.steps[s].loss, want.steps[s + 1].loss) << s;
      EXPECT_EQ(rest.steps[s].grad_norm, want.steps[s + 1].grad_norm) << s;
    }
    EXPECT_EQ(rest.best_val_loss, want.best_val_loss);
  }
}

TEST(StopPoints, GptStopDuringTheEvaluationKeepsTheStepAndAResumeMakesItUp) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GptTrainer whole(corpus(), gpt_config(), *be, *grid);
  const GptTrainResult want = whole.run();
  ASSERT_TRUE(want.steps[1].evaluated);
  for (int k = 4; k <= 6; ++k) {  // step 2: 3 micro-batches, then evaluation batches 0, 1, 2
    SCOPED_TRACE("stop at question " + std::to_string(k));
    GptTrainer t(corpus(), gpt_config(), *be, *grid);
    t.step();
    const double best_before = t.best_val_loss();
    StopAt stop{k};
    t.set_stop_check(stop.check());
    const std::optional<GptStepMetrics> m = t.step_unless_stopped();
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(stop.asked, k);
    EXPECT_FALSE(m->evaluated);
    EXPECT_TRUE(m->evaluation_abandoned);
    EXPECT_EQ(m->loss, want.steps[1].loss);
    EXPECT_EQ(t.iters_done(), 2);
    EXPECT_EQ(t.best_val_loss(), best_before);  // the abandoned evaluation is not counted
    const GptCheckpoint c = t.state();
    // Resumed: the evaluation after step 2 is made up (by the next step, before it), then the
    // rest as uninterrupted.
    GptTrainer resumed(corpus(), gpt_config(), *be, *grid);
    resumed.set_state(c);
    EXPECT_EQ(resumed.best_val_loss(), best_before);  // (not made up yet)
    const GptStepMetrics third = resumed.step();
    EXPECT_EQ(third.loss, want.steps[2].loss);
    EXPECT_EQ(resumed.best_val_loss(), std::min(best_before, want.steps[1].val_loss));
    const GptTrainResult rest = resumed.run();
    ASSERT_EQ(rest.steps.size(), 1u);
    EXPECT_EQ(rest.steps[0].val_loss, want.steps[3].val_loss);
    EXPECT_EQ(rest.best_val_loss, want.best_val_loss);
  }
  // A finished evaluation made again on resume leaves the best where it was.
  GptTrainer t(corpus(), gpt_config(), *be, *grid);
  t.step();
  t.step();
  const GptCheckpoint c = t.state();
  GptTrainer resumed(corpus(), gpt_config(), *be, *grid);
  resumed.set_state(c);
  resumed.step();
  EXPECT_EQ(resumed.best_val_loss(), t.best_val_loss());
}

TEST(StopPoints, GptStopDuringTheInitialEvaluationLeavesItUndone) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  StopAt stop{2};
  GptTrainer t(corpus(), gpt_config(), *be, *grid);
  t.set_stop_check(stop.check());
  const GptTrainResult r = t.run();
  EXPECT_EQ(stop.asked, 2);  // the second evaluation batch: the run ends before a step
  EXPECT_TRUE(std::isnan(t.initial_val_loss()));  // never computed: not evaluated, never 0
  EXPECT_TRUE(std::isnan(t.best_val_loss()));
  EXPECT_TRUE(std::isnan(r.initial_val_loss));
  EXPECT_TRUE(std::isnan(r.best_val_loss));
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.iters_done, 0);
  EXPECT_TRUE(r.steps.empty());
  // A checkpoint of it says so too, and resumes to the same (the evaluation owed still).
  testing::ScratchDir dir;
  t.save(dir.file("c.h5"));
  const GptCheckpoint c = read_gpt_checkpoint_h5(dir.file("c.h5"));
  EXPECT_TRUE(std::isnan(c.initial_val_loss));
  EXPECT_TRUE(std::isnan(c.best_val_loss));
}

}  // namespace
}  // namespace plexus
