// GIN layer forward/backward: the collectives listed in gin_layer_3d.hpp, in that order.
#include "pmm/gin_layer_3d.hpp"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <utility>

#include "pmm/spmm_all_reduce.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {
Linear3DLayout first_layout(const LayerGeometry& g) {
  return {g.roles.d, g.roles.i, g.roles.o, g.out_rows.size(), g.in_cols, g.out_cols};
}
// The second linear's output columns: out_dim split over the first one's `in` axis (i).
Range second_out_cols(const ProcessGrid& grid, const LayerGeometry& g) {
  return block_range(g.out_dim, grid.dim(g.roles.i), grid.coord(g.roles.i));
}
}  // namespace

GinLayer3D::GinLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& neighbours,
                       DeviceAdj* self_loops, bool relu, float eps, bool train_eps, std::uint64_t seed,
                       LayerCommOptions comm, DeviceEdgeFeatures* edges)
    : GnnLayer3D(be, geo, comm, TensorRole::Scratch),
      be_(be),
      grid_(grid),
      geo_(geo),
      relu_(relu),
      train_eps_(train_eps),
      bf16_(comm.bf16),
      bf16_output_(comm.bf16 && comm.bf16_output),
      fixed_eps_(eps),
      neighbours_(neighbours),
      self_loops_(self_loops),
      lin1_(be, grid, first_layout(geo),
            Linear3DOptions{.bias = true, .reuse_weight = comm.reuse_weight, .sums = comm.sum_wire(),
                            .inference = comm.inference}),
      lin2_(be, grid, first_layout(geo).transposed(second_out_cols(grid, geo)),
            Linear3DOptions{.bias = true, .reuse_weight = comm.reuse_weight, .sums = comm.sum_wire(),
                            .inference = comm.inference}),
      z_(tensors_, TensorRole::Recomputed, geo.out_rows.size(), geo.in_cols.size()),
      root_h_(tensors_, TensorRole::Recomputed, train_eps || edges ? geo.out_rows.size() : 0, geo.in_cols.size()),
      y1_(tensors_, TensorRole::Kept, lin1_),
      y2_(tensors_, TensorRole::PassOnly, lin2_),
      gathered_(tensors_, TensorRole::PassOnly, geo.out_rows.size(), geo.out_dim),
      out_(tensors_, TensorRole::Output, geo.out_rows.size(), geo.out_cols.size()),
      d_y2_(tensors_, TensorRole::Backward, geo.out_rows.size(), second_out_cols(grid, geo).size()) {
  if (edges != nullptr) {
    if (bf16_) throw std::invalid_argument("GinLayer3D: GINE's edge messages are fp32 only");
    // stream layer + 5000 (W_e; b_e + 5500)
    edges_ = std::make_unique<EdgeMessages3D>(be, grid, geo, *edges, seed, static_cast<std::uint32_t>(geo.layer) + 5000u,
                                              comm.inference);
  }
  if (root_apart() && self_loops_ == nullptr)
    throw std::invalid_argument("GinLayer3D: a trained ε or edge messages need the self-loop selector");
  if (train_eps_) {
    eps_ = ParamSlot(be, 1, 1);
    eps_.allocate(eps, tensors_.grads());
  }
  if (be.computes()) {  // streams: layer + 1000 (W, as the GCN's) and layer + 3000 (W2)
    const auto layer = static_cast<std::uint32_t>(geo.layer);
    torch_linear_init(lin1_, geo.in_dim, geo.out_dim, seed, layer + 1000u);
    torch_linear_init(lin2_, geo.out_dim, geo.out_dim, seed, layer + 3000u);
  }
}

std::vector<LayerParam> GinLayer3D::parameters(bool decay_weights) {
  std::vector<LayerParam> p{linear_weight_param(lin1_, grid_, "weight", geo_.in_dim, geo_.out_dim, decay_weights),
                            linear_bias_param(lin1_, grid_, "bias", geo_.out_dim),
                            linear_weight_param(lin2_, grid_, "weight2", geo_.out_dim, geo_.out_dim, decay_weights),
                            linear_bias_param(lin2_, grid_, "bias2", geo_.out_dim)};
  if (train_eps_) {
    const bool first = grid_.coord(Axis::X) == 0 && grid_.coord(Axis::Y) == 0 && grid_.coord(Axis::Z) == 0;
    p.push_back({"eps", &eps_, 1, 1, Range{0, 1}, Range{0, 1}, first, false});
  }
  if (edges_)
    for (LayerParam& e : edges_->parameters(decay_weights)) p.push_back(std::move(e));
  return p;
}

float GinLayer3D::current_eps() {
  if (!train_eps_) return fixed_eps_;
  float eps = 0.0f;
  if (be_.computes()) be_.copy_to_host(&eps, eps_.data(), sizeof eps);
  return eps;
}

void GinLayer3D::relayout(ConstMatrixView x, Axis from, Range keep, Matrix& out) {
  const int parts = grid_.dim(from);
  const index_t rows = x.rows, dim = geo_.out_dim;
  const auto counts = block_counts(dim, parts, rows);  // block k: rows × (its columns), row-major
  if (x.ld != x.cols) throw std::invalid_argument("GinLayer3D::relayout: a padded block");
  if (parts == 1) {  // the whole width is here: one copy of the kept columns, no gather
    be_.copy(ConstMatrixView{x.data + keep.begin, rows, keep.size(), x.ld}, out.view());
    return;
  }
  Matrix& gathered = gathered_.compute();
  if (bf16_output_) {  // a hidden layer's gather in bf16, the blocks converted back (the logits' stays fp32)
    Bf16Matrix sent(be_, rows, x.cols), all(be_, rows, dim);
    be_.to_bf16(static_cast<std::size_t>(rows * x.cols), x.data, 0.0f, sent.data());
    grid_.comm(from).iall_gather(sent.data(), all.data(), counts)->wait();
    be_.from_bf16(all.size(), all.data(), gathered.data());
  } else {
    grid_.comm(from).all_gather(x.data, gathered.data(), counts);
  }
  index_t offset = 0;
  for (int k = 0; k < parts; ++k) {
    const Range cols = block_range(dim, parts, k);
    const index_t begin = std::max(cols.begin, keep.begin), end = std::min(cols.end, keep.end);
    if (begin < end)
      be_.copy(ConstMatrixView{gathered.data() + offset + (begin - cols.begin), rows, end - begin, cols.size()},
               MatrixView{out.data() + (begin - keep.begin), rows, end - begin, keep.size()});
    offset += rows * cols.size();
  }
  gathered_.done();
}

void GinLayer3D::aggregate_edges(const DropoutSpec& dropout) {
  const ConstMatrixView h = input_.dropped(dropout);
  Matrix& z = z_.compute();
  edges_->forward(h, z.view());
  grid_.comm(geo_.roles.o).all_reduce(z.data(), z.size(), ReduceOp::Sum);
  Matrix& root = root_h_.compute();
  spmm_all_reduce(be_, grid_.comm(geo_.roles.o), self_loops_->operand(false), h, root, 0.0f, tensors_.sum_wire());  // (fp32: no bf16 with edges)
  be_.axpby(z.size(), 1.0f + current_eps(), root.data(), 1.0f, z.data());
  input_.done();
  z_.computed();
  root_h_.computed();
}

void GinLayer3D::aggregate(const DropoutSpec& dropout) {
  if (edges_) return aggregate_edges(dropout);
  std::vector<LayerInput::Aggregation> products{{neighbours_.operand(false), z_}};
  if (!train_eps_) return input_.aggregate(dropout, grid_.comm(geo_.roles.o), products);
  products.push_back({self_loops_->operand(false), root_h_});
  const float eps = current_eps();
  input_.aggregate(dropout, grid_.comm(geo_.roles.o), products, [&](std::span<const MatrixView> sums) {
    const MatrixView z = sums[0], root = sums[1];
    be_.axpby(static_cast<std::size_t>(z.rows * z.cols), 1.0f + eps, root.data, 1.0f, z.data);
  });
}

ActivationView GinLayer3D::forward_pass(const DropoutSpec& dropout) {
  aggregate(dropout);
  Matrix& y1 = lin1_.forward(z_.rows());
  z_.done();  // (recompute: backward computes Z and S·H again)
  root_h_.done();
  be_.relu(y1.view());
  y1_.computed();
  const Matrix& y2 = lin2_.forward(y1_.rows());
  y1_.done();  // (bf16: its fp32 values, which lin2 read, freed)
  Matrix& out = out_.compute();
  relayout(y2.view(), geo_.roles.i, geo_.out_cols, out);
  y2_.done();
  if (relu_) be_.relu(out.view());
  out_.computed();
  return out_.activation();
}

Activation GinLayer3D::backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  Matrix& d = out_.gradient(d_out, relu_ ? Nonlinearity::Relu : Nonlinearity::None);
  Matrix& d_y2 = d_y2_.compute();
  relayout(d.view(), geo_.roles.o, lin2_.layout().out_cols, d_y2);
  out_.release();
  Matrix d_y1 = lin2_.backward(y1_.rows(), plain_rows(d_y2.view()), true);
  y1_.mask_gradient(d_y1.view(), Nonlinearity::Relu);
  y1_.release();
  z_.ensure([&] { aggregate(dropout); });  // (S·H with it)
  Activation d_linear =
      tensors_.linear_backward(lin1_, z_.rows(), plain_rows(d_y1.view()), need_input_grad || root_apart());
  z_.release();
  const Matrix d_z = tensors_.fp32(std::move(d_linear));  // (the SpMM's operand)
  if (train_eps_) {
    // dε = Σ dZ ⊙ (S·H) over this rank's block (a 1 × n by n × 1 product), summed over the
    // blocks: Z is split over d (rows) and i (columns) and replicated over o.
    const ConstMatrixView root = root_h_.view();
    be_.gemm(Trans::No, Trans::No, 1.0f, ConstMatrixView{d_z.data(), 1, static_cast<index_t>(d_z.size()), static_cast<index_t>(d_z.size())},
             ConstMatrixView{root.data, static_cast<index_t>(d_z.size()), 1, 1}, 0.0f,
             MatrixView{eps_.grad(), 1, 1, 1});
    grid_.comm(geo_.roles.d).all_reduce(eps_.grad(), 1, ReduceOp::Sum);
    grid_.comm(geo_.roles.i).all_reduce(eps_.grad(), 1, ReduceOp::Sum);
  }
  root_h_.release();
  if (edges_) {  // dH = (the edges' part + (1+ε)·Sᵀ·dZ) summed over d
    Matrix d_h = need_input_grad ? Matrix(be_, geo_.in_rows.size(), geo_.in_cols.size()) : Matrix();
    edges_->backward(d_z.view(), need_input_grad ? &d_h : nullptr);
    if (!need_input_grad) return {};
    const AdjOperand s_t = self_loops_->operand(true);
    Matrix root(be_, geo_.in_rows.size(), geo_.in_cols.size());
    be_.spmm(s_t.whole, d_z.view(), root.view(), 0.0f, s_t.whole_plan);
    be_.axpby(d_h.size(), 1.0f + current_eps(), root.data(), 1.0f, d_h.data());
    grid_.comm(geo_.roles.d).all_reduce(d_h.data(), d_h.size(), ReduceOp::Sum);
    return input_.gradient(std::move(d_h), dropout);
  }
  if (!need_input_grad) return {};

  Matrix d_h(be_, geo_.in_rows.size(), geo_.in_cols.size());
  float beta = 0.0f;
  if (train_eps_) {
    const AdjOperand s_t = self_loops_->operand(true);
    be_.spmm(s_t.whole, d_z.view(), d_h.view(), 0.0f, s_t.whole_plan);
    be_.axpby(d_h.size(), 0.0f, d_h.data(), 1.0f + current_eps(), d_h.data());
    beta = 1.0f;
  }
  spmm_all_reduce(be_, grid_.comm(geo_.roles.d), neighbours_.operand(true), d_z.view(), d_h, beta, tensors_.sum_wire());
  return input_.gradient(std::move(d_h), dropout);
}

}  // namespace plexus
