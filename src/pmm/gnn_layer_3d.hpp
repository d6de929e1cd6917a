#pragma once
// What every GNN layer on the 3D grid is to its model (models/gnn_network.hpp): a forward and a
// backward pass over the layouts its geometry gives (aggregating first: input H_l [rows over o
// × features over i], output [rows over d × features over o] replicated over i; a GCN layer
// that transforms first: input [rows over o × features over d], output [rows over d × features
// over i] replicated over o — LayerGeometry::in_feat and out_feat; each the next layer's
// input), and the list of its parameters. The kinds: GcnLayer3D (gcn_layer_3d.hpp), SageLayer3D (sage_layer_3d.hpp),
// GinLayer3D (gin_layer_3d.hpp); docs/gnn-models.md gives each one's collectives.
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/rng.hpp"
#include "plexus/shard.hpp"
#include "pmm/linear_3d.hpp"
#include "pmm/param_slot.hpp"

namespace plexus {

struct DropoutSpec {
  float p = 0.0f;  // 0 = off (evaluation)
  DropoutKey key{};
  // A training pass (key set even where p is 0: GAT's attention dropout draws from it too).
  bool training = false;
};

// Communication options of one layer (docs/communication-variants.md).
struct LayerCommOptions {
  // Reduce-scatter OUT over the axis it is replicated on (LayerGeometry::out_repl: i when
  // aggregating first, o when transforming first) instead of all-reducing it: forward returns
  // only this rank's row slice (out_slice_rows()); backward takes the gradient of that slice
  // and all-gathers it over that axis. Used for the last layer, whose consumer (the loss)
  // works on row slices.
  bool scatter_output = false;
  // Gather W over d only after weight_updated(), not in every forward and backward.
  bool reuse_weight = false;
  // Row chunks of the aggregation SpMMs, each chunk's all-reduce non-blocking (1 = off).
  int agg_chunks = 1;
  // --precision bf16 (docs/precision.md): the activation-sized all-reduces (the aggregations',
  // Y's and dH's) travel as bf16 summed in fp32; transforming first, the input is read in row
  // chunks by H·W and by dW = Hᵀ·dY (its dropout drawn again for each), so no dropped-out copy
  // of it is kept; aggregating first, AGG kept for backward is bf16, read in row chunks by
  // OUT = AGG·W and dW = AGGᵀ·dOUT. A bf16 layer takes its input in bf16 only (layer 0: the
  // features; forward(Bf16Matrix), forward16) and passes dH down in bf16 (backward16). The
  // reduce-scatter and all-gather of scatter_output stay fp32.
  bool bf16 = false;
  // With bf16, every layer but the last: the output (the next layer's input) is stored in bf16
  // (forward16), computed in fp32 and rounded once stored, and its gradient comes in bf16.
  bool bf16_output = false;
  // Not a communication option, but one every kind's layer takes alike: keep only the input from
  // forward to backward and compute the intermediates again there (TrainConfig::recompute,
  // held() in pmm/gnn_layer_3d.hpp). Recomputing repeats their collectives.
  bool recompute = false;
};

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
  virtual ~GnnLayer3D() = default;
  // h_in: [in_rows × in_cols] (layer 0: already all-gathered over its in_repl axis). Returns the
  // output block [out_rows × out_cols] replicated over out_repl (or its row slice there:
  // out_slice_rows()).
  virtual const Matrix& forward(const Matrix& h_in, const DropoutSpec& dropout) = 0;
  // d_out: the gradient of forward's result (may be modified in place). Accumulates the
  // parameters' gradients; returns dH_in [in_rows × in_cols] unless !need_input_grad.
  virtual Matrix backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) = 0;
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
};

// A layer's input dropout, keyed by the global (row, column) of H_l (geo.in_rows, geo.in_cols),
// so every grid draws the same mask: returns h itself when off, else its masked copy in `scratch`
// ([in_rows × in_cols]). The backward is the same mask on dH, in place.
ConstMatrixView input_dropout(Backend& be, const Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo,
                              Matrix& scratch);
void input_dropout_backward(Backend& be, Matrix& d_h, const DropoutSpec& dropout, const LayerGeometry& geo);

// Recomputation (TrainConfig::recompute): a layer keeps only its input from forward to backward.
// Its intermediates (the dropout copy, the aggregations) are allocated where they are computed
// and released once used; backward computes them again from the input — the same kernels and
// collectives, the dropout masks drawn again from their global indices — so every value is
// the one forward had, bit for bit. `m` is allocated [rows × cols] unless it holds a matrix.
Matrix& held(Backend& be, Matrix& m, index_t rows, index_t cols, bool padded = false);
// Releases `m` when `recompute` (its memory goes back to the backend).
inline void release_if(bool recompute, Matrix& m) {
  if (recompute) m = Matrix();
}

// Glorot/Xavier uniform for the block rows × cols of an in_dim × out_dim weight, drawn on
// global indices from stream `stream` of `seed`, so every grid initialises the same weights.
std::vector<float> glorot_block(index_t in_dim, index_t out_dim, Range rows, Range cols, std::uint64_t seed,
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
