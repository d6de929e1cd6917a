#pragma once
// A whole in-memory graph to this rank's shards, as GcnTrainer and GnnModel cut them: Â =
// D^-1/2 (A+I) D^-1/2 in the orders cfg.balance gives, then this rank's blocks of Â, F, labels.
#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"

namespace plexus {

// Validates cfg and the graph; `for_training` also requires a labelled training node (inference
// does not: its graph may have no labels at all).
GcnShards shards_of_graph(const GraphData& graph, const TrainConfig& cfg, ProcessGrid& grid, bool for_training);

}  // namespace plexus
