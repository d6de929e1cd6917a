// DistLoss (src/train/dist_loss.hpp) under MPI, part of mpi_test_trainer (1, 2, 3, 4 and 6
// ranks): hand-set logits, labels and train / val / test masks whose answers differ per split
// (train 4/7 correct, val 2/5, test 5/6), against a float64 reference computed here, on one
// rank (ProcessGrid::single()) and on every grid shape of the rank count, for the last layer
// of 1, 2 and 3 layer models (so the o / i / d roles of the logits' axes rotate), with the
// logits' rows whole (comm variant baseline) or split over the last layer's i axis (rs-ag).
// Reporting one split's accuracy as another's, dividing by the wrong split size, summing the
// loss over the wrong axis or taking the highest column of a tied maximum fails here, unlike a
// comparison of a multi-rank run with a one-rank run (which share such a bug).
// Every rank runs every collective in the same order: checks are EXPECTs, never early returns.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/gnn_network.hpp"
#include "plexus/backend.hpp"
#include "plan/plan.hpp"  // all_grids
#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/sparse.hpp"
#include "plexus/gnn_trainer.hpp"
#include "train/dist_loss.hpp"
#include "core/shard_layout.hpp"

namespace plexus {
namespace {

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// 23 nodes and 5 classes: neither divides by any grid dimension (2, 3, 4, 6); with 6 ranks on
// the class axis one rank holds no class at all.
constexpr index_t kNodes = 23;
constexpr int kClasses = 5;
constexpr index_t kFeatures = 3, kHidden = 4;

enum class Split { None, Train, Val, Test };
struct Row {
  Split split;
  std::int32_t label;  // -1: unlabelled
  std::array<float, kClasses> logits;
};
// The argmax is the lowest column of a tied maximum (rows 3, 5, 14, 16, 18); the tied columns
// (1|3, 2|4, 0|4) lie on different class shards whenever the classes are split. Taking the
// highest column instead gives train 3/7, val 3/5, test 4/6.
// clang-format off
const std::array<Row, kNodes> kRows{{
    {Split::Train, 2, {0.5f, -1.0f, 3.0f, 0.0f, 1.0f}},    //  0 argmax 2: right
    {Split::Val, 0, {1.0f, 2.0f, 0.0f, -0.5f, 0.25f}},     //  1 argmax 1: wrong
    {Split::Test, 4, {0.0f, 0.0f, 0.0f, 0.0f, 1.5f}},      //  2 argmax 4: right
    {Split::Train, 1, {0.0f, 2.0f, -1.0f, 2.0f, 0.5f}},    //  3 tie 1|3 -> 1: right
    {Split::None, 3, {0.0f, 0.0f, 0.0f, 4.0f, 0.0f}},      //  4 (no split) right
    {Split::Test, 3, {-1.0f, 1.5f, 0.0f, 1.5f, 0.0f}},     //  5 tie 1|3 -> 1: wrong
    {Split::Val, 2, {0.0f, 0.0f, 2.5f, 0.0f, 0.0f}},       //  6 argmax 2: right
    {Split::Train, 0, {-2.0f, 1.0f, 0.5f, 0.0f, 0.75f}},   //  7 argmax 1: wrong
    {Split::Test, 1, {0.0f, 3.0f, 1.0f, 0.0f, 0.0f}},      //  8 argmax 1: right
    {Split::None, -1, {1.0f, 0.0f, 0.0f, 0.0f, 0.0f}},     //  9 (no split, unlabelled)
    {Split::Train, 4, {0.25f, 0.0f, 0.0f, 0.0f, 2.0f}},    // 10 argmax 4: right
    {Split::Val, 3, {1.0f, 0.0f, 0.0f, 0.5f, 0.0f}},       // 11 argmax 0: wrong
    {Split::Test, 0, {5.0f, 1.0f, 0.0f, 0.0f, 0.0f}},      // 12 argmax 0: right
    {Split::Train, 3, {0.0f, 0.0f, 1.0f, 0.5f, 0.0f}},     // 13 argmax 2: wrong
    {Split::Test, 2, {0.0f, 0.0f, 1.0f, -1.0f, 1.0f}},     // 14 tie 2|4 -> 2: right
    {Split::None, 1, {0.0f, 0.0f, 0.0f, 0.0f, 3.0f}},      // 15 (no split) wrong
    {Split::Val, 4, {2.0f, 0.0f, 1.0f, 0.0f, 2.0f}},       // 16 tie 0|4 -> 0: wrong
    {Split::Train, 1, {0.0f, 1.25f, 0.0f, 0.0f, 0.0f}},    // 17 argmax 1: right
    {Split::Test, 0, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f}},      // 18 tie of all -> 0: right
    {Split::None, 0, {2.0f, 0.0f, 0.0f, 0.0f, 0.0f}},      // 19 (no split) right
    {Split::Train, 2, {0.0f, 0.0f, 0.0f, 3.0f, 0.0f}},     // 20 argmax 3: wrong
    {Split::Val, 1, {-1.0f, 0.5f, 0.0f, 0.0f, 0.0f}},      // 21 argmax 1: right
    {Split::None, 3, {0.0f, 0.0f, 0.0f, 1.0f, -2.0f}},     // 22 (no split) right
}};
// clang-format on
// Train: rows 0 3 7 10 13 17 20, right 0 3 10 17.  Val: rows 1 6 11 16 21, right 6 21.
// Test: rows 2 5 8 12 14 18, right 2 8 12 14 18.
constexpr double kTrainAcc = 4.0 / 7, kValAcc = 2.0 / 5, kTestAcc = 5.0 / 6;

// The graph of the table (a ring; the edges and features only shape the model DistLoss is
// built for, never the logits, which the test sets). `val`: whether the val rows keep their
// split (else they are in none: an empty validation split).
GraphData hand_graph(bool val = true) {
  GraphData g;
  g.num_nodes = kNodes;
  g.num_features = kFeatures;
  g.num_classes = kClasses;
  g.indptr = {0};
  for (index_t v = 0; v < kNodes; ++v) {
    const index_t a = (v + kNodes - 1) % kNodes, b = (v + 1) % kNodes;
    g.indices.push_back(std::min(a, b));
    g.indices.push_back(std::max(a, b));
    g.indptr.push_back(static_cast<index_t>(g.indices.size()));
    for (index_t k = 0; k < kFeatures; ++k) g.features.push_back(0.25f * static_cast<float>((v * kFeatures + k) % 7));
    const Row& r = kRows[static_cast<std::size_t>(v)];
    g.labels.push_back(r.label);
    g.train_mask.push_back(r.split == Split::Train);
    g.val_mask.push_back(val && r.split == Split::Val);
    g.test_mask.push_back(r.split == Split::Test);
  }
  return g;
}

// The global logits, N × C row-major.
std::vector<float> global_logits() {
  std::vector<float> x;
  for (const Row& r : kRows) x.insert(x.end(), r.logits.begin(), r.logits.end());
  return x;
}

// What DistLoss must report for the logits of the table and the masks of `g`, in float64:
// accuracy = correct / size of the split (0 for an empty split, as DistLoss defines it), the
// argmax being the lowest column of the maximum; losses = mean over the split's rows of
// -log softmax(x)[label]; gradient of the train loss = (softmax - onehot) / n_train on train
// rows, 0 elsewhere.
constexpr double kNotEvaluated = std::numeric_limits<double>::quiet_NaN();

struct Reference {
  std::array<double, 3> acc{};
  double train_loss = 0, val_loss = 0;
  std::vector<double> grad;  // N × C
};
Reference reference(const GraphData& g) {
  Reference ref;
  ref.grad.assign(static_cast<std::size_t>(kNodes * kClasses), 0.0);
  const std::array<const std::vector<std::uint8_t>*, 3> masks{&g.train_mask, &g.val_mask, &g.test_mask};
  std::array<double, 3> size{}, correct{}, loss{};
  for (index_t v = 0; v < kNodes; ++v) {
    const auto& x = kRows[static_cast<std::size_t>(v)].logits;
    const std::int32_t label = g.labels[static_cast<std::size_t>(v)];
    int best = 0;
    double top = x[0];
    for (int c = 1; c < kClasses; ++c)
      if (x[static_cast<std::size_t>(c)] > top) {
        top = x[static_cast<std::size_t>(c)];
        best = c;
      }
    double sum = 0;
    for (float xc : x) sum += std::exp(static_cast<double>(xc) - top);
    const double lse = top + std::log(sum);
    for (int s = 0; s < 3; ++s) {
      if (!(*masks[static_cast<std::size_t>(s)])[static_cast<std::size_t>(v)]) continue;
      size[static_cast<std::size_t>(s)] += 1;
      if (label < 0) continue;
      correct[static_cast<std::size_t>(s)] += best == label;
      loss[static_cast<std::size_t>(s)] += lse - x[static_cast<std::size_t>(label)];
    }
  }
  for (int s = 0; s < 3; ++s) {
    const auto k = static_cast<std::size_t>(s);
    ref.acc[k] = size[k] > 0 ? correct[k] / size[k] : kNotEvaluated;
  }
  ref.train_loss = size[0] > 0 ? loss[0] / size[0] : kNotEvaluated;
  ref.val_loss = size[1] > 0 ? loss[1] / size[1] : kNotEvaluated;
  for (index_t v = 0; v < kNodes; ++v) {
    const std::int32_t label = g.labels[static_cast<std::size_t>(v)];
    if (!g.train_mask[static_cast<std::size_t>(v)] || label < 0) continue;
    const auto& x = kRows[static_cast<std::size_t>(v)].logits;
    double top = x[0], sum = 0;
    for (float xc : x) top = std::max(top, static_cast<double>(xc));
    for (float xc : x) sum += std::exp(static_cast<double>(xc) - top);
    for (int c = 0; c < kClasses; ++c)
      ref.grad[static_cast<std::size_t>(v * kClasses + c)] =
          (std::exp(static_cast<double>(x[static_cast<std::size_t>(c)]) - top) / sum - (c == label ? 1.0 : 0.0)) /
          size[0];
  }
  return ref;
}

// A figure that was not evaluated (NaN) must be NaN; any other, equal.
void expect_same(double got, double want, const std::string& what) {
  if (std::isnan(want))
    EXPECT_TRUE(std::isnan(got)) << what << ": " << got << ", expected NaN (not evaluated)";
  else
    EXPECT_DOUBLE_EQ(got, want) << what;
}

void expect_rel(double got, double want, const std::string& what) {
  if (std::isnan(want)) return expect_same(got, want, what);
  EXPECT_NEAR(got, want, 1e-5 * std::abs(want)) << what;
}

void expect_metrics(const EvalMetrics& m, const Reference& ref, const std::string& what) {
  expect_same(m.train_acc, ref.acc[0], what + " train_acc");
  expect_same(m.val_acc, ref.acc[1], what + " val_acc");
  expect_same(m.test_acc, ref.acc[2], what + " test_acc");
  expect_rel(m.train_loss, ref.train_loss, what + " train_loss");
  expect_rel(m.val_loss, ref.val_loss, what + " val_loss");
}

// DistLoss for the last layer of a `layers`-layer GCN of `g` on `grid`, every layer in `order`,
// built as GnnTrainer builds it (shards by build_shards, the logits' geometry from the model: its
// loss_geometry, whose rows are split over the last layer's out_repl axis with rs-ag — i
// aggregating first, o transforming first — and that axis as `row_split`), on this rank's block
// of the hand-set logits: evaluate() and train_loss_and_grad() against `ref`. Returns the first
// evaluate(). Collective over `grid`.
EvalMetrics check_on(ProcessGrid& grid, const GraphData& g, const Reference& ref, int layers, CommVariant variant,
                     LayerOrder order, const std::string& where) {
  const std::string what = where + " layers " + std::to_string(layers) + " " + comm_variant_name(variant) + " " +
                           layer_order_name(order);
  const bool split_rows = variant != CommVariant::Baseline;
  auto be = make_cpu_backend(1);
  const std::vector<index_t> dims = gnn_dims(g.num_features, layers, kHidden, g.num_classes);
  const std::vector<bool> tf = transform_first_layers(order, dims);
  GnnShards shards = build_shards(g, gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values), grid, dims, false, tf);
  EXPECT_TRUE(shards.label_ids.empty()) << what << ": the label rows are the nodes in input order";
  TrainConfig net;
  net.dropout = 0.0f;
  net.seed = 1;
  net.comm_variant = split_rows ? CommVariant::RsAg : CommVariant::Baseline;
  GnnNetwork model(*be, grid, shards, net);
  const LayerGeometry out = model.loss_geometry();
  const Axis split_axis = out.out_repl();
  DistLoss loss(*be, grid, out, shards, split_rows ? &split_axis : nullptr);

  // The test covers what it claims: the last layer's block (layer L-1's roles), its rows
  // further split over i (o transforming first) with rs-ag, its classes over o (i).
  const LayerGeometry last = layer_geometry(grid, layers - 1, g.num_nodes, dims, tf);
  const bool last_tf = order == LayerOrder::TransformFirst;
  EXPECT_EQ(last.transform_first, last_tf) << what;
  const Axis repl = last_tf ? last.roles.o : last.roles.i;
  EXPECT_EQ(last.out_repl(), repl) << what;
  EXPECT_EQ(last.out_feat(), last_tf ? last.roles.i : last.roles.o) << what;
  const Range rows = split_rows ? sub_range(last.out_rows, grid.dim(repl), grid.coord(repl)) : last.out_rows;
  EXPECT_EQ(out.layer, layers - 1) << what;
  EXPECT_EQ(out.out_rows.begin, rows.begin) << what;
  EXPECT_EQ(out.out_rows.end, rows.end) << what;
  EXPECT_EQ(out.out_cols.begin, last.out_cols.begin) << what;
  EXPECT_EQ(out.out_cols.end, last.out_cols.end) << what;

  // This rank's block of the logits: rows out.out_rows (node = row), classes out.out_cols.
  const std::vector<float> x = global_logits();
  const index_t nr = out.out_rows.size(), nc = out.out_cols.size();
  std::vector<float> block;
  for (index_t r = out.out_rows.begin; r < out.out_rows.end; ++r)
    for (index_t c = out.out_cols.begin; c < out.out_cols.end; ++c)
      block.push_back(x[static_cast<std::size_t>(r * kClasses + c)]);
  Matrix logits(*be, nr, nc);
  logits.upload(block);

  const EvalMetrics first = loss.evaluate(logits);
  expect_metrics(first, ref, what + " evaluate");

  // The gradient overwrites every element of its block (7 where it must write 0).
  Matrix grad(*be, nr, nc);
  grad.upload(std::vector<float>(static_cast<std::size_t>(nr * nc), 7.0f));
  expect_rel(loss.train_loss_and_grad(logits, grad), ref.train_loss, what + " train_loss_and_grad");
  const std::vector<float> got = grad.to_host();
  for (index_t r = 0; r < nr; ++r)
    for (index_t c = 0; c < nc; ++c) {
      const index_t gr = out.out_rows.begin + r, gc = out.out_cols.begin + c;
      EXPECT_NEAR(got[static_cast<std::size_t>(r * nc + c)], ref.grad[static_cast<std::size_t>(gr * kClasses + gc)],
                  1e-6)
          << what << ": dlogits[" << gr << "][" << gc << "]";
    }

  // Evaluating again gives the same (no state carried over from the calls before).
  expect_metrics(loss.evaluate(logits), ref, what + " second evaluate");
  return first;
}

// Every configuration: one rank by itself, then every grid shape of the world. Also against
// the accuracies stated by hand (train, val, test), literally.
void check_everywhere(const GraphData& g, const Reference& ref, const std::array<double, 3>& stated) {
  const auto one = [&](ProcessGrid& grid, int layers, CommVariant v, LayerOrder order, const std::string& where) {
    const EvalMetrics m = check_on(grid, g, ref, layers, v, order, where);
    const std::string what =
        where + " layers " + std::to_string(layers) + " " + comm_variant_name(v) + " " + layer_order_name(order);
    expect_same(m.train_acc, stated[0], what + " train_acc");
    expect_same(m.val_acc, stated[1], what + " val_acc");
    expect_same(m.test_acc, stated[2], what + " test_acc");
  };
  constexpr LayerOrder kOrders[] = {LayerOrder::AggregateFirst, LayerOrder::TransformFirst};
  for (int layers : {1, 2, 3})
    for (CommVariant v : {CommVariant::Baseline, CommVariant::RsAg})
      for (LayerOrder order : kOrders) {
        auto single = ProcessGrid::single();
        one(*single, layers, v, order, "1x1x1 (single)");
      }
  for (const GridShape& shape : all_grids(world_size())) {
    auto grid = ProcessGrid::from_mpi(shape);
    for (int layers : {1, 2, 3})
      for (CommVariant v : {CommVariant::Baseline, CommVariant::RsAg})
        for (LayerOrder order : kOrders) one(*grid, layers, v, order, shape.str());
  }
}

// The reference is the table's: the accuracies stated in its comments, and a valid graph.
TEST(DistLoss, ReferenceIsTheHandStatedOne) {
  const GraphData g = hand_graph();
  EXPECT_NO_THROW(validate(g, "hand graph"));
  EXPECT_NO_THROW(require_labelled_training_node(g, "hand graph"));
  const Reference ref = reference(g);
  EXPECT_DOUBLE_EQ(ref.acc[0], kTrainAcc);
  EXPECT_DOUBLE_EQ(ref.acc[1], kValAcc);
  EXPECT_DOUBLE_EQ(ref.acc[2], kTestAcc);
  EXPECT_GT(ref.train_loss, 0.0);
  EXPECT_GT(ref.val_loss, 0.0);
  EXPECT_NE(ref.train_loss, ref.val_loss);
}

TEST(DistLoss, HandSetLogitsGiveEachSplitsOwnMetricsOnEveryGrid) {
  const GraphData g = hand_graph();
  const Reference ref = reference(g);
  check_everywhere(g, ref, {kTrainAcc, kValAcc, kTestAcc});
}

// An empty validation split is a valid graph (only the train split must hold a labelled node):
// DistLoss reports its accuracy and loss as not evaluated (NaN, never 0), and the other splits
// as before.
TEST(DistLoss, EmptyValidationSplitIsNotEvaluated) {
  const GraphData g = hand_graph(/*val=*/false);
  EXPECT_NO_THROW(validate(g, "hand graph without val"));
  const Reference ref = reference(g);
  EXPECT_DOUBLE_EQ(ref.acc[0], kTrainAcc);
  EXPECT_TRUE(std::isnan(ref.acc[1]));
  EXPECT_TRUE(std::isnan(ref.val_loss));
  EXPECT_DOUBLE_EQ(ref.acc[2], kTestAcc);
  check_everywhere(g, ref, {kTrainAcc, kNotEvaluated, kTestAcc});
}

}  // namespace
}  // namespace plexus

namespace plexus {
namespace {

// A graph without validation (or test) nodes trains: what was not evaluated is NaN in every
// epoch and in the result, never 0, and with no validation accuracy to pick an epoch the last
// one is the result (include/plexus/train.hpp), on every grid.
TEST(GnnTrainer, SplitsWithoutNodesAreNotEvaluatedAndTheLastEpochIsKept) {
  GraphData no_val = hand_graph(/*val=*/false);
  GraphData no_test = hand_graph();
  std::fill(no_test.test_mask.begin(), no_test.test_mask.end(), 0);
  TrainConfig cfg;
  cfg.epochs = 3;
  cfg.hidden = 4;
  cfg.dropout = 0;
  auto be = make_cpu_backend(1);
  for (const GridShape& shape : all_grids(world_size())) {
    auto grid = ProcessGrid::from_mpi(shape);
    const TrainResult a = train_gnn(no_val, cfg, *be, *grid);
    EXPECT_EQ(a.best_epoch, 2) << shape.str();
    EXPECT_TRUE(std::isnan(a.best_val_acc)) << shape.str();
    EXPECT_FALSE(std::isnan(a.test_acc)) << shape.str();
    EXPECT_EQ(a.test_acc, a.epochs.back().test_acc) << shape.str();
    for (const EpochMetrics& m : a.epochs) {
      EXPECT_TRUE(std::isnan(m.val_acc) && std::isnan(m.val_loss)) << shape.str() << " epoch " << m.epoch;
      EXPECT_FALSE(std::isnan(m.train_acc) || std::isnan(m.test_acc) || std::isnan(m.loss)) << shape.str();
    }
    const TrainResult b = train_gnn(no_test, cfg, *be, *grid);
    EXPECT_TRUE(std::isnan(b.test_acc)) << shape.str();
    EXPECT_FALSE(std::isnan(b.best_val_acc)) << shape.str();
    for (const EpochMetrics& m : b.epochs) EXPECT_TRUE(std::isnan(m.test_acc)) << shape.str();
  }
}

}  // namespace
}  // namespace plexus
