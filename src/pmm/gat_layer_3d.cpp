// GAT layer forward/backward: the collectives listed in gat_layer_3d.hpp, in that order.
#include "pmm/gat_layer_3d.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "pmm/spmm_all_reduce.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {
// Model files and the dropout keys count attention-dropout streams from here, past any layer's
// feature-dropout stream (its layer index).
constexpr std::uint32_t kAttentionStream = 256;

// The heads a rank of i scores: with `whole`, its own (the column blocks of heads·F over i cut at
// head boundaries), counted from `first`; else every head.
struct HeadSplit {
  bool whole = false;
  index_t first = 0, count = 0;
};
HeadSplit head_split(const ProcessGrid& grid, const LayerGeometry& geo, const GatOptions& opt, Range z_cols) {
  if (opt.heads < 1 || (!opt.average_heads && geo.out_dim % opt.heads != 0))
    throw std::invalid_argument("GatLayer3D: the output width is not heads × features");
  const index_t width = GatLayer3D::z_width(geo, opt), head = opt.average_heads ? geo.out_dim : geo.out_dim / opt.heads;
  bool whole = true;
  for (int k = 0; k < grid.dim(geo.roles.i); ++k) {
    const Range r = block_range(width, grid.dim(geo.roles.i), k);
    whole = whole && r.size() > 0 && r.begin % head == 0 && r.end % head == 0;
  }
  if (!whole) return {false, 0, opt.heads};
  return {true, z_cols.begin / head, z_cols.size() / head};
}
}  // namespace

index_t GatLayer3D::z_width(const LayerGeometry& g, const GatOptions& o) {
  return o.average_heads ? g.out_dim * o.heads : g.out_dim;
}

GatLayer3D::GatLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj,
                       const index_t* transpose_map, DeviceAdj& self_loops, GatOptions opt, std::uint64_t seed,
                       LayerCommOptions comm, const float* entry_features)
    : GnnLayer3D(be, geo, comm, TensorRole::Recomputed),
      be_(be),
      grid_(grid),
      geo_(geo),
      opt_(opt),
      adj_(adj),
      transpose_map_(transpose_map),
      self_loops_(self_loops),
      z_cols_(block_range(z_width(geo, opt), grid.dim(geo.roles.i), grid.coord(geo.roles.i))),
      heads_whole_(head_split(grid, geo, opt, z_cols_).whole),
      head0_(head_split(grid, geo, opt, z_cols_).first),
      local_heads_(head_split(grid, geo, opt, z_cols_).count),
      nnz_(adj.operand(false).whole.nnz),
      linear_(be, grid, Linear3DLayout{geo.roles.o, geo.roles.d, geo.roles.i, geo.in_rows.size(), geo.in_cols, z_cols_},
              Linear3DOptions{.bias = false, .reuse_weight = comm.reuse_weight, .sums = comm.sum_wire(),
                              .inference = comm.inference}),
      att_src_(be, 1, z_cols_.size()),
      att_dst_(be, 1, z_cols_.size()),
      bias_(be, 1, geo.out_cols.size()),
      entry_features_(entry_features),
      edge_weight_(be, opt.edge_width, z_cols_.size()),
      att_edge_(be, opt.edge_width > 0 ? 1 : 0, z_cols_.size()),
      z_(tensors_, TensorRole::Kept, linear_),
      s_cols_(tensors_, TensorRole::Recomputed, 2 * geo.in_rows.size(), local_heads_, LayerTensor::Options::fp32_values()),
      s_dst_(tensors_, TensorRole::Recomputed, geo.out_rows.size(), local_heads_, LayerTensor::Options::fp32_values()),
      row_max_(be, geo.out_rows.size(), local_heads_),
      row_sum_(be, geo.out_rows.size(), local_heads_),
      alpha_(tensors_, TensorRole::Recomputed, local_heads_, nnz_, LayerTensor::Options::fp32_values("attention coefficients")),
      // (only with attention dropout)
      alpha_drop_(tensors_, TensorRole::Recomputed, opt.attn_dropout > 0.0f ? local_heads_ : 0, nnz_,
                  LayerTensor::Options::fp32_values("attention coefficients")),
      alpha_drop_t_(tensors_, TensorRole::Scratch, local_heads_, nnz_, LayerTensor::Options::fp32_values("attention coefficients")),
      agg_(tensors_, opt.average_heads ? TensorRole::PassOnly : TensorRole::Output, geo.out_rows.size(), z_cols_.size()),
      out_full_(tensors_, TensorRole::PassOnly, opt.average_heads ? geo.out_rows.size() : 0, geo.out_dim),
      out_(tensors_, TensorRole::Output, opt.average_heads ? geo.out_rows.size() : 0, geo.out_cols.size()) {
  if (!geo.transform_first) throw std::invalid_argument("GatLayer3D: GAT layers transform first");
  if (adj.chunks() != 1) throw std::invalid_argument("GatLayer3D: Â blocks in row chunks are not supported");
  const index_t width = z_width(geo, opt);
  const bool grads = tensors_.grads();
  att_src_.allocate(0.0f, grads);
  att_dst_.allocate(0.0f, grads);
  bias_.allocate(0.0f, grads);
  if (opt.edge_width > 0) {
    if (entry_features_ == nullptr) throw std::invalid_argument("GatLayer3D: an edge width without the entries' features");
    edge_weight_.allocate(0.0f, grads);
    att_edge_.allocate(0.0f, grads);
  }
  if (be.computes()) {  // streams: layer + 1000 (W, as every kind's), + 3000 (a_src), + 4000 (a_dst)
    const auto layer = static_cast<std::uint32_t>(geo.layer);
    linear_.weight().upload(glorot_block(geo.in_dim, width, linear_.w_rows(), z_cols_, seed, layer + 1000u));
    // PyG's glorot of a (1, heads, F) tensor: ±√(6 / (heads + F)).
    att_src_.upload(glorot_block(opt.heads, head_width(), Range{0, 1}, z_cols_, seed, layer + 3000u));
    att_dst_.upload(glorot_block(opt.heads, head_width(), Range{0, 1}, z_cols_, seed, layer + 4000u));
    if (opt.edge_width > 0) {  // + 6000 (lin_edge: glorot of [heads·F × D_e]), + 7000 (a_edge, as a_src)
      edge_weight_.upload(glorot_block(opt.edge_width, width, Range{0, opt.edge_width}, z_cols_, seed, layer + 6000u));
      att_edge_.upload(glorot_block(opt.heads, head_width(), Range{0, 1}, z_cols_, seed, layer + 7000u));
    }
  }
  if (opt.average_heads) {
    std::vector<float> map(static_cast<std::size_t>(z_cols_.size() * geo.out_dim), 0.0f);
    for (index_t j = 0; j < z_cols_.size(); ++j)
      map[static_cast<std::size_t>(j * geo.out_dim + (z_cols_.begin + j) % geo.out_dim)] =
          1.0f / static_cast<float>(opt.heads);
    mean_map_ = Matrix(be, z_cols_.size(), geo.out_dim);
    if (be.computes()) mean_map_.upload(map);
  }
}

std::vector<LayerParam> GatLayer3D::parameters(bool decay_weights) {
  const index_t width = z_width(geo_, opt_);
  // a_src, a_dst and b are replicated over o and d: the copy at coordinate 0 of both counts.
  const bool contributes = grid_.coord(geo_.roles.o) == 0 && grid_.coord(geo_.roles.d) == 0;
  std::vector<LayerParam> p{
      linear_weight_param(linear_, grid_, "weight", geo_.in_dim, width, decay_weights),
      LayerParam{"att_src", &att_src_, 1, width, Range{0, 1}, z_cols_, contributes, decay_weights},
      LayerParam{"att_dst", &att_dst_, 1, width, Range{0, 1}, z_cols_, contributes, decay_weights},
      LayerParam{"bias", &bias_, 1, geo_.out_dim, Range{0, 1}, geo_.out_cols, contributes, decay_weights}};
  if (opt_.edge_width > 0) {  // (replicated over o and d, as a_src)
    p.push_back({"edge_weight", &edge_weight_, opt_.edge_width, width, Range{0, opt_.edge_width}, z_cols_, contributes,
                 decay_weights});
    p.push_back({"att_edge", &att_edge_, 1, width, Range{0, 1}, z_cols_, contributes, decay_weights});
  }
  return p;
}

std::vector<float> GatLayer3D::attention_on_host() {
  alpha_.ensure([&] { attend(DropoutSpec{}); });  // (recompute: collective over o and i, as forward)
  std::vector<float> mine(static_cast<std::size_t>(local_heads_ * nnz_));
  if (!mine.empty()) be_.copy_to_host(mine.data(), alpha_.view().data, mine.size() * sizeof(float));
  release_attention();
  z_.done();
  Communicator& i = grid_.host_comm(geo_.roles.i);
  if (heads_whole_ && i.size() > 1) {
    // Rank k of i holds the heads of its columns of heads·F: gathered in order, all the heads.
    const index_t width = z_width(geo_, opt_);
    std::vector<std::size_t> counts;
    for (int k = 0; k < i.size(); ++k)
      counts.push_back(static_cast<std::size_t>(block_range(width, i.size(), k).size() / head_width() * nnz_));
    std::vector<float> all(static_cast<std::size_t>(opt_.heads * nnz_));
    i.all_gather(mine.data(), all.data(), counts);
    mine = std::move(all);
  }
  if (grid_.coord(geo_.roles.i) != 0) return {};
  return mine;
}

DropoutKey GatLayer3D::attention_key(const DropoutSpec& dropout) const {
  return DropoutKey{dropout.key.seed, dropout.key.epoch, kAttentionStream + static_cast<std::uint32_t>(geo_.layer)};
}

void GatLayer3D::multiply_heads(const AdjOperand& a, const float* alpha, ConstMatrixView z, Matrix& out) {
  const index_t width = head_width(), first = z_cols_.begin, end = z_cols_.end;
  if (first == end) return;
  MatrixView o = out.view();
  for (index_t h = first / width; h * width < end; ++h) {
    const index_t j0 = std::max(h * width, first) - first, j1 = std::min((h + 1) * width, end) - first;
    CsrView head = a.whole;
    head.values = alpha + (h - head0_) * nnz_;
    be_.spmm(head, ConstMatrixView{z.data + j0, z.rows, j1 - j0, z.ld}, MatrixView{o.data + j0, o.rows, j1 - j0, o.ld},
             0.0f, a.whole_plan);
  }
}

ActivationView GatLayer3D::forward_pass(const DropoutSpec& dropout) {
  linear_.forward(input_.rows(dropout));
  input_.done();  // (recompute: backward draws dropout(H) again)
  z_.computed();
  const float* used = attend(dropout);
  Matrix& agg = agg_.compute();
  multiply_heads(adj_.operand(false), used, z_.view(), agg);
  attention_done();  // (recompute: backward computes it again)
  all_reduce_activation(be_, grid_.comm(geo_.roles.o), agg, tensors_.sum_wire());

  Matrix* out = &agg;
  if (opt_.average_heads) {
    Matrix& full = out_full_.compute();
    if (z_cols_.size() > 0)
      be_.gemm(Trans::No, Trans::No, 1.0f, agg.view(), mean_map_.view(), 0.0f, full.view());
    else
      be_.fill(full.view(), 0.0f);
    agg_.done();
    grid_.comm(geo_.roles.i).all_reduce(full.data(), full.size(), ReduceOp::Sum);
    out = &out_.compute();
    be_.copy(ConstMatrixView{full.data() + geo_.out_cols.begin, full.rows(), geo_.out_cols.size(), full.ld()},
             out->view());
    out_full_.done();
  }
  be_.add_bias(out->view(), bias_.data());
  if (opt_.elu) be_.elu(out->view());
  output().computed();
  z_.done();
  return output().activation();
}

const float* GatLayer3D::attend(const DropoutSpec& dropout) {
  const ConstMatrixView z = z_.view();
  Communicator& o = grid_.comm(geo_.roles.o);
  Communicator& i = grid_.comm(geo_.roles.i);
  const index_t heads = local_heads_, in_rows = geo_.in_rows.size();
  const bool dropped = dropout.training && opt_.attn_dropout > 0.0f;
  Matrix& s_cols = s_cols_.compute();
  Matrix& s_dst = s_dst_.compute();
  float* alpha = alpha_.compute().data();
  float* s_src = s_cols.data();
  float* s_dst_in = s_cols.data() + in_rows * heads;
  be_.head_dots(z, att_src_.data(), heads, head_width(), feature0(), s_src);
  be_.head_dots(z, att_dst_.data(), heads, head_width(), feature0(), s_dst_in);
  if (!heads_whole_) i.all_reduce(s_cols.data(), s_cols.size(), ReduceOp::Sum);
  spmm_all_reduce(be_, o, self_loops_.operand(false), ConstMatrixView{s_dst_in, in_rows, heads, heads}, s_dst);

  // Edge features: s_edge[h, k] = e_k·M[:, h], M = W_e·a_edge summed over head h's columns.
  const float* s_edge = nullptr;
  if (opt_.edge_width > 0) {
    const index_t d_e = opt_.edge_width;
    Matrix m(be_, d_e, heads);
    if (z_cols_.size() > 0)
      be_.head_dots(edge_weight_.view(), att_edge_.data(), heads, head_width(), feature0(), m.data());
    if (!heads_whole_) i.all_reduce(m.data(), m.size(), ReduceOp::Sum);
    MemoryScope scope(be_, MemoryKind::EdgeValues, "the entries' edge scores");
    s_edge_ = Matrix(be_, heads, nnz_);
    if (nnz_ > 0)
      be_.gemm(Trans::Yes, Trans::No, 1.0f, m.view(), ConstMatrixView{entry_features_, d_e, nnz_, nnz_}, 0.0f,
               s_edge_.view());
    s_edge = s_edge_.data();
  }
  // The softmax of a row spans the blocks of its row over o: maxima and sums are all-reduced.
  const AdjOperand a = adj_.operand(false);
  be_.gat_edge_scores(a.whole, heads, s_dst.data(), s_src, opt_.negative_slope, alpha, s_edge);
  be_.edge_row_max(a.whole, heads, alpha, row_max_.data());
  o.all_reduce(row_max_.data(), row_max_.size(), ReduceOp::Max);
  be_.edge_softmax_exp(a.whole, heads, row_max_.data(), alpha, row_sum_.data());
  o.all_reduce(row_sum_.data(), row_sum_.size(), ReduceOp::Sum);
  be_.edge_softmax_normalize(a.whole, heads, row_sum_.data(), alpha);
  s_cols_.computed();
  s_dst_.computed();
  alpha_.computed();
  if (!dropped) return alpha;
  float* alpha_drop = alpha_drop_.compute().data();
  be_.axpby(static_cast<std::size_t>(heads * nnz_), 1.0f, alpha, 0.0f, alpha_drop);
  be_.edge_dropout(a.whole, heads, opt_.attn_dropout, attention_key(dropout), geo_.out_rows.begin,
                   geo_.in_rows.begin, alpha_drop, head0_, opt_.heads);
  alpha_drop_.computed();
  return alpha_drop;
}

void GatLayer3D::attention_done() {
  s_cols_.done();
  s_dst_.done();
  alpha_.done();
  alpha_drop_.done();
}

void GatLayer3D::release_attention() {
  s_edge_ = Matrix();
  s_cols_.release();
  s_dst_.release();
  alpha_.release();
  alpha_drop_.release();
}

Activation GatLayer3D::backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  Matrix& d_o = output().gradient(d_out, opt_.elu ? Nonlinearity::Elu : Nonlinearity::None);
  Communicator& o = grid_.comm(geo_.roles.o);
  Communicator& i = grid_.comm(geo_.roles.i);
  Communicator& d = grid_.comm(geo_.roles.d);
  const index_t heads = local_heads_, in_rows = geo_.in_rows.size(), out_rows = geo_.out_rows.size();
  be_.column_sum(d_o.view(), 0.0f, bias_.grad());
  d.all_reduce(bias_.grad(), bias_.size(), ReduceOp::Sum);

  // dAGG: dOUT itself, or with averaged heads spread back over the heads' columns.
  Matrix* d_agg = &d_o;
  Matrix d_spread;
  if (opt_.average_heads) {
    Matrix d_full(be_, out_rows, geo_.out_dim);
    const MatrixView full = d_full.view();
    be_.copy(d_o.view(), MatrixView{full.data + geo_.out_cols.begin, full.rows, geo_.out_cols.size(), full.ld});
    i.all_reduce(d_full.data(), d_full.size(), ReduceOp::Sum);
    d_spread = Matrix(be_, out_rows, z_cols_.size());
    if (z_cols_.size() > 0)
      be_.gemm(Trans::No, Trans::Yes, 1.0f, d_full.view(), mean_map_.view(), 0.0f, d_spread.view());
    d_agg = &d_spread;
  }

  const ConstMatrixView z = z_.view();
  const AdjOperand a = adj_.operand(false);
  alpha_.ensure([&] { attend(dropout); });  // s_src, s_dst, α (and its dropped copy) as forward had them
  Buffer<float> d_alpha = [&] {
    MemoryScope scope(be_, MemoryKind::EdgeValues, "attention gradients");
    return Buffer<float>(be_, static_cast<std::size_t>(heads * nnz_));
  }();
  be_.edge_dots(a.whole, heads, head_width(), feature0(), d_agg->view(), z, d_alpha.data());
  if (!heads_whole_) i.all_reduce(d_alpha.data(), d_alpha.size(), ReduceOp::Sum);

  const bool dropped = dropout.training && opt_.attn_dropout > 0.0f;
  const AdjOperand a_t = adj_.operand(true);
  const float* alpha = alpha_.view().data;
  float* alpha_t = alpha_drop_t_.compute().data();
  be_.edge_gather(nnz_, heads, transpose_map_, dropped ? alpha_drop_.view().data : alpha, alpha_t);
  alpha_drop_.release();
  Matrix d_z(be_, in_rows, z_cols_.size());
  multiply_heads(a_t, alpha_t, d_agg->view(), d_z);
  alpha_drop_t_.release();
  output().release();  // (dOUT is read no more)
  all_reduce_activation(be_, d, d_z, tensors_.sum_wire());

  // Through the attention dropout, the softmax and the LeakyReLU to the scores' gradient.
  if (dropped)
    be_.edge_dropout(a.whole, heads, opt_.attn_dropout, attention_key(dropout), geo_.out_rows.begin,
                     geo_.in_rows.begin, d_alpha.data(), head0_, opt_.heads);
  be_.edge_row_sum(a.whole, heads, alpha, d_alpha.data(), nullptr, row_sum_.data());
  o.all_reduce(row_sum_.data(), row_sum_.size(), ReduceOp::Sum);
  be_.edge_softmax_backward(a.whole, heads, alpha, row_sum_.data(), d_alpha.data());
  const float* s_src = s_cols_.view().data;
  be_.gat_edge_scores_backward(a.whole, heads, s_dst_.view().data, s_src, opt_.negative_slope, d_alpha.data(),
                               opt_.edge_width > 0 ? s_edge_.data() : nullptr);
  release_attention();
  if (opt_.edge_width > 0) {
    // dM[f, h] = Σ_k e_k[f]·ds[h, k] over the block's entries, summed over the blocks (o, then d);
    // then dW_e = dM·a_edge and da_edge = Σ_f W_e ⊙ dM, column by column of each head.
    const index_t d_e = opt_.edge_width;
    Matrix d_m(be_, d_e, heads);
    if (nnz_ > 0)
      be_.gemm(Trans::No, Trans::Yes, 1.0f, ConstMatrixView{entry_features_, d_e, nnz_, nnz_},
               ConstMatrixView{d_alpha.data(), heads, nnz_, nnz_}, 0.0f, d_m.view());
    o.all_reduce(d_m.data(), d_m.size(), ReduceOp::Sum);
    d.all_reduce(d_m.data(), d_m.size(), ReduceOp::Sum);
    be_.fill(edge_weight_.grad_view(), 0.0f);
    be_.fill(att_edge_.grad_view(), 0.0f);
    if (z_cols_.size() > 0)
      be_.head_dots_backward(edge_weight_.view(), att_edge_.data(), heads, head_width(), feature0(), d_m.data(),
                             edge_weight_.grad_view(), att_edge_.grad());
  }

  // ds_dst of the rows (summed over the row's blocks), then ds_src (the block's column sums) and
  // ds_dst moved back to the input order by Sᵀ, both summed over the blocks of the column.
  Matrix ds_dst_rows(be_, out_rows, heads);
  be_.edge_row_sum(a.whole, heads, d_alpha.data(), nullptr, nullptr, ds_dst_rows.data());
  o.all_reduce(ds_dst_rows.data(), ds_dst_rows.size(), ReduceOp::Sum);
  Matrix ds_cols(be_, 2 * in_rows, heads);
  be_.edge_row_sum(a_t.whole, heads, d_alpha.data(), nullptr, transpose_map_, ds_cols.data());
  const AdjOperand s_t = self_loops_.operand(true);
  be_.spmm(s_t.whole, ds_dst_rows.view(), MatrixView{ds_cols.data() + in_rows * heads, in_rows, heads, heads}, 0.0f,
           s_t.whole_plan);
  d.all_reduce(ds_cols.data(), ds_cols.size(), ReduceOp::Sum);

  be_.fill(att_src_.grad_view(), 0.0f);
  be_.fill(att_dst_.grad_view(), 0.0f);
  be_.head_dots_backward(z, att_src_.data(), heads, head_width(), feature0(), ds_cols.data(), d_z.view(),
                         att_src_.grad());
  be_.head_dots_backward(z, att_dst_.data(), heads, head_width(), feature0(), ds_cols.data() + in_rows * heads,
                         d_z.view(), att_dst_.grad());
  o.all_reduce(att_src_.grad(), att_src_.size(), ReduceOp::Sum);
  o.all_reduce(att_dst_.grad(), att_dst_.size(), ReduceOp::Sum);
  z_.release();

  return input_.gradient_through(linear_, d_z, dropout, need_input_grad);
}

}  // namespace plexus
