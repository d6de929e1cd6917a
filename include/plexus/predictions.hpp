#pragma once
// What a trained model outputs for the nodes a rank owns (GnnTrainer::predict(), attention(),
// embeddings(); GnnModel::predict()), and what write_predictions_h5 (plexus/io.hpp) writes.
#include <cstdint>
#include <vector>

#include "plexus/graph.hpp"

namespace plexus {

// The model's output for the nodes this rank owns. Every node is owned by exactly one rank
// of a replica, so the union over the ranks is the whole graph.
struct Predictions {
  std::vector<index_t> node_ids;       // the node ids of the input graph (before any reordering)
  std::vector<std::int32_t> classes;   // argmax of each node's logits (the lowest class on ties)
  index_t num_classes = 0;
  std::vector<float> logits;           // node_ids.size() × num_classes, row-major: the last layer's output
  // Your id of each row's node (GraphData::node_ids[node_ids[k]], or node_ids[k] for a graph
  // without ids), where the predictions were made on a GraphData (GnnModel::predict(GraphData),
  // a GnnTrainer built from one); empty where they were made on shards (a file's: its
  // /graph/node_ids are not read into them). gather_table places rows by node_ids and labels
  // them with these, so the ids travel with the rows they label.
  std::vector<std::int64_t> ids;
};

// The attention coefficients of one GAT layer (GnnTrainer::attention()): α of every head for
// each entry of Â — each edge (target dst ← source src) and each node's self-loop — that this
// rank reports. Over the ranks of a replica every entry is reported exactly once; for each dst
// and head the α over its entries sum to 1.
struct EdgeAttention {
  int layer = 0;
  index_t heads = 0;
  std::vector<index_t> dst, src;  // node ids of the input graph (before any reordering)
  std::vector<float> alpha;       // dst.size() × heads, row-major
};

// A per-node output (a layer's embeddings) for the nodes this rank owns: as Predictions, every
// node is owned by exactly one rank of a replica.
struct NodeRows {
  std::vector<index_t> node_ids;  // the node ids of the input graph (before any reordering)
  index_t width = 0;
  std::vector<float> values;      // node_ids.size() × width, row-major
};

// A link model's recommendations (GnnModel::top_k_partners): for the nodes this rank reports,
// each one's K best partners by the decoder's score, best first (the higher score, then the lower
// node), its existing neighbours and itself left out; -1 and -inf pad a node with fewer than K
// candidates. Every node is reported by exactly one rank of the grid; the rows of all ranks, in
// the graph's node order, are every node or the nodes listed (top_k_partners with a list).
struct TopKPartners {
  index_t k = 0;
  index_t first_row = 0;  // the position of this rank's first row among all ranks' rows
  index_t num_rows = 0;   // rows of all ranks together (the graph's nodes, or the listed nodes)
  std::vector<index_t> node_ids;         // the input graph's node index of each row
  std::vector<std::int64_t> ids;          // your id of each row's node (GraphData::node_ids)
  std::vector<std::int64_t> partner_ids;  // rows × k: your ids of its partners (-1: none)
  std::vector<float> scores;              // rows × k: their scores (the logits z_u·z_v)
};

}  // namespace plexus
