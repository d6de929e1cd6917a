// GnnTrainer under MPI (tests/CMakeLists.txt runs it on 1, 2, 3, 4 and 6 ranks): on every grid
// shape of the rank count, and on grids built over sub-communicators, against the one-rank
// trainer that every rank also runs by itself:
//  - predictions cover every node exactly once, by its original id (also after reordering),
//    and match the one-rank logits; the train / val / test accuracies they give are the ones
//    evaluate() and the last epoch() report;
//  - the model state is the same whole tensors on every grid, and moving it to another grid
//    (or the same one) continues the run: within float tolerance, resp. bit for bit;
//  - a graceful stop abandons an epoch at each of its stop points on every rank alike, leaving
//    the state of the last finished epoch, from which the run continues bit for bit;
//  - train_gnn is the trainer's loop.
// Every rank runs every collective in the same order: checks are EXPECTs, never early returns.
#include <gtest/gtest.h>
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plan/plan.hpp"  // all_grids
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/gnn_trainer.hpp"
#include "mpi_grid_runs.hpp"
#include "mpi_scratch.hpp"

namespace plexus {
namespace {

using testing::size_of;

// Small but uneven: 157 nodes and 5 classes split unevenly over every grid axis.
const GraphData& graph() {
  static const GraphData g = testing::uneven_sbm(7);
  return g;
}

TrainConfig config(CommVariant variant = CommVariant::Baseline) {
  TrainConfig c;
  c.layers = 3;
  c.hidden = 7;
  c.epochs = 6;
  c.dropout = 0.3f;
  c.lr = 0.05f;
  c.seed = 5;
  c.comm_variant = variant;
  return c;
}

struct TrainedRun {
  std::vector<double> losses;
  EpochMetrics last;  // of the last epoch trained
  EvalMetrics eval;
  Predictions pred;
  ModelState state;
};

TrainedRun train(GnnTrainer& t, int epochs) {
  TrainedRun r;
  for (int e = 0; e < epochs; ++e) {
    r.last = t.epoch();
    r.losses.push_back(r.last.loss);
  }
  r.eval = t.evaluate();
  r.pred = t.predict();
  r.state = t.state();
  return r;
}

TrainedRun train_on(ProcessGrid& grid, const TrainConfig& cfg, int epochs) {
  auto be = make_cpu_backend(1);
  GnnTrainer t(graph(), cfg, *be, grid);
  return train(t, epochs);
}

// The one-rank run every rank computes by itself.
const TrainedRun& reference(CommVariant v = CommVariant::Baseline) {
  static TrainedRun runs[3];
  static bool done[3] = {false, false, false};
  const int k = static_cast<int>(v);
  if (!done[k]) {
    auto grid = ProcessGrid::single();
    runs[k] = train_on(*grid, config(v), config().epochs);
    done[k] = true;
  }
  return runs[k];
}

// The predictions of every rank of `comm`, by node id: how often each node was reported, and
// its logits and class (from its last report).
struct AllPredictions {
  std::vector<int> reports;
  std::vector<float> logits;
  std::vector<std::int32_t> classes;
};
AllPredictions gather(const Predictions& p, MPI_Comm comm) {
  const int n = static_cast<int>(graph().num_nodes), c = static_cast<int>(p.num_classes);
  const int mine = static_cast<int>(p.node_ids.size());
  std::vector<int> counts(static_cast<std::size_t>(size_of(comm))), displs(counts.size(), 0);
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  for (std::size_t k = 1; k < counts.size(); ++k) displs[k] = displs[k - 1] + counts[k - 1];
  const int total = displs.back() + counts.back();
  std::vector<std::int64_t> ids(static_cast<std::size_t>(total));
  std::vector<std::int32_t> classes(ids.size());
  MPI_Allgatherv(p.node_ids.data(), mine, MPI_INT64_T, ids.data(), counts.data(), displs.data(), MPI_INT64_T, comm);
  MPI_Allgatherv(p.classes.data(), mine, MPI_INT32_T, classes.data(), counts.data(), displs.data(), MPI_INT32_T, comm);
  for (std::size_t k = 0; k < counts.size(); ++k) {
    counts[k] *= c;
    displs[k] *= c;
  }
  std::vector<float> logits(static_cast<std::size_t>(total) * static_cast<std::size_t>(c));
  MPI_Allgatherv(p.logits.data(), mine * c, MPI_FLOAT, logits.data(), counts.data(), displs.data(), MPI_FLOAT, comm);

  AllPredictions a{std::vector<int>(static_cast<std::size_t>(n), 0),
                   std::vector<float>(static_cast<std::size_t>(n) * static_cast<std::size_t>(c), 0.0f),
                   std::vector<std::int32_t>(static_cast<std::size_t>(n), -1)};
  for (int k = 0; k < total; ++k) {
    const std::int64_t id = ids[static_cast<std::size_t>(k)];
    if (id < 0 || id >= n) {
      ADD_FAILURE() << "node id " << id << " out of range";
      continue;
    }
    ++a.reports[static_cast<std::size_t>(id)];
    a.classes[static_cast<std::size_t>(id)] = classes[static_cast<std::size_t>(k)];
    std::copy_n(logits.data() + static_cast<std::ptrdiff_t>(k) * c, c, a.logits.data() + id * c);
  }
  return a;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t k = 0; k < got.size(); ++k)
    EXPECT_NEAR(got[k], want[k], rel * std::max(1.0, std::abs(want[k]))) << what << " at " << k;
}

// The predictions of a run on `comm` against the one-rank run's.
void expect_same_predictions(const Predictions& p, const TrainedRun& ref, MPI_Comm comm, const std::string& what) {
  const AllPredictions got = gather(p, comm), want = gather(ref.pred, MPI_COMM_SELF);
  const index_t c = ref.pred.num_classes;
  EXPECT_EQ(p.num_classes, c) << what;
  for (index_t v = 0; v < graph().num_nodes; ++v) {
    EXPECT_EQ(got.reports[static_cast<std::size_t>(v)], 1) << what << ": node " << v << " reported that often";
    const float* g = got.logits.data() + v * c;
    const float* w = want.logits.data() + v * c;
    for (index_t k = 0; k < c; ++k) EXPECT_NEAR(g[k], w[k], 1e-4f * std::max(1.0f, std::abs(w[k]))) << what << ": node " << v;
    // The class is the argmax, wherever the top two are not within rounding of each other.
    std::vector<float> sorted(w, w + c);
    std::sort(sorted.rbegin(), sorted.rend());
    if (c < 2 || sorted[0] - sorted[1] > 1e-3f) {
      EXPECT_EQ(got.classes[static_cast<std::size_t>(v)], want.classes[static_cast<std::size_t>(v)]) << what << ": node " << v;
    }
  }
}

// The share of the nodes of `mask` (a split of graph()) whose predicted class is their label:
// what evaluate() reports as that split's accuracy.
double accuracy(const AllPredictions& a, const std::vector<std::uint8_t>& mask) {
  const GraphData& g = graph();
  double correct = 0, total = 0;
  for (index_t v = 0; v < g.num_nodes; ++v)
    if (mask[static_cast<std::size_t>(v)]) {
      ++total;
      correct += a.classes[static_cast<std::size_t>(v)] == g.labels[static_cast<std::size_t>(v)];
    }
  return correct / total;
}

TEST(Trainer, PredictionsOnEveryGridCoverEachNodeOnceAndMatchOneRank) {
  const int p = size_of(MPI_COMM_WORLD);
  for (CommVariant v : {CommVariant::Baseline, CommVariant::RsAg}) {
    const TrainedRun& ref = reference(v);
    for (const GridShape& shape : all_grids(p)) {
      const std::string what = shape.str() + " " + comm_variant_name(v);
      auto grid = ProcessGrid::from_mpi(shape);
      const TrainedRun r = train_on(*grid, config(v), config().epochs);
      expect_close(r.losses, ref.losses, 1e-4, what + " losses");
      expect_same_predictions(r.pred, ref, MPI_COMM_WORLD, what);
      // The accuracies of the predictions on each split are the reported ones of that split
      // (not another split's): by evaluate(), and by the last epoch(), whose metrics are those
      // of the model after its update (epoch() evaluates after the Adam step), the model that
      // evaluate() and predict() then see.
      const AllPredictions all = gather(r.pred, MPI_COMM_WORLD);
      const GraphData& g = graph();
      const double train_acc = accuracy(all, g.train_mask), val_acc = accuracy(all, g.val_mask),
                   test_acc = accuracy(all, g.test_mask);
      EXPECT_DOUBLE_EQ(train_acc, r.eval.train_acc) << what;
      EXPECT_DOUBLE_EQ(val_acc, r.eval.val_acc) << what;
      EXPECT_DOUBLE_EQ(test_acc, r.eval.test_acc) << what;
      EXPECT_DOUBLE_EQ(train_acc, r.last.train_acc) << what;
      EXPECT_DOUBLE_EQ(val_acc, r.last.val_acc) << what;
      EXPECT_DOUBLE_EQ(test_acc, r.last.test_acc) << what;
      EXPECT_DOUBLE_EQ(r.last.val_loss, r.eval.val_loss) << what;
    }
  }
}

// Without dropout (whose masks follow the rows' positions) a reordered graph is the same model:
// its predictions, reported by original node id, are those of the graph in its own order.
TEST(Trainer, ReorderedGraphsPredictByOriginalNodeId) {
  const int p = size_of(MPI_COMM_WORLD);
  TrainConfig cfg = config();
  cfg.dropout = 0.0f;
  auto single = ProcessGrid::single();
  const TrainedRun ref = train_on(*single, cfg, cfg.epochs);
  for (Balance b : {Balance::kPermute, Balance::kMetis, Balance::kLocality}) {
    cfg.balance = b;
    // locality on X and Z both split where the ranks allow (two orders), the rest on Y.
    const GridShape shape = b == Balance::kLocality && p % 2 == 0 ? GridShape{2, 1, p / 2} : GridShape{1, p, 1};
    auto grid = ProcessGrid::from_mpi(shape);
    const TrainedRun r = train_on(*grid, cfg, cfg.epochs);
    expect_same_predictions(r.pred, ref, MPI_COMM_WORLD, std::string(balance_name(b)) + " " + shape.str());
  }
}

TEST(Trainer, ModelStateIsTheSameOnEveryGrid) {
  const TrainedRun& ref = reference();
  for (const GridShape& shape : all_grids(size_of(MPI_COMM_WORLD))) {
    auto grid = ProcessGrid::from_mpi(shape);
    const TrainedRun r = train_on(*grid, config(), config().epochs);
    ASSERT_EQ(r.state.parameters.size(), ref.state.parameters.size());
    EXPECT_EQ(r.state.epochs_done, config().epochs);
    for (std::size_t k = 0; k < r.state.parameters.size(); ++k) {
      const ParameterState& got = r.state.parameters[k];
      const ParameterState& want = ref.state.parameters[k];
      EXPECT_EQ(got.name, want.name);
      EXPECT_EQ(got.rows, want.rows);
      EXPECT_EQ(got.cols, want.cols);
      for (const auto& [g, w] : {std::pair{&got.value, &want.value}, std::pair{&got.adam_m, &want.adam_m},
                                 std::pair{&got.adam_v, &want.adam_v}}) {
        ASSERT_EQ(g->size(), w->size()) << got.name;
        for (std::size_t i = 0; i < g->size(); ++i)
          EXPECT_NEAR((*g)[i], (*w)[i], 2e-4f * std::max(1.0f, std::abs((*w)[i]))) << shape.str() << " " << got.name << "[" << i << "]";
      }
    }
  }
}

// Train 3 epochs on `from`, move the state to `to`, train 3 more: the losses of the uninterrupted
// run on `to`. Bit for bit when the grids are the same.
TEST(Trainer, StateMovesAcrossGridsAndContinuesTheRun) {
  const int p = size_of(MPI_COMM_WORLD);
  const std::vector<GridShape> shapes = all_grids(p);
  const GridShape from = shapes.back(), to = shapes.front();
  auto be = make_cpu_backend(1);
  auto grid_from = ProcessGrid::from_mpi(from);
  GnnTrainer first(graph(), config(), *be, *grid_from);
  const TrainedRun head = train(first, 3);
  for (const GridShape& shape : {from, to}) {
    auto grid = ProcessGrid::from_mpi(shape);
    auto be2 = make_cpu_backend(1);
    GnnTrainer resumed(graph(), config(), *be2, *grid);
    resumed.set_state(head.state);
    EXPECT_EQ(resumed.epochs_done(), 3);
    const TrainedRun tail = train(resumed, 3);
    auto grid_whole = ProcessGrid::from_mpi(shape);
    const TrainedRun whole = train_on(*grid_whole, config(), 6);
    const std::vector<double> want(whole.losses.begin() + 3, whole.losses.end());
    if (shape.str() == from.str())
      EXPECT_EQ(tail.losses, want) << "resumed on the same grid " << shape.str();
    else
      expect_close(tail.losses, want, 1e-4, "moved from " + from.str() + " to " + shape.str());
  }
  // Also onto one rank.
  auto single = ProcessGrid::single();
  auto be3 = make_cpu_backend(1);
  GnnTrainer alone(graph(), config(), *be3, *single);
  alone.set_state(head.state);
  const TrainedRun tail = train(alone, 3);
  expect_close(tail.losses, std::vector<double>(reference().losses.begin() + 3, reference().losses.end()), 1e-4,
               "moved from " + from.str() + " to one rank");
}

TEST(Trainer, StateOfAnotherModelIsRefused) {
  auto grid = ProcessGrid::from_mpi(GridShape{size_of(MPI_COMM_WORLD), 1, 1});
  auto be = make_cpu_backend(1);
  TrainConfig wider = config();
  wider.hidden = 8;
  GnnTrainer t(graph(), wider, *be, *grid);
  EXPECT_THROW(t.set_state(reference().state), InputError);
  ModelState truncated = reference().state;
  truncated.parameters.pop_back();
  EXPECT_THROW(t.set_state(truncated), InputError);
}

// Two grids side by side on the halves of the job (uneven for odd rank counts), each on a
// communicator the caller made: neither sees the other's messages.
TEST(Trainer, GridsOnSubCommunicatorsTrainSideBySide) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  {
    auto grid = ProcessGrid::from_mpi(GridShape{1, 1, size_of(half)}, 1, half);
    const TrainedRun r = train_on(*grid, config(), config().epochs);
    expect_close(r.losses, reference().losses, 1e-4, "on half " + std::to_string(rank % 2));
    expect_same_predictions(r.pred, reference(), half, "on half " + std::to_string(rank % 2));
    // A grid whose size is not the communicator's is an input error.
    EXPECT_THROW(ProcessGrid::from_mpi(GridShape{size_of(half) + 1, 1, 1}, 1, half), InputError);
  }
  MPI_Comm_free(&half);
}

using testing::shared_scratch;

bool same_state(const ModelState& a, const ModelState& b) {
  if (a.epochs_done != b.epochs_done || a.parameters.size() != b.parameters.size()) return false;
  for (std::size_t k = 0; k < a.parameters.size(); ++k) {
    const ParameterState &p = a.parameters[k], &q = b.parameters[k];
    if (p.name != q.name || p.rows != q.rows || p.cols != q.cols || p.value != q.value || p.adam_m != q.adam_m ||
        p.adam_v != q.adam_v)
      return false;
  }
  return true;
}

// save() on one grid, load() on another: the same state, bit for bit; a file of another model,
// a truncated file or a missing one is an InputError on every rank.
TEST(Trainer, ModelFileMovesAcrossGrids) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<GridShape> shapes = all_grids(size_of(MPI_COMM_WORLD));
  const std::string path = shared_scratch("model.h5"), cut = shared_scratch("cut.h5");
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::from_mpi(shapes.back());
  GnnTrainer first(graph(), config(), *be, *grid);
  const TrainedRun head = train(first, 3);
  first.save(path);
  {
    auto grid2 = ProcessGrid::from_mpi(shapes.front());
    GnnTrainer second(graph(), config(), *be, *grid2);
    second.load(path);
    EXPECT_TRUE(same_state(second.state(), head.state)) << shapes.back().str() << " -> " << shapes.front().str();
    EXPECT_EQ(second.epochs_done(), 3);
  }
  TrainConfig wider = config();
  wider.hidden = 8;
  auto grid3 = ProcessGrid::from_mpi(shapes.front());
  GnnTrainer other(graph(), wider, *be, *grid3);
  EXPECT_THROW(other.load(path), InputError);
  if (rank == 0) {
    std::filesystem::copy_file(path, cut, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(cut, std::filesystem::file_size(path) / 2);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_THROW(first.load(cut), InputError);
  EXPECT_THROW(first.load(path + ".missing"), InputError);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    std::filesystem::remove(path);
    std::filesystem::remove(cut);
  }
}

// A run stopped after 7 of 12 epochs (run()'s stop), saved, resumed in a new trainer and run to
// the end reports what the uninterrupted run reports (the best epoch so far travels in the
// file), on the same grid exactly; resume() refuses a file of other training options.
TEST(Trainer, ResumedRunPicksTheUninterruptedBestEpoch) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const GridShape shape = all_grids(size_of(MPI_COMM_WORLD)).back();
  const std::string path = shared_scratch("resume.h5");
  TrainConfig cfg = config();
  cfg.epochs = 12;
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::from_mpi(shape);
  GnnTrainer whole(graph(), cfg, *be, *grid);
  const TrainResult want = whole.run();
  GnnTrainer first(graph(), cfg, *be, *grid);
  int asked = 0;
  const TrainResult head = first.run({}, [&] { return ++asked == 7; });
  EXPECT_EQ(head.epochs.size(), 7u);
  EXPECT_EQ(first.epochs_done(), 7);
  first.save(path);
  GnnTrainer second(graph(), cfg, *be, *grid);
  second.resume(path);
  EXPECT_EQ(second.best().epoch, first.best().epoch);
  const TrainResult tail = second.run();
  ASSERT_EQ(tail.epochs.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(tail.epochs[k].loss, want.epochs[k + 7].loss) << k;
  EXPECT_EQ(tail.best_epoch, want.best_epoch);
  EXPECT_EQ(tail.best_val_acc, want.best_val_acc);
  EXPECT_EQ(tail.test_acc, want.test_acc);
  for (auto change : std::vector<std::function<void(TrainConfig&)>>{[](TrainConfig& c) { c.lr *= 2; },
                                                                    [](TrainConfig& c) { c.seed += 1; },
                                                                    [](TrainConfig& c) { c.dropout = 0.25f; },
                                                                    [](TrainConfig& c) { c.epochs = 6; }}) {
    TrainConfig other = cfg;
    change(other);
    GnnTrainer third(graph(), other, *be, *grid);
    EXPECT_THROW(third.resume(path), InputError);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove(path);
}

// The stop check answers true from its k-th question on (alike on every rank: they ask at the
// same points); 3 layers give 7 stop points per epoch (tests/test_stop_points.cpp).
TEST(Trainer, StopWithinAnEpochKeepsTheLastFinishedEpochOnEveryGrid) {
  const TrainConfig cfg = config();
  for (const GridShape& shape : all_grids(size_of(MPI_COMM_WORLD))) {
    auto be = make_cpu_backend(1);
    auto grid = ProcessGrid::from_mpi(shape);
    GnnTrainer whole(graph(), cfg, *be, *grid);
    const TrainResult want = whole.run();
    for (int k = 1; k <= 7; ++k) {
      SCOPED_TRACE(shape.str() + ", stop at question " + std::to_string(k));
      GnnTrainer t(graph(), cfg, *be, *grid);
      t.epoch();
      const ModelState before = t.state();
      int asked = 0;
      t.set_stop_check([&] { return ++asked >= k; });
      EXPECT_FALSE(t.epoch_unless_stopped().has_value());
      EXPECT_EQ(asked, k);
      const ModelState after = t.state();
      EXPECT_EQ(after.epochs_done, 1);
      for (std::size_t p = 0; p < before.parameters.size(); ++p) {
        EXPECT_EQ(after.parameters[p].value, before.parameters[p].value) << before.parameters[p].name;
        EXPECT_EQ(after.parameters[p].adam_v, before.parameters[p].adam_v) << before.parameters[p].name;
      }
      t.set_stop_check({});
      const TrainResult rest = t.run();
      EXPECT_EQ(rest.epochs.size(), static_cast<std::size_t>(cfg.epochs - 1));
      for (std::size_t e = 0; e < rest.epochs.size() && e + 1 < want.epochs.size(); ++e)
        EXPECT_EQ(rest.epochs[e].loss, want.epochs[e + 1].loss) << e;
      EXPECT_EQ(rest.test_acc, want.test_acc);
    }
  }
}

TEST(Trainer, TrainGcnIsTheTrainerLoop) {
  auto grid = ProcessGrid::from_mpi(GridShape{1, size_of(MPI_COMM_WORLD), 1});
  auto be = make_cpu_backend(1);
  const TrainResult r = train_gnn(graph(), config(), *be, *grid);
  auto grid2 = ProcessGrid::from_mpi(GridShape{1, size_of(MPI_COMM_WORLD), 1});
  const TrainedRun t = train_on(*grid2, config(), config().epochs);
  ASSERT_EQ(r.epochs.size(), t.losses.size());
  for (std::size_t k = 0; k < t.losses.size(); ++k) EXPECT_EQ(r.epochs[k].loss, t.losses[k]) << k;
}

}  // namespace
}  // namespace plexus
