// LayerNorm3D: the collectives listed in layernorm_3d.hpp, in that order.
#include "pmm/layernorm_3d.hpp"

#include <stdexcept>
#include <vector>

namespace plexus {

LayerNorm3D::LayerNorm3D(Backend& be, ProcessGrid& grid, Axis row, Axis hidden, index_t rows, Range cols,
                         index_t width, bool external_params, float eps)
    : be_(be),
      grid_(grid),
      row_(row),
      hidden_(hidden),
      cols_(cols),
      width_(width),
      eps_(eps),
      gamma_(be, 1, cols.size()),
      beta_(be, 1, cols.size()),
      mean_(be, static_cast<std::size_t>(rows)),
      var_(be, static_cast<std::size_t>(rows)),
      rstd_(be, static_cast<std::size_t>(rows)),
      sums_(be, static_cast<std::size_t>(2 * rows)),
      param_sums_(be, static_cast<std::size_t>(2 * cols.size())) {
  // y_ is allocated by the first forward: a caller that releases it after use never holds it
  // from construction on.
  if (!external_params) {
    gamma_.allocate(1.0f);
    beta_.allocate();
  }
}

const Matrix& LayerNorm3D::forward(ConstMatrixView x) {
  const auto rows = static_cast<index_t>(mean_.size());
  if (x.rows != rows || x.cols != cols_.size()) throw std::invalid_argument("LayerNorm3D: input shape");
  Communicator& hid = grid_.comm(hidden_);
  be_.layernorm_mean(x, width_, mean_.data());
  hid.all_reduce(mean_.data(), mean_.size(), ReduceOp::Sum);
  be_.layernorm_var(x, mean_.data(), width_, var_.data());
  hid.all_reduce(var_.data(), var_.size(), ReduceOp::Sum);
  return apply_again(x);  // (the first time: y from the statistics just taken)
}

const Matrix& LayerNorm3D::apply_again(ConstMatrixView x) {
  const auto rows = static_cast<index_t>(mean_.size());
  if (x.rows != rows || x.cols != cols_.size()) throw std::invalid_argument("LayerNorm3D: input shape");
  if (y_.backend() == nullptr) y_ = Matrix(be_, rows, cols_.size(), uninitialized);  // (released by release_output)
  be_.layernorm_apply(x, mean_.data(), var_.data(), eps_, gamma_.data(), beta_.data(), y_.view(), rstd_.data());
  return y_;
}

void LayerNorm3D::backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) {
  const std::size_t rows = mean_.size(), cols = gamma_.size();
  float* a = sums_.data();
  float* b = sums_.data() + rows;
  be_.layernorm_backward_sums(x, dy, mean_.data(), rstd_.data(), gamma_.data(), width_, a, b);
  grid_.comm(hidden_).all_reduce(sums_.data(), sums_.size(), ReduceOp::Sum);
  float* dg = param_sums_.data();
  float* db = param_sums_.data() + cols;
  be_.layernorm_backward(x, dy, mean_.data(), rstd_.data(), gamma_.data(), a, b, /*beta=*/1.0f, dx,
                         /*grad_beta=*/0.0f, dg, db);
  // Only this pass's parameter sums are reduced over the rows; then they are accumulated.
  grid_.comm(row_).all_reduce(param_sums_.data(), param_sums_.size(), ReduceOp::Sum);
  if (also_rows_) grid_.comm(*also_rows_).all_reduce(param_sums_.data(), param_sums_.size(), ReduceOp::Sum);
  be_.axpby(cols, 1.0f, dg, 1.0f, gamma_.grad());
  be_.axpby(cols, 1.0f, db, 1.0f, beta_.grad());
}

}  // namespace plexus
