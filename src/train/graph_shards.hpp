#pragma once
// A whole in-memory graph to this rank's shards, as GnnTrainer and GnnModel cut them: Â =
// D^-1/2 (A+I) D^-1/2 in the orders cfg.balance gives, then this rank's blocks of Â, F, labels.
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/graph.hpp"
#include "plexus/prepare.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"

namespace plexus {

// The user's id of each node of `nodes`: node_ids[node] (GraphData::node_ids, validated), or the
// node's index where the graph has none (empty). What Predictions::ids carries.
std::vector<std::int64_t> node_user_ids(const std::vector<index_t>& nodes, const std::vector<std::int64_t>& node_ids);

// Collective over grid.world(): every rank passes the same configuration and the same graph
// (hashes compared, config first: src/train/config_agreement.hpp, plexus/graph_checks.hpp), else
// the same InputError on every rank. The entry points that take a GraphData from their caller
// run it before any rank can throw alone about its own input (a rank cutting a graph of another
// size would corrupt the collectives' buffers); a graph every rank read from one file needs it
// not. `config_where` names the configuration in the error ("config", a model's "model").
void require_same_inputs(const GraphData& graph, const TrainConfig& cfg, ProcessGrid& grid,
                         const std::string& config_where = "config");

// Validates cfg and the graph (messages name GraphData's members); `for_training` also requires a
// labelled training node (inference does not: its graph may have no labels at all). `strict`:
// the checks of plexus/graph_checks.hpp too (symmetry, disjoint masks). The ranks' inputs are the
// caller's to compare first (require_same_inputs). The link task's training splits the graph's
// links (random_link_split with the configuration's shares and seed), unless `held_out` gives
// the split (a file's: `graph` then holds the training links only; validate_link_split).
GnnShards shards_of_graph(const GraphData& graph, const TrainConfig& cfg, ProcessGrid& grid, bool for_training,
                          bool strict, const LinkSplit* held_out = nullptr);

// The orders a run with cfg.balance makes in memory (not kNone): `graph` reordered only (no
// cleaning: the same Â), as plexus prepare orders it, METIS cut in `parts` (order_parts of the
// grid). Its edge features are left behind (the blocks find theirs in the input).
PreparedGraph ordered_in_memory(const GraphData& graph, const TrainConfig& cfg, OrderParts parts);

// Fills s.edge_feature_width and s.adj_edge_features (a self-loop's row: the mean of its row's
// edges' rows) from `input` (the graph the shards were cut
// from, in its own node order: each block entry is found by its row's and column's input ids,
// GnnShards::adj_row_ids/adj_col_ids). Â's entries are A's edges and the self-loops, so every
// entry off a row's self-loop is an edge of `input`; an undirected graph symmetrised in memory may
// hold only the other direction, whose row is taken. InputError("graph", ...) for a graph without
// edge features, or one that stores an edge twice (which row would be its message's?). The
// blocks must be held whole (not sharded).
void attach_edge_features(GnnShards& s, const GraphData& input);

}  // namespace plexus
