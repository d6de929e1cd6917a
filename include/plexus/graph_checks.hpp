#pragma once
// Strict checks of a GraphData, beyond validate() (plexus/graph.hpp), which every entry point
// runs. Opt-in, because they cost a pass over the edges (sorted): TrainConfig::strict
// (GnnTrainer(GraphData), train_gnn(GraphData)), InferenceOptions::strict
// (GnnModel::predict(GraphData)) and `--strict` of plexus train and predict run them. The
// cross-rank one, require_same_graph, every entry point taking a GraphData runs by default.
// docs/format-v1.md ("Validation") lists what is checked by default and what only under strict.
#include <cstdint>
#include <string>

#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"

namespace plexus {

// What validate() lets through but a graph should not have:
//   - an undirected graph (directed == false) whose edge u -> v has no v -> u, or, weighted,
//     a v -> u of another value: "GraphData.indices: undirected graph, but edge 3 -> 7 has no
//     7 -> 3" / "GraphData.values: undirected graph, but edge 3 -> 7 has value 0.5 and 7 -> 3
//     has 2";
//   - a node in two of the train, val and test masks: "GraphData.test_mask: node 12 is also in
//     train_mask".
// InputError(where, ...) naming the first violation (edges in CSR order, then nodes in order).
// `g` must have passed validate().
void validate_strict(const GraphData& g, const std::string& where, GraphNames names = GraphNames::Memory);

// A 64-bit hash of the whole graph: its sizes, directed, indptr, indices, values, features,
// labels, masks and node_ids (each array's length and bytes). Equal graphs hash alike on every
// platform of the same endianness.
std::uint64_t graph_hash(const GraphData& g);

// Every rank of `grid` (its world communicator) holds the same graph: graph_hash compared by
// all-reduces of its minimum and maximum. Collective over grid.world(); when the ranks differ,
// every rank throws the same InputError(where, "GraphData: ranks 0 and B hold different
// graphs ...", B the first rank whose graph is not rank 0's) — no rank is left waiting and no
// rank's message differs.
void require_same_graph(const GraphData& g, ProcessGrid& grid, const std::string& where);

// The strict checks on the shards the ranks of a file read (load_shards_h5), where no rank
// holds the whole graph. Collective over grid.world(); every rank throws the same
// InputError(where, ...): a node in two masks ("/masks/test: node 12 is also in /masks/train",
// the lowest such node over the ranks), and, unless `directed`, an Â whose pattern is not
// symmetric ("/graph/indices: undirected graph, but an edge is stored one way only"): a hash
// of every rank's entries both ways, so it names no edge and compares no values. (The
// same-graph check has no meaning here: every rank read the one file.)
void validate_strict(const GnnShards& shards, bool directed, ProcessGrid& grid, const std::string& where);

}  // namespace plexus
