// Row L2 normalisation (Backend::row_dots, l2_normalize_rows, l2_normalize_rows_backward): the
// oracle, one double sum per row in column order.
#include <algorithm>
#include <cmath>

#include "kernels/reference/reference_backend.hpp"

namespace plexus::reference {

void ReferenceBackend::do_row_dots(ConstMatrixView a, ConstMatrixView b, float* out) {
  for (index_t i = 0; i < a.rows; ++i) {
    double acc = 0.0;
    for (index_t j = 0; j < a.cols; ++j) acc += static_cast<double>(a.row(i)[j]) * b.row(i)[j];
    out[i] = static_cast<float>(acc);
  }
}

void ReferenceBackend::do_l2_normalize_rows(MatrixView x, const float* sumsq, float eps) {
  for (index_t i = 0; i < x.rows; ++i) {
    const float n = std::max(std::sqrt(sumsq[i]), eps);
    for (index_t j = 0; j < x.cols; ++j) x.row(i)[j] /= n;
  }
}

void ReferenceBackend::do_l2_normalize_rows_backward(ConstMatrixView y, const float* sumsq, const float* dots,
                                                     float eps, MatrixView dy) {
  for (index_t i = 0; i < y.rows; ++i) {
    const float norm = std::sqrt(sumsq[i]);
    for (index_t j = 0; j < y.cols; ++j)
      dy.row(i)[j] = norm > eps ? (dy.row(i)[j] - y.row(i)[j] * dots[i]) / norm : dy.row(i)[j] / eps;
  }
}

}  // namespace plexus::reference
