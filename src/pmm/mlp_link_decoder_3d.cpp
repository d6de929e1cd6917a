// The MLP link decoder on the 3D grid (mlp_link_decoder_3d.hpp has the layout and the
// collectives). The products and their gradients go through the GAT's edge kernels with one
// "head" per feature column: edge_dots(heads = F cols, head width 1) gives z_u[j]·y_v[j] per pair
// and column, edge_row_sum the per-column sums over a node's pairs.
#include "pmm/mlp_link_decoder_3d.hpp"

#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "plexus/rng.hpp"
#include "pmm/pair_block.hpp"

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
  const index_t n = pairs.pairs(), cols = at_.cols.size(), out1 = w_[0].cols();
  const int layers = static_cast<int>(w_.size());
  if (zq_.rows() != at_.q_rows.size() || zq_.cols() != cols) {
    MemoryScope scope(be_, MemoryKind::Activations, "the Q block of the scored embeddings");
    zq_ = Matrix(be_, at_.q_rows.size(), cols);
  }
  at_.gather_q(grid_, z, zq_);
  MemoryScope scope(be_, MemoryKind::Pairs, "the MLP decoder's activations");
  h_.clear();
  // The first layer's output of this rank's pairs: h_0·W_1 of each chunk, partial over F (h_0 =
  // z_u ⊙ z_v, one row per feature column here), summed into the rank that keeps its pairs.
  Matrix y = layers == 1 ? Matrix() : Matrix(be_, n, out1);
  MatrixView out = layers == 1 ? MatrixView{scores, n, 1, 1} : y.view();
  for_each_pair_chunk(be_, grid_, at_, pairs, false, [&](const PairChunk& c) {
    Matrix h0(be_, cols, c.size), part(be_, c.size, out1);
    if (cols > 0) {
      be_.edge_dots(c.pattern.view(), cols, 1, 0, rows_of(z.view(), c.row0, c.row0 + c.span),
                    rows_of(zq_.view(), c.col0, c.col0 + c.cspan), h0.data());
      be_.gemm(Trans::Yes, Trans::No, 1.0f, h0.cview(), w_[0].view(), 0.0f, part.view());
    } else {
      be_.fill(part.view(), 0.0f);
    }
    sum_to_owner(grid_, at_, c, part.data(), out1, out.data);
  });
  // The rest on this rank's own pairs alone.
  for (int l = 0; l < layers; ++l) {
    const bool last = l + 1 == layers;
    if (l > 0) {
      y = last ? Matrix() : Matrix(be_, n, hidden_);
      out = last ? MatrixView{scores, n, 1, 1} : y.view();
      if (n > 0) be_.gemm(Trans::No, Trans::No, 1.0f, h_.back().cview(), w_[static_cast<std::size_t>(l)].view(), 0.0f, out);
    }
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
  const index_t n = pairs.pairs(), cols = at_.cols.size(), out1 = w_[0].cols();
  const int layers = static_cast<int>(w_.size());
  if (inference_) throw std::logic_error("MlpLinkDecoder3D: backward of a decoder built for inference");
  MemoryScope scope(be_, MemoryKind::Pairs, "the MLP decoder's backward");
  // dL/dy of the layer in turn, from the scores' down to the first layer's output, on this
  // rank's own pairs.
  Matrix dy(be_, n, 1);
  if (n > 0) be_.copy(ConstMatrixView{grad, n, 1, 1}, dy.view());
  for (int l = layers - 1; l >= 0; --l) {
    ParamSlot& b = b_[static_cast<std::size_t>(l)];
    if (n == 0) be_.fill(b.grad_view(), 0.0f);
    else be_.column_sum(dy.cview(), 0.0f, b.grad());
    if (l == 0) break;
    ParamSlot& w = w_[static_cast<std::size_t>(l)];
    const Matrix& x = h_[static_cast<std::size_t>(l - 1)];
    Matrix dx(be_, n, hidden_);
    if (n > 0) {
      be_.gemm(Trans::Yes, Trans::No, 1.0f, x.cview(), dy.cview(), 0.0f, w.grad_view());
      be_.gemm(Trans::No, Trans::Yes, 1.0f, dy.cview(), w.view(), 0.0f, dx.view());
      be_.relu_backward(x.cview(), dx.view());
    } else {
      be_.fill(w.grad_view(), 0.0f);
    }
    dy = std::move(dx);
  }
  // W_1 and Z's side, a chunk of the block at a time on every rank of F: the chunk's products
  // again, dW_1 += h_0·dy, dh_0 = W_1·dyᵀ; dz_u[j] += Σ over u's pairs (u, v) of dh_0[j]·z_v[j],
  // dzq_v[j] the same over v's pairs with z_u[j].
  ParamSlot& w1 = w_[0];
  be_.fill(w1.grad_view(), 0.0f);
  Matrix dzq, part, part_q;  // dZq, and a chunk's part of dZ and of dZq
  {
    MemoryScope ws(be_, MemoryKind::Workspace, "the MLP decoder's backward");
    dzq = Matrix(be_, at_.q_rows.size(), cols);
    part = Matrix(be_, at_.rows.size(), cols);
    part_q = Matrix(be_, at_.q_rows.size(), cols);
  }
  be_.fill(dz.view(), 0.0f);
  be_.fill(dzq.view(), 0.0f);
  if (cols > 0 && (ones_r_.rows() != at_.rows.size() || ones_r_.cols() != cols)) {
    MemoryScope ones(be_, MemoryKind::Activations, "the MLP decoder's ones");
    ones_r_ = Matrix(be_, at_.rows.size(), cols);
    ones_q_ = Matrix(be_, at_.q_rows.size(), cols);
    be_.fill(ones_r_.view(), 1.0f);
    be_.fill(ones_q_.view(), 1.0f);
  }
  for_each_pair_chunk(be_, grid_, at_, pairs, true, [&](const PairChunk& c) {
    Matrix dyc(be_, c.size, out1);
    share_from_owner(grid_, at_, c, dy.data(), out1, dyc.data());
    if (cols == 0) return;
    const ConstMatrixView zr = rows_of(z.view(), c.row0, c.row0 + c.span);
    const ConstMatrixView zc = rows_of(zq_.view(), c.col0, c.col0 + c.cspan);
    Matrix h0(be_, cols, c.size), dh0(be_, cols, c.size), other(be_, cols, c.size);
    be_.edge_dots(c.pattern.view(), cols, 1, 0, zr, zc, h0.data());
    be_.gemm(Trans::No, Trans::No, 1.0f, h0.cview(), dyc.cview(), 1.0f, w1.grad_view());
    be_.gemm(Trans::No, Trans::Yes, 1.0f, w1.view(), dyc.cview(), 0.0f, dh0.view());
    be_.edge_dots(c.pattern.view(), cols, 1, 0, rows_of(ones_r_.cview(), c.row0, c.row0 + c.span), zc,
                  other.data());  // z_v[j] per pair
    be_.edge_row_sum(c.pattern.view(), cols, dh0.data(), other.data(), nullptr, part.data());
    be_.axpby(static_cast<std::size_t>(c.span * cols), 1.0f, part.data(), 1.0f, dz.data() + c.row0 * cols);
    be_.edge_dots(c.pattern.view(), cols, 1, 0, zr, rows_of(ones_q_.cview(), c.col0, c.col0 + c.cspan),
                  other.data());  // z_u[j] per pair
    be_.edge_row_sum(c.transpose.view(), cols, dh0.data(), other.data(), c.transpose_map.data(), part_q.data());
    be_.axpby(static_cast<std::size_t>(c.cspan * cols), 1.0f, part_q.data(), 1.0f, dzq.data() + c.col0 * cols);
  });
  // A parameter's gradient is its pieces' sum: W_1's rows over the R and Q lines, the rest (each
  // rank's own pairs) over the grid.
  const auto sum_over = [&](ParamSlot& p, std::initializer_list<Axis> axes) {
    for (const Axis a : axes) grid_.comm(a).all_reduce(p.grad(), p.size(), ReduceOp::Sum);
  };
  sum_over(w_[0], {at_.r, at_.q});
  for (std::size_t l = 0; l < w_.size(); ++l) {
    if (l > 0) sum_over(w_[l], {at_.r, at_.q, at_.f});
    sum_over(b_[l], {at_.r, at_.q, at_.f});
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
