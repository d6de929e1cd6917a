// Linear3D: the collectives listed in linear_3d.hpp, issued in that order.
#include "pmm/linear_3d.hpp"
#include "pmm/activation_sum_bytes.hpp"

#include "pmm/bf16_tensors.hpp"
#include "core/shard_layout.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

namespace plexus {

Linear3D::Linear3D(Backend& be, ProcessGrid& grid, Linear3DLayout layout, Linear3DOptions opt)
    : be_(be), grid_(grid), layout_(layout), opt_(opt) {
  const index_t in = layout.in_cols.size(), out = layout.out_cols.size();
  const bool split_w = grid.dim(layout.row) > 1;
  if (grid.dim(layout.in) == 1) opt_.scatter_output = false;  // the all-reduce is already the identity
  if (grid.dim(layout.out) == 1) opt_.gather_input = false;     // the gather too
  for (const index_t unit : {opt_.input_unit, opt_.output_unit})
    if (unit < 1 || layout.rows % unit != 0) throw std::logic_error("Linear3D: rows are not whole units of a slice's unit");
  if (!opt_.gather_input) opt_.input_runs.clear();
  if (!opt_.scatter_output) opt_.output_runs.clear();
  for (const auto& [runs, axis] : {std::pair{&opt_.input_runs, layout.out}, std::pair{&opt_.output_runs, layout.in}}) {
    if (runs->empty()) continue;
    if (static_cast<int>(runs->size()) != grid.dim(axis)) throw std::logic_error("Linear3D: not one list of runs a part");
    check_slices(*runs, layout.rows, "Linear3D");
  }
  if (opt_.gather_input && opt_.sums != Wire::Fp32)
    throw std::logic_error("Linear3D: gather_input sums dX in fp32 (a reduce-scatter)");
  const Range stored_rows = opt_.store_transposed ? layout.out_cols : layout.in_cols;
  stored_rows_ = stored_rows.size();
  stored_cols_ = opt_.store_transposed ? in : out;
  w_rows_ = sub_range(stored_rows, grid.dim(layout.row), grid.coord(layout.row));
  w_ = ParamSlot(be, w_rows_.size(), stored_cols_);
  b_ = ParamSlot(be, opt_.bias ? 1 : 0, opt_.bias ? out : 0);
  const bool grads = !opt_.inference;  // (an inference linear has no backward)
  if (!opt_.external_params) {
    w_.allocate(0.0f, grads);
    b_.allocate(0.0f, grads);
  }
  if (split_w) {
    MemoryScope scope(be, MemoryKind::Workspace, "gathered weights");
    w_full_ = Matrix(be, stored_rows_, stored_cols_);
    if (grads) dw_full_ = Matrix(be, stored_rows_, stored_cols_);
  }
  if (grads && opt_.bias && opt_.accumulate_grads) db_new_ = Buffer<float>(be, static_cast<std::size_t>(out));
  // With scatter_output the whole Y and the gathered dY are a pass's workspace; Y's slice stays.
  if (opt_.scatter_output)
    y_slice_ = Matrix(be, output_size(), out);
  else
    y_ = Matrix(be, layout.rows, out);
}

Range Linear3D::output_rows() const {
  if (!opt_.scatter_output) return {0, layout_.rows};
  if (!opt_.output_runs.empty()) throw std::logic_error("Linear3D::output_rows: the slice is runs of rows");
  return unit_range(layout_.rows, opt_.output_unit, grid_.dim(layout_.in), grid_.coord(layout_.in));
}

index_t Linear3D::output_size() const {
  if (!opt_.output_runs.empty()) return slice_rows(opt_.output_runs, grid_.coord(layout_.in));
  return output_rows().size();
}

index_t Linear3D::input_size() const {
  if (!opt_.input_runs.empty()) return slice_rows(opt_.input_runs, grid_.coord(layout_.out));
  return input_rows().size();
}

void Linear3D::all_gather_rows(const RowSlices& runs, index_t unit, Communicator& comm, const float* slice,
                               MatrixView all) {
  if (!runs.empty()) return all_gather_slices(be_, comm, runs, slice, all);
  comm.all_gather(slice, all.data, block_counts(layout_.rows / unit, comm.size(), unit * all.cols));
}

void Linear3D::reduce_scatter_rows(const RowSlices& runs, index_t unit, Communicator& comm, ConstMatrixView all,
                                   float* slice) {
  if (!runs.empty()) return reduce_scatter_slices(be_, comm, runs, all, slice);
  comm.reduce_scatter(all.data, slice, block_counts(layout_.rows / unit, comm.size(), unit * all.cols));
}

ConstMatrixView Linear3D::gather_input(ConstMatrixView slice, const RowSource* src, Matrix& into) {
  if (src != nullptr) throw std::logic_error("Linear3D: gather_input takes X whole, not by rows");
  const index_t in = layout_.in_cols.size();
  if (slice.rows != input_size() || slice.cols != in || (slice.rows > 0 && slice.ld != in))
    throw std::invalid_argument("Linear3D: gather_input's X is not this rank's slice [input_rows × in_cols], dense");
  MemoryScope scope(be_, MemoryKind::Workspace, "a linear's gathered input");
  into = Matrix(be_, layout_.rows, in, uninitialized);  // (the all-gather writes every row)
  all_gather_rows(opt_.input_runs, opt_.input_unit, grid_.comm(layout_.out), slice.data, into.view());
  return into.view();
}

Range Linear3D::input_rows() const {
  if (!opt_.gather_input) return {0, layout_.rows};
  if (!opt_.input_runs.empty()) throw std::logic_error("Linear3D::input_rows: the slice is runs of rows");
  return unit_range(layout_.rows, opt_.input_unit, grid_.dim(layout_.out), grid_.coord(layout_.out));
}

ConstMatrixView Linear3D::full_weight() {
  if (grid_.dim(layout_.row) == 1) return std::as_const(w_).view();
  if (opt_.reuse_weight && w_full_valid_) return w_full_.view();
  const auto counts = block_counts(stored_rows_, grid_.dim(layout_.row), stored_cols_);
  grid_.comm(layout_.row).all_gather(w_.data(), w_full_.data(), counts);
  w_full_valid_ = true;
  return w_full_.view();
}

namespace {
// f(r0, r1, X's rows [r0, r1)) over X: whole (given whole, or an fp32 source read in place), or
// in chunks of `src` through one workspace (at least one call, so that a product over no rows
// still writes its zeros).
template <class F>
void over_rows(Backend& be, ConstMatrixView x, const RowSource* src, F&& f) {
  if (src == nullptr) return f(index_t{0}, x.rows, x);
  if (src->in_place()) return f(index_t{0}, src->rows, src->whole());
  const index_t step = chunk_rows(src->rows, src->cols);
  MemoryScope scope(be, MemoryKind::Workspace, "input row chunks");
  Matrix ws(be, step, src->cols);
  index_t r0 = 0;
  do {
    const index_t r1 = std::min(src->rows, r0 + step);
    const MatrixView chunk{ws.data(), r1 - r0, src->cols, src->cols};
    src->fill(be, r0, r1, chunk);
    f(r0, r1, ConstMatrixView(chunk));
    r0 = r1;
  } while (r0 < src->rows);
}
ConstMatrixView whole_shape(const RowSource& src) { return {nullptr, src.rows, src.cols, src.cols}; }
}  // namespace

Matrix& Linear3D::forward(ConstMatrixView x) { return forward_impl(x, nullptr); }
Matrix& Linear3D::forward(const RowSource& x) { return forward_impl(whole_shape(x), &x); }
Matrix Linear3D::backward(ConstMatrixView x, Matrix& d_y, bool need_input_grad) {
  return backward_impl(x, nullptr, d_y.view(), need_input_grad);
}

Matrix Linear3D::backward(const RowSource& x, const RowSource& d_y, bool need_input_grad) {
  if (d_y.in_place()) return backward_impl(whole_shape(x), &x, d_y.whole(), need_input_grad);
  Matrix d_x = need_input_grad ? Matrix(be_, layout_.rows, layout_.in_cols.size()) : Matrix();
  backward_by_rows(x, d_y, need_input_grad,
                   [&](index_t r0, index_t r1, ConstMatrixView dx) { be_.copy(dx, rows_of(d_x.view(), r0, r1)); });
  if (need_input_grad) all_reduce_activation(be_, grid_.comm(layout_.out), d_x, opt_.sums);
  return d_x;
}

Bf16Matrix Linear3D::backward16(const RowSource& x, const RowSource& d_y, bool need_input_grad) {
  if (opt_.sums != Wire::Bf16) throw std::logic_error("Linear3D::backward16: for a bf16 linear (sums Bf16)");
  Bf16Matrix d_x = need_input_grad ? Bf16Matrix(be_, layout_.rows, layout_.in_cols.size()) : Bf16Matrix();
  const index_t in = layout_.in_cols.size();
  backward_by_rows(x, d_y, need_input_grad, [&](index_t r0, index_t r1, ConstMatrixView dx) {
    be_.to_bf16(static_cast<std::size_t>((r1 - r0) * in), dx.data, 0.0f, d_x.data() + r0 * in);
  });
  if (need_input_grad && grid_.dim(layout_.out) > 1) {
    const ActivationSumScope counted(grid_.comm(layout_.out));
    grid_.comm(layout_.out).all_reduce_bf16(d_x.data(), d_x.size());
  }
  return d_x;
}

Matrix& Linear3D::forward_impl(ConstMatrixView x_whole, const RowSource* src) {
  const index_t in = layout_.in_cols.size();
  if (x_whole.rows != input_size() || x_whole.cols != in)
    throw std::invalid_argument("Linear3D::forward: input is not [rows × in_cols] (gather_input: its slice)");
  Matrix x_full;  // gather_input: X's rows of every rank over `out`, for this pass
  if (opt_.gather_input) x_whole = gather_input(x_whole, src, x_full);
  const ConstMatrixView w = full_weight();
  const index_t out = layout_.out_cols.size();
  // (Released by release_output; Y is written whole below, by the GEMM or the reduce-scatter.)
  if (opt_.scatter_output && y_slice_.backend() == nullptr) y_slice_ = Matrix(be_, output_size(), out, uninitialized);
  if (!opt_.scatter_output && y_.backend() == nullptr) y_ = Matrix(be_, layout_.rows, out, uninitialized);
  Matrix y_whole;  // scatter_output: every row's partial sums, until they are reduce-scattered
  if (opt_.scatter_output) {
    MemoryScope scope(be_, MemoryKind::Workspace, "a linear's output before its reduce-scatter");
    y_whole = Matrix(be_, layout_.rows, out, uninitialized);
  }
  const MatrixView y_all = opt_.scatter_output ? y_whole.view() : y_.view();
  over_rows(be_, x_whole, src, [&](index_t r0, index_t r1, ConstMatrixView x) {
    be_.gemm(Trans::No, opt_.store_transposed ? Trans::Yes : Trans::No, 1.0f, x, w, 0.0f, rows_of(y_all, r0, r1));
  });
  x_full = Matrix();  // (before Y's reduce-scatter: no longer needed)
  Matrix& y = opt_.scatter_output ? y_slice_ : y_;
  if (opt_.scatter_output) {
    reduce_scatter_rows(opt_.output_runs, opt_.output_unit, grid_.comm(layout_.in), y_whole.view(), y_slice_.data());
  } else {
    all_reduce_activation(be_, grid_.comm(layout_.in), y_, opt_.sums);
  }
  if (opt_.bias) be_.add_bias(y.view(), std::as_const(b_).data());
  return y;
}

Matrix Linear3D::backward_impl(ConstMatrixView x_whole, const RowSource* src, ConstMatrixView d_y, bool need_input_grad) {
  if (opt_.inference) throw std::logic_error("Linear3D: backward of a linear built for inference");
  Matrix x_full, d_y_full;  // this pass's gathered X and dY
  if (opt_.gather_input) x_whole = gather_input(x_whole, src, x_full);  // (again: only slices are kept)
  if (opt_.scatter_output) {
    MemoryScope scope(be_, MemoryKind::Workspace, "a linear's gathered output gradient");
    d_y_full = Matrix(be_, layout_.rows, layout_.out_cols.size(), uninitialized);
    all_gather_rows(opt_.output_runs, opt_.output_unit, grid_.comm(layout_.in), d_y.data, d_y_full.view());
    d_y = d_y_full.view();
  }
  const Axis row = layout_.row;
  const bool acc = opt_.accumulate_grads;

  if (opt_.bias) {
    // The all-reduce must see only this pass's sums: accumulate after it.
    float* target = acc ? db_new_.data() : b_.grad();
    be_.column_sum(d_y, 0.0f, target);
    grid_.comm(row).all_reduce(target, b_.size(), ReduceOp::Sum);
    if (acc) be_.axpby(b_.size(), 1.0f, db_new_.data(), 1.0f, b_.grad());
  }

  const ConstMatrixView w = full_weight();
  // dW = Xᵀ·dY, or dWᵀ = dYᵀ·X.
  const auto weight_grad = [&](float beta, MatrixView into) {
    over_rows(be_, x_whole, src, [&](index_t r0, index_t r1, ConstMatrixView x) {
      const ConstMatrixView dy = rows_of(d_y, r0, r1);
      const float b = r0 == 0 ? beta : 1.0f;  // later chunks add to the first's product
      if (opt_.store_transposed)
        be_.gemm(Trans::Yes, Trans::No, 1.0f, dy, x, b, into);
      else
        be_.gemm(Trans::Yes, Trans::No, 1.0f, x, dy, b, into);
    });
  };
  if (grid_.dim(row) == 1) {
    weight_grad(acc ? 1.0f : 0.0f, w_.grad_view());
  } else {
    weight_grad(0.0f, dw_full_.view());
    scatter_weight_grad(acc);
  }
  x_full = Matrix();  // (gather_input: dW was its only reader)

  if (!need_input_grad) return {};
  Matrix d_x;  // (the GEMM's β = 0 writes it whole)
  {
    // gather_input: every row's partial dX lives only until its reduce-scatter — workspace, as
    // forward's Y before its reduce-scatter is (only the slice is an activation).
    std::optional<MemoryScope> scope;
    if (opt_.gather_input) scope.emplace(be_, MemoryKind::Workspace, "a linear's input gradient before its reduce-scatter");
    d_x = Matrix(be_, layout_.rows, layout_.in_cols.size(), uninitialized);
  }
  be_.gemm(Trans::No, opt_.store_transposed ? Trans::No : Trans::Yes, 1.0f, d_y, w, 0.0f, d_x.view());
  if (!opt_.gather_input) {
    all_reduce_activation(be_, grid_.comm(layout_.out), d_x, opt_.sums);
    return d_x;
  }
  Matrix d_x_slice(be_, input_size(), layout_.in_cols.size(), uninitialized);
  reduce_scatter_rows(opt_.input_runs, opt_.input_unit, grid_.comm(layout_.out), d_x.view(), d_x_slice.data());
  return d_x_slice;
}

template <class F>
void Linear3D::backward_by_rows(const RowSource& x, const RowSource& d_y, bool need_input_grad, F&& dx_rows) {
  const index_t rows = layout_.rows, in = layout_.in_cols.size(), out = layout_.out_cols.size();
  if (opt_.scatter_output || opt_.gather_input || opt_.accumulate_grads || opt_.inference)
    throw std::logic_error(
        "Linear3D: a backward by rows of a training linear without scatter_output, gather_input or accumulate_grads");
  if (x.rows != rows || x.cols != in || d_y.rows != rows || d_y.cols != out)
    throw std::invalid_argument("Linear3D: X is not [rows × in_cols] or dY not [rows × out_cols]");
  const ConstMatrixView w = full_weight();
  const MatrixView dw = grid_.dim(layout_.row) == 1 ? w_.grad_view() : dw_full_.view();
  {
    const index_t step = chunk_rows(rows, std::max(in, out));
    MemoryScope scope(be_, MemoryKind::Workspace, "input and gradient row chunks");
    Matrix xc(be_, step, in), dyc(be_, step, out), dxc(be_, need_input_grad ? step : 0, in);
    index_t r0 = 0;
    do {  // (at least once, so that a product over no rows still writes its zeros)
      const index_t r1 = std::min(rows, r0 + step), n = r1 - r0;
      const float beta = r0 == 0 ? 0.0f : 1.0f;  // later chunks add to the first's sums
      const MatrixView dy{dyc.data(), n, out, out}, xv{xc.data(), n, in, in};
      d_y.fill(be_, r0, r1, dy);
      x.fill(be_, r0, r1, xv);
      if (opt_.bias) be_.column_sum(dy, beta, b_.grad());
      if (opt_.store_transposed)
        be_.gemm(Trans::Yes, Trans::No, 1.0f, dy, xv, beta, dw);
      else
        be_.gemm(Trans::Yes, Trans::No, 1.0f, xv, dy, beta, dw);
      if (need_input_grad && n > 0) {
        const MatrixView dx{dxc.data(), n, in, in};
        be_.gemm(Trans::No, opt_.store_transposed ? Trans::No : Trans::Yes, 1.0f, dy, w, 0.0f, dx);
        if (x.dropout.p > 0.0f)
          be_.dropout(dx, dx, x.dropout.p, x.dropout.key, x.row_ids.begin + r0, x.col_ids.begin);
        dx_rows(r0, r1, ConstMatrixView(dx));
      }
      r0 = r1;
    } while (r0 < rows);
  }
  if (opt_.bias) grid_.comm(layout_.row).all_reduce(b_.grad(), b_.size(), ReduceOp::Sum);
  if (grid_.dim(layout_.row) > 1) scatter_weight_grad(false);
}

void Linear3D::scatter_weight_grad(bool accumulate) {
  const auto counts = block_counts(stored_rows_, grid_.dim(layout_.row), stored_cols_);
  if (!accumulate) {
    grid_.comm(layout_.row).reduce_scatter(dw_full_.data(), w_.grad(), counts);
    return;
  }
  // Reduce-scatter this pass's sums into a temporary shard, then add them.
  MemoryScope scope(be_, MemoryKind::Workspace, "a weight-gradient shard");
  Matrix shard(be_, w_rows_.size(), stored_cols_);
  grid_.comm(layout_.row).reduce_scatter(dw_full_.data(), shard.data(), counts);
  be_.axpby(w_.size(), 1.0f, shard.data(), 1.0f, w_.grad());
}

void Linear3D::add_weight_grad(ConstMatrixView full_grad) {
  if (full_grad.rows != stored_rows_ || full_grad.cols != stored_cols_ || full_grad.ld != full_grad.cols)
    throw std::invalid_argument("Linear3D::add_weight_grad: not the shape of the stored block");
  if (grid_.dim(layout_.row) == 1) {
    be_.axpby(w_.size(), 1.0f, full_grad.data, 1.0f, w_.grad());
    return;
  }
  be_.copy(full_grad, dw_full_.view());
  scatter_weight_grad(/*accumulate=*/true);
}

}  // namespace plexus
