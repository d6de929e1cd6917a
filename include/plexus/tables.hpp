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
  std::size_t rows() const { return ids.size(); }
};

// Collective over `grid`: every rank passes its share of the same prediction of `graph` (the
// graph it was made on: its num_nodes and node_ids). The table lands on rank `root` of the
// grid (the others get an empty one) or, with root = -1, on every rank.
NodeTable gather_table(const Inference& mine, const GraphData& graph, ProcessGrid& grid, int root = 0);
NodeTable gather_table(const Predictions& mine, const GraphData& graph, ProcessGrid& grid, int root = 0);

// CSV, one header line then one line per node: id,class,logit_0..logit_{C-1}, then each hidden
// layer's embedding columns emb<l>_0... Floats in shortest round-trip form. Written atomically
// (a temporary file renamed over `path`); InputError(path, ...) when it cannot be.
void write_table_csv(const NodeTable& table, const std::string& path);

}  // namespace plexus
