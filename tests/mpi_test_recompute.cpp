// Activation recomputation under MPI (mpi_test_trainer, on 1 to 4, 6 and 8 ranks): on every grid
// shape of the rank count, on an uneven graph (157 nodes, 11 features, 5 classes, 3 layers),
// every kind and GCN layer order trains with --recompute to the losses and parameters of the
// same grid without it, bit for bit — the recomputed aggregations repeat their collectives in
// the same order on every rank — and no rank's peak tensor memory grows (the largest falls).
// The sharded Â, chunked aggregation and rs-ag variants on the last grid; GAT's attention too.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plan/plan.hpp"  // all_grids
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "mpi_grid_runs.hpp"

namespace plexus {
namespace {

using testing::world_size;

const GraphData& uneven_graph() {
  static const GraphData g = testing::uneven_sbm(23);
  return g;
}

using Case = testing::KindRunCase;

TrainConfig config(const Case& c, bool recompute) {
  TrainConfig t = testing::kind_run_config(c, 4);
  t.recompute = recompute;
  return t;
}

struct TrainedRun {
  std::vector<double> losses;
  ModelState state;
  std::size_t peak = 0;      // this rank's peak tensor bytes
  std::size_t max_peak = 0;  // the largest over the ranks
  std::vector<EdgeAttention> attention;  // gat: this rank's share
};

TrainedRun train(ProcessGrid& grid, const TrainConfig& cfg) {
  auto be = make_cpu_backend(1);
  GnnTrainer t(uneven_graph(), cfg, *be, grid);
  TrainedRun r;
  for (int e = 0; e < cfg.epochs; ++e) r.losses.push_back(t.epoch().loss);
  r.state = t.state();
  r.peak = be->peak_bytes();  // (before attention(), which computes α again under recompute)
  r.attention = t.attention();  // (none but a GAT's)
  unsigned long long mine = r.peak, most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, grid.mpi_comm());
  r.max_peak = static_cast<std::size_t>(most);
  return r;
}

void expect_identical(const TrainedRun& got, const TrainedRun& want, const std::string& what) {
  testing::expect_same_training(got.losses, got.state, want.losses, want.state, what);
  ASSERT_EQ(got.attention.size(), want.attention.size()) << what;
  for (std::size_t l = 0; l < got.attention.size(); ++l)
    EXPECT_TRUE(got.attention[l].alpha == want.attention[l].alpha) << what << ": layer " << l << " attention";
  EXPECT_LE(got.peak, want.peak) << what << ": this rank's peak tensor memory grew";
  EXPECT_LT(got.max_peak, want.max_peak) << what << ": the largest peak tensor memory did not fall";
}

TEST(Recompute, EveryKindOnEveryGridMatchesTheRunWithoutIt) {
  const std::vector<Case> cases = testing::every_kind_case();
  const int p = world_size();
  for (const Case& c : cases) {
    for (const GridShape& shape : all_grids(p)) {
      auto grid = ProcessGrid::from_mpi(shape);
      const std::string what = c.name + " on " + shape.str();
      expect_identical(train(*grid, config(c, true)), train(*grid, config(c, false)), what);
    }
    // The variants on the last (most mixed) grid: sharded Â with chunked aggregation, and rs-ag
    // (the GCN's last layer reduce-scatters its output).
    auto grid = ProcessGrid::from_mpi(all_grids(p).back());
    TrainConfig on = config(c, true), off = config(c, false);
    if (c.model.kind() != "gat") {  // (GAT holds its blocks whole, unchunked)
      on.shard_adj = off.shard_adj = true;
      on.agg_chunks = off.agg_chunks = 3;
      expect_identical(train(*grid, on), train(*grid, off), c.name + " sharded, 3 chunks");
    }
    on = config(c, true);
    off = config(c, false);
    on.comm_variant = off.comm_variant = CommVariant::RsAgReuse;
    expect_identical(train(*grid, on), train(*grid, off), c.name + " rs-ag-reuse");
  }
}

// GPT blocks: on every replica count, grid and ZeRO stage (0, and 3 over several replicas), two
// steps with dropout and gradient accumulation give the run without recompute's losses and
// weights bit for bit, no rank's peak tensor memory grows and the largest falls.
TEST(Recompute, GptOnEveryGridReplicaCountAndZeroStageMatchesTheRunWithoutIt) {
  GptTrainConfig cfg;
  cfg.model.layers = 2;
  cfg.model.heads = 6;
  cfg.model.embed = 12;
  cfg.model.block = 5;
  cfg.model.vocab = 13;
  cfg.batch = 6;
  cfg.grad_accum = 2;
  cfg.iters = 2;
  cfg.warmup = 0;
  cfg.eval_every = 0;
  cfg.dropout = 0.2f;
  TokenCorpus corpus;
  corpus.vocab = cfg.model.vocab;
  for (int k = 0; k < 400; ++k) corpus.train.push_back(static_cast<std::int32_t>((k * 5 + k / 7) % 13));
  corpus.val.assign(corpus.train.begin(), corpus.train.begin() + 60);
  struct Out {
    std::vector<double> losses;
    GptWeights weights;
    std::size_t peak = 0;
  };
  const auto run = [&](ProcessGrid& grid, GptTrainConfig c, bool recompute) {
    c.model.recompute = recompute;
    auto be = make_cpu_backend(1);
    GptTrainer trainer(corpus, c, *be, grid);
    Out o;
    for (int i = 0; i < c.iters; ++i) o.losses.push_back(trainer.step().loss);
    o.peak = be->peak_bytes();
    o.weights = trainer.weights();
    return o;
  };
  const int p = world_size();
  for (int dp = 1; dp <= p; ++dp) {
    if (p % dp) continue;
    for (const GridShape& shape : all_grids(p / dp))
      for (const int stage : dp > 1 ? std::vector<int>{0, 3} : std::vector<int>{0}) {
        const std::string what = "gpt " + std::to_string(dp) + " x " + shape.str() + " ZeRO-" + std::to_string(stage);
        GptTrainConfig c = cfg;
        c.zero_stage = stage;
        auto grid = ProcessGrid::from_mpi(shape, dp);
        const Out plain = run(*grid, c, false), re = run(*grid, c, true);
        ASSERT_EQ(plain.losses.size(), re.losses.size()) << what;
        for (std::size_t i = 0; i < plain.losses.size(); ++i)
          EXPECT_EQ(std::memcmp(&plain.losses[i], &re.losses[i], sizeof(double)), 0)
              << what << ": step " << i + 1 << " " << plain.losses[i] << " vs " << re.losses[i];
        EXPECT_TRUE(plain.weights == re.weights) << what;
        // A rank without sequences (6 over 8 replicas × Z) holds no activations: equal there.
        EXPECT_LE(re.peak, plain.peak) << what << ": this rank's peak tensor memory grew";
        unsigned long long mine[2] = {re.peak, plain.peak}, most[2] = {0, 0};
        MPI_Allreduce(mine, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        EXPECT_LT(most[0], most[1]) << what << ": the largest peak tensor memory did not fall";
      }
  }
}

}  // namespace
}  // namespace plexus
