// GCN layer forward/backward with the collectives of the Plexus algorithm.
//
// Roles (o, i, d) of this layer's axes (ProcessGrid::roles_for_layer). Local blocks:
//   H   [N/G_o × D/G_i]    Â [N/G_d × N/G_o] (replicated over i)
//   W   [D/G_i × D'/G_o], stored split over d along rows
//   OUT [N/G_d × D'/G_o]   = layer l+1's input layout, replicated over i
//
// Collectives, in order (the aggregation's here; the ones marked L are the Linear3D's, with
// row = d, in = i, out = o: pmm/linear_3d.cpp):
//   forward   AGG = Â·H            all-reduce(sum)    over o     [1]
//             W   = gather(W_d)    all-gather         over d     [2]  L
//             OUT = AGG·W          all-reduce(sum)    over i     [3]  L
//   backward  db  = colsum(dOUT)   all-reduce(sum)    over d          L
//             W   = gather(W_d)    all-gather         over d     [2]  L
//             dW  = AGGᵀ·dOUT      reduce-scatter     over d          L
//             dAGG = dOUT·Wᵀ       all-reduce(sum)    over o          L
//             dH  = Âᵀ·dAGG        all-reduce(sum)    over d     [1]
//   (layer 0 needs no dH: the input features take no gradient. Its aggregation without
//    dropout is constant, so evaluation passes compute it once and reuse it.)
//   Sharded Â (TrainConfig::shard_adj): before each SpMM, Â (forward) or Âᵀ (backward) is
//   all-gathered over i from its parts (DeviceAdj::operand, src/pmm/device_adj.hpp).
//
// Variants (LayerCommOptions; docs/communication-variants.md gives the byte counts):
//   [1] agg_chunks = K > 1: the SpMM runs in K row chunks and the all-reduce becomes K
//       non-blocking all-reduces (iall_reduce) of the chunks' contiguous rows, chunk k's
//       overlapping chunk k+1's SpMM. Same bytes, same sums.
//   [2] reuse_weight: W is all-gathered only after weight_updated() (once per Adam step),
//       not in every forward and backward.
//   [3] scatter_output (last layer, comm variant rs-ag): OUT = AGG·W  reduce-scatter over i,
//       rows of OUT split over i; bias (and ReLU) on the slice; the loss works on the slice.
//       The all-gather is deferred to backward and applied to the gradient:
//             dOUT = gather(dOUT_slice)   all-gather   over i   (training passes only)
#include "pmm/gcn_layer_3d.hpp"

#include "pmm/spmm_all_reduce.hpp"

#include <cmath>
#include <memory>
#include <vector>

namespace plexus {

namespace {
Linear3DLayout linear_layout(const LayerGeometry& g) {
  return {g.roles.d, g.roles.i, g.roles.o, g.out_rows.size(), g.in_cols, g.out_cols};
}
}  // namespace

GcnLayer3D::GcnLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj, bool relu,
                       std::uint64_t seed, bool constant_input, LayerCommOptions comm)
    : be_(be),
      grid_(grid),
      geo_(geo),
      relu_(relu),
      comm_(comm),
      adj_(adj),
      linear_(be, grid, linear_layout(geo),
              Linear3DOptions{.bias = true, .scatter_output = comm.scatter_output, .reuse_weight = comm.reuse_weight}),
      h_drop_(be, geo.in_rows.size(), geo.in_cols.size(), Matrix::PaddedRows{}),  // local: float4 rows
      agg_(be, geo.out_rows.size(), geo.in_cols.size()),
      constant_input_(constant_input) {
  if (be.computes())  // (stream layer + 1000: the GCN's weights since the first release)
    linear_.weight().upload(glorot_block(geo.in_dim, geo.out_dim, geo.w_rows, geo.out_cols, seed,
                                         static_cast<std::uint32_t>(geo.layer) + 1000u));  // a dry run draws nothing
  if (comm_.agg_chunks < 1) comm_.agg_chunks = 1;
  if (grid.dim(geo.roles.i) == 1) comm_.scatter_output = false;  // the all-reduce is already the identity
  if (adj.chunks() != comm_.agg_chunks)
    throw std::invalid_argument("GcnLayer3D: the Â block was chunked for another agg_chunks");
}

Range GcnLayer3D::out_slice_rows() const {
  const Range local = linear_.output_rows();
  return {geo_.out_rows.begin + local.begin, geo_.out_rows.begin + local.end};
}

std::vector<LayerParam> GcnLayer3D::parameters(bool decay_weights) {
  return {linear_weight_param(linear_, grid_, "weight", geo_.in_dim, geo_.out_dim, decay_weights),
          linear_bias_param(linear_, grid_, "bias", geo_.out_dim)};
}

const Matrix& GcnLayer3D::forward(const Matrix& h_in, const DropoutSpec& dropout) {
  const Axis o = geo_.roles.o;
  if (constant_input_ && dropout.p == 0.0f) {
    if (!agg_clean_valid_) {
      agg_clean_ = Matrix(be_, geo_.out_rows.size(), geo_.in_cols.size());
      spmm_all_reduce(be_, grid_.comm(o), adj_.operand(false), h_in.view(), agg_clean_);
      agg_clean_valid_ = true;
    }
    last_agg_ = &agg_clean_;
  } else {
    ConstMatrixView h = h_in.view();
    if (dropout.p > 0.0f) {
      be_.dropout(h, h_drop_.view(), dropout.p, dropout.key, geo_.in_rows.begin, geo_.in_cols.begin);
      h = h_drop_.view();
    }
    spmm_all_reduce(be_, grid_.comm(o), adj_.operand(false), h, agg_);
    last_agg_ = &agg_;
  }

  Matrix& out = linear_.forward(last_agg_->view());
  if (relu_) be_.relu(out.view());
  return out;
}

Matrix GcnLayer3D::backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  const Axis d = geo_.roles.d;
  // ReLU backward on what forward returned (with scatter_output: this rank's row slice; the
  // linear all-gathers the gradient over i afterwards).
  if (relu_) be_.relu_backward(linear_.output().view(), d_out.view());
  Matrix d_agg = linear_.backward(last_agg_->view(), d_out, need_input_grad);
  if (!need_input_grad) return {};

  Matrix d_h(be_, geo_.in_rows.size(), geo_.in_cols.size());
  spmm_all_reduce(be_, grid_.comm(d), adj_.operand(true), d_agg.view(), d_h);
  if (dropout.p > 0.0f)
    be_.dropout(d_h.view(), d_h.view(), dropout.p, dropout.key, geo_.in_rows.begin, geo_.in_cols.begin);
  return d_h;
}

}  // namespace plexus
