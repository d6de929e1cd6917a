#pragma once
// One rank of a GNN plan (src/plan/gnn_plan.cpp), dry-run alone: what predict_ranks runs once
// for all the ranks whose keys (the sizes they hold, KindSpec::rank_key) are equal. Tests run
// every rank this way against the shared runs, so a size a layer holds that the key misses shows.
#include <functional>

#include "kernels/shape/shape_backend.hpp"
#include "plan/plan.hpp"

namespace plexus {

struct RankEpochs {
  RankCost first, steady;  // the first epoch (layer 0's clean aggregation cached) and a later one
};
// `steady`, when given, runs the steady epoch (it calls the function it is handed once), with
// the dry run's backend at hand: an observer of its kernels (plan/kernel_work.hpp).
using SteadyEpoch = std::function<void(ShapeBackend&, const std::function<void()>& epoch)>;
RankEpochs dry_run_gnn_rank(const ProblemSize& p, GridShape grid, int rank, const SteadyEpoch& steady = {});

}  // namespace plexus
