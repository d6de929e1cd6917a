// CrossEntropy3D (cross_entropy_3d.hpp): the collectives listed there, in that order.
#include "pmm/cross_entropy_3d.hpp"

#include <limits>

namespace plexus {

CrossEntropy3D::CrossEntropy3D(Backend& be, ProcessGrid& grid, Axis classes, index_t rows)
    : be_(be),
      grid_(grid),
      classes_(classes),
      rows_(rows),
      row_max_(be, static_cast<std::size_t>(rows)),
      row_sum_(be, static_cast<std::size_t>(rows)) {}

double CrossEntropy3D::loss_and_grad(ConstMatrixView logits, const std::int32_t* labels, const float* weights,
                                     index_t col0, MatrixView grad) {
  const auto n = static_cast<std::size_t>(rows_);
  if (rows_) be_.fill(MatrixView{row_max_.data(), rows_, 1, 1}, -std::numeric_limits<float>::infinity());
  be_.row_max(logits, row_max_.data());
  grid_.comm(classes_).all_reduce(row_max_.data(), n, ReduceOp::Max);

  if (rows_) be_.fill(MatrixView{row_sum_.data(), rows_, 1, 1}, 0.0f);
  be_.row_sumexp(logits, row_max_.data(), row_sum_.data());
  grid_.comm(classes_).all_reduce(row_sum_.data(), n, ReduceOp::Sum);

  double loss = be_.softmax_xent(logits, row_max_.data(), row_sum_.data(), labels, weights, col0, grad).loss_sum;
  grid_.host_comm(classes_).all_reduce(&loss, 1, ReduceOp::Sum);
  return loss;
}

}  // namespace plexus
