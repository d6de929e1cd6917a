// GCN layer forward/backward with the collectives of the Plexus algorithm.
//
// Roles (o, i, d) of this layer's axes (ProcessGrid::roles_for_layer). Local blocks:
//   H   [N/G_o × D/G_i]    Â [N/G_d × N/G_o] (replicated over i)
//   W   [D/G_i × D'/G_o], stored split over d along rows
//   OUT [N/G_d × D'/G_o]   = layer l+1's input layout, replicated over i
//
// Collectives, in order (the only place a layer communicates):
//   forward   AGG = Â·H            all-reduce(sum)    over o
//             W   = gather(W_d)    all-gather         over d
//             OUT = AGG·W          all-reduce(sum)    over i
//   backward  db  = colsum(dOUT)   all-reduce(sum)    over d
//             W   = gather(W_d)    all-gather         over d
//             dW  = AGGᵀ·dOUT      reduce-scatter     over d
//             dAGG = dOUT·Wᵀ       all-reduce(sum)    over o
//             dH  = Âᵀ·dAGG        all-reduce(sum)    over d
//   (layer 0 needs no dH: the input features take no gradient. Its aggregation without
//    dropout is constant, so evaluation passes compute it once and reuse it.)
#include "pmm/gcn_layer_3d.hpp"

#include <cmath>
#include <vector>

namespace plexus {

namespace {
// Glorot/Xavier uniform on global indices, so every grid initialises the same weights.
std::vector<float> glorot_shard(const LayerGeometry& g, std::uint64_t seed) {
  const float limit = std::sqrt(6.0f / static_cast<float>(g.in_dim + g.out_dim));
  const DropoutKey key{seed ^ 0x5EEDC0DEULL, 0, static_cast<std::uint32_t>(g.layer) + 1000u};
  std::vector<float> w(static_cast<std::size_t>(g.w_rows.size() * g.out_cols.size()));
  for (index_t r = g.w_rows.begin; r < g.w_rows.end; ++r)
    for (index_t c = g.out_cols.begin; c < g.out_cols.end; ++c)
      w[(r - g.w_rows.begin) * g.out_cols.size() + (c - g.out_cols.begin)] =
          (2.0f * counter_uniform(key, static_cast<std::uint64_t>(r), static_cast<std::uint32_t>(c)) - 1.0f) * limit;
  return w;
}
}  // namespace

GcnLayer3D::GcnLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, const HostCsr& a, const HostCsr& a_t,
                       bool relu, std::uint64_t seed, bool constant_input)
    : be_(be),
      grid_(grid),
      geo_(geo),
      relu_(relu),
      a_(be, a),
      a_t_(be, a_t),
      w_(be, geo.w_rows.size(), geo.out_cols.size()),
      dw_(be, geo.w_rows.size(), geo.out_cols.size()),
      w_full_(grid.dim(geo.roles.d) > 1 ? Matrix(be, geo.in_cols.size(), geo.out_cols.size()) : Matrix()),
      dw_full_(grid.dim(geo.roles.d) > 1 ? Matrix(be, geo.in_cols.size(), geo.out_cols.size()) : Matrix()),
      b_(be, static_cast<std::size_t>(geo.out_cols.size())),
      db_(be, static_cast<std::size_t>(geo.out_cols.size())),
      h_drop_(be, geo.in_rows.size(), geo.in_cols.size()),
      agg_(be, geo.out_rows.size(), geo.in_cols.size()),
      out_(be, geo.out_rows.size(), geo.out_cols.size()),
      constant_input_(constant_input) {
  w_.upload(glorot_shard(geo, seed));
}

const Matrix& GcnLayer3D::gather_weight() {
  if (grid_.dim(geo_.roles.d) == 1) return w_;
  const auto counts = block_counts(geo_.in_cols.size(), grid_.dim(geo_.roles.d), geo_.out_cols.size());
  grid_.comm(geo_.roles.d).all_gather(w_.data(), w_full_.data(), counts);
  return w_full_;
}

const Matrix& GcnLayer3D::forward(const Matrix& h_in, const DropoutSpec& dropout) {
  const auto [o, i, d] = geo_.roles;
  (void)d;
  if (dropout.p > 0.0f) {
    be_.dropout(h_in.view(), h_drop_.view(), dropout.p, dropout.key, geo_.in_rows.begin, geo_.in_cols.begin);
    be_.spmm(a_.view(), h_drop_.view(), agg_.view(), 0.0f);
    grid_.comm(o).all_reduce(agg_.data(), agg_.size(), ReduceOp::Sum);
    last_agg_ = &agg_;
  } else if (constant_input_) {
    if (!agg_clean_valid_) {
      agg_clean_ = Matrix(be_, geo_.out_rows.size(), geo_.in_cols.size());
      be_.spmm(a_.view(), h_in.view(), agg_clean_.view(), 0.0f);
      grid_.comm(o).all_reduce(agg_clean_.data(), agg_clean_.size(), ReduceOp::Sum);
      agg_clean_valid_ = true;
    }
    last_agg_ = &agg_clean_;
  } else {
    be_.spmm(a_.view(), h_in.view(), agg_.view(), 0.0f);
    grid_.comm(o).all_reduce(agg_.data(), agg_.size(), ReduceOp::Sum);
    last_agg_ = &agg_;
  }

  const Matrix& w = gather_weight();
  be_.gemm(Trans::No, Trans::No, 1.0f, last_agg_->view(), w.view(), 0.0f, out_.view());
  grid_.comm(i).all_reduce(out_.data(), out_.size(), ReduceOp::Sum);

  be_.add_bias(out_.view(), b_.data());
  if (relu_) be_.relu(out_.view());
  return out_;
}

Matrix GcnLayer3D::backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  const auto [o, i, d] = geo_.roles;
  (void)i;
  if (relu_) be_.relu_backward(out_.view(), d_out.view());

  be_.column_sum(d_out.view(), 0.0f, db_.data());
  grid_.comm(d).all_reduce(db_.data(), db_.size(), ReduceOp::Sum);

  const Matrix& w = gather_weight();
  if (grid_.dim(d) == 1) {
    be_.gemm(Trans::Yes, Trans::No, 1.0f, last_agg_->view(), d_out.view(), 0.0f, dw_.view());
  } else {
    be_.gemm(Trans::Yes, Trans::No, 1.0f, last_agg_->view(), d_out.view(), 0.0f, dw_full_.view());
    const auto counts = block_counts(geo_.in_cols.size(), grid_.dim(d), geo_.out_cols.size());
    grid_.comm(d).reduce_scatter(dw_full_.data(), dw_.data(), counts);
  }

  if (!need_input_grad) return {};
  Matrix d_agg(be_, geo_.out_rows.size(), geo_.in_cols.size());
  be_.gemm(Trans::No, Trans::Yes, 1.0f, d_out.view(), w.view(), 0.0f, d_agg.view());
  grid_.comm(o).all_reduce(d_agg.data(), d_agg.size(), ReduceOp::Sum);

  Matrix d_h(be_, geo_.in_rows.size(), geo_.in_cols.size());
  be_.spmm(a_t_.view(), d_agg.view(), d_h.view(), 0.0f);
  grid_.comm(d).all_reduce(d_h.data(), d_h.size(), ReduceOp::Sum);
  if (dropout.p > 0.0f)
    be_.dropout(d_h.view(), d_h.view(), dropout.p, dropout.key, geo_.in_rows.begin, geo_.in_cols.begin);
  return d_h;
}

}  // namespace plexus
