#pragma once
// One graph attention layer (Veličković et al. 2018; PyG's GATConv) on the 3D grid, in the
// transform-first layout of the GCN (pmm/gcn_layer_3d.hpp):
//   Z    = dropout(H)·W                  heads × F columns, head-major (column h·F + f)
//   s_src[j,h] = a_src[h]·Z[j,h],  s_dst[i,h] = a_dst[h]·Z[i,h]
//   e_ij = LeakyReLU(s_dst[i] + s_src[j]) over the entries of Â's pattern (A + I)
//   α    = softmax_j(e_ij) per row i and head, dropout on α (attention dropout)
//   OUT  = Σ_j α_ij·Z[j]  concatenated over heads (hidden layers, then ELU) or averaged (the
//          last layer) + b
// The per-edge tensors (e, α, their gradients) exist only for the entries of this rank's Â
// block: attention memory falls as 1/P with the blocks.
//
// Roles (o, i, d) as transforming first: H [N/G_o × D/G_d] replicated over i; Z [N/G_o ×
// HF/G_i] replicated over d; Â's block [N/G_d × N/G_o] replicated over i; OUT [N/G_d × D'/G_i]
// replicated over o. S (pmm/neighbour_operators.hpp) moves a node's values from the input
// order (the block's columns) to the output order (its rows).
//
// Collectives, in order (L: the Linear3D's, row = o, in = d, out = i, no bias):
//   forward   W = gather(W_o)            all-gather        over o     L
//             Z = H·W                    all-reduce(sum)   over d     L
//             s_src, s_dst = Z·a         all-reduce(sum)   over i     (nodes × 2·heads)      [h]
//             edge features: M = W_e·a_edge per head  all-reduce(sum) over i (D_e × heads)  [h]
//               (s_edge = E·M on the block's entries, added to the scores)
//             s_dst of the rows = S·s_dst all-reduce(sum)  over o     (nodes × heads)
//             row max of e               all-reduce(max)   over o     (nodes × heads)
//             row sum of exp             all-reduce(sum)   over o     (nodes × heads)
//             OUT = α·Z (per head)       all-reduce(sum)   over o
//             averaged heads: the mean   all-reduce(sum)   over i     (nodes × classes)
//   backward  averaged heads: dOUT whole all-reduce(sum)   over i     (nodes × classes)
//             db = colsum(dOUT)          all-reduce(sum)   over d
//             dα = dOUT·Zᵀ on the block  all-reduce(sum)   over i     (entries × heads)      [h]
//             dZ = αᵀ·dOUT (per head)    all-reduce(sum)   over d
//             Σ_j α·dα per row           all-reduce(sum)   over o     (nodes × heads)
//             ds_dst of the rows         all-reduce(sum)   over o     (nodes × heads)
//             ds_src, Sᵀ·ds_dst          all-reduce(sum)   over d     (nodes × 2·heads)
//             da_src, da_dst             all-reduce(sum)   over o     (features)
//             edge features: dM = E·dsᵀ  all-reduce(sum)   over o, then d (D_e × heads; dW_e, da_edge from it)
//             W = gather(W_o)            all-gather        over o     L
//             dW = Hᵀ·dZ                 reduce-scatter    over o     L
//             dH = dZ·Wᵀ                 all-reduce(sum)   over i     L
//   [h] Only where a head's columns are split between ranks of i. Where the column blocks of
//       heads·F over i are cut at head boundaries (G_i divides the heads), each rank of i holds
//       whole heads: it scores and differentiates its own heads alone, with no collective, and
//       its per-edge arrays hold only its heads — attention memory then falls as 1/P.
//   recompute (LayerCommOptions::recompute): backward first computes s_src, s_dst and α again
//   from Z (the forward's collectives from s_src, s_dst = Z·a to the row sum of exp, repeated)
//   and draws dropout(H) again before the Linear3D's backward; attention_on_host() computes α
//   again (without attention dropout) when asked.
//   bf16 (LayerCommOptions::bf16): the input, Z and OUT (all but the last layer) held in bf16,
//   dH passed down in bf16; the all-reduces of OUT and dZ and the Linear3D's sums of Z and dH
//   travel as bf16. The per-edge arrays, the scores and the averaged heads stay fp32
//   (pmm/layer_tensors.hpp).
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/linear_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

struct GatOptions {
  int heads = 1;               // this layer's heads
  bool average_heads = false;  // the last layer: heads of `out_dim` features each, averaged
  float attn_dropout = 0.0f;
  float negative_slope = 0.2f;
  bool elu = false;            // ELU on the output (every layer but the last)
  index_t edge_width = 0;      // the edge features' width D_e (0: the scores read none)
};

class GatLayer3D : public GnnLayer3D {
 public:
  // `adj`: this layer's Â block (its pattern: values are not read); `transpose_map` (device,
  // the block's nnz entries): entry k of the block's transpose is entry transpose_map[k] of the
  // block; `self_loops`: the block's S. All outlive the layer. geo.out_dim is the layer's output
  // width: heads × F concatenated, or F (= out_dim) averaged.
  // `entry_features` (device, [opt.edge_width × the block's nnz], feature-major; only with an
  // edge width): each entry's edge features, a self-loop's the mean of its row's (PyG's
  // fill_value "mean"), which add a_edge·(e_ij·W_e) to the entry's score (PyG's edge_dim).
  GatLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj, const index_t* transpose_map,
             DeviceAdj& self_loops, GatOptions opt, std::uint64_t seed, LayerCommOptions comm = {},
             const float* entry_features = nullptr);

  void weight_updated() override { linear_.weight_updated(); }
  Range out_slice_rows() const override { return geo_.out_rows; }
  const LayerGeometry& geometry() const override { return geo_; }
  // "weight" [in_dim × heads·F], "att_src" and "att_dst" [1 × heads·F], "bias" [1 × out_dim];
  // with edge features "edge_weight" [D_e × heads·F] (lin_edge's, transposed) and "att_edge".
  // Weight decay applies to every one of them when `decay_weights` (PyG's GAT example decays
  // all parameters).
  std::vector<LayerParam> parameters(bool decay_weights) override;
  // The attention coefficients α of the last forward pass (without attention dropout), on the
  // host: [heads × nnz of the block], head-major, every head of the layer, on the rank at
  // coordinate 0 of i; empty on the others (each block of Â is reported once). With whole heads
  // the heads are gathered over i (a collective of i: every rank calls it).
  std::vector<float> attention_on_host() override;
  // The width of Z = H·W: heads × F columns (concatenated, the output's; averaged, heads × the
  // output's), split over the layer's i axis.
  static index_t z_width(const LayerGeometry& geo, const GatOptions& opt);
  int attention_heads() const override { return opt_.heads; }

 private:
  ActivationView forward_pass(const DropoutSpec& dropout) override;
  Activation backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) override;
  index_t head_width() const { return opt_.average_heads ? geo_.out_dim : geo_.out_dim / opt_.heads; }
  // The attention dropout of one pass: keyed by the global entry and head (Backend::edge_dropout).
  DropoutKey attention_key(const DropoutSpec& dropout) const;
  // The global feature column of the first local head's first feature: the col0 of the head
  // kernels (their heads counted from head0_).
  index_t feature0() const { return z_cols_.begin - head0_ * head_width(); }
  // out[:, head columns] = α_h · z[:, head columns] for each head with columns here (the block
  // or its transpose, α in the matching order).
  void multiply_heads(const AdjOperand& a, const float* alpha, ConstMatrixView z, Matrix& out);
  // s_src, s_dst and α (and, training with attention dropout, its dropped copy) from Z.
  // Returns the coefficients the aggregation multiplies by.
  const float* attend(const DropoutSpec& dropout);
  // Forward, or backward, is done with what attend() computed.
  void attention_done();
  void release_attention();

  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  GatOptions opt_;
  DeviceAdj& adj_;
  const index_t* transpose_map_;
  DeviceAdj& self_loops_;
  Range z_cols_;  // this rank's columns of Z (of heads·F, split over i)
  // The heads this rank scores: its own (heads_whole_: every rank of i holds whole heads) or all.
  bool heads_whole_ = false;
  index_t head0_ = 0, local_heads_ = 0;
  index_t nnz_ = 0;
  Linear3D linear_;
  ParamSlot att_src_, att_dst_, bias_;
  const float* entry_features_ = nullptr;
  ParamSlot edge_weight_, att_edge_;  // with edge features: W_e [D_e × z_cols], a_edge [1 × z_cols]
  Matrix s_edge_;                     // [heads × nnz]: a_edge·(e_ij·W_e) of each entry, attend() to backward
  LayerTensor z_;       // Z = dropout(H)·W: the linear's output
  LayerTensor s_cols_;  // [2 × in_rows × heads]: s_src then s_dst of the input order
  LayerTensor s_dst_;   // [out_rows × heads]: s_dst of the output order
  Matrix row_max_, row_sum_;
  LayerTensor alpha_, alpha_drop_, alpha_drop_t_;  // [heads × nnz] each: α, dropped, transposed
  LayerTensor agg_;       // [out_rows × z_cols]: OUT (concatenated heads)
  Matrix mean_map_;       // averaged heads: [z_cols × out_dim], 1/heads where column j is class j mod F
  LayerTensor out_full_;  // averaged heads: [out_rows × out_dim]
  LayerTensor out_;       // averaged heads: OUT [out_rows × out_cols]
  LayerTensor& output() { return opt_.average_heads ? out_ : agg_; }
};

}  // namespace plexus
