#pragma once
// A layer of APPNP (Gasteiger et al., "Predict then Propagate", ICLR'19; PyG's citation example:
// an MLP of Linears, then PyG's APPNP): a linear prediction, then K steps of personalized
// PageRank propagation over Â = D^-1/2 (A + I) D^-1/2:
//   Z_0 = dropout(H)·W + b
//   Z_k = (1 − α)·Â·Z_{k−1} + α·Z_0          k = 1 … K,   OUT = act(Z_K)
// The MLP's hidden layers are the same with K = 0 and a ReLU: node-wise Linears (their rows only
// move from the layer's input order to its output order, as every layer's do on the grid).
//
// Layout: the transform-first layout of the GCN (pmm/gcn_layer_3d.hpp): H [N/G_o × D/G_d]
// replicated over i; Z_0 [N/G_o × C/G_i] replicated over d; Â's block [N/G_d × N/G_o]; OUT
// [N/G_d × C/G_i] replicated over o. A step maps the input order (rows over o) to the output
// order (rows over d); the next step needs its input in the input order again: Sᵀ moves it back
// (the block's self-loop selector transposed, summed over d). The teleport term α·Z_0 enters in
// the output order as α·S·Z_0.
//
// Collectives (roles o, i, d of the layer; L: the Linear3D's, row = o, in = d, out = i, with
// the bias):
//   forward   W = gather(W_o)               all-gather       over o       L
//             Z_0 = H·W + b                 all-reduce(sum)  over d       L
//             T = S·Z_0                     all-reduce(sum)  over o
//             P_k = Â·Z_{k−1}                all-reduce(sum)  over o       (K of them)
//             Z_k back to the input order:  Sᵀ·Z_k  all-reduce(sum) over d (K − 1 of them)
//   backward  dZ_{k−1} = (1 − α)·Âᵀ·dZ_k     all-reduce(sum)  over d       (K − 1; dZ_0's below)
//             dZ_{k−1} to the output order: S·dZ_{k−1}  all-reduce(sum) over o (K − 1)
//             dZ_0 = (1 − α)·Âᵀ·dZ_1 + Sᵀ·dT, dT = α·Σ_k dZ_k (K = 0: dT = dOUT)
//                                           all-reduce(sum)  over d       (one, of both terms)
//             db, W, dW = Hᵀ·dZ_0, dH = dZ_0·Wᵀ  (the Linear3D's: all-reduce over o, all-gather and
//                                            reduce-scatter over o, all-reduce over i)
// The propagation is linear: backward reads nothing of forward but H (the Linear3D's input, a
// Recomputed tensor of pmm/layer_tensors.hpp: --recompute draws its dropout again) and, under a
// ReLU, the output; the layer keeps no other activation between the passes. bf16 is not
// declared for the kind (its K propagation steps would each round the output).
#include <cstdint>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/linear_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

struct AppnpOptions {
  int steps = 10;      // K (0: a node-wise Linear)
  float alpha = 0.1f;  // the teleport probability
  bool relu = false;   // ReLU on the output (the MLP's hidden layers)
};

class AppnpLayer3D : public GnnLayer3D {
 public:
  // `adj`: this layer's Â block; `self_loops`: its S (unchunked). Both outlive the layer.
  AppnpLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj, DeviceAdj& self_loops,
               AppnpOptions opt, std::uint64_t seed, LayerCommOptions comm = {});

  void weight_updated() override { linear_.weight_updated(); }
  Range out_slice_rows() const override { return geo_.out_rows; }
  const LayerGeometry& geometry() const override { return geo_; }
  // "weight" [in_dim × out_dim], "bias" [1 × out_dim] (PyG's Linear before APPNP); weight decay
  // applies to both when `decay_weights`.
  std::vector<LayerParam> parameters(bool decay_weights) override;

 private:
  ActivationView forward_pass(const DropoutSpec& dropout) override;
  Activation backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) override;

  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  AppnpOptions opt_;
  DeviceAdj& adj_;
  DeviceAdj& self_loops_;
  Linear3D linear_;  // Z_0 = H·W + b: rows over o, input features over d, output features over i
  LayerTensor z0_;   // Z_0: the propagation's start and its teleport (forward only)
  LayerTensor out_;  // Z_K [out_rows × out_cols], after the ReLU where there is one
};

}  // namespace plexus
