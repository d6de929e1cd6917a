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
//   bf16 (LayerCommOptions::bf16): the input, AGG and ROOT, the normalised output and OUT (all
//   but the last layer) held in bf16, dH passed down in bf16; the all-reduces of AGG, ROOT, dH
//   and the Linear3Ds' sums over i and o travel as bf16 (pmm/layer_tensors.hpp).
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/gcn_layer_3d.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/linear_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

class SageLayer3D : public GnnLayer3D {
 public:
  // `neighbours`: N on this layer's block; `self_loops`: S (unchunked). Both outlive the layer.
  SageLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& neighbours, DeviceAdj& self_loops,
              bool relu, bool normalize, std::uint64_t seed, LayerCommOptions comm = {});

  void weight_updated() override {
    neigh_.weight_updated();
    root_.weight_updated();
  }
  Range out_slice_rows() const override { return geo_.out_rows; }
  const LayerGeometry& geometry() const override { return geo_; }
  // N·H and S·H alone (N on Â's pattern, S on its self-loops).
  bool reads_input_through_adj_only() const override { return !geo_.transform_first; }
  // "weight" (W, on the neighbours) and "root_weight" [in_dim × out_dim], "bias" [1 × out_dim].
  std::vector<LayerParam> parameters(bool decay_weights) override;

 private:
  ActivationView forward_pass(const DropoutSpec& dropout) override;
  Activation backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) override;
  // AGG and ROOT from dropout(H).
  void aggregate(const DropoutSpec& dropout);

  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  bool relu_, normalize_;
  DeviceAdj& neighbours_;
  DeviceAdj& self_loops_;
  Linear3D neigh_, root_;
  LayerTensor agg_, root_h_;  // N·dropout(H), S·dropout(H)
  LayerTensor root_y_;        // ROOT·W_root: added into OUT
  Buffer<float> row_sq_;      // normalize: each output row's squared norm
  LayerTensor row_dot_;       // normalize: OUT·dOUT of each row (backward)
  LayerTensor normed_;        // normalize with ReLU: the normalised output before the ReLU
  LayerTensor out_;           // OUT: neigh_'s output
};

}  // namespace plexus
