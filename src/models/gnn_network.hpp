#pragma once
// A GNN of L layers over the process grid, ReLU between layers (ELU for GAT), logits out: the
// GCN (Kipf & Welling, ICLR'17: H_{l+1} = act(Â · dropout(H_l) · W_l + b_l), GcnLayer3D),
// GraphSAGE (SageLayer3D), GIN (GinLayer3D) or GAT (GatLayer3D) — docs/gnn-models.md. Every
// kind reads the same shards.
#include <functional>
#include <memory>
#include <vector>

#include "optim/adam.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "pmm/bf16_tensors.hpp"
#include "pmm/gcn_layer_3d.hpp"
#include "pmm/gnn_layer_3d.hpp"

namespace plexus {

struct GcnConfig {
  float dropout = 0.5f;
  std::uint64_t seed = 42;
  bool scatter_logits = false;  // last layer reduce-scatters its output over i (comm variant rs-ag)
  bool reuse_gathers = false;   // gather W once per update, the features once (rs-ag-reuse)
  int agg_chunks = 1;           // blocked aggregation (TrainConfig::agg_chunks)
  bool recompute = false;       // layers keep only their input for backward (TrainConfig::recompute)
  // The kind and its options (TrainConfig's fields of the same names).
  GnnKind kind = GnnKind::Gcn;
  SageAggregator aggregator = SageAggregator::Mean;
  bool sage_normalize = false;
  float gin_eps = 0.0f;
  bool gin_train_eps = false;
  int gat_heads = 8;
  int gat_out_heads = 1;
  float attn_dropout = 0.0f;
  float negative_slope = 0.2f;
  // --precision bf16 (GCN only; docs/precision.md): the features stored and all-gathered in
  // bf16, the layers' activation-sized all-reduces in bf16 summed in fp32, the hidden layers'
  // outputs and the aggregations kept for backward stored in bf16 (LayerCommOptions::bf16,
  // bf16_output).
  bool bf16 = false;
};

// One parameter of the model: its layer's LayerParam, named "layer<l>/<name>".
using ModelParam = LayerParam;

// A parameter tensor of this rank: value, gradient, and whether weight decay applies.

class GnnNetwork {
 public:
  // The layers take the orders the shards were cut for (shards.transform_first; SAGE and GIN
  // refuse shards cut for transform-first layers).
  // Uploads the shards to the backend, releasing each host block of `shards` as soon as it is
  // uploaded (so host and backend copies of Â never coexist whole).
  GnnNetwork(Backend& be, ProcessGrid& grid, GnnShards& shards, const GcnConfig& cfg);
  // Logits block of this rank: [rows of N over d_L × classes over the last layer's out_feat]
  // (with scatter_logits: only the slice of those rows over its out_repl axis,
  // loss_geometry().out_rows).
  // `between_layers`, when given, is called between two layers (after each but the last): a
  // trainer's stop point (GnnTrainer), which may throw to abandon the pass; every collective
  // of the layers before it has completed then.
  const Matrix& forward(int epoch, bool training, const std::function<void()>& between_layers = {});
  void backward(Matrix& d_logits, int epoch, const std::function<void()>& between_layers = {});
  std::vector<ParamRef> parameters();
  // The same parameters, in the same order, with their names and places in the whole tensors
  // (what model files hold): each layer's in turn.
  std::vector<ModelParam> named_parameters();
  const LayerGeometry& output_geometry() const { return layers_.back()->geometry(); }
  const LayerGeometry& geometry_of_layer(int layer) const { return layers_[static_cast<std::size_t>(layer)]->geometry(); }
  // The last layer's geometry with out_rows narrowed to the rows forward() returns.
  LayerGeometry loss_geometry() const;
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

 private:
  DropoutSpec dropout_for(int epoch, int layer, bool training) const;
  // Layer 0's input in bf16 (cfg.bf16): the bf16 features, gathered over its in_repl axis in bf16.
  const Bf16Matrix& features_bf16();

  Backend& be_;
  ProcessGrid& grid_;
  GcnConfig cfg_;
  Matrix features_;       // stored block, rows split over layer 0's in_repl axis
  Matrix features_full_;  // all-gathered over it: layer 0's input
  Bf16Matrix features16_, features16_full_;  // the same two in bf16 (cfg.bf16; the fp32 ones empty)
  bool features_gathered_ = false;
  AdjWorkspace adj_ws_;                          // gathered sharded Â (one block at a time)
  std::vector<std::unique_ptr<DeviceAdj>> adj_;  // distinct Â blocks; declared before the layers using them
  std::vector<std::unique_ptr<DeviceAdj>> self_loops_;  // SAGE, GIN with a trained ε, GAT: S of each block
  std::vector<Buffer<index_t>> transpose_maps_;         // GAT: each block's entry map to its transpose
  std::vector<std::unique_ptr<GnnLayer3D>> layers_;
  std::vector<const Matrix*> outputs_;  // each layer's output of the last forward pass
  std::vector<const Bf16Matrix*> outputs16_;  // cfg.bf16: those stored in bf16 (all but the last)
  // Each layer's block, and the input ids of its rows and columns (GnnShards::adj_row_ids): the
  // node each output row or attention entry belongs to.
  std::vector<int> adj_of_layer_;
  std::vector<AdjBlockRange> adj_blocks_;
  std::vector<std::vector<index_t>> adj_row_ids_, adj_col_ids_;
  // Block k's ids of `ids` (adj_row_ids_ or adj_col_ids_), or nullptr: the input order.
  const index_t* block_ids(const std::vector<std::vector<index_t>>& ids, std::size_t k) const;
};

}  // namespace plexus
