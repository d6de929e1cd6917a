// Sequence parallelism under MPI (in mpi_test_trainer: 1 to 4, 6 and 8 ranks, and on 5 and 7 of
// the 6 and 8: every rank count of 1 to 8). On every replica count and grid of the rank count,
// ZeRO 0 (and 3 over several replicas), two steps of two micro-batches with dropout, on a batch
// whose sequences split unevenly over X and Y (a rank may hold none):
//  - the per-step losses of the run with GptConfig::sequence_parallel are those of the same grid
//    without it to 1e-6 relative (only the sums' order differs), and so are the weights to 1e-5;
//  - each rank's peak tensor memory, and each kind of it, is what the plan's dry run of that
//    rank says at ZeRO 0 (predict_gpt_ranks; at most, with the vocabulary split over X), and with X or Y
//    split the largest activation peak falls;
//  - with --recompute on top, the losses and weights of the run without it, bit for bit;
//  - context parallelism (GptConfig::context_parallel: Auto splits the attention by positions
//    where a Z rank has fewer sequences than Y ranks — 1x8x1, 1x4x2, 2x4x1's ... —, On
//    everywhere Y > 1) gives those losses and weights too, and its plan its memory.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "plan/gpt_plan.hpp"
#include "plan/plan.hpp"  // all_grids
#include "plexus/backend.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/process_grid.hpp"
#include "mpi_grid_runs.hpp"

namespace plexus {
namespace {

using testing::rank_in;
using testing::size_of;

GptTrainConfig sp_config() {
  GptTrainConfig cfg;
  cfg.model.layers = 2;
  cfg.model.heads = 6;
  cfg.model.embed = 12;
  cfg.model.block = 5;
  cfg.model.vocab = 13;
  cfg.batch = 7;  // 7 sequences: uneven over every axis
  cfg.grad_accum = 2;
  cfg.iters = 2;
  cfg.warmup = 0;
  cfg.eval_every = 0;
  cfg.dropout = 0.2f;
  return cfg;
}

const TokenCorpus& corpus() {
  static const TokenCorpus c = [] {
    TokenCorpus t;
    t.vocab = 13;
    for (int k = 0; k < 400; ++k) t.train.push_back(static_cast<std::int32_t>((k * 5 + k / 7) % 13));
    t.val.assign(t.train.begin(), t.train.begin() + 60);
    return t;
  }();
  return c;
}

struct SpRun {
  std::vector<double> losses;
  GptWeights weights;
  std::size_t peak = 0, activation_peak = 0;
  std::vector<std::size_t> by_kind;
};

SpRun train(ProcessGrid& grid, GptTrainConfig c) {
  auto be = make_cpu_backend(1);
  GptTrainer trainer(corpus(), c, *be, grid);
  SpRun r;
  for (int i = 0; i < c.iters; ++i) r.losses.push_back(trainer.step().loss);
  r.peak = be->peak_bytes();
  r.activation_peak = be->peak_bytes(MemoryKind::Activations);
  for (int k = 0; k < kMemoryKinds; ++k) r.by_kind.push_back(be->peak_bytes(MemoryKind(k)));
  r.weights = trainer.weights();
  return r;
}

double max_relative_difference(const GptWeights& a, const GptWeights& b) {
  double worst = 0;
  for (const auto& [name, t] : a) {
    const auto it = b.find(name);
    if (it == b.end() || it->second.data.size() != t.data.size()) return INFINITY;
    for (std::size_t i = 0; i < t.data.size(); ++i)
      worst = std::max(worst, std::abs(double(t.data[i]) - it->second.data[i]) / std::max(1.0, std::abs(double(t.data[i]))));
  }
  return a.size() == b.size() ? worst : INFINITY;
}

// Every replica count, grid and ZeRO stage of the ranks of `comm`, with and without.
void expect_every_grid_matches_the_run_without(MPI_Comm comm) {
  const int p = size_of(comm);
  for (int dp = 1; dp <= p; ++dp) {
    if (p % dp) continue;
    for (const GridShape& shape : all_grids(p / dp))
      for (const int stage : dp > 1 ? std::vector<int>{0, 3} : std::vector<int>{0}) {
        const std::string what = std::to_string(dp) + " x " + shape.str() + " ZeRO-" + std::to_string(stage);
        GptTrainConfig off = sp_config(), on = sp_config();
        off.zero_stage = on.zero_stage = stage;
        off.model.sequence_parallel = false;
        on.model.sequence_parallel = true;
        GptTrainConfig cp = on;  // context parallelism wherever Y splits
        cp.model.context_parallel = GptConfig::ContextParallel::On;
        auto grid = ProcessGrid::from_mpi(shape, dp, comm);
        const SpRun a = train(*grid, off), b = train(*grid, on);
        const bool cp_differs = shape.y > 1;  // (else it is `on` again)
        const SpRun c = cp_differs ? train(*grid, cp) : b;
        for (const auto& [run, name] : {std::pair{&b, "sequence-parallel"}, std::pair{&c, "context-parallel"}}) {
          ASSERT_EQ(a.losses.size(), run->losses.size()) << what;
          for (std::size_t i = 0; i < a.losses.size(); ++i)
            EXPECT_LE(std::abs(a.losses[i] - run->losses[i]), 1e-6 * std::abs(a.losses[i]))
                << what << " " << name << ": step " << i + 1 << " " << a.losses[i] << " vs " << run->losses[i];
          EXPECT_LE(max_relative_difference(a.weights, run->weights), 1e-5) << what << " " << name;
        }

        // Split over X or Y, the largest rank's activations fall.
        unsigned long long mine[2] = {b.activation_peak, a.activation_peak}, most[2] = {0, 0};
        MPI_Allreduce(mine, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
        if (shape.x * shape.y > 1) {
          EXPECT_LT(most[0], most[1]) << what << ": the largest activation peak did not fall";
        }

        // One step: the plan's dry run of this rank holds what the run held, kind by kind (as
        // DryRun.GptPlanHoldsWhatTrainingHoldsByKind on one rank). (ZeRO-3's own plan:
        // tests/cli_gpt_dp.sh.)
        if (stage != 0) continue;
        for (const GptTrainConfig* planned : {&on, &cp}) {
          if (planned == &cp && !cp_differs) continue;
          GptTrainConfig one = *planned;
          one.iters = 1;
          one.grad_accum = 1;
          one.dropout = 0.0f;
          const SpRun m = train(*grid, one);
          const GptParallel par{dp, stage, one.bucket_mb, Precision::FP32, Transport::Mpi, one.dropout};
          const RankCost plan = predict_gpt_ranks(one.model, one.batch, one.grad_accum, shape, true, par)
              [static_cast<std::size_t>(rank_in(comm))];
          // (With the vocabulary split over X, the plan takes each one-hot embedding matrix at
          // its largest, every row's id held by the rank: at least the run's, then.)
          for (int k = -1; k < kMemoryKinds; ++k) {
            const auto kk = static_cast<std::size_t>(k);
            const double want = k < 0 ? plan.memory_bytes : plan.memory_by_kind[kk];
            const double got = static_cast<double>(k < 0 ? m.peak : m.by_kind[kk]);
            const std::string kind = k < 0 ? "all" : memory_kind_name(MemoryKind(k));
            const std::string which = planned == &cp ? " context-parallel" : "";
            if (shape.x == 1) {
              EXPECT_EQ(want, got) << what << which << ": " << kind;
            } else {
              EXPECT_GE(want, got) << what << which << ": " << kind;
            }
          }
        }
      }
  }
}

TEST(SequenceParallel, GptOnEveryGridReplicaCountAndZeroStageMatchesTheRunWithoutIt) {
  expect_every_grid_matches_the_run_without(MPI_COMM_WORLD);
}

// 5 and 7 ranks (primes: every grid a line) on all but the last of 6 and 8.
TEST(SequenceParallel, FiveAndSevenRanksOfSixAndEightMatchTheRunWithoutIt) {
  const int p = size_of(MPI_COMM_WORLD);
  if (p != 6 && p != 8) GTEST_SKIP() << "runs on 6 and 8 ranks";
  MPI_Comm some;
  const bool in = rank_in(MPI_COMM_WORLD) < p - 1;
  MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED, 0, &some);
  if (in) {
    ASSERT_EQ(size_of(some), p - 1);
    expect_every_grid_matches_the_run_without(some);
    MPI_Comm_free(&some);
  }
}

// Recompute with sequence parallelism: each block's forward runs again in backward, with its
// gathers and reduce-scatters, to the same values bit for bit — on every grid.
TEST(SequenceParallel, RecomputeOnEveryGridGivesTheSameLossesAndWeightsBitForBit) {
  for (const GridShape& shape : all_grids(size_of(MPI_COMM_WORLD))) {
    GptTrainConfig plain = sp_config();
    plain.model.sequence_parallel = true;
    GptTrainConfig re = plain;
    re.model.recompute = true;
    auto grid = ProcessGrid::from_mpi(shape);
    const SpRun a = train(*grid, plain), b = train(*grid, re);
    ASSERT_EQ(a.losses.size(), b.losses.size());
    for (std::size_t i = 0; i < a.losses.size(); ++i)
      EXPECT_EQ(std::memcmp(&a.losses[i], &b.losses[i], sizeof(double)), 0) << shape.str() << ": step " << i + 1;
    EXPECT_TRUE(a.weights == b.weights) << shape.str();
  }
}

}  // namespace
}  // namespace plexus
