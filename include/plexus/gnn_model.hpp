#pragma once
// A trained GNN for inference — any kind the engine trains — apart from the trainer and the
// graph it was trained on: its options, widths and weights, applied to any graph of the same
// features and classes (a later snapshot with new nodes, unlabelled or not), on any grid. The
// model runs its own forward pass (the trainer calls the same one): it holds no gradient, no
// optimizer moment and no activation kept for a backward pass.
//
//   plexus::GnnModel model = plexus::GnnModel::load("model.h5");  // or GnnModel(trainer)
//   plexus::Inference out = model.predict(snapshot, *backend, *grid, {.embeddings = true});
//   // out.predictions: this rank's nodes (ids, classes, logits); out.embeddings[l]: hidden layer l's
//
// The forward pass of each kind is written in docs/gcn-model.md ("The forward pass").
#include <memory>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"

namespace plexus {

class GnnNetwork;  // the layers (private: src/models/gnn_network.hpp)

struct InferenceOptions {
  bool embeddings = false;  // each hidden layer's output (GnnTrainer::embeddings())
  bool attention = false;   // GAT: each layer's attention coefficients (GnnTrainer::attention())
  // The task's metrics on the graph's labelled splits (accuracies; NaN for a split without a
  // node: a graph without labels has none), from the same forward pass.
  bool metrics = false;
  // predict(GraphData) runs the strict checks of plexus/graph_checks.hpp on the graph
  // (symmetry when undirected, disjoint masks; TrainConfig::strict). The same graph and model on
  // every rank are checked always.
  bool strict = false;
};

// What predict() returns on each rank: its share of the nodes (and, for attention, of the
// entries of Â); every node once over the ranks of the grid.
struct Inference {
  Predictions predictions;
  std::vector<NodeRows> embeddings;     // with InferenceOptions::embeddings: L − 1 layers
  std::vector<EdgeAttention> attention;  // with InferenceOptions::attention (GAT)
  EvalMetrics metrics;                   // with InferenceOptions::metrics; else every one NaN
};


// InputError(where, ...) for the configuration of a link model (TrainConfig::task): its last
// layer is embeddings, not logits, so it predicts no classes.
void require_node_model(const TrainConfig& cfg, const std::string& where);

class GnnModel {
 public:
  // A model file or checkpoint (plexus train --save-model / --checkpoint-dir, GnnTrainer::save;
  // docs/gcn-model.md), written on any grid: its kind, options and widths are read here, its
  // weights by the first predict() (collectively), and kept. InputError(path, ...) when it is
  // not a readable GNN model file.
  static GnnModel load(const std::string& path);
  // The trainer's current weights (collective over the trainer's grid: GnnTrainer::state()).
  explicit GnnModel(GnnTrainer& trainer);
  // A model of `config`'s kind and options and widths `dims` at its initialisation (drawn from
  // config.seed on global indices, as a trainer's first epoch starts): what a plan's dry run of
  // plexus predict runs.
  static GnnModel untrained(const TrainConfig& config, std::vector<index_t> dims);

  const TrainConfig& config() const { return config_; }
  const std::vector<index_t>& dims() const { return dims_; }  // D_0 = features, hidden..., D_L = classes
  std::int64_t epochs_done() const { return epochs_done_; }

  // Applies the model to `graph` (every rank of `grid` passes the same graph; validated): its
  // feature width must be dims().front(); its num_classes dims().back(), or 0 when it has no
  // labels. Labels and masks may be empty (no labels); the scores do not depend on them.
  // Collective. InputError("graph", ...) when the graph does not fit the model.
  Inference predict(const GraphData& graph, Backend& backend, ProcessGrid& grid,
                    const InferenceOptions& options = {});
  // The same on shards this rank holds (load_shards_h5 of a file too large for one rank, cut
  // for this model: its layers, hidden width and layer order).
  Inference predict(GnnShards shards, Backend& backend, ProcessGrid& grid, const InferenceOptions& options = {});
  // A link model (TrainConfig::task): every node's `k` best partners on `graph` (every rank the
  // same graph; message passing over all of its links), excluding its neighbours in the graph
  // and itself: its embeddings against every node's, `tile` nodes at a time as a GEMM on the
  // grid (TopKPartners3D), never an N × N matrix. Collective. InputError for a node model, a
  // graph that does not fit, k < 1.
  TopKPartners top_k_partners(const GraphData& graph, index_t k, Backend& backend, ProcessGrid& grid,
                              index_t tile = 1024);
  // The same for the listed nodes only (your ids, each reported once: rows in the graph's node
  // order), their embeddings alone against every node's, so the work falls with the list.
  // Every rank passes the same list (checked). InputError for an id not in the graph, an empty list.
  TopKPartners top_k_partners(const GraphData& graph, const std::vector<std::int64_t>& nodes, index_t k,
                              Backend& backend, ProcessGrid& grid, index_t tile = 1024);
  // A link model's scores (logits z_u·z_v; σ gives the probability) of the pairs (u[i], v[i]) —
  // your ids (GraphData::node_ids; the index for a graph without them) — on `graph` (every rank
  // the same graph and pairs; message passing over all of its links): every pair's score on every
  // rank, in order. Collective. InputError for a node model, an id not in the graph.
  std::vector<float> score_pairs(const GraphData& graph, const NodePairList& pairs, Backend& backend, ProcessGrid& grid);

 private:
  GnnModel() = default;
  // The weights into the network's parameters (this rank's shards of them), read from the file
  // by the first call; none for an untrained model (the network's own initialisation).
  void put_values(GnnNetwork& net, Backend& backend);
  std::string where() const;  // what errors name: the file, or "model"
  // A link model's forward pass on a whole graph (its network and embeddings): what
  // top_k_partners and score_pairs score; `what` names them in the error for a node model.
  struct LinkEmbeddings;
  LinkEmbeddings link_embeddings(const GraphData& graph, Backend& backend, ProcessGrid& grid, const std::string& what);
  // top_k_partners of all nodes (nodes null) or of the listed graph nodes (ascending, distinct).
  TopKPartners search_partners(const GraphData& graph, const std::vector<std::int64_t>* nodes, index_t k,
                               Backend& backend, ProcessGrid& grid, index_t tile);

  TrainConfig config_;
  std::vector<index_t> dims_;
  std::int64_t epochs_done_ = 0;
  std::string path_;                         // load(): read by the first predict()
  std::shared_ptr<const ModelState> state_;  // the weights (values only), once read
};

}  // namespace plexus
