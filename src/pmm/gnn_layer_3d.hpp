#pragma once
// What every GNN layer on the 3D grid is to its model (models/gnn_network.hpp): a forward and a
// backward pass over the layouts its geometry gives (aggregating first: input H_l [rows over o
// × features over i], output [rows over d × features over o] replicated over i; a GCN layer
// that transforms first: input [rows over o × features over d], output [rows over d × features
// over i] replicated over o — LayerGeometry::in_feat and out_feat; each the next layer's
// input), and the list of its parameters. The kinds: GcnLayer3D (gcn_layer_3d.hpp), SageLayer3D
// (sage_layer_3d.hpp), GinLayer3D (gin_layer_3d.hpp), GatLayer3D (gat_layer_3d.hpp);
// docs/gnn-models.md gives each one's collectives. Their precision, what they keep for backward
// and what they compute again are held in one place for all (pmm/layer_tensors.hpp): a kind's
// passes are written once and read straight through.
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/rng.hpp"
#include "plexus/shard.hpp"
#include "pmm/activation.hpp"
#include "pmm/layer_options.hpp"
#include "pmm/layer_tensors.hpp"
#include "pmm/linear_3d.hpp"
#include "pmm/param_slot.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

// One parameter tensor of a layer: its slot on this rank, the whole tensor's shape and this
// rank's block of it (what model files and checkpoints read and write).
struct LayerParam {
  std::string name;  // within the layer: "weight", "bias", "root_weight", "weight2", "bias2", "eps"
  ParamSlot* slot = nullptr;
  index_t rows = 0, cols = 0;
  Range shard_rows, shard_cols;
  bool contributes = true;  // this rank's copy is the one that counts (replicas hold others)
  bool decay = false;       // weight decay applies
};

class GnnLayer3D {
 public:
  GnnLayer3D(const GnnLayer3D&) = delete;
  GnnLayer3D& operator=(const GnnLayer3D&) = delete;
  virtual ~GnnLayer3D() = default;
  // h_in: [in_rows × in_cols] (layer 0: already all-gathered over its in_repl axis), fp32 — or
  // bf16 for a bf16 layer (LayerCommOptions::bf16: the features, then the previous layer's
  // output). It must not change until backward, which may read it again (a linear's X, an
  // aggregation computed again). Returns the output block [out_rows × out_cols] replicated over
  // out_repl (or its row slice there: out_slice_rows()), in bf16 where bf16_output; valid until
  // the next forward.
  ActivationView forward(ActivationView h_in, const DropoutSpec& dropout);
  // d_out: the gradient of forward's result, in its precision (the layer may change it in place
  // or free it). Accumulates the parameters' gradients; returns dH_in [in_rows × in_cols] in the
  // input's precision unless !need_input_grad. A std::logic_error on a layer built for inference.
  Activation backward(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad);
  // The same two for an fp32 layer (d_out changed in place).
  const Matrix& forward(const Matrix& h_in, const DropoutSpec& dropout);
  Matrix backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad);
  // The optimizer changed this rank's weight shards (reuse_weight gathers them again).
  virtual void weight_updated() = 0;
  // Global rows of forward's result.
  virtual Range out_slice_rows() const = 0;
  virtual const LayerGeometry& geometry() const = 0;
  // `decay_weights`: weight decay applies to this layer's weight matrices (not to biases or ε).
  virtual std::vector<LayerParam> parameters(bool decay_weights) = 0;
  // A layer of attention (GAT): its heads, and the coefficients α of the last forward pass
  // (without attention dropout) on the host, [heads × nnz of its Â block] head-major, on the
  // rank that reports the block (empty on the others). Collective over the layer's i axis.
  // Other layers have none: 0 heads.
  virtual int attention_heads() const { return 0; }
  virtual std::vector<float> attention_on_host() { return {}; }
  // The layer reads its input only through products of its block's pattern with H (a GCN, SAGE or
  // GIN layer aggregating first: Â·H, N·H and S·H, S's entries on Â's self-loops), so only the
  // rows of H that are columns of the block holding entries: the gather of layer 0's input may
  // bring those alone (--sparse-comm auto, comm/row_sparse_gather.hpp). Other layers read every
  // row (attention on H·W, a linear first, GINE's messages).
  virtual bool reads_input_through_adj_only() const { return false; }

 protected:
  // `input_role`: of the input's dropped-out copy (LayerInput: Scratch where the layer
  // aggregates its input, Recomputed where a linear multiplies it).
  GnnLayer3D(Backend& be, const LayerGeometry& geo, const LayerCommOptions& comm, TensorRole input_role);
  // The kind's passes, reading the input from input_ and holding their tensors in tensors_
  // (pmm/layer_tensors.hpp): forward returns the output (an Output LayerTensor's activation()).
  virtual ActivationView forward_pass(const DropoutSpec& dropout) = 0;
  virtual Activation backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) = 0;

  LayerTensors tensors_;
  LayerInput input_;
};

// Glorot/Xavier uniform for the block rows × cols of an in_dim × out_dim weight, drawn on
// global indices from stream `stream` of `seed`, so every grid initialises the same weights.
std::vector<float> glorot_block(index_t in_dim, index_t out_dim, Range rows, Range cols, std::uint64_t seed,
                                std::uint32_t stream);
// PyTorch's nn.Linear(in_dim, out_dim) initialisation of the block rows × cols of its weight
// [in_dim × out_dim] (its bias: rows {0, 1}, stream + 500): uniform in ±1/√in_dim, drawn on global
// indices as glorot_block draws them.
std::vector<float> torch_linear_block(index_t in_dim, index_t out_dim, Range rows, Range cols, std::uint64_t seed,
                                      std::uint32_t stream);
// A Linear3D's weight and bias as LayerParams: W [in_dim × out_dim] (this rank's w_rows ×
// out_cols; unique to it) and b [1 × out_dim] (replicated over the row and in axes).
// PyTorch's nn.Linear initialisation (PyG's SAGEConv and GINConv use it): weight and bias
// uniform in ±1/√in_dim, drawn on global indices from `stream` (the bias from stream + 500).
// Glorot's wider range makes GIN's unnormalised sums explode on graphs of high degree.
void torch_linear_init(Linear3D& lin, index_t in_dim, index_t out_dim, std::uint64_t seed, std::uint32_t stream);

LayerParam linear_weight_param(Linear3D& lin, const ProcessGrid& grid, std::string name, index_t in_dim,
                               index_t out_dim, bool decay);
LayerParam linear_bias_param(Linear3D& lin, const ProcessGrid& grid, std::string name, index_t out_dim);

}  // namespace plexus
