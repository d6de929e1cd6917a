#include "pmm/gnn_layer_3d.hpp"
#include "core/shard_layout.hpp"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace plexus {

GnnLayer3D::GnnLayer3D(Backend& be, const LayerGeometry& geo, const LayerCommOptions& comm, TensorRole input_role)
    : tensors_(be, comm), input_(tensors_, geo, input_role) {}

ActivationView GnnLayer3D::forward(ActivationView h_in, const DropoutSpec& dropout) {
  if (h_in.bf16() != tensors_.bf16())
    throw std::logic_error(tensors_.bf16() ? "GnnLayer3D: an fp32 input to a layer that takes bf16"
                                           : "GnnLayer3D: a bf16 input to a layer that takes fp32");
  tensors_.begin_pass();
  input_.set(h_in);
  return forward_pass(dropout);
}

Activation GnnLayer3D::backward(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  if (tensors_.inference()) throw std::logic_error("GnnLayer3D: backward of a layer built for inference");
  if (d_out.bf16() != tensors_.bf16_output())
    throw std::logic_error("GnnLayer3D: a gradient in another precision than the layer's output");
  return backward_pass(d_out, dropout, need_input_grad);
}

const Matrix& GnnLayer3D::forward(const Matrix& h_in, const DropoutSpec& dropout) {
  return forward(ActivationView(h_in), dropout).f32();
}

Matrix GnnLayer3D::backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  Activation d(std::move(d_out));
  Activation d_h = backward(d, dropout, need_input_grad);
  d_out = std::move(d.f32());  // (changed in place, as the layer left it)
  return d_h.empty() ? Matrix() : std::move(d_h.f32());
}

std::vector<float> glorot_block(index_t in_dim, index_t out_dim, Range rows, Range cols, std::uint64_t seed,
                                std::uint32_t stream) {
  const float limit = std::sqrt(6.0f / static_cast<float>(in_dim + out_dim));
  const DropoutKey key{seed ^ 0x5EEDC0DEULL, 0, stream};
  std::vector<float> w(static_cast<std::size_t>(rows.size() * cols.size()));
  for (index_t r = rows.begin; r < rows.end; ++r)
    for (index_t c = cols.begin; c < cols.end; ++c)
      w[(r - rows.begin) * cols.size() + (c - cols.begin)] =
          (2.0f * counter_uniform(key, static_cast<std::uint64_t>(r), static_cast<std::uint32_t>(c)) - 1.0f) * limit;
  return w;
}

std::vector<float> torch_linear_block(index_t in_dim, index_t out_dim, Range rows, Range cols, std::uint64_t seed,
                                      std::uint32_t stream) {
  const float scale = std::sqrt(static_cast<float>(in_dim + out_dim) / (6.0f * static_cast<float>(in_dim)));
  // glorot_block draws U(±√(6/(in+out))): rescaled to U(±1/√in).
  std::vector<float> w = glorot_block(in_dim, out_dim, rows, cols, seed, stream);
  for (float& x : w) x *= scale;
  return w;
}

void torch_linear_init(Linear3D& lin, index_t in_dim, index_t out_dim, std::uint64_t seed, std::uint32_t stream) {
  lin.weight().upload(torch_linear_block(in_dim, out_dim, lin.w_rows(), lin.layout().out_cols, seed, stream));
  if (lin.bias().size() == 0) return;
  lin.bias().upload(torch_linear_block(in_dim, out_dim, Range{0, 1}, lin.layout().out_cols, seed, stream + 500u));
}

LayerParam linear_weight_param(Linear3D& lin, const ProcessGrid&, std::string name, index_t in_dim, index_t out_dim,
                               bool decay) {
  return {std::move(name), &lin.weight(), in_dim, out_dim, lin.w_rows(), lin.layout().out_cols, true, decay};
}

LayerParam linear_bias_param(Linear3D& lin, const ProcessGrid& grid, std::string name, index_t out_dim) {
  const Linear3DLayout& l = lin.layout();
  return {std::move(name), &lin.bias(), 1, out_dim, Range{0, 1}, l.out_cols,
          grid.coord(l.in) == 0 && grid.coord(l.row) == 0, false};
}

}  // namespace plexus
