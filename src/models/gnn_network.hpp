#pragma once
// A GNN of L layers over the process grid, logits out: each layer built by the model's kind
// (models/kinds/: the GCN, Kipf & Welling, ICLR'17: H_{l+1} = act(Â · dropout(H_l) · W_l + b_l);
// GraphSAGE; GIN; GAT — docs/gnn-models.md), every kind reading the same shards.
#include <functional>
#include <memory>
#include <vector>

#include "optim/adam.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/predictions.hpp"
#include "pmm/activation.hpp"
#include "pmm/bf16_tensors.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/edge_messages_3d.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/mlp_link_decoder_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

// One parameter of the model: its layer's LayerParam, named "layer<l>/<name>".
using ModelParam = LayerParam;

// What a network is built for: training (gradients, what backward reads kept or recomputed), or
// inference (LayerCommOptions::inference: no parameter gradients, no backward buffers, nothing
// kept from a layer's forward; evaluation passes only).
enum class NetworkUse { Train, Inference };

class GnnNetwork {
 public:
  // The layers take the orders the shards were cut for (shards.transform_first; SAGE and GIN
  // refuse shards cut for transform-first layers).
  // Uploads the shards to the backend, releasing each host block of `shards` as soon as it is
  // uploaded (so host and backend copies of Â never coexist whole).
  // `cfg`: the model (its kind and options, dropout, seed, precision) and how its layers
  // communicate (comm_variant, agg_chunks) and keep their activations (recompute).
  GnnNetwork(Backend& be, ProcessGrid& grid, GnnShards& shards, const TrainConfig& cfg,
             NetworkUse use = NetworkUse::Train);
  // Logits block of this rank: [rows of N over d_L × classes over the last layer's out_feat]
  // (with scatter_logits: only the slice of those rows over its out_repl axis,
  // loss_geometry().out_rows).
  // `between_layers`, when given, is called between two layers (after each but the last): a
  // trainer's stop point (GnnTrainer), which may throw to abandon the pass; every collective
  // of the layers before it has completed then. A network built for inference runs evaluation
  // passes only (`training` true is a std::logic_error).
  const Matrix& forward(int epoch, bool training, const std::function<void()>& between_layers = {});
  // d_logits is taken (moved from). A std::logic_error on a network built for inference.
  void backward(Matrix& d_logits, int epoch, const std::function<void()>& between_layers = {});
  std::vector<ParamRef> parameters();
  // The same parameters, in the same order, with their names and places in the whole tensors
  // (what model files hold): each layer's in turn.
  std::vector<ModelParam> named_parameters();
  const LayerGeometry& output_geometry() const { return layers_.back()->geometry(); }
  const LayerGeometry& geometry_of_layer(int layer) const { return layers_[static_cast<std::size_t>(layer)]->geometry(); }
  // The last layer's geometry with out_rows narrowed to the rows forward() returns.
  LayerGeometry loss_geometry() const;
  // The last layer returns only this rank's row slice of the logits (comm variant rs-ag, where
  // the kind scatters them): the loss splits its rows over the output's replication axis.
  bool scatters_logits() const { return scatter_logits_; }
  // Call after the optimizer step (lets reuse_gathers gather W again).
  void weights_updated();
  // GAT: each layer's attention coefficients of the last forward pass, this rank's share
  // (GnnTrainer::attention(), plexus/gnn_trainer.hpp); empty for the other kinds. Collective.
  std::vector<EdgeAttention> attention();
  // Layer l's output (after its activation) for the nodes this rank owns, its columns gathered
  // over the layer's feature axis: after a forward pass (the last layer's: the logits of
  // forward()). Collective over that axis.
  NodeRows owned_output(int layer);
  int num_layers() const { return static_cast<int>(layers_.size()); }
  // The link task's MLP decoder (TrainConfig::link.decoder mlp), whose parameters are the
  // model's too ("decoder<l>/weight", after the layers'); nullptr otherwise.
  MlpLinkDecoder3D* link_decoder() { return link_decoder_.get(); }

 private:
  DropoutSpec dropout_for(int epoch, int layer, bool training) const;
  // Layer 0's input: the features, gathered over its in_repl axis (in bf16 with cfg.bf16).
  ActivationView features();
  // Where --sparse-comm auto makes it pay: features_gather_ (set-up; `block`: layer 0's Â block).
  void plan_features_gather(int block);

  Backend& be_;
  ProcessGrid& grid_;
  TrainConfig cfg_;
  bool scatter_logits_ = false;  // the last layer reduce-scatters its output (comm variant rs-ag)
  bool reuse_gathers_ = false;   // gather W once per update, the features once (rs-ag-reuse)
  bool bf16_ = false;            // --precision bf16
  bool inference_ = false;       // NetworkUse::Inference
  Matrix features_;       // stored block, rows split over layer 0's in_repl axis
  Matrix features_full_;  // all-gathered over it: layer 0's input
  Bf16Matrix features16_, features16_full_;  // the same two in bf16 (cfg.bf16; the fp32 ones empty)
  bool features_gathered_ = false;
  // --sparse-comm auto where layer 0 reads its input through Â alone: the gather of the feature
  // rows its block's columns hold (null: the all-gather).
  std::unique_ptr<RowSparseGather> features_gather_;
  AdjWorkspace adj_ws_;                          // gathered sharded Â (one block at a time)
  std::vector<std::unique_ptr<DeviceAdj>> adj_;  // distinct Â blocks; declared before the layers using them
  std::vector<std::unique_ptr<DeviceAdj>> self_loops_;  // SAGE, GIN with a trained ε, GAT: S of each block
  std::vector<Buffer<index_t>> transpose_maps_;         // GAT: each block's entry map to its transpose
  std::vector<std::unique_ptr<DeviceEdgeFeatures>> edge_features_;  // GINE: each block's edges and features
  std::vector<Buffer<float>> entry_features_;  // GAT with edge features: each block's entries' rows, feature-major
  std::vector<std::unique_ptr<GnnLayer3D>> layers_;
  std::unique_ptr<MlpLinkDecoder3D> link_decoder_;
  std::vector<ActivationView> outputs_;  // each layer's output of the last forward pass
  // Each layer's block, and the input ids of its rows and columns (GnnShards::adj_row_ids): the
  // node each output row or attention entry belongs to.
  std::vector<int> adj_of_layer_;
  std::vector<AdjBlockRange> adj_blocks_;
  std::vector<std::vector<index_t>> adj_row_ids_, adj_col_ids_;
  // Block k's ids of `ids` (adj_row_ids_ or adj_col_ids_), or nullptr: the input order.
  const index_t* block_ids(const std::vector<std::vector<index_t>>& ids, std::size_t k) const;
};

}  // namespace plexus
