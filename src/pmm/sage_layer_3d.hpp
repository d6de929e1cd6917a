#pragma once
// One GraphSAGE layer (Hamilton et al. 2017; PyG's SAGEConv with root weight) on the 3D grid:
//   OUT = act(N·H·W + S·H·W_root + b)
// N the neighbour operator on this layer's Â block (mean: D⁻¹A, or sum: A; no self-loops) and
// S the block's self-loop selector (pmm/neighbour_operators.hpp), dropout on H as the GCN's.
// With `normalize` each output row is divided by its L2 norm before the activation.
//
// Collectives (roles o, i, d of the layer; the Linear3Ds' as in pmm/linear_3d.hpp, row = d,
// in = i, out = o):
//   forward   AGG  = N·H                 all-reduce(sum)  over o
//             ROOT = S·H                 all-reduce(sum)  over o
//             OUT  = AGG·W + b            W all-gather over d, all-reduce over i          (Linear3D)
//             OUT += ROOT·W_root          W_root all-gather over d, all-reduce over i     (Linear3D)
//             normalize: row sums of OUT², all-reduce over o  (nodes × 1)
//   backward  normalize: row sums of OUT·dOUT, all-reduce over o
//             dAGG, dW, db; dROOT, dW_root  (each Linear3D's: reduce-scatter over d, all-reduce over o, ...)
//             dH = Nᵀ·dAGG + Sᵀ·dROOT     all-reduce(sum)  over d   (one: both products summed first)
//   recompute (LayerCommOptions::recompute): AGG and ROOT (and their all-reduces) again,
//   from the input, at the start of backward.
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/gcn_layer_3d.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/linear_3d.hpp"

namespace plexus {

class SageLayer3D : public GnnLayer3D {
 public:
  // `neighbours`: N on this layer's block; `self_loops`: S (unchunked). Both outlive the layer.
  SageLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& neighbours, DeviceAdj& self_loops,
              bool relu, bool normalize, std::uint64_t seed, LayerCommOptions comm = {});

  const Matrix& forward(const Matrix& h_in, const DropoutSpec& dropout) override;
  Matrix backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) override;
  void weight_updated() override {
    neigh_.weight_updated();
    root_.weight_updated();
  }
  Range out_slice_rows() const override { return geo_.out_rows; }
  const LayerGeometry& geometry() const override { return geo_; }
  // "weight" (W, on the neighbours) and "root_weight" [in_dim × out_dim], "bias" [1 × out_dim].
  std::vector<LayerParam> parameters(bool decay_weights) override;

 private:
  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  bool relu_, normalize_;
  DeviceAdj& neighbours_;
  DeviceAdj& self_loops_;
  Linear3D neigh_, root_;
  // AGG and ROOT from dropout(h_in) (held: recompute allocates them here).
  void aggregate(const Matrix& h_in, const DropoutSpec& dropout);

  bool recompute_ = false;
  const Matrix* last_h_in_ = nullptr;  // the last forward's input
  Matrix h_drop_, agg_, root_h_;
  Buffer<float> row_sq_, row_dot_;  // normalize: each output row's squared norm, and OUT·dOUT
  Matrix normed_;                   // normalize with ReLU: the normalised output before the ReLU
};

}  // namespace plexus
