// What picks the best epoch (TrainConfig::select_by) and the per-class metrics beside the
// accuracies (EvalMetrics::classes, TrainResult::val_classes / test_classes): the parser, the
// metrics on hand-counted numbers, the per-class counts against the predictions, and the epoch
// each selection picks against the documented rule over every epoch's evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/train.hpp"
#include "train/tasks/node_classification.hpp"

namespace plexus {
namespace {

TEST(Selection, NamesAndTheirParser) {
  for (const std::string text : {"accuracy", "loss", "macro-f1", "recall:0", "recall:12"})
    EXPECT_EQ(selection_name(parse_selection(text)), text);
  EXPECT_EQ(parse_selection("recall:3"), (Selection{SelectBy::Recall, 3}));
  for (const std::string bad : {"", "f1", "recall", "recall:", "recall:-1", "recall:x", "recall:1x", "Accuracy"}) {
    try {
      (void)parse_selection(bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "TrainConfig.select_by") << bad;
    }
  }
  TrainConfig c;
  c.select_by = {SelectBy::Recall, -1};
  EXPECT_THROW(validate(c), InputError);
  c.select_by = {SelectBy::Loss, 2};
  EXPECT_THROW(validate(c), InputError);
}

TEST(Selection, ClassMetricsFromHandCountedNumbers) {
  EvalMetrics::ClassCounts c;
  // class 0: 4 labelled, 5 predicted, 3 right; class 1: 2, 1, 1; class 2: 0, 0, 0 (absent);
  // class 3: 1, 0, 0 (never predicted).
  c.labelled = {4, 2, 0, 1};
  c.predicted = {5, 1, 0, 0};
  c.correct = {3, 1, 0, 0};
  const std::vector<ClassMetrics> m = class_metrics(c);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_DOUBLE_EQ(m[0].precision, 3.0 / 5);
  EXPECT_DOUBLE_EQ(m[0].recall, 3.0 / 4);
  EXPECT_DOUBLE_EQ(m[0].f1, 6.0 / 9);
  EXPECT_EQ(m[0].support, 4);
  EXPECT_DOUBLE_EQ(m[1].f1, 2.0 / 3);
  EXPECT_TRUE(std::isnan(m[2].precision) && std::isnan(m[2].recall) && std::isnan(m[2].f1));
  EXPECT_TRUE(std::isnan(m[3].precision));
  EXPECT_DOUBLE_EQ(m[3].recall, 0);
  EXPECT_DOUBLE_EQ(m[3].f1, 0);
  EXPECT_DOUBLE_EQ(macro_f1(c), (6.0 / 9 + 2.0 / 3 + 0) / 3);  // class 2 neither labelled nor predicted
  EvalMetrics e;
  e.val_acc = 0.5;
  e.val_loss = 1.25;
  e.classes[1] = c;
  EXPECT_DOUBLE_EQ(selection_score({}, e), 0.5);
  EXPECT_DOUBLE_EQ(selection_score({SelectBy::Loss, -1}, e), 1.25);
  EXPECT_DOUBLE_EQ(selection_score({SelectBy::MacroF1, -1}, e), macro_f1(c));
  EXPECT_DOUBLE_EQ(selection_score({SelectBy::Recall, 1}, e), 0.5);
  EXPECT_TRUE(std::isnan(selection_score({SelectBy::Recall, 2}, e)));
}

// The tie rules of NodeClassification::better on crafted evaluations (a trained run seldom
// meets an exact tie, so the rule over real epochs above cannot tell a tie-break's direction).
TEST(Selection, TiesBreakByTheOtherMetric) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnShards shards;
  shards.split_sizes = {10, 5, 5};
  shards.dims = {4, 3};
  const LayerGeometry out;
  auto epoch = [](double acc, double loss) {
    EvalMetrics e;
    e.val_acc = acc;
    e.val_loss = loss;
    return e;
  };
  for (const Selection s : {Selection{}, Selection{SelectBy::Loss, -1}}) {
    SCOPED_TRACE(selection_name(s));
    TrainConfig c;
    c.select_by = s;
    const NodeClassification task(TaskInputs{*be, *grid, out, nullptr, shards, c, false});
    const EvalMetrics first = epoch(0.6, 1.0);
    BestEpoch best;
    EXPECT_TRUE(task.better(first, best));  // none yet
    best.epoch = 0, best.val_acc = 0.6, best.val_loss = 1.0, best.score = task.score(first);
    const bool by_loss = s.by == SelectBy::Loss;
    EXPECT_EQ(task.better(epoch(0.7, 1.0), best), true);       // higher accuracy, same loss
    EXPECT_EQ(task.better(epoch(0.5, 1.0), best), false);      // lower accuracy, same loss
    EXPECT_EQ(task.better(epoch(0.6, 0.9), best), true);       // same accuracy, lower loss
    EXPECT_EQ(task.better(epoch(0.6, 1.1), best), false);      // same accuracy, higher loss
    EXPECT_EQ(task.better(epoch(0.6, 1.0), best), false);      // the same: the first stays
    EXPECT_EQ(task.better(epoch(0.7, 1.1), best), !by_loss);   // better accuracy, worse loss
    EXPECT_EQ(task.better(epoch(0.5, 0.9), best), by_loss);    // worse accuracy, better loss
  }
}

GraphData graph() {
  SbmOptions o;
  o.nodes = 90;
  o.classes = 3;
  o.features = 6;
  o.avg_degree = 4;
  o.seed = 13;
  return generate_sbm(o);
}

// The counts of one split from the predictions (one rank: every node), as the documentation
// defines them.
EvalMetrics::ClassCounts counted(const GraphData& g, const Predictions& p, const std::vector<std::uint8_t>& mask) {
  EvalMetrics::ClassCounts c;
  c.labelled.assign(3, 0);
  c.predicted.assign(3, 0);
  c.correct.assign(3, 0);
  for (std::size_t k = 0; k < p.node_ids.size(); ++k) {
    const auto node = static_cast<std::size_t>(p.node_ids[k]);
    const int y = g.labels[node];
    if (!mask[node] || y < 0) continue;
    c.labelled[static_cast<std::size_t>(y)] += 1;
    c.predicted[static_cast<std::size_t>(p.classes[k])] += 1;
    c.correct[static_cast<std::size_t>(y)] += p.classes[k] == y;
  }
  return c;
}

TEST(Selection, EachSelectionPicksTheEpochItsRuleNames) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const GraphData g = graph();
  for (const Selection s : {Selection{}, Selection{SelectBy::Loss, -1}, Selection{SelectBy::MacroF1, -1},
                            Selection{SelectBy::Recall, 2}}) {
    SCOPED_TRACE(selection_name(s));
    TrainConfig c;
    c.hidden = 8;
    c.epochs = 25;
    c.lr = 0.03f;
    c.select_by = s;
    c.class_weights = {1.0f, 1.0f, 3.0f};
    GnnTrainer t(g, c, *be, *grid);
    std::int64_t want = -1;
    double want_score = 0, want_loss = 0, want_acc = 0;
    for (int e = 0; e < c.epochs; ++e) {
      t.epoch();
      const EvalMetrics m = t.evaluate();
      // The counts against the predictions of the same weights.
      const Predictions p = t.predict();
      for (const auto& [split, mask] : {std::pair{1, &g.val_mask}, std::pair{2, &g.test_mask}}) {
        const EvalMetrics::ClassCounts want_counts = counted(g, p, *mask);
        EXPECT_EQ(m.classes[static_cast<std::size_t>(split)].labelled, want_counts.labelled);
        EXPECT_EQ(m.classes[static_cast<std::size_t>(split)].predicted, want_counts.predicted);
        EXPECT_EQ(m.classes[static_cast<std::size_t>(split)].correct, want_counts.correct);
      }
      double right = 0, all = 0;
      for (std::size_t k = 0; k < 3; ++k) right += m.classes[1].correct[k], all += m.classes[1].labelled[k];
      EXPECT_DOUBLE_EQ(right / all, m.val_acc);
      // The documented rule.
      const double score = selection_score(s, m);
      bool better = want < 0;
      if (!better && s.by == SelectBy::Loss) better = score < want_score || (score == want_score && m.val_acc > want_acc);
      else if (!better) better = score > want_score || (score == want_score && m.val_loss < want_loss);
      if (better) want = e, want_score = score, want_loss = m.val_loss, want_acc = m.val_acc;
      EXPECT_EQ(t.best().epoch, want) << "after epoch " << e;
      EXPECT_EQ(t.best().score, want_score);
    }
  }
}

TEST(Selection, TheResultReportsEveryClassAtTheBestEpoch) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const GraphData g = graph();
  TrainConfig c;
  c.hidden = 8;
  c.epochs = 15;
  c.select_by = {SelectBy::Recall, 1};
  const TrainResult r = train_gnn(g, c, *be, *grid);
  ASSERT_EQ(r.val_classes.size(), 3u);
  ASSERT_EQ(r.test_classes.size(), 3u);
  EXPECT_EQ(r.best_score, r.val_classes[1].recall);
  std::int64_t support = 0;
  for (const ClassMetrics& m : r.val_classes) support += m.support;
  std::int64_t val_nodes = 0;
  for (std::size_t k = 0; k < g.val_mask.size(); ++k) val_nodes += g.val_mask[k] && g.labels[k] >= 0;
  EXPECT_EQ(support, val_nodes);
}

}  // namespace
}  // namespace plexus

namespace plexus {
namespace {

// Beyond kMaxClassesCounted classes nothing is counted one by one (a file declaring 200 million
// classes must reach the size check, not allocate 9 doubles a class): the per-class lists stay
// empty and the selections that need them are refused.
TEST(Selection, ClassesBeyondTheLimitAreNotCountedOneByOne) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GraphData g = graph();
  g.num_classes = static_cast<std::int32_t>(kMaxClassesCounted + 1);
  TrainConfig c;
  c.hidden = 4;
  c.epochs = 2;
  const TrainResult r = train_gnn(g, c, *be, *grid);
  EXPECT_TRUE(r.val_classes.empty());
  EXPECT_TRUE(r.test_classes.empty());
  for (const Selection s : {Selection{SelectBy::MacroF1, -1}, Selection{SelectBy::Recall, 1}}) {
    c.select_by = s;
    try {
      GnnTrainer t(g, c, *be, *grid);
      ADD_FAILURE() << selection_name(s) << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "TrainConfig.select_by");
      EXPECT_NE(std::string(e.what()).find("kept for at most 65536 classes"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace plexus
