#pragma once
// One rank of a GNN plan (src/plan/gnn_plan.cpp), dry-run alone: what predict_ranks runs once
// for all the ranks whose keys (the sizes they hold, KindSpec::rank_key) are equal. Tests run
// every rank this way against the shared runs, so a size a layer holds that the key misses shows.
#include "plan/plan.hpp"

namespace plexus {

struct RankEpochs {
  RankCost first, steady;  // the first epoch (layer 0's clean aggregation cached) and a later one
};
RankEpochs dry_run_gnn_rank(const ProblemSize& p, GridShape grid, int rank);

}  // namespace plexus
