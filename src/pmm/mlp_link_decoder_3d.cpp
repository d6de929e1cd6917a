// The MLP link decoder on the 3D grid (mlp_link_decoder_3d.hpp has the layout and the
// collectives). The products and their gradients go through the GAT's edge kernels with one
// "head" per feature column: edge_dots(heads = F cols, head width 1) gives z_u[j]·y_v[j] per pair
// and column, edge_row_sum the per-column sums over a node's pairs.
#include "pmm/mlp_link_decoder_3d.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "plexus/rng.hpp"
#include "pmm/dot_link_decoder_3d.hpp"

namespace plexus {

namespace {
std::vector<float> uniform_block(std::uint64_t seed, std::uint32_t tensor, Range rows, index_t cols, index_t fan_in) {
  const DropoutKey key{seed, tensor, kMlpDecoderInitStream};
  const double root = std::sqrt(static_cast<double>(fan_in));
  std::vector<float> v(static_cast<std::size_t>(rows.size() * cols));
  for (index_t r = rows.begin; r < rows.end; ++r)
    for (index_t c = 0; c < cols; ++c)
      v[static_cast<std::size_t>((r - rows.begin) * cols + c)] = static_cast<float>(
          (2.0 * counter_uniform(key, static_cast<std::uint64_t>(r), static_cast<std::uint32_t>(c)) - 1.0) / root);
  return v;
}
}  // namespace

MlpLinkDecoder3D::MlpLinkDecoder3D(Backend& be, ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes,
                                   int layers, index_t hidden, std::uint64_t seed, bool inference)
    : be_(be), grid_(grid), at_(grid, last, num_nodes), hidden_(hidden), inference_(inference) {
  if (layers < 1 || hidden < 1)
    throw std::invalid_argument("MlpLinkDecoder3D: " + std::to_string(layers) + " layers " + std::to_string(hidden) + " wide");
  w_.resize(static_cast<std::size_t>(layers));
  b_.resize(static_cast<std::size_t>(layers));
  MemoryScope scope(be_, MemoryKind::Parameters, "the MLP decoder's parameters");
  for (int l = 0; l < layers; ++l) {
    const index_t in = l == 0 ? at_.width : hidden_, out = l + 1 == layers ? 1 : hidden_;
    const Range rows = l == 0 ? at_.cols : Range{0, hidden_};
    ParamSlot& w = w_[static_cast<std::size_t>(l)];
    ParamSlot& b = b_[static_cast<std::size_t>(l)];
    w = ParamSlot(be_, rows.size(), out);
    b = ParamSlot(be_, 1, out);
    w.allocate(0.0f, !inference);
    b.allocate(0.0f, !inference);
    w.upload(uniform_block(seed, static_cast<std::uint32_t>(2 * l), rows, out, in));
    b.upload(uniform_block(seed, static_cast<std::uint32_t>(2 * l + 1), Range{0, 1}, out, in));
  }
}

void MlpLinkDecoder3D::forward(const Matrix& z, const PairBlock& pairs, float* scores) {
  at_.require_block(z, "MlpLinkDecoder3D", "Z");
  const index_t n = pairs.pairs(), cols = at_.cols.size();
  const int layers = static_cast<int>(w_.size());
  MemoryScope scope(be_, MemoryKind::Activations, "the MLP decoder's activations");
  if (zq_.rows() != at_.q_rows.size() || zq_.cols() != cols) zq_ = Matrix(be_, at_.q_rows.size(), cols);
  at_.gather_q(grid_, z, zq_);
  // h_0 = z_u ⊙ z_v, one row per feature column here.
  h0_ = Matrix(be_, cols, n);
  if (n > 0 && cols > 0) be_.edge_dots(pairs.pattern.view(), cols, 1, 0, z.view(), zq_.view(), h0_.data());
  h_.clear();
  for (int l = 0; l < layers; ++l) {
    ParamSlot& w = w_[static_cast<std::size_t>(l)];
    const bool last = l + 1 == layers;
    Matrix y;
    MatrixView out = last ? MatrixView{scores, n, 1, 1} : (y = Matrix(be_, n, hidden_)).view();
    if (n > 0) {
      if (l == 0 && cols == 0) be_.fill(out, 0.0f);
      else if (l == 0) be_.gemm(Trans::Yes, Trans::No, 1.0f, h0_.cview(), w.view(), 0.0f, out);
      else be_.gemm(Trans::No, Trans::No, 1.0f, h_.back().cview(), w.view(), 0.0f, out);
    }
    if (l == 0) grid_.comm(at_.f).all_reduce(out.data, static_cast<std::size_t>(n * out.cols), ReduceOp::Sum);
    if (n > 0) {
      be_.add_bias(out, b_[static_cast<std::size_t>(l)].data());
      if (!last) be_.relu(out);
    }
    if (!last) h_.push_back(std::move(y));
  }
}

void MlpLinkDecoder3D::backward(const Matrix& z, const PairBlock& pairs, const float* grad, Matrix& dz) {
  at_.require_block(z, "MlpLinkDecoder3D", "Z");
  at_.require_block(dz, "MlpLinkDecoder3D", "dZ");
  const index_t n = pairs.pairs(), cols = at_.cols.size();
  const int layers = static_cast<int>(w_.size());
  if (inference_) throw std::logic_error("MlpLinkDecoder3D: backward of a decoder built for inference");
  MemoryScope scope(be_, MemoryKind::Workspace, "the MLP decoder's backward");
  // dL/dy of the layer in turn, from the scores' down to h_0's (one row per feature column).
  Matrix dy(be_, n, 1);
  if (n > 0) be_.copy(ConstMatrixView{grad, n, 1, 1}, dy.view());
  Matrix dh0(be_, cols, n);
  for (int l = layers - 1; l >= 0; --l) {
    ParamSlot& w = w_[static_cast<std::size_t>(l)];
    ParamSlot& b = b_[static_cast<std::size_t>(l)];
    if (n == 0 || (l == 0 && cols == 0)) {
      be_.fill(w.grad_view(), 0.0f);
    } else if (l == 0) {
      be_.gemm(Trans::No, Trans::No, 1.0f, h0_.cview(), dy.cview(), 0.0f, w.grad_view());
    } else {
      be_.gemm(Trans::Yes, Trans::No, 1.0f, h_[static_cast<std::size_t>(l - 1)].cview(), dy.cview(), 0.0f, w.grad_view());
    }
    if (n == 0) be_.fill(b.grad_view(), 0.0f);
    else be_.column_sum(dy.cview(), 0.0f, b.grad());
    if (l > 0) {
      Matrix dx(be_, n, hidden_);
      if (n > 0) {
        be_.gemm(Trans::No, Trans::Yes, 1.0f, dy.cview(), w.view(), 0.0f, dx.view());
        be_.relu_backward(h_[static_cast<std::size_t>(l - 1)].cview(), dx.view());
      }
      dy = std::move(dx);
    } else if (n > 0 && cols > 0) {
      be_.gemm(Trans::No, Trans::Yes, 1.0f, w.view(), dy.cview(), 0.0f, dh0.view());
    }
  }
  // Each block's pairs count once in a parameter's gradient: the sum over the R and Q lines.
  for (std::size_t l = 0; l < w_.size(); ++l)
    for (ParamSlot* p : {&w_[l], &b_[l]})
      for (const Axis a : {at_.r, at_.q}) grid_.comm(a).all_reduce(p->grad(), p->size(), ReduceOp::Sum);
  // dz_u[j] = Σ over u's pairs (u, v) of dh_0[j]·z_v[j]; dzq_v[j] the same over v's pairs with z_u.
  Matrix dzq(be_, at_.q_rows.size(), cols);
  if (n > 0 && cols > 0) {
    if (ones_r_.rows() != at_.rows.size() || ones_r_.cols() != cols) {
      MemoryScope ones(be_, MemoryKind::Activations, "the MLP decoder's ones");
      ones_r_ = Matrix(be_, at_.rows.size(), cols);
      ones_q_ = Matrix(be_, at_.q_rows.size(), cols);
      be_.fill(ones_r_.view(), 1.0f);
      be_.fill(ones_q_.view(), 1.0f);
    }
    Matrix other(be_, cols, n);
    be_.edge_dots(pairs.pattern.view(), cols, 1, 0, ones_r_.view(), zq_.view(), other.data());  // z_v[j] per pair
    be_.edge_row_sum(pairs.pattern.view(), cols, dh0.data(), other.data(), nullptr, dz.data());
    be_.edge_dots(pairs.pattern.view(), cols, 1, 0, z.view(), ones_q_.view(), other.data());  // z_u[j] per pair
    be_.edge_row_sum(pairs.transpose.view(), cols, dh0.data(), other.data(), pairs.transpose_map.data(), dzq.data());
  } else {
    be_.fill(dz.view(), 0.0f);
    be_.fill(dzq.view(), 0.0f);
  }
  at_.add_q_gradient(grid_, be_, dzq, dz);
  // Each replica over Q holds its Q block's pairs' part: the whole is their sum.
  grid_.comm(at_.q).all_reduce(dz.data(), static_cast<std::size_t>(dz.rows() * dz.cols()), ReduceOp::Sum);
}

std::vector<LayerParam> MlpLinkDecoder3D::parameters() {
  std::vector<LayerParam> out;
  const bool first_of_block = grid_.coord(at_.r) == 0 && grid_.coord(at_.q) == 0;
  const bool first = first_of_block && grid_.coord(at_.f) == 0;
  for (std::size_t l = 0; l < w_.size(); ++l) {
    const std::string name = "decoder" + std::to_string(l) + "/";
    const index_t rows = l == 0 ? at_.width : hidden_, out_cols = w_[l].cols();
    const Range shard_rows = l == 0 ? at_.cols : Range{0, hidden_};
    out.push_back({name + "weight", &w_[l], rows, out_cols, shard_rows, Range{0, out_cols}, l == 0 ? first_of_block : first, false});
    out.push_back({name + "bias", &b_[l], 1, out_cols, Range{0, 1}, Range{0, out_cols}, first, false});
  }
  return out;
}

}  // namespace plexus
