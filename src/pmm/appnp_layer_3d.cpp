// APPNP's last layer: the collectives listed in appnp_layer_3d.hpp, in that order.
#include "pmm/appnp_layer_3d.hpp"

#include <stdexcept>
#include <utility>

#include "pmm/spmm_all_reduce.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

AppnpLayer3D::AppnpLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj, DeviceAdj& self_loops,
                           AppnpOptions opt, std::uint64_t seed, LayerCommOptions comm)
    : GnnLayer3D(be, geo, comm, TensorRole::Recomputed),
      be_(be),
      grid_(grid),
      geo_(geo),
      opt_(opt),
      adj_(adj),
      self_loops_(self_loops),
      linear_(be, grid, Linear3DLayout{geo.roles.o, geo.roles.d, geo.roles.i, geo.in_rows.size(), geo.in_cols, geo.out_cols},
              Linear3DOptions{.bias = true, .reuse_weight = comm.reuse_weight, .sums = comm.sum_wire(), .inference = comm.inference}),
      z0_(tensors_, TensorRole::PassOnly, linear_),
      out_(tensors_, TensorRole::Output, geo.out_rows.size(), geo.out_cols.size()) {
  if (!geo.transform_first) throw std::invalid_argument("AppnpLayer3D: APPNP layers transform first");
  if (opt.steps < 0) throw std::invalid_argument("AppnpLayer3D: negative propagation steps");
  if (comm.scatter_output || comm.bf16)
    throw std::invalid_argument("AppnpLayer3D: no scattered output, no bf16 (the kind does not declare them)");
  // PyTorch's nn.Linear initialisation (PyG's APPNP example's Linear), on global indices.
  if (be.computes()) torch_linear_init(linear_, geo.in_dim, geo.out_dim, seed, static_cast<std::uint32_t>(geo.layer) + 1000u);
}

std::vector<LayerParam> AppnpLayer3D::parameters(bool decay_weights) {
  // As PyG's APPNP example (Adam over model.parameters()), the decay takes the bias too.
  LayerParam bias = linear_bias_param(linear_, grid_, "bias", geo_.out_dim);
  bias.decay = decay_weights;
  return {linear_weight_param(linear_, grid_, "weight", geo_.in_dim, geo_.out_dim, decay_weights), std::move(bias)};
}

ActivationView AppnpLayer3D::forward_pass(const DropoutSpec& dropout) {
  Communicator& o = grid_.comm(geo_.roles.o);
  Communicator& d = grid_.comm(geo_.roles.d);
  const Matrix& z0 = linear_.forward(input_.rows(dropout));
  input_.done();  // (recompute: backward draws dropout(H) again)
  Matrix& out = out_.compute();
  {
    const index_t rows = geo_.out_rows.size(), cols = geo_.out_cols.size();
    MemoryScope scope(be_, MemoryKind::Workspace, "APPNP's propagation");
    Matrix teleport(be_, rows, cols);  // S·Z_0: Z_0 in the output order
    spmm_all_reduce(be_, o, self_loops_.operand(false), z0.view(), teleport, 0.0f, tensors_.sum_wire());
    if (opt_.steps == 0) be_.copy(teleport.view(), out.view());
    Matrix z_in;  // Z_k back in the input order (k ≥ 1)
    for (int k = 1; k <= opt_.steps; ++k) {
      spmm_all_reduce(be_, o, adj_.operand(false), k == 1 ? z0.view() : z_in.view(), out, 0.0f, tensors_.sum_wire());
      be_.axpby(out.size(), opt_.alpha, teleport.data(), 1.0f - opt_.alpha, out.data());
      if (k == opt_.steps) break;
      if (z_in.size() == 0) z_in = Matrix(be_, geo_.in_rows.size(), cols);
      spmm_all_reduce(be_, d, self_loops_.operand(true), out.view(), z_in, 0.0f, tensors_.sum_wire());
    }
  }
  z0_.done();
  if (opt_.relu) be_.relu(out.view());
  out_.computed();
  return out_.activation();
}

Activation AppnpLayer3D::backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  Communicator& o = grid_.comm(geo_.roles.o);
  Communicator& d = grid_.comm(geo_.roles.d);
  const index_t in_rows = geo_.in_rows.size(), out_rows = geo_.out_rows.size(), cols = geo_.out_cols.size();
  // dL/dZ_0 (input order): this rank's part of (1 − α)·Âᵀ·dZ_1 + Sᵀ·dT, then summed over d once.
  Matrix d_z0(be_, in_rows, cols);
  Matrix& g = out_.gradient(d_out, opt_.relu ? Nonlinearity::Relu : Nonlinearity::None);  // dZ_K, changed in place
  {
    MemoryScope scope(be_, MemoryKind::Workspace, "APPNP's propagation");
    Matrix d_teleport(be_, out_rows, cols);  // dT = α·Σ_k dZ_k, T = S·Z_0 (output order)
    if (opt_.steps == 0) {
      be_.copy(g.view(), d_teleport.view());
    } else {
      Matrix d_in(be_, opt_.steps > 1 ? in_rows : 0, cols);
      for (int k = opt_.steps; k >= 1; --k) {  // g: dZ_k (output order)
        be_.axpby(g.size(), opt_.alpha, g.data(), k == opt_.steps ? 0.0f : 1.0f, d_teleport.data());
        be_.axpby(g.size(), 0.0f, g.data(), 1.0f - opt_.alpha, g.data());  // (1 − α)·dZ_k
        if (k == 1) {
          spmm_rows(be_, adj_.operand(true), g.view(), d_z0.view());  // (summed below, with Sᵀ·dT)
          break;
        }
        spmm_all_reduce(be_, d, adj_.operand(true), g.view(), d_in, 0.0f, tensors_.sum_wire());      // dZ_{k−1}, input order
        spmm_all_reduce(be_, o, self_loops_.operand(false), d_in.view(), g, 0.0f, tensors_.sum_wire());  // and in the output order
      }
    }
    const AdjOperand s_t = self_loops_.operand(true);
    be_.spmm(s_t.whole, d_teleport.view(), d_z0.view(), opt_.steps == 0 ? 0.0f : 1.0f, s_t.whole_plan);
    d.all_reduce(d_z0.data(), d_z0.size(), ReduceOp::Sum);
  }
  out_.release();
  return input_.gradient_through(linear_, d_z0, dropout, need_input_grad);
}

}  // namespace plexus
