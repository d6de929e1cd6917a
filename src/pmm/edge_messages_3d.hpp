#pragma once
// GINE's edge messages (Hu et al. 2020; PyG's GINEConv) on one Â block of the 3D grid:
//   M_e  = relu(H[j] + E_e·W_e + b_e)   for each edge e of the block (row i aggregates column j)
//   Z[i] = Σ_e M_e                      over the edges of row i (partial: this block's columns)
// The edges are the block's entries but each row's self-loop (a GINE layer adds the node's own
// row apart: (1 + ε)·S·H). E_e is the edge's feature row (width D): the graph's
// /graph/edge_features, found per entry when the shards are cut (GnnShards::adj_edge_features).
//
// Layout (roles o, i, d of an aggregating-first layer): the block [out_rows/d × in_rows/o] and
// its edges' features are held whole by every rank of i, as Â's block is; H [in_rows/o ×
// in_cols/i]; W_e [D × in_cols/i] and b_e [in_cols/i] replicated over d and o. The per-edge
// arrays are [in_cols × edges] (feature-major: the edge kernels' head-major layout, one "head"
// per feature column), so they fall as 1/P with the blocks and the columns.
//
// Collectives (the layer sums Z over o and dH over d with its other terms):
//   forward   none
//   backward  dW_e, db_e  all-reduce(sum) over d, then over o   (D × in_cols + in_cols floats)
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/param_slot.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

// One block's edges on the backend: the pattern (rows × cols, no self-loops) and its transpose,
// the map of the transpose's entries to the block's, and the edges' features [D × edges].
class DeviceEdgeFeatures {
 public:
  // From the block `a` (Â's pattern, whole) and its entries' feature rows ([a.nnz() × width],
  // GnnShards::adj_edge_features): the entries at a row's self-loop (`self_col`, -1: none in
  // this block) are left out.
  DeviceEdgeFeatures(Backend& be, const HostCsr& a, const std::vector<index_t>& self_col,
                     const std::vector<float>& entry_rows, index_t width);
  // Sizes only (a plan's dry run): `edges` entries over rows × cols.
  DeviceEdgeFeatures(Backend& be, index_t rows, index_t cols, index_t edges, index_t width);

  CsrView edges() const { return a_.view(); }
  CsrView edges_t() const { return a_t_.view(); }
  const index_t* transpose_map() const { return map_.data(); }
  const float* features() const { return features_.data(); }
  index_t width() const { return width_; }
  index_t count() const { return a_.nnz(); }

 private:
  CsrMatrix a_, a_t_;
  Buffer<index_t> map_;
  Buffer<float> features_;
  index_t width_ = 0;
};

// Per-entry rows [entries × width] (row-major, GnnShards::adj_edge_features) as [width × entries]
// (feature-major: the edge kernels' layout); with `kept`, only those entries, in that order.
std::vector<float> feature_major(const std::vector<float>& rows, index_t width,
                                 const std::vector<index_t>* kept = nullptr);

class EdgeMessages3D {
 public:
  // `geo`: the layer's (its in_rows, in_cols, roles); `stream`: the initialisation's (W_e from
  // stream, b_e from stream + 500, as torch_linear_init: PyTorch's nn.Linear(D, in_dim)).
  EdgeMessages3D(Backend& be, ProcessGrid& grid, const LayerGeometry& geo, DeviceEdgeFeatures& edges,
                 std::uint64_t seed, std::uint32_t stream, bool inference);

  // z = Σ_e M_e over each row of the block, for h = dropout(H) [in_rows × in_cols]; keeps M for
  // backward. z [out_rows × in_cols], overwritten.
  void forward(ConstMatrixView h, MatrixView z);
  // From dZ [out_rows × in_cols]: dW_e and db_e written (summed over d and o), and, where
  // d_h is given, d_h [in_rows × in_cols] = this block's part of dH (to be summed over d). Frees M.
  void backward(ConstMatrixView d_z, Matrix* d_h);
  // "edge_weight" [D × in_dim] and "edge_bias" [1 × in_dim], PyG's lin.weight transposed and lin.bias.
  std::vector<LayerParam> parameters(bool decay_weights);

 private:
  // The per-edge arrays' width: this rank's columns of H.
  index_t cols() const { return geo_.in_cols.size(); }

  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  DeviceEdgeFeatures& edges_;
  bool inference_;  // (forward frees the messages: no backward)
  ParamSlot weight_, bias_;
  Matrix messages_;            // M [in_cols × edges], forward to backward
  Matrix ones_rows_, ones_cols_, ones_edges_;  // the edge kernels' gather and sum operands
};

}  // namespace plexus
