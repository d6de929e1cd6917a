#pragma once
// The GPT's plan (`plexus plan gpt`, --grid auto for `plexus gpt train`): GptTrainer's step run
// dry at each distinct rank (src/plan/gpt_plan.cpp, docs/dry-run.md), timed as every plan is
// (plan/plan.hpp).
#include <vector>

#include "plan/plan.hpp"
#include "plexus/gpt.hpp"

namespace plexus {

// ---- what one optimizer step costs: a dry run of GptTrainer (docs/dry-run.md) ---------------------
// Data parallelism around the grid: replicas, ZeRO stage, gradient bucket (as GptTrainConfig).
struct GptParallel {
  int dp = 1;
  int zero = 0;
  double bucket_mb = 25.0;
  Precision precision = Precision::FP32;  // BF16: 2-byte parameters, gradients and D traffic
  Transport transport = Transport::Mpi;   // whose byte accounting (comm/transport.hpp)
  // GptTrainConfig::dropout: moves and holds nothing more, but its masks' draws are compute.
  float dropout = 0.0f;
};
// Per-rank costs of one step of grad_accum micro-batches, from GptTrainer's step run dry at each
// distinct rank (src/plan/gpt_plan.cpp): bytes per axis (x, y, z, d) exactly as the
// communicators count them (what the metrics' comm_bytes report), GEMM and attention FLOPs, and
// the backend's peak tensor bytes (the one-hot embedding matrices taken at their largest: every
// id held by the rank). Every weight is all-gathered over Z once per step (`gather_weights`);
// the first step after an evaluation finds them gathered already.
std::vector<RankCost> predict_gpt_ranks(const GptConfig& model, index_t batch, int grad_accum, GridShape grid,
                                        bool gather_weights = true, const GptParallel& par = {});
// Bytes per axis of one step, summed over ranks.
AxisBytes predict_gpt_step(const GptConfig& model, index_t batch, int grad_accum, GridShape grid,
                           bool gather_weights = true, const GptParallel& par = {});
// The plan of one grid of par.dp replicas (plan_from_costs of predict_gpt_ranks' step, from the
// distinct runs: plan_from_runs).
GridPlan plan_gpt_grid(const GptConfig& model, index_t batch, int grad_accum, GridShape grid,
                       const MachineModel& machine, const GptParallel& par);
// Every (replicas D, grid X×Y×Z, ZeRO stage) of `ranks` whose predicted memory per rank fits
// `memory_per_rank` (0: any), fastest predicted step first (`plexus plan gpt`). Stages above 0
// only with D > 1.
std::vector<GridPlan> plan_gpt(const GptConfig& model, index_t batch, int grad_accum, int ranks,
                               const MachineModel& machine, double memory_per_rank = 0, double bucket_mb = 25.0,
                               Precision precision = Precision::FP32, Transport transport = Transport::Mpi,
                               float dropout = 0.0f);

}  // namespace plexus
