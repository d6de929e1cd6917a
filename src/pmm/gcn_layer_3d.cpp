// GCN layer forward/backward with the collectives of the Plexus algorithm, in either order.
//
// Roles (o, i, d) of this layer's axes (layer_roles, include/plexus/process_grid.hpp): Â's
// block is [N/G_d × N/G_o], replicated over i, and every aggregation sums over o.
//
// Aggregate first, OUT = act((Â·H)·W + b). Local blocks:
//   H   [N/G_o × D/G_i], replicated over d
//   W   [D/G_i × D'/G_o], stored split over d along rows
//   OUT [N/G_d × D'/G_o]  replicated over i
//
// Collectives, in order (the aggregation's here; the ones marked L are the Linear3D's, with
// row = d, in = i, out = o: pmm/linear_3d.cpp):
//   forward   AGG = Â·H            all-reduce(sum)    over o     [1]
//             W   = gather(W_d)    all-gather         over d     [2]  L
//             OUT = AGG·W          all-reduce(sum)    over i     [3]  L
//   backward  db  = colsum(dOUT)   all-reduce(sum)    over d          L
//             W   = gather(W_d)    all-gather         over d     [2]  L
//             dW  = AGGᵀ·dOUT      reduce-scatter     over d          L
//             dAGG = dOUT·Wᵀ       all-reduce(sum)    over o          L
//             dH  = Âᵀ·dAGG        all-reduce(sum)    over d     [1]
//   (layer 0 needs no dH: the input features take no gradient. Its aggregation without
//    dropout is constant, so evaluation passes compute it once and reuse it.)
//
// Transform first, OUT = act(Â·(H·W) + b) (PyG's GCNConv: the bias after the aggregation).
// Local blocks:
//   H   [N/G_o × D/G_d], replicated over i
//   W   [D/G_d × D'/G_i], stored split over o along rows
//   Y   [N/G_o × D'/G_i], replicated over d
//   OUT [N/G_d × D'/G_i]  replicated over o
//
// Collectives, in order (L: the Linear3D's, with row = o, in = d, out = i, no bias):
//   forward   W   = gather(W_o)    all-gather         over o     [2]  L
//             Y   = H·W            all-reduce(sum)    over d          L
//             OUT = Â·Y            all-reduce(sum)    over o     [1] [3]
//   backward  db  = colsum(dOUT)   all-reduce(sum)    over d
//             dY  = Âᵀ·dOUT        all-reduce(sum)    over d     [1]
//             W   = gather(W_o)    all-gather         over o     [2]  L
//             dW  = Hᵀ·dY          reduce-scatter     over o          L
//             dH  = dY·Wᵀ          all-reduce(sum)    over i          L
//   (layer 0 needs no dH, but dY all the same, for dW; nothing is cached: H·W changes with
//    every step.)
//
//   Sharded Â (TrainConfig::shard_adj): before each SpMM, Â (forward) or Âᵀ (backward) is
//   all-gathered over i from its parts (DeviceAdj::operand, src/pmm/device_adj.hpp).
//
// Variants (LayerCommOptions; docs/communication-variants.md gives the byte counts):
//   [1] agg_chunks = K > 1: the SpMM runs in K row chunks and the all-reduce becomes K
//       non-blocking all-reduces (iall_reduce) of the chunks' contiguous rows, chunk k's
//       overlapping chunk k+1's SpMM. Same bytes, same sums.
//   [2] reuse_weight: W is all-gathered only after weight_updated() (once per Adam step),
//       not in every forward and backward.
//   [3] scatter_output (last layer, comm variant rs-ag): OUT's all-reduce over the axis it is
//       replicated on (i aggregating first, o transforming first) becomes a reduce-scatter
//       there, rows of OUT split over it; bias (and ReLU) on the slice; the loss works on the
//       slice. The all-gather is deferred to backward and applied to the gradient:
//             dOUT = gather(dOUT_slice)   all-gather   over i (o)   (training passes only)
//       Transforming first with agg_chunks > 1 the chunks' SpMMs run in turn and one
//       reduce-scatter follows (spmm_reduce_scatter).
//   [4] bf16 (--precision bf16, docs/precision.md): the all-reduces marked [1] and the
//       Linear3D's Y and dH/dAGG all-reduces move bf16 summed in fp32 (all_reduce_in_bf16: half
//       the bytes); W's gathers, dW's reduce-scatters, db's all-reduces and [3]'s collectives
//       stay fp32. Transforming first, H·W and Hᵀ·dY read the input in row chunks (its dropout
//       drawn again per chunk), so no dropped-out copy is kept.
//
// Recomputation (LayerCommOptions::recompute): between forward and backward the layer holds
// only its input (and OUT, the next layer's input). Aggregating first, backward computes AGG
// again — Â·dropout(H) and its all-reduce over o [1], repeated — before the Linear3D's
// backward (layer 0 without dropout keeps its cached AGG: nothing to recompute); transforming
// first, it draws dropout(H) again (no collective). With bf16 transforming first there is
// nothing to add (the input is read again in any case); a bf16 input aggregating first (layer
// 0's features) keeps its AGG, its fp32 copy not outliving forward.
#include "pmm/gcn_layer_3d.hpp"

#include "pmm/spmm_all_reduce.hpp"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace plexus {

namespace {
Linear3DLayout linear_layout(const LayerGeometry& g) {
  if (g.transform_first) return {g.roles.o, g.roles.d, g.roles.i, g.in_rows.size(), g.in_cols, g.out_cols};
  return {g.roles.d, g.roles.i, g.roles.o, g.out_rows.size(), g.in_cols, g.out_cols};
}
Linear3DOptions linear_options(const LayerGeometry& g, const LayerCommOptions& comm) {
  // Transforming first, the bias and the scatter of OUT belong to the aggregation (here).
  if (g.transform_first)
    return {.bias = false, .scatter_output = false, .reuse_weight = comm.reuse_weight, .bf16_comm = comm.bf16};
  return {.bias = true, .scatter_output = comm.scatter_output, .reuse_weight = comm.reuse_weight,
          .bf16_comm = comm.bf16};
}
// This rank's rows of OUT with scatter_output transforming first: out_rows split over o.
Range scattered_rows(const ProcessGrid& grid, const LayerGeometry& g) {
  return sub_range(Range{0, g.out_rows.size()}, grid.dim(g.roles.o), grid.coord(g.roles.o));
}
}  // namespace

GcnLayer3D::GcnLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj, bool relu,
                       std::uint64_t seed, bool constant_input, LayerCommOptions comm)
    : be_(be),
      grid_(grid),
      geo_(geo),
      relu_(relu),
      comm_(comm),
      adj_(adj),
      linear_(be, grid, linear_layout(geo), linear_options(geo, comm)),
      // local: float4 rows. None with recompute (allocated in each pass: held), with comm.bf16
      // transforming first (the input is read by rows), nor for a bf16 input aggregating first
      // (its fp32 copy takes the dropout).
      h_drop_(comm.recompute || (comm.bf16 && (geo.transform_first || constant_input))
                  ? Matrix()
                  : Matrix(be, geo.in_rows.size(), geo.in_cols.size(), Matrix::PaddedRows{})),
      constant_input_(constant_input && !geo.transform_first) {
  if (be.computes())  // (stream layer + 1000: the GCN's weights since the first release)
    linear_.weight().upload(glorot_block(geo.in_dim, geo.out_dim, geo.w_rows, geo.out_cols, seed,
                                         static_cast<std::uint32_t>(geo.layer) + 1000u));  // a dry run draws nothing
  if (comm_.agg_chunks < 1) comm_.agg_chunks = 1;
  if (grid.dim(geo.out_repl()) == 1) comm_.scatter_output = false;  // the all-reduce is already the identity
  if (adj.chunks() != comm_.agg_chunks)
    throw std::invalid_argument("GcnLayer3D: the Â block was chunked for another agg_chunks");
  if (!geo.transform_first) {
    if (!comm_.recompute) agg_ = Matrix(be, geo.out_rows.size(), geo.in_cols.size());
    return;
  }
  bias_ = ParamSlot(be, 1, geo.out_cols.size());
  bias_.allocate();
  out_ = Matrix(be, geo.out_rows.size(), geo.out_cols.size());
  if (comm_.scatter_output) {
    out_slice_ = Matrix(be, scattered_rows(grid, geo).size(), geo.out_cols.size());
    d_out_full_ = Matrix(be, geo.out_rows.size(), geo.out_cols.size());
  }
}

Range GcnLayer3D::out_slice_rows() const {
  const Range local = !geo_.transform_first     ? linear_.output_rows()
                      : comm_.scatter_output    ? scattered_rows(grid_, geo_)
                                                : Range{0, geo_.out_rows.size()};
  return {geo_.out_rows.begin + local.begin, geo_.out_rows.begin + local.end};
}

std::vector<LayerParam> GcnLayer3D::parameters(bool decay_weights) {
  LayerParam w = linear_weight_param(linear_, grid_, "weight", geo_.in_dim, geo_.out_dim, decay_weights);
  if (!geo_.transform_first) return {std::move(w), linear_bias_param(linear_, grid_, "bias", geo_.out_dim)};
  // The bias [1 × out_cols] is replicated over o and d: the copy at coordinate 0 of both counts.
  const bool contributes = grid_.coord(geo_.roles.o) == 0 && grid_.coord(geo_.roles.d) == 0;
  return {std::move(w), LayerParam{"bias", &bias_, 1, geo_.out_dim, Range{0, 1}, geo_.out_cols, contributes, false}};
}

const Matrix& GcnLayer3D::forward(const Matrix& h_in, const DropoutSpec& dropout) {
  return geo_.transform_first ? forward_transform_first(h_in, dropout) : forward_aggregate_first(h_in, dropout);
}

const Matrix& GcnLayer3D::forward(const Bf16Matrix& h_in, const DropoutSpec& dropout) {
  if (!comm_.bf16) throw std::logic_error("GcnLayer3D: a bf16 input to a layer without bf16");
  if (geo_.transform_first) {
    last_src_ = row_source(h_in, dropout, geo_);
    return aggregate_output(linear_.forward(last_src_));
  }
  if (constant_input_ && dropout.p == 0.0f && agg_clean_valid_) return forward_aggregate_first(Matrix(), dropout);
  MemoryScope scope(be_, MemoryKind::Workspace, "the fp32 input of an aggregation");
  Matrix h(be_, h_in.rows(), h_in.cols());
  row_source(h_in, dropout, geo_).fill(be_, 0, h.rows(), h.view());
  return forward_aggregate_first(h, dropout, /*dropout_applied=*/true);
}

const Matrix& GcnLayer3D::forward_transform_first(const Matrix& h_in, const DropoutSpec& dropout) {
  if (comm_.bf16) {  // read in row chunks, the dropout drawn again: nothing kept to recompute
    last_src_ = row_source(h_in, dropout, geo_);
    return aggregate_output(linear_.forward(last_src_));
  }
  last_h_in_ = &h_in;
  if (dropout.p > 0.0f) held(be_, h_drop_, geo_.in_rows.size(), geo_.in_cols.size(), true);
  last_in_ = input_dropout(be_, h_in, dropout, geo_, h_drop_);
  const Matrix& y = linear_.forward(last_in_);
  release_if(comm_.recompute, h_drop_);  // (backward draws it again)
  return aggregate_output(y);
}

const Matrix& GcnLayer3D::aggregate_output(const Matrix& y) {
  Communicator& o = grid_.comm(geo_.roles.o);
  Matrix* out = &out_;
  if (comm_.scatter_output) {
    spmm_reduce_scatter(be_, o, adj_.operand(false), y.view(), out_, out_slice_);
    out = &out_slice_;
  } else {
    spmm_all_reduce(be_, o, adj_.operand(false), y.view(), out_, 0.0f, comm_.bf16);
  }
  be_.add_bias(out->view(), std::as_const(bias_).data());
  if (relu_) be_.relu(out->view());
  return *out;
}

Matrix GcnLayer3D::backward_transform_first(Matrix& d_out_arg, const DropoutSpec& dropout, bool need_input_grad) {
  if (relu_) be_.relu_backward((comm_.scatter_output ? out_slice_ : out_).view(), d_out_arg.view());
  Matrix* d_out = &d_out_arg;
  if (comm_.scatter_output) {
    Communicator& o = grid_.comm(geo_.roles.o);
    o.all_gather(d_out_arg.data(), d_out_full_.data(), block_counts(geo_.out_rows.size(), o.size(), geo_.out_cols.size()));
    d_out = &d_out_full_;
  }
  Communicator& d = grid_.comm(geo_.roles.d);
  be_.column_sum(d_out->view(), 0.0f, bias_.grad());
  d.all_reduce(bias_.grad(), bias_.size(), ReduceOp::Sum);
  Matrix d_y(be_, geo_.in_rows.size(), geo_.out_cols.size());
  spmm_all_reduce(be_, d, adj_.operand(true), d_out->view(), d_y, 0.0f, comm_.bf16);
  Matrix d_h;
  if (comm_.bf16) {
    d_h = linear_.backward(last_src_, d_y, need_input_grad);
  } else {
    if (comm_.recompute) {  // the input forward multiplied: dropout(H) drawn again
      if (dropout.p > 0.0f) held(be_, h_drop_, geo_.in_rows.size(), geo_.in_cols.size(), true);
      last_in_ = input_dropout(be_, *last_h_in_, dropout, geo_, h_drop_);
    }
    d_h = linear_.backward(last_in_, d_y, need_input_grad);
    release_if(comm_.recompute, h_drop_);
  }
  if (!need_input_grad) return {};
  input_dropout_backward(be_, d_h, dropout, geo_);
  return d_h;
}

const Matrix& GcnLayer3D::forward_aggregate_first(const Matrix& h_in, const DropoutSpec& dropout, bool dropout_applied) {
  const Axis o = geo_.roles.o;
  if (constant_input_ && dropout.p == 0.0f) {
    if (!agg_clean_valid_) {
      agg_clean_ = Matrix(be_, geo_.out_rows.size(), geo_.in_cols.size());
      spmm_all_reduce(be_, grid_.comm(o), adj_.operand(false), h_in.view(), agg_clean_, 0.0f, comm_.bf16);
      agg_clean_valid_ = true;
    }
    last_agg_ = &agg_clean_;
  } else {
    if (!dropout_applied && dropout.p > 0.0f && comm_.bf16 && constant_input_)
      throw std::logic_error("GcnLayer3D: an fp32 input to a layer that takes bf16 (no dropout buffer)");
    aggregate(h_in, dropout, dropout_applied);
    last_agg_ = &agg_;
  }
  // A bf16 input's fp32 copy (dropout_applied) does not outlive forward: its AGG is kept.
  last_h_in_ = dropout_applied ? nullptr : &h_in;

  Matrix& out = linear_.forward(last_agg_->view());
  release_if(comm_.recompute && last_h_in_ != nullptr, agg_);  // (backward computes it again)
  if (relu_) be_.relu(out.view());
  return out;
}

void GcnLayer3D::aggregate(const Matrix& h_in, const DropoutSpec& dropout, bool dropout_applied) {
  const bool drop = !dropout_applied && dropout.p > 0.0f;
  if (drop) held(be_, h_drop_, geo_.in_rows.size(), geo_.in_cols.size(), true);
  held(be_, agg_, geo_.out_rows.size(), geo_.in_cols.size());
  const ConstMatrixView h = dropout_applied ? h_in.view() : input_dropout(be_, h_in, dropout, geo_, h_drop_);
  spmm_all_reduce(be_, grid_.comm(geo_.roles.o), adj_.operand(false), h, agg_, 0.0f, comm_.bf16);
  release_if(comm_.recompute, h_drop_);
}

Matrix GcnLayer3D::backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  if (geo_.transform_first) return backward_transform_first(d_out, dropout, need_input_grad);
  const Axis d = geo_.roles.d;
  // ReLU backward on what forward returned (with scatter_output: this rank's row slice; the
  // linear all-gathers the gradient over i afterwards).
  if (relu_) be_.relu_backward(linear_.output().view(), d_out.view());
  if (comm_.recompute && last_agg_ == &agg_ && last_h_in_ != nullptr)  // (not the cached AGG, nor a bf16 input's)
    aggregate(*last_h_in_, dropout, false);
  Matrix d_agg = linear_.backward(last_agg_->view(), d_out, need_input_grad);
  release_if(comm_.recompute, agg_);
  if (!need_input_grad) return {};

  Matrix d_h(be_, geo_.in_rows.size(), geo_.in_cols.size());
  spmm_all_reduce(be_, grid_.comm(d), adj_.operand(true), d_agg.view(), d_h, 0.0f, comm_.bf16);
  input_dropout_backward(be_, d_h, dropout, geo_);
  return d_h;
}

}  // namespace plexus
