// GraphSAGE layer forward/backward: the collectives listed in sage_layer_3d.hpp, in that order.
#include "pmm/sage_layer_3d.hpp"

#include "pmm/spmm_all_reduce.hpp"

namespace plexus {

namespace {
Linear3DLayout linear_layout(const LayerGeometry& g) {
  return {g.roles.d, g.roles.i, g.roles.o, g.out_rows.size(), g.in_cols, g.out_cols};
}
// PyG's F.normalize: x / max(‖x‖₂, 1e-12).
constexpr float kNormEps = 1e-12f;
}  // namespace

SageLayer3D::SageLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& neighbours,
                         DeviceAdj& self_loops, bool relu, bool normalize, std::uint64_t seed, LayerCommOptions comm)
    : be_(be),
      grid_(grid),
      geo_(geo),
      relu_(relu),
      normalize_(normalize),
      neighbours_(neighbours),
      self_loops_(self_loops),
      neigh_(be, grid, linear_layout(geo), Linear3DOptions{.bias = true, .reuse_weight = comm.reuse_weight}),
      root_(be, grid, linear_layout(geo), Linear3DOptions{.bias = false, .reuse_weight = comm.reuse_weight}),
      recompute_(comm.recompute) {
  if (!recompute_) {  // recompute: allocated in each pass (held)
    h_drop_ = Matrix(be, geo.in_rows.size(), geo.in_cols.size(), Matrix::PaddedRows{});
    agg_ = Matrix(be, geo.out_rows.size(), geo.in_cols.size());
    root_h_ = Matrix(be, geo.out_rows.size(), geo.in_cols.size());
  }
  if (be.computes()) {  // streams: layer + 1000 (W, as the GCN's) and layer + 2000 (W_root)
    const auto layer = static_cast<std::uint32_t>(geo.layer);
    torch_linear_init(neigh_, geo.in_dim, geo.out_dim, seed, layer + 1000u);
    torch_linear_init(root_, geo.in_dim, geo.out_dim, seed, layer + 2000u);
  }
  if (normalize_) {
    row_sq_ = Buffer<float>(be, static_cast<std::size_t>(geo.out_rows.size()));
    row_dot_ = Buffer<float>(be, static_cast<std::size_t>(geo.out_rows.size()));
    if (relu_) normed_ = Matrix(be, geo.out_rows.size(), geo.out_cols.size());
  }
}

std::vector<LayerParam> SageLayer3D::parameters(bool decay_weights) {
  return {linear_weight_param(neigh_, grid_, "weight", geo_.in_dim, geo_.out_dim, decay_weights),
          linear_weight_param(root_, grid_, "root_weight", geo_.in_dim, geo_.out_dim, decay_weights),
          linear_bias_param(neigh_, grid_, "bias", geo_.out_dim)};
}

void SageLayer3D::aggregate(const Matrix& h_in, const DropoutSpec& dropout) {
  Communicator& o = grid_.comm(geo_.roles.o);
  if (dropout.p > 0.0f) held(be_, h_drop_, geo_.in_rows.size(), geo_.in_cols.size(), true);
  held(be_, agg_, geo_.out_rows.size(), geo_.in_cols.size());
  held(be_, root_h_, geo_.out_rows.size(), geo_.in_cols.size());
  const ConstMatrixView h = input_dropout(be_, h_in, dropout, geo_, h_drop_);
  spmm_all_reduce(be_, o, neighbours_.operand(false), h, agg_);
  spmm_all_reduce(be_, o, self_loops_.operand(false), h, root_h_);
  release_if(recompute_, h_drop_);
}

const Matrix& SageLayer3D::forward(const Matrix& h_in, const DropoutSpec& dropout) {
  Communicator& o = grid_.comm(geo_.roles.o);
  last_h_in_ = &h_in;
  aggregate(h_in, dropout);
  Matrix& out = neigh_.forward(agg_.view());
  const Matrix& root = root_.forward(root_h_.view());
  release_if(recompute_, agg_);  // (backward computes them again)
  release_if(recompute_, root_h_);
  be_.axpby(out.size(), 1.0f, root.data(), 1.0f, out.data());
  if (normalize_) {
    be_.row_dots(out.view(), out.view(), row_sq_.data());
    o.all_reduce(row_sq_.data(), row_sq_.size(), ReduceOp::Sum);
    be_.l2_normalize_rows(out.view(), row_sq_.data(), kNormEps);
    if (relu_) be_.copy(out.view(), normed_.view());  // the backward needs it before the ReLU
  }
  if (relu_) be_.relu(out.view());
  return out;
}

Matrix SageLayer3D::backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  const Matrix& out = neigh_.output();
  if (relu_) be_.relu_backward(out.view(), d_out.view());
  if (normalize_) {
    const ConstMatrixView y = relu_ ? normed_.view() : out.view();
    be_.row_dots(y, d_out.view(), row_dot_.data());
    grid_.comm(geo_.roles.o).all_reduce(row_dot_.data(), row_dot_.size(), ReduceOp::Sum);
    be_.l2_normalize_rows_backward(y, row_sq_.data(), row_dot_.data(), kNormEps, d_out.view());
  }
  if (recompute_) aggregate(*last_h_in_, dropout);
  Matrix d_agg = neigh_.backward(agg_.view(), d_out, need_input_grad);
  release_if(recompute_, agg_);
  Matrix d_root = root_.backward(root_h_.view(), d_out, need_input_grad);
  release_if(recompute_, root_h_);
  if (!need_input_grad) return {};

  Matrix d_h(be_, geo_.in_rows.size(), geo_.in_cols.size());
  const AdjOperand s_t = self_loops_.operand(true);
  be_.spmm(s_t.whole, d_root.view(), d_h.view(), 0.0f, s_t.whole_plan);
  spmm_all_reduce(be_, grid_.comm(geo_.roles.d), neighbours_.operand(true), d_agg.view(), d_h, 1.0f);
  input_dropout_backward(be_, d_h, dropout, geo_);
  return d_h;
}

}  // namespace plexus
