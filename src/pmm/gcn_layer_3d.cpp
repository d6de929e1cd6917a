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
//       reduce-scatter follows (spmm_reduce_scatter): with --sparse-comm, the one planned for
//       the block (DeviceAdj::plan_scatter, rows held only where that pays).
//   [4] bf16 (--precision bf16, docs/precision.md): the all-reduces marked [1] and the
//       Linear3D's Y and dH/dAGG all-reduces move bf16 summed in fp32 (all_reduce_in_bf16: half
//       the bytes); W's gathers, dW's reduce-scatters, db's all-reduces and [3]'s collectives
//       stay fp32. What the layer holds is held by pmm/layer_tensors.hpp: the input comes in
//       bf16, OUT (all but the last layer) and AGG are rounded to bf16 when computed and kept so,
//       and dH goes down in bf16. Transforming first, H·W and dW = Hᵀ·dY read the bf16 input in
//       row chunks (its dropout drawn again for each), dH = dY·Wᵀ is written by rows into bf16
//       (Linear3D::backward16) and Y lives only until Â·Y is taken; aggregating first, the input
//       is converted whole for the SpMM and freed before the sum's wire is taken, and OUT = AGG·W
//       and dW = AGGᵀ·dOUT read the bf16 AGG by rows.
//
// Recomputation (LayerCommOptions::recompute): between forward and backward the layer holds
// only its input (and OUT, the next layer's input). Aggregating first, AGG is a Recomputed
// tensor: backward computes Â·dropout(H) and its all-reduce over o [1] again before the
// Linear3D's backward (layer 0 without dropout reads its cached AGG: nothing to recompute);
// transforming first, dropout(H) is drawn again (no collective). In bf16 the same, each
// recomputed tensor rounded as forward rounded it.
#include "pmm/gcn_layer_3d.hpp"

#include "pmm/spmm_all_reduce.hpp"
#include "core/shard_layout.hpp"

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
  return {.bias = !g.transform_first,
          .scatter_output = comm.scatter_output && !g.transform_first,
          .reuse_weight = comm.reuse_weight,
          .sums = comm.sum_wire(),
          .inference = comm.inference};
}
LayerCommOptions normalized(LayerCommOptions comm, const ProcessGrid& grid, const LayerGeometry& g) {
  if (comm.agg_chunks < 1) comm.agg_chunks = 1;
  if (grid.dim(g.out_repl()) == 1) comm.scatter_output = false;  // the all-reduce is already the identity
  if (!comm.bf16) comm.bf16_output = false;
  return comm;
}
// This rank's rows of OUT with scatter_output transforming first: out_rows split over o.
Range scattered_rows(const ProcessGrid& grid, const LayerGeometry& g) {
  return sub_range(Range{0, g.out_rows.size()}, grid.dim(g.roles.o), grid.coord(g.roles.o));
}
}  // namespace

GcnLayer3D::GcnLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj, bool relu,
                       std::uint64_t seed, bool constant_input, LayerCommOptions comm)
    : GnnLayer3D(be, geo, comm, geo.transform_first ? TensorRole::Recomputed : TensorRole::Scratch),
      be_(be),
      grid_(grid),
      geo_(geo),
      relu_(relu),
      comm_(normalized(comm, grid, geo)),
      adj_(adj),
      linear_(be, grid, linear_layout(geo), linear_options(geo, comm_)),
      constant_input_(constant_input && !geo.transform_first),
      // (none transforming first)
      agg_(tensors_, TensorRole::Recomputed, geo.transform_first ? 0 : geo.out_rows.size(),
           geo.transform_first ? 0 : geo.in_cols.size()),
      agg_clean_(tensors_, TensorRole::Cache, geo.out_rows.size(), geo.in_cols.size()),
      y_(geo.transform_first ? LayerTensor(tensors_, TensorRole::PassOnly, linear_)
                             : LayerTensor(tensors_, TensorRole::PassOnly, 0, 0)),
      out_(!geo.transform_first ? LayerTensor(tensors_, TensorRole::Output, linear_)
                                : LayerTensor(tensors_, TensorRole::Output,
                                              comm_.scatter_output ? scattered_rows(grid, geo).size() : geo.out_rows.size(),
                                              geo.out_cols.size())),
      d_out_full_(tensors_, TensorRole::Backward, geo.transform_first && comm_.scatter_output ? geo.out_rows.size() : 0,
                  geo.out_cols.size()) {
  if (be.computes())  // (stream layer + 1000: the GCN's weights since the first release)
    linear_.weight().upload(glorot_block(geo.in_dim, geo.out_dim, geo.w_rows, geo.out_cols, seed,
                                         static_cast<std::uint32_t>(geo.layer) + 1000u));  // a dry run draws nothing
  if (adj.chunks() != comm_.agg_chunks)
    throw std::invalid_argument("GcnLayer3D: the Â block was chunked for another agg_chunks");
  if (comm_.bf16_output && comm_.scatter_output)
    throw std::invalid_argument("GcnLayer3D: a bf16 output is not scattered (the last layer's is fp32)");
  if (!geo.transform_first) return;
  bias_ = ParamSlot(be, 1, geo.out_cols.size());
  bias_.allocate(0.0f, tensors_.grads());
  if (comm_.scatter_output) partial_ = Matrix(be, geo.out_rows.size(), geo.out_cols.size());
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

ActivationView GcnLayer3D::forward_pass(const DropoutSpec& dropout) {
  return geo_.transform_first ? forward_transform_first(dropout) : forward_aggregate_first(dropout);
}

Activation GcnLayer3D::backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  return geo_.transform_first ? backward_transform_first(d_out, dropout, need_input_grad)
                              : backward_aggregate_first(d_out, dropout, need_input_grad);
}

ActivationView GcnLayer3D::forward_transform_first(const DropoutSpec& dropout) {
  const Matrix& y = linear_.forward(input_.rows(dropout));
  input_.done();  // (recompute: backward draws dropout(H) again)
  Matrix& out = out_.compute();
  Communicator& o = grid_.comm(geo_.roles.o);
  if (comm_.scatter_output)
    spmm_reduce_scatter(be_, o, adj_.operand(false), y.view(), partial_, out);
  else
    spmm_all_reduce(be_, o, adj_.operand(false), y.view(), out, 0.0f, comm_.sum_wire(), [&] { y_.done(); });
  y_.done();  // (bf16: Y is only the SpMM's operand)
  be_.add_bias(out.view(), std::as_const(bias_).data());
  if (relu_) be_.relu(out.view());
  out_.computed();
  return out_.activation();
}

Activation GcnLayer3D::backward_transform_first(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  // The gradient before the ReLU (with scatter_output: of this rank's row slice, gathered over o).
  Matrix* d = &out_.gradient(d_out, nonlinearity());
  if (comm_.scatter_output) {
    Communicator& o = grid_.comm(geo_.roles.o);
    Matrix& full = d_out_full_.compute();
    o.all_gather(d->data(), full.data(), block_counts(geo_.out_rows.size(), o.size(), geo_.out_cols.size()));
    d = &full;
  }
  Communicator& dc = grid_.comm(geo_.roles.d);
  be_.column_sum(d->view(), 0.0f, bias_.grad());
  dc.all_reduce(bias_.grad(), bias_.size(), ReduceOp::Sum);
  Matrix d_y(be_, geo_.in_rows.size(), geo_.out_cols.size());
  spmm_all_reduce(be_, dc, adj_.operand(true), d->view(), d_y, 0.0f, comm_.sum_wire(), [&] { out_.release(); });
  out_.release();
  return input_.gradient_through(linear_, d_y, dropout, need_input_grad);
}

void GcnLayer3D::aggregate(const DropoutSpec& dropout, LayerTensor& into) {
  const LayerInput::Aggregation product{adj_.operand(false), into};
  input_.aggregate(dropout, grid_.comm(geo_.roles.o), {&product, 1});
}

ActivationView GcnLayer3D::forward_aggregate_first(const DropoutSpec& dropout) {
  if (constant_input_ && dropout.p == 0.0f) {
    agg_clean_.ensure([&] { aggregate(dropout, agg_clean_); });  // once
    last_agg_ = &agg_clean_;
  } else {
    aggregate(dropout, agg_);
    last_agg_ = &agg_;
  }
  Matrix& out = linear_.forward(last_agg_->rows());
  last_agg_->done();  // (recompute: backward computes AGG again)
  if (relu_) be_.relu(out.view());
  out_.computed();
  return out_.activation();
}

Activation GcnLayer3D::backward_aggregate_first(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  // ReLU backward on what forward returned (with scatter_output: this rank's row slice; the
  // linear all-gathers the gradient over i afterwards); a bf16 gradient read by rows.
  const RowSource d = out_.gradient_rows(d_out, nonlinearity());
  last_agg_->ensure([&] { aggregate(dropout, agg_); });  // (never the cached one)
  Activation d_linear = tensors_.linear_backward(linear_, last_agg_->rows(), d, need_input_grad);
  last_agg_->release();
  out_.release();
  if (!need_input_grad) return {};
  Matrix d_agg = tensors_.fp32(std::move(d_linear));  // (the SpMM's operand)
  Matrix d_h(be_, geo_.in_rows.size(), geo_.in_cols.size());
  spmm_all_reduce(be_, grid_.comm(geo_.roles.d), adj_.operand(true), d_agg.view(), d_h, 0.0f, comm_.sum_wire(),
                  [&] { d_agg = Matrix(); });
  return input_.gradient(std::move(d_h), dropout);
}

}  // namespace plexus
