#pragma once
// An in-memory node-classification dataset (format v1, docs/format-v1.md): what library users
// build from their own data and what the loaders return.
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus {

struct GraphData {
  index_t num_nodes = 0;
  index_t num_features = 0;
  std::int32_t num_classes = 0;
  bool directed = false;
  // Adjacency in CSR with global (64-bit) node ids. values empty = unweighted.
  std::vector<index_t> indptr;   // num_nodes + 1
  std::vector<index_t> indices;  // nnz
  std::vector<float> values;     // nnz or empty
  // Optional edge features: a row of num_edge_features values per stored edge, in the order of
  // `indices` (edge e's row is edge_features[e·D, (e+1)·D)); num_edge_features 0 and empty
  // when there are none. What GINE layers (PyG's GINEConv) add to their messages.
  index_t num_edge_features = 0;
  std::vector<float> edge_features;  // nnz * num_edge_features, row-major
  std::vector<float> features;   // num_nodes * num_features, row-major
  std::vector<std::int32_t> labels;  // num_nodes; -1 = unlabelled
  // Optional: each node's weight in the loss (finite, >= 0; TrainConfig's class weights
  // multiply it); empty: every node 1. Checked when a trainer takes the graph.
  std::vector<float> node_weights;
  std::vector<std::uint8_t> train_mask, val_mask, test_mask;  // num_nodes each, 0/1
  // Optional: your id of each node (node k is node_ids[k]; distinct), e.g. from build_graph
  // (plexus/convert.hpp); empty: the node's row is its id. gather_predictions
  // (plexus/gnn_trainer.hpp) keys its table by them.
  std::vector<std::int64_t> node_ids;

  index_t num_edges() const { return static_cast<index_t>(indices.size()); }
};

// Node pairs of a graph (its node indices), pair k = (u[k], v[k]): links held out for link
// prediction, their negatives.
struct NodePairList {
  std::vector<std::int64_t> u, v;
  std::size_t size() const { return u.size(); }
};

// Which names a validation message gives the fields of a GraphData: a graph read from a file
// names the format-v1 datasets ("/graph/indptr", "/masks/train", ...), one a library caller
// built in memory names the members ("GraphData.indptr", "GraphData.train_mask", ...).
enum class GraphNames { File, Memory };

// Checks every invariant of format v1 (shapes, monotone indptr ending at nnz, column range,
// finite features, label range, mask lengths, distinct node_ids, non-empty). Throws
// InputError(where, "<field>: <problem>") naming the first violation, the field as `names` says.
void validate(const GraphData& g, const std::string& where, GraphNames names = GraphNames::File);

// Training needs a labelled node in the train mask: InputError(where, "/masks/train: ...")
// (or "GraphData.train_mask: ...") when there is none (an empty mask, or every label -1),
// instead of a run at loss 0.
void require_labelled_training_node(const GraphData& g, const std::string& where,
                                    GraphNames names = GraphNames::File);
// Why training cannot start with `train_nodes` nodes in the train mask and none labelled.
std::string no_labelled_training_node(index_t train_nodes);

}  // namespace plexus
