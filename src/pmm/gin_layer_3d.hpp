#pragma once
// One GIN layer (Xu et al. 2019; PyG's GINConv) on the 3D grid:
//   OUT = act(MLP((1 + ε)·h_i + Σ_{j∈N(i)} h_j)),  MLP = Linear, ReLU, Linear
// or, given the block's edges with their features, one GINE layer (Hu et al. 2020; PyG's
// GINEConv): the neighbours' sum is Σ_j relu(h_j + e_ij·W_e + b_e) (pmm/edge_messages_3d.hpp)
// and the node's own row (1 + ε)·S·H is added apart, fixed ε or trained.
// ε fixed (then the whole sum is one operator on the Â block's pattern: 1 on the edges, 1 + ε
// on the self-loops) or trained (the neighbours' sum N·H and the node's own row S·H apart,
// pmm/neighbour_operators.hpp). Dropout on H as the GCN's.
//
// The MLP's two Linear3Ds chain (linear_3d.hpp): the first has row = d, in = i, out = o, the
// second in = o, out = i, so its output Y2 [rows over d × features over i] is replicated over
// o — the transpose of the layout the next layer reads. A relayout puts it back.
//
// Collectives (roles o, i, d of the layer):
//   forward   Z = N·H (+ (1+ε)·S·H)       all-reduce(sum) over o  (trained ε, GINE: two of them)
//             Y1 = relu(Z·W + b)          Linear3D (row d, in i, out o)
//             Y2 = Y1·W2 + b2             Linear3D (row d, in o, out i)
//             OUT = Y2 relaid             all-gather over i, keep this rank's columns over o
//   backward  dY2 = dOUT relaid           all-gather over o, keep this rank's columns over i
//             dY1, dW2, db2; dZ, dW, db   (the Linear3Ds')
//             trained ε: dε = Σ dZ ⊙ S·H  all-reduce(sum) over d and over i (1 value each)
//             GINE: dW_e, db_e            all-reduce(sum) over d, then o (edge_messages_3d.hpp)
//             dH = Nᵀ·dZ (+ (1+ε)·Sᵀ·dZ)  all-reduce(sum) over d
//   recompute (LayerCommOptions::recompute): Z (and S·H) again, with their all-reduces over
//   o, from the input at the start of backward; Y1 and OUT are kept.
//   bf16 (LayerCommOptions::bf16): the input, Z (and S·H), Y1 and OUT (all but the last layer)
//   held in bf16, dH passed down in bf16; the all-reduces of Z, S·H and dH and the Linear3Ds'
//   sums travel as bf16, and a hidden layer's relayouts gather bf16 (the last layer's, the
//   logits and their gradient, fp32) (pmm/layer_tensors.hpp).
#include <memory>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/edge_messages_3d.hpp"
#include "pmm/gcn_layer_3d.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/linear_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

class GinLayer3D : public GnnLayer3D {
 public:
  // `neighbours`: N on this layer's block (self-loops 1 + ε with a fixed ε, 0 with a trained
  // one); `self_loops`: S, unchunked (only read with a trained ε or edges: may be null
  // otherwise). `edges` (GINE): the block's edges and their features; N is then not read.
  GinLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& neighbours, DeviceAdj* self_loops,
             bool relu, float eps, bool train_eps, std::uint64_t seed, LayerCommOptions comm = {},
             DeviceEdgeFeatures* edges = nullptr);

  void weight_updated() override {
    lin1_.weight_updated();
    lin2_.weight_updated();
  }
  Range out_slice_rows() const override { return geo_.out_rows; }
  const LayerGeometry& geometry() const override { return geo_; }
  // N·H and, with a trained ε, S·H (N on Â's pattern, S on its self-loops); not GINE's messages.
  bool reads_input_through_adj_only() const override { return !geo_.transform_first && edges_ == nullptr; }
  // "weight" [in_dim × out_dim], "bias", "weight2" [out_dim × out_dim], "bias2" [1 × out_dim],
  // with a trained ε "eps" [1 × 1], and GINE's "edge_weight" [D × in_dim] and "edge_bias".
  std::vector<LayerParam> parameters(bool decay_weights) override;

 private:
  ActivationView forward_pass(const DropoutSpec& dropout) override;
  Activation backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) override;
  // Columns `keep` of a matrix [rows × dim] split by columns over `from` (this rank's block
  // `x`), given that it is replicated over the other axes: all-gathered over `from`.
  void relayout(ConstMatrixView x, Axis from, Range keep, Matrix& out);
  float current_eps();
  // Z = N·dropout(H) (+ (1+ε)·S·dropout(H), S·dropout(H) in root_h_); GINE: the edges' messages
  // for N·dropout(H).
  void aggregate(const DropoutSpec& dropout);
  void aggregate_edges(const DropoutSpec& dropout);
  // S·H apart: a trained ε, or GINE.
  bool root_apart() const { return train_eps_ || edges_ != nullptr; }

  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  bool relu_, train_eps_, bf16_, bf16_output_;
  float fixed_eps_;
  DeviceAdj& neighbours_;
  DeviceAdj* self_loops_;
  Linear3D lin1_, lin2_;
  ParamSlot eps_;  // trained ε: [1 × 1], replicated on every rank
  std::unique_ptr<EdgeMessages3D> edges_;  // GINE
  LayerTensor z_, root_h_;   // Z, and S·dropout(H) with a trained ε
  LayerTensor y1_, y2_;      // the linears' outputs: Y1 = relu(Z·W + b) for backward, Y2 only to relayout
  LayerTensor gathered_;     // the relayouts' all-gathered rows [rows × out_dim]
  LayerTensor out_, d_y2_;   // OUT, and dY2 (backward)
};

}  // namespace plexus
