// Row L2 normalisation (GraphSAGE's normalize): rows in parallel, each row's sum in double in
// column order (so it equals the reference's to the last bit).
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.hpp"

namespace plexus::cpu {

void CpuBackend::do_row_dots(ConstMatrixView a, ConstMatrixView b, float* out) {
#pragma omp parallel for schedule(static) num_threads(threads_for(a.rows * a.cols))
  for (index_t i = 0; i < a.rows; ++i) {
    const float* __restrict x = a.row(i);
    const float* __restrict y = b.row(i);
    double acc = 0.0;
    for (index_t j = 0; j < a.cols; ++j) acc += static_cast<double>(x[j]) * y[j];
    out[i] = static_cast<float>(acc);
  }
}

void CpuBackend::do_l2_normalize_rows(MatrixView x, const float* sumsq, float eps) {
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols))
  for (index_t i = 0; i < x.rows; ++i) {
    const float n = std::max(std::sqrt(sumsq[i]), eps);
    float* __restrict r = x.row(i);
#pragma omp simd
    for (index_t j = 0; j < x.cols; ++j) r[j] /= n;
  }
}

void CpuBackend::do_l2_normalize_rows_backward(ConstMatrixView y, const float* sumsq, const float* dots, float eps,
                                               MatrixView dy) {
#pragma omp parallel for schedule(static) num_threads(threads_for(y.rows * y.cols))
  for (index_t i = 0; i < y.rows; ++i) {
    const float norm = std::sqrt(sumsq[i]);
    const float* __restrict yr = y.row(i);
    float* __restrict g = dy.row(i);
    if (norm > eps) {
      const float dot = dots[i];
#pragma omp simd
      for (index_t j = 0; j < y.cols; ++j) g[j] = (g[j] - yr[j] * dot) / norm;
    } else {
#pragma omp simd
      for (index_t j = 0; j < y.cols; ++j) g[j] = g[j] / eps;
    }
  }
}

}  // namespace plexus::cpu
