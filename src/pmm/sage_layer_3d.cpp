// GraphSAGE layer forward/backward: the collectives listed in sage_layer_3d.hpp, in that order.
#include "pmm/sage_layer_3d.hpp"

#include "pmm/spmm_all_reduce.hpp"
#include "core/shard_layout.hpp"

#include <utility>

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
    : GnnLayer3D(be, geo, comm, TensorRole::Scratch),
      be_(be),
      grid_(grid),
      geo_(geo),
      relu_(relu),
      normalize_(normalize),
      neighbours_(neighbours),
      self_loops_(self_loops),
      neigh_(be, grid, linear_layout(geo),
             Linear3DOptions{.bias = true, .reuse_weight = comm.reuse_weight, .sums = comm.sum_wire(),
                             .inference = comm.inference}),
      root_(be, grid, linear_layout(geo),
            Linear3DOptions{.bias = false, .reuse_weight = comm.reuse_weight, .sums = comm.sum_wire(),
                            .inference = comm.inference}),
      agg_(tensors_, TensorRole::Recomputed, geo.out_rows.size(), geo.in_cols.size()),
      root_h_(tensors_, TensorRole::Recomputed, geo.out_rows.size(), geo.in_cols.size()),
      root_y_(tensors_, TensorRole::PassOnly, root_),
      row_dot_(tensors_, TensorRole::Backward, normalize ? geo.out_rows.size() : 0, 1),
      normed_(tensors_, TensorRole::Kept, normalize && relu ? geo.out_rows.size() : 0, geo.out_cols.size()),
      out_(tensors_, TensorRole::Output, neigh_) {
  if (be.computes()) {  // streams: layer + 1000 (W, as the GCN's) and layer + 2000 (W_root)
    const auto layer = static_cast<std::uint32_t>(geo.layer);
    torch_linear_init(neigh_, geo.in_dim, geo.out_dim, seed, layer + 1000u);
    torch_linear_init(root_, geo.in_dim, geo.out_dim, seed, layer + 2000u);
  }
  if (normalize_) row_sq_ = Buffer<float>(be, static_cast<std::size_t>(geo.out_rows.size()));
}

std::vector<LayerParam> SageLayer3D::parameters(bool decay_weights) {
  return {linear_weight_param(neigh_, grid_, "weight", geo_.in_dim, geo_.out_dim, decay_weights),
          linear_weight_param(root_, grid_, "root_weight", geo_.in_dim, geo_.out_dim, decay_weights),
          linear_bias_param(neigh_, grid_, "bias", geo_.out_dim)};
}

void SageLayer3D::aggregate(const DropoutSpec& dropout) {
  const LayerInput::Aggregation products[] = {{neighbours_.operand(false), agg_}, {self_loops_.operand(false), root_h_}};
  input_.aggregate(dropout, grid_.comm(geo_.roles.o), products);
}

ActivationView SageLayer3D::forward_pass(const DropoutSpec& dropout) {
  Communicator& o = grid_.comm(geo_.roles.o);
  aggregate(dropout);
  Matrix& out = neigh_.forward(agg_.rows());
  const Matrix& root = root_.forward(root_h_.rows());
  agg_.done();  // (recompute: backward computes them again)
  root_h_.done();
  be_.axpby(out.size(), 1.0f, root.data(), 1.0f, out.data());
  root_y_.done();
  if (normalize_) {
    be_.row_dots(out.view(), out.view(), row_sq_.data());
    o.all_reduce(row_sq_.data(), row_sq_.size(), ReduceOp::Sum);
    be_.l2_normalize_rows(out.view(), row_sq_.data(), kNormEps);
    if (relu_) {  // the backward needs it before the ReLU
      be_.copy(out.view(), normed_.compute().view());
      normed_.computed();
      normed_.done();
    }
  }
  if (relu_) be_.relu(out.view());
  out_.computed();
  return out_.activation();
}

Activation SageLayer3D::backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  const Nonlinearity f = relu_ ? Nonlinearity::Relu : Nonlinearity::None;
  // dOUT before the ReLU (a bf16 one read by rows), and before the normalisation (then whole).
  RowSource d;
  if (!normalize_) {
    d = out_.gradient_rows(d_out, f);
  } else {
    Matrix& g = out_.gradient(d_out, f);
    const ConstMatrixView y = relu_ ? normed_.view() : out_.view();
    float* dots = row_dot_.compute().data();
    be_.row_dots(y, g.view(), dots);
    grid_.comm(geo_.roles.o).all_reduce(dots, static_cast<std::size_t>(geo_.out_rows.size()), ReduceOp::Sum);
    be_.l2_normalize_rows_backward(y, row_sq_.data(), dots, kNormEps, g.view());
    normed_.release();
    d = plain_rows(g.view());
  }
  agg_.ensure([&] { aggregate(dropout); });  // (ROOT with it)
  Activation d_neigh = tensors_.linear_backward(neigh_, agg_.rows(), d, need_input_grad);
  agg_.release();
  Activation d_self = tensors_.linear_backward(root_, root_h_.rows(), d, need_input_grad);
  root_h_.release();
  out_.release();
  if (!need_input_grad) return {};
  // (the SpMMs' operands)
  const Matrix d_agg = tensors_.fp32(std::move(d_neigh)), d_root = tensors_.fp32(std::move(d_self));

  Matrix d_h(be_, geo_.in_rows.size(), geo_.in_cols.size());
  const AdjOperand s_t = self_loops_.operand(true);
  be_.spmm(s_t.whole, d_root.view(), d_h.view(), 0.0f, s_t.whole_plan);
  spmm_all_reduce(be_, grid_.comm(geo_.roles.d), neighbours_.operand(true), d_agg.view(), d_h, 1.0f, tensors_.sum_wire());
  return input_.gradient(std::move(d_h), dropout);
}

}  // namespace plexus
