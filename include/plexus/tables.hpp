#pragma once
// One table of every node's outputs, keyed by your node ids: each rank's share of a prediction
// (GnnTrainer::predict(), GnnModel::predict()) gathered to one rank or to every rank, and
// written as CSV. (For graphs too large for one rank's memory, write_predictions_h5 in
// plexus/io.hpp writes the same rows from every rank without gathering them.)
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/gnn_model.hpp"
#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/gnn_trainer.hpp"

namespace plexus {

struct NodeTable {
  std::vector<std::int64_t> ids;      // row k: node k's id (GraphData::node_ids, or k)
  std::vector<std::int32_t> classes;  // argmax of the row's logits (the lowest class on ties)
  index_t num_classes = 0;
  std::vector<float> logits;                   // rows × num_classes
  std::vector<NodeRows> embeddings;            // per hidden layer: node_ids = 0..N−1, rows × width
  // gather_table(..., root) on a rank other than `root`: this table is empty because its rows
  // are on rank `root` (write_table_csv refuses it rather than overwrite root's file with a
  // header alone). -1: the table holds its rows (gathered here, or built by hand).
  int rows_on_rank = -1;
  std::size_t rows() const { return ids.size(); }
};

// Collective over `grid`: every rank passes its share of the same prediction. The table lands
// on rank `root` of the grid (the others get an empty one whose rows_on_rank says where the
// rows are) or, with root = -1, on every rank. Rows are labelled with the ids the predictions
// carry (Predictions::ids); predictions made on shards carry none: pass the graph they were
// made on. Errors are InputErrors, raised on every rank alike: predictions without ids, a
// node's row missing or given twice (not every rank's share, or shares of different runs).
NodeTable gather_table(const Inference& mine, ProcessGrid& grid, int root = 0);
NodeTable gather_table(const Predictions& mine, ProcessGrid& grid, int root = 0);
// The same, the ids read from `graph` (its node_ids, or the node index): for predictions made
// on shards. `graph` must be the graph the predictions were made on: one with fewer nodes, or
// whose ids disagree with the ids the predictions carry (a reordered copy), is refused
// (InputError("graph", ...) on every rank), never used to mislabel rows.
NodeTable gather_table(const Inference& mine, const GraphData& graph, ProcessGrid& grid, int root = 0);
NodeTable gather_table(const Predictions& mine, const GraphData& graph, ProcessGrid& grid, int root = 0);

// CSV, one header line then one line per node: id,class,logit_0..logit_{C-1}, then each hidden
// layer's embedding columns emb<l>_0... Floats in shortest round-trip form. Written atomically
// (a temporary file renamed over `path`); InputError(path, ...) when it cannot be, or when the
// table's rows are on another rank (rows_on_rank: call it there, or gather with root = -1).
void write_table_csv(const NodeTable& table, const std::string& path);

}  // namespace plexus
