// GptTrainer under MPI (in mpi_test_trainer: 1, 2, 3, 4 and 6 ranks), on every grid and replica
// count of the rank count and every ZeRO stage, against the one-rank trainer that every rank
// also runs by itself (tests/test_gpt_step.cpp pins that one to float64):
//  - a fresh model is the same whole weights on every grid (drawn by global index);
//  - one step of two micro-batches, clipped: the same loss, the same gradient norm (over every
//    shard and replica, each element once), and the same AdamW moments and values — which a
//    norm over one replica, a stage that overwrote accumulated gradients, or shards drawing the
//    same windows would each change.
// Every rank runs every collective in the same order: checks are EXPECTs, never early returns.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "plan/plan.hpp"  // all_grids
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {
namespace {

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Six heads, so that X up to 6 holds one at least; a batch of six sequences, so that every
// replica's Z shard holds one at least.
GptTrainConfig gpt_config() {
  GptTrainConfig c;
  c.model.layers = 2;
  c.model.heads = 6;
  c.model.embed = 12;
  c.model.block = 5;
  c.model.vocab = 13;
  c.batch = 6;
  c.grad_accum = 2;
  c.iters = 3;
  c.warmup = 0;
  c.eval_every = 0;
  c.grad_clip = 0.05f;  // below the first step's norm (checked): the step is clipped
  c.bucket_mb = 64.0 / (1 << 20);  // buckets of 16 floats: many per unit
  return c;
}

const TokenCorpus& corpus() {
  static const TokenCorpus c = [] {
    TokenCorpus t;
    t.vocab = gpt_config().model.vocab;
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> tok(0, static_cast<int>(t.vocab) - 1);
    for (int i = 0; i < 600; ++i) t.train.push_back(tok(rng));
    for (int i = 0; i < 100; ++i) t.val.push_back(tok(rng));
    return t;
  }();
  return c;
}

struct StepRun {
  GptWeights fresh;
  GptStepMetrics step;
  GptCheckpoint state;
};

StepRun one_step(ProcessGrid& grid, const GptTrainConfig& cfg) {
  auto be = make_cpu_backend(1);
  GptTrainer trainer(corpus(), cfg, *be, grid);
  StepRun r;
  r.fresh = trainer.weights();
  r.step = trainer.step();
  r.state = trainer.state();
  return r;
}

// Norm-wise relative difference of every tensor within `tol`.
void expect_close(const GptWeights& got, const GptWeights& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, w] : want) {
    const auto& g = got.at(name).data;
    ASSERT_EQ(g.size(), w.data.size()) << what << " " << name;
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      diff += (double(g[i]) - w.data[i]) * (double(g[i]) - w.data[i]);
      norm += double(w.data[i]) * w.data[i];
    }
    EXPECT_LE(std::sqrt(diff), tol * std::sqrt(norm) + 1e-12) << what << " " << name;
  }
}

TEST(GptTrainerGrids, OneClippedStepIsOneRanksOnEveryGridReplicaCountAndZeroStage) {
  const int p = world_size();
  const GptTrainConfig base = gpt_config();
  auto single = ProcessGrid::single();
  const StepRun ref = one_step(*single, base);
  ASSERT_GT(ref.step.grad_norm, 2 * base.grad_clip);
  for (int dp = 1; dp <= p; ++dp) {
    if (p % dp) continue;
    for (const GridShape& shape : all_grids(p / dp))
      for (int stage = 0; stage <= (dp > 1 ? 3 : 0); ++stage) {
        const std::string what = std::to_string(dp) + " x " + shape.str() + " ZeRO-" + std::to_string(stage);
        GptTrainConfig cfg = base;
        cfg.zero_stage = stage;
        auto grid = ProcessGrid::from_mpi(shape, dp);
        const StepRun r = one_step(*grid, cfg);
        EXPECT_EQ(r.fresh, ref.fresh) << what;
        EXPECT_NEAR(r.step.loss, ref.step.loss, 1e-5 * ref.step.loss) << what;
        EXPECT_NEAR(r.step.grad_norm, ref.step.grad_norm, 1e-5 * ref.step.grad_norm) << what;
        expect_close(r.state.adam_m, ref.state.adam_m, 1e-4, what + " m");
        expect_close(r.state.adam_v, ref.state.adam_v, 1e-4, what + " v");
        expect_close(r.state.model.weights, ref.state.model.weights, 1e-4, what + " values");
      }
  }
}

}  // namespace
}  // namespace plexus
