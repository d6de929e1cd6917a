#include "pmm/gnn_layer_3d.hpp"

#include <cmath>
#include <utility>

namespace plexus {

ConstMatrixView input_dropout(Backend& be, const Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo,
                              Matrix& scratch) {
  if (dropout.p <= 0.0f) return h.view();
  be.dropout(h.view(), scratch.view(), dropout.p, dropout.key, geo.in_rows.begin, geo.in_cols.begin);
  return scratch.view();
}

void input_dropout_backward(Backend& be, Matrix& d_h, const DropoutSpec& dropout, const LayerGeometry& geo) {
  if (dropout.p > 0.0f) be.dropout(d_h.view(), d_h.view(), dropout.p, dropout.key, geo.in_rows.begin, geo.in_cols.begin);
}

Matrix& held(Backend& be, Matrix& m, index_t rows, index_t cols, bool padded) {
  if (m.backend() == nullptr) m = padded ? Matrix(be, rows, cols, Matrix::PaddedRows{}) : Matrix(be, rows, cols);
  return m;
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

void torch_linear_init(Linear3D& lin, index_t in_dim, index_t out_dim, std::uint64_t seed, std::uint32_t stream) {
  const float scale = std::sqrt(static_cast<float>(in_dim + out_dim) / (6.0f * static_cast<float>(in_dim)));
  // glorot_block draws U(±√(6/(in+out))): rescaled to U(±1/√in).
  std::vector<float> w = glorot_block(in_dim, out_dim, lin.w_rows(), lin.layout().out_cols, seed, stream);
  for (float& x : w) x *= scale;
  lin.weight().upload(w);
  if (lin.bias().size() == 0) return;
  std::vector<float> b = glorot_block(in_dim, out_dim, Range{0, 1}, lin.layout().out_cols, seed, stream + 500u);
  for (float& x : b) x *= scale;
  lin.bias().upload(b);
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
