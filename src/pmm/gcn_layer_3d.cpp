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
//       drawn again per chunk), so no dropped-out copy is kept. Every layer takes a bf16 input;
//       all but the last (bf16_output) store OUT in bf16 — rounded by the all-reduce that sums
//       it in place (all_reduce_to_bf16: Â·Y's transforming first, the Linear3D's aggregating
//       first) and once more after the bias and ReLU, which are computed in fp32 — and
//       aggregating first AGG kept for backward in bf16. Backward (backward16) passes dH in
//       bf16: Linear3D::backward16 reads X and dY (a bf16 dOUT, its ReLU mask from the bf16
//       OUT) in row chunks and writes dX in bf16; the SpMMs' operands (Y, dOUT transforming
//       first, the aggregation's input and dAGG) are converted to fp32 whole, and each is freed
//       before the sum's bf16 copy is taken. OUT and AGG are released by backward (and by the
//       next forward): what is held between two passes is bf16.
//
// Recomputation (LayerCommOptions::recompute): between forward and backward the layer holds
// only its input (and OUT, the next layer's input). Aggregating first, backward computes AGG
// again — Â·dropout(H) and its all-reduce over o [1], repeated — before the Linear3D's
// backward (layer 0 without dropout keeps its cached AGG: nothing to recompute); transforming
// first, it draws dropout(H) again (no collective). With bf16 there is nothing to add:
// transforming first the input is read again in any case, and aggregating first AGG is kept in
// bf16 (computing it again would take the fp32 input and sum in backward, twice its size).
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
      // local: float4 rows. None with recompute (allocated in each pass: held), nor with
      // comm.bf16 (a bf16 input is read by rows, or converted to an fp32 copy that takes the
      // dropout).
      h_drop_(comm.recompute || comm.bf16 ? Matrix()
                                          : Matrix(be, geo.in_rows.size(), geo.in_cols.size(), Matrix::PaddedRows{})),
      constant_input_(constant_input && !geo.transform_first) {
  if (be.computes())  // (stream layer + 1000: the GCN's weights since the first release)
    linear_.weight().upload(glorot_block(geo.in_dim, geo.out_dim, geo.w_rows, geo.out_cols, seed,
                                         static_cast<std::uint32_t>(geo.layer) + 1000u));  // a dry run draws nothing
  if (comm_.agg_chunks < 1) comm_.agg_chunks = 1;
  if (grid.dim(geo.out_repl()) == 1) comm_.scatter_output = false;  // the all-reduce is already the identity
  if (adj.chunks() != comm_.agg_chunks)
    throw std::invalid_argument("GcnLayer3D: the Â block was chunked for another agg_chunks");
  if (!comm_.bf16) comm_.bf16_output = false;
  if (comm_.bf16_output && comm_.scatter_output)
    throw std::invalid_argument("GcnLayer3D: a bf16 output is not scattered (the last layer's is fp32)");
  // comm.bf16: the linear's fp32 output lives only in forward where it is not the layer's output
  // (transforming first Y, aggregating first with a bf16 output); AGG is bf16 (allocated in forward).
  if (comm_.bf16 && (geo.transform_first || comm_.bf16_output)) linear_.release_output();
  if (!geo.transform_first) {
    if (!comm_.recompute && !comm_.bf16) agg_ = Matrix(be, geo.out_rows.size(), geo.in_cols.size());
    return;
  }
  bias_ = ParamSlot(be, 1, geo.out_cols.size());
  bias_.allocate();
  if (!comm_.bf16_output) out_ = Matrix(be, geo.out_rows.size(), geo.out_cols.size());
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
  if (comm_.bf16) throw std::logic_error("GcnLayer3D: an fp32 input to a layer that takes bf16");
  return geo_.transform_first ? forward_transform_first(h_in, dropout) : forward_aggregate_first(h_in, dropout);
}

const Matrix& GcnLayer3D::forward(const Bf16Matrix& h_in, const DropoutSpec& dropout) {
  if (!comm_.bf16 || comm_.bf16_output)
    throw std::logic_error("GcnLayer3D: forward(bf16) of a layer without bf16, or whose output is bf16 (forward16)");
  return *forward_bf16(h_in, dropout);
}

const Bf16Matrix& GcnLayer3D::forward16(const Bf16Matrix& h_in, const DropoutSpec& dropout) {
  if (!comm_.bf16_output) throw std::logic_error("GcnLayer3D: forward16 of a layer whose output is fp32");
  forward_bf16(h_in, dropout);
  return out16_;
}

const Matrix* GcnLayer3D::forward_bf16(const Bf16Matrix& h_in, const DropoutSpec& dropout) {
  // The last pass's output and AGG are dead (the next layer and backward are done with them):
  // released before this pass's workspaces are taken.
  out16_ = Bf16Matrix();
  agg16_ = Bf16Matrix();
  if (geo_.transform_first) {
    // Read in row chunks, the dropout drawn again: nothing kept to recompute.
    last_src_ = row_source(h_in, dropout, geo_);
    const Matrix& y = linear_.forward(last_src_);
    if (!comm_.bf16_output) {
      const Matrix& out = aggregate_output(y);
      linear_.release_output();  // Y: only the SpMM's operand
      return &out;
    }
    // OUT = act(Â·Y + b) in an fp32 workspace, stored in bf16 (summed over o in out16_ itself).
    const AdjOperand a = adj_.operand(false);
    MemoryScope scope(be_, MemoryKind::Workspace, "an fp32 aggregation");
    Matrix ws(be_, geo_.out_rows.size(), geo_.out_cols.size());
    spmm_rows(be_, a, y.view(), ws.view());
    linear_.release_output();
    {
      MemoryScope kept(be_, MemoryKind::Activations, "activations");
      held(be_, out16_, geo_.out_rows.size(), geo_.out_cols.size());
    }
    all_reduce_to_bf16(be_, grid_.comm(geo_.roles.o), a, ws, out16_);
    be_.add_bias(ws.view(), std::as_const(bias_).data());
    if (relu_) be_.relu(ws.view());
    be_.to_bf16(ws.size(), ws.data(), 0.0f, out16_.data());
    return nullptr;
  }
  if (constant_input_ && dropout.p == 0.0f) {
    if (!agg_clean_valid_) aggregate_bf16(h_in, dropout, agg_clean16_);
    agg_clean_valid_ = true;
    last_agg16_ = &agg_clean16_;
  } else {
    aggregate_bf16(h_in, dropout, agg16_);
    last_agg16_ = &agg16_;
  }
  Matrix& out = linear_.forward(row_source(*last_agg16_, DropoutSpec{}, geo_));
  if (relu_) be_.relu(out.view());
  if (!comm_.bf16_output) return &out;
  held(be_, out16_, out.rows(), out.cols());
  be_.to_bf16(out.size(), out.data(), 0.0f, out16_.data());
  linear_.release_output();
  return nullptr;
}

void GcnLayer3D::aggregate_bf16(const Bf16Matrix& h_in, const DropoutSpec& dropout, Bf16Matrix& into) {
  const AdjOperand a = adj_.operand(false);
  MemoryScope scope(be_, MemoryKind::Workspace, "the fp32 input of an aggregation");
  Matrix ws(be_, geo_.out_rows.size(), geo_.in_cols.size());
  {
    Matrix h(be_, h_in.rows(), h_in.cols());
    row_source(h_in, dropout, geo_).fill(be_, 0, h.rows(), h.view());
    spmm_rows(be_, a, h.view(), ws.view());
  }  // (h freed before the bf16 sum is taken)
  MemoryScope kept(be_, MemoryKind::Activations, "activations");
  held(be_, into, geo_.out_rows.size(), geo_.in_cols.size());
  all_reduce_to_bf16(be_, grid_.comm(geo_.roles.o), a, ws, into);
}

const Matrix& GcnLayer3D::forward_transform_first(const Matrix& h_in, const DropoutSpec& dropout) {
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
  spmm_all_reduce(be_, d, adj_.operand(true), d_out->view(), d_y, 0.0f);
  if (comm_.recompute) {  // the input forward multiplied: dropout(H) drawn again
    if (dropout.p > 0.0f) held(be_, h_drop_, geo_.in_rows.size(), geo_.in_cols.size(), true);
    last_in_ = input_dropout(be_, *last_h_in_, dropout, geo_, h_drop_);
  }
  Matrix d_h = linear_.backward(last_in_, d_y, need_input_grad);
  release_if(comm_.recompute, h_drop_);
  if (!need_input_grad) return {};
  input_dropout_backward(be_, d_h, dropout, geo_);
  return d_h;
}

const Matrix& GcnLayer3D::forward_aggregate_first(const Matrix& h_in, const DropoutSpec& dropout) {
  const Axis o = geo_.roles.o;
  if (constant_input_ && dropout.p == 0.0f) {
    if (!agg_clean_valid_) {
      agg_clean_ = Matrix(be_, geo_.out_rows.size(), geo_.in_cols.size());
      spmm_all_reduce(be_, grid_.comm(o), adj_.operand(false), h_in.view(), agg_clean_, 0.0f);
      agg_clean_valid_ = true;
    }
    last_agg_ = &agg_clean_;
  } else {
    aggregate(h_in, dropout);
    last_agg_ = &agg_;
  }
  last_h_in_ = &h_in;

  Matrix& out = linear_.forward(last_agg_->view());
  release_if(comm_.recompute, agg_);  // (backward computes it again)
  if (relu_) be_.relu(out.view());
  return out;
}

void GcnLayer3D::aggregate(const Matrix& h_in, const DropoutSpec& dropout) {
  const bool drop = dropout.p > 0.0f;
  if (drop) held(be_, h_drop_, geo_.in_rows.size(), geo_.in_cols.size(), true);
  held(be_, agg_, geo_.out_rows.size(), geo_.in_cols.size());
  const ConstMatrixView h = input_dropout(be_, h_in, dropout, geo_, h_drop_);
  spmm_all_reduce(be_, grid_.comm(geo_.roles.o), adj_.operand(false), h, agg_, 0.0f);
  release_if(comm_.recompute, h_drop_);
}

Matrix GcnLayer3D::backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  if (comm_.bf16) throw std::logic_error("GcnLayer3D: backward of a bf16 layer is backward16");
  if (geo_.transform_first) return backward_transform_first(d_out, dropout, need_input_grad);
  const Axis d = geo_.roles.d;
  // ReLU backward on what forward returned (with scatter_output: this rank's row slice; the
  // linear all-gathers the gradient over i afterwards).
  if (relu_) be_.relu_backward(linear_.output().view(), d_out.view());
  if (comm_.recompute && last_agg_ == &agg_)  // (not the cached AGG)
    aggregate(*last_h_in_, dropout);
  Matrix d_agg = linear_.backward(last_agg_->view(), d_out, need_input_grad);
  release_if(comm_.recompute, agg_);
  if (!need_input_grad) return {};

  Matrix d_h(be_, geo_.in_rows.size(), geo_.in_cols.size());
  spmm_all_reduce(be_, grid_.comm(d), adj_.operand(true), d_agg.view(), d_h, 0.0f);
  input_dropout_backward(be_, d_h, dropout, geo_);
  return d_h;
}

Bf16Matrix GcnLayer3D::backward16(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  if (!comm_.bf16 || comm_.bf16_output)
    throw std::logic_error("GcnLayer3D: backward16 of an fp32 gradient for a layer whose output is not fp32 in bf16");
  return backward_bf16(&d_out, nullptr, dropout, need_input_grad);
}

Bf16Matrix GcnLayer3D::backward16(Bf16Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) {
  if (!comm_.bf16_output) throw std::logic_error("GcnLayer3D: backward16 of a bf16 gradient for a layer whose output is fp32");
  return backward_bf16(nullptr, &d_out, dropout, need_input_grad);
}

Bf16Matrix GcnLayer3D::backward_bf16(Matrix* d32, Bf16Matrix* d16, const DropoutSpec& dropout, bool need_input_grad) {
  Communicator& d = grid_.comm(geo_.roles.d);
  if (geo_.transform_first) {
    // dOUT in fp32 whole (the SpMM's operand): a bf16 one converted, its ReLU mask applied.
    Matrix converted;
    const Matrix* d_out = d32;
    if (d16 != nullptr) {
      converted = Matrix(be_, geo_.out_rows.size(), geo_.out_cols.size());
      grad_source(*d16, relu_ ? &out16_ : nullptr).fill_all(be_, converted.view());
      *d16 = Bf16Matrix();  // (the gradient and the output are done with)
      out16_ = Bf16Matrix();
      d_out = &converted;
    } else {
      if (relu_) be_.relu_backward((comm_.scatter_output ? out_slice_ : out_).view(), d32->view());
      if (comm_.scatter_output) {
        Communicator& o = grid_.comm(geo_.roles.o);
        o.all_gather(d32->data(), d_out_full_.data(), block_counts(geo_.out_rows.size(), o.size(), geo_.out_cols.size()));
        d_out = &d_out_full_;
      }
    }
    be_.column_sum(d_out->view(), 0.0f, bias_.grad());
    d.all_reduce(bias_.grad(), bias_.size(), ReduceOp::Sum);
    // dY = Âᵀ·dOUT, summed over d in bf16 (dOUT freed first where it is this layer's).
    const AdjOperand at = adj_.operand(true);
    Matrix d_y(be_, geo_.in_rows.size(), geo_.out_cols.size());
    spmm_rows(be_, at, d_out->view(), d_y.view());
    converted = Matrix();
    if (d.size() > 1) {  // (on one rank there is no sum: dY stays fp32, read by rows below)
      Bf16Matrix wire(be_, d_y.rows(), d_y.cols());
      all_reduce_to_bf16(be_, d, at, d_y, wire);
    }
    // dW = Hᵀ·dY and dH = dY·Wᵀ (the input dropout's mask applied) by rows, dH stored in bf16.
    return linear_.backward16(last_src_, grad_source(d_y), need_input_grad);
  }
  const RowSource agg = row_source(*last_agg16_, DropoutSpec{}, geo_);
  Matrix d_agg;
  if (d16 != nullptr) {
    Bf16Matrix d_agg16 = linear_.backward16(agg, grad_source(*d16, relu_ ? &out16_ : nullptr), need_input_grad);
    *d16 = Bf16Matrix();
    out16_ = Bf16Matrix();
    if (need_input_grad) {  // the SpMM's operand in fp32
      d_agg = Matrix(be_, d_agg16.rows(), d_agg16.cols());
      be_.from_bf16(d_agg16.size(), d_agg16.data(), d_agg.data());
    }
  } else {
    if (relu_) be_.relu_backward(linear_.output().view(), d32->view());
    d_agg = linear_.backward(agg, *d32, need_input_grad);
  }
  agg16_ = Bf16Matrix();  // (kept for this backward only)
  if (!need_input_grad) return {};
  // dH = Âᵀ·dAGG summed over d in bf16, then the input dropout's mask on the sum, rounded again.
  const AdjOperand at = adj_.operand(true);
  MemoryScope scope(be_, MemoryKind::Workspace, "an fp32 aggregation");
  Matrix ws(be_, geo_.in_rows.size(), geo_.in_cols.size());
  spmm_rows(be_, at, d_agg.view(), ws.view());
  d_agg = Matrix();
  MemoryScope kept(be_, MemoryKind::Activations, "activations");
  Bf16Matrix d_h(be_, ws.rows(), ws.cols());
  all_reduce_to_bf16(be_, d, at, ws, d_h);
  if (dropout.p > 0.0f) {
    be_.dropout(ws.view(), ws.view(), dropout.p, dropout.key, geo_.in_rows.begin, geo_.in_cols.begin);
    be_.to_bf16(ws.size(), ws.data(), 0.0f, d_h.data());
  }
  return d_h;
}

}  // namespace plexus
