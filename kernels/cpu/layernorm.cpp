// LayerNorm over a possibly column-split feature axis (Backend::layernorm_* in plexus/backend.hpp).
//
// Row statistics: one row per iteration of an OpenMP loop over rows, the row's sum in double
// by a SIMD reduction (its order is fixed by the compiled loop, not by the thread that runs it).
// The parameter gradients are column sums over rows: as in column_sum (elementwise.cpp), rows
// are cut into chunks fixed by the shape, each chunk's partial column sums are taken in row
// order, and the chunks are combined in chunk order. dx is written in the same pass, so x and
// dy are read once.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"

namespace plexus::cpu {
namespace {

// Backward partition, a function of the shape only. Smaller chunks than column_sum's: a
// transformer's activations have a few thousand rows, and the chunks are the parallelism.
// At most kMaxRowChunks chunks bound the scratch (2 doubles per chunk and column).
constexpr index_t kMinChunkRows = 64;
constexpr index_t kMaxRowChunks = 64;
constexpr index_t kColBlock = 1024;

index_t ceil_div(index_t a, index_t b) { return (a + b - 1) / b; }


}  // namespace

void CpuBackend::do_layernorm_mean(ConstMatrixView x, index_t width, float* mean) {
  const double inv_width = 1.0 / static_cast<double>(width);
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* __restrict r = x.row(i);
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (index_t j = 0; j < x.cols; ++j) acc += r[j];
    mean[i] = static_cast<float>(acc * inv_width);
  }
}

void CpuBackend::do_layernorm_var(ConstMatrixView x, const float* mean, index_t width, float* var) {
  const double inv_width = 1.0 / static_cast<double>(width);
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* __restrict r = x.row(i);
    const float m = mean[i];
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (index_t j = 0; j < x.cols; ++j) {
      const float d = r[j] - m;
      acc += static_cast<double>(d * d);
    }
    var[i] = static_cast<float>(acc * inv_width);
  }
}

void CpuBackend::do_layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps,
                                    const float* gamma, const float* beta, MatrixView y, float* rstd) {
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* xr = x.row(i);  // no __restrict: y may alias x
    float* yr = y.row(i);
    const float m = mean[i], r = 1.0f / std::sqrt(var[i] + eps);
    rstd[i] = r;
#pragma omp simd
    for (index_t j = 0; j < x.cols; ++j) yr[j] = (xr[j] - m) * r * gamma[j] + beta[j];
  }
}

void CpuBackend::do_layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean,
                                            const float* rstd, const float* gamma, index_t width, float* a,
                                            float* b) {
  const double inv_width = 1.0 / static_cast<double>(width);
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* __restrict xr = x.row(i);
    const float* __restrict dr = dy.row(i);
    const float m = mean[i], r = rstd[i];
    double sa = 0.0, sb = 0.0;
#pragma omp simd reduction(+ : sa, sb)
    for (index_t j = 0; j < x.cols; ++j) {
      const float g = dr[j] * gamma[j];
      sa += static_cast<double>(g);
      sb += static_cast<double>(g * ((xr[j] - m) * r));
    }
    a[i] = static_cast<float>(sa * inv_width);
    b[i] = static_cast<float>(sb * inv_width);
  }
}

void CpuBackend::do_layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean,
                                       const float* rstd, const float* gamma, const float* a, const float* b,
                                       float beta, MatrixView dx, float grad_beta, float* dgamma,
                                       float* dbeta) {
  const index_t rows = x.rows, cols = x.cols;
  if (cols == 0) return;
  const index_t chunk_rows = std::max(kMinChunkRows, ceil_div(rows, kMaxRowChunks));
  const index_t row_chunks = ceil_div(rows, chunk_rows), col_blocks = ceil_div(cols, kColBlock);

  // Pass 1, per (row chunk, column block): dx, and the chunk's partial sums of dy·x̂ (dγ) and
  // dy (dβ) per column, in row order.
  std::vector<double> part_g(static_cast<std::size_t>(row_chunks * cols));
  std::vector<double> part_b(static_cast<std::size_t>(row_chunks * cols));
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_for(rows * cols))
  for (index_t rc = 0; rc < row_chunks; ++rc) {
    for (index_t cb = 0; cb < col_blocks; ++cb) {
      const index_t j0 = cb * kColBlock, j1 = std::min(cols, j0 + kColBlock);
      double* __restrict pg = part_g.data() + rc * cols;
      double* __restrict pb = part_b.data() + rc * cols;
      for (index_t i = rc * chunk_rows, i1 = std::min(rows, i + chunk_rows); i < i1; ++i) {
        const float* xr = x.row(i);
        const float* dr = dy.row(i);  // no __restrict: each element of dy is read before the
        float* dxr = dx.row(i);       // same element of dx is written, so dx may reuse dy
        const float m = mean[i], r = rstd[i], ai = a[i], bi = b[i];
        if (beta == 0.0f) {  // dx written without being read
#pragma omp simd
          for (index_t j = j0; j < j1; ++j) {
            const float xh = (xr[j] - m) * r, d = dr[j];
            pg[j] += static_cast<double>(d * xh);
            pb[j] += static_cast<double>(d);
            dxr[j] = r * (d * gamma[j] - ai - xh * bi);
          }
        } else {
#pragma omp simd
          for (index_t j = j0; j < j1; ++j) {
            const float xh = (xr[j] - m) * r, d = dr[j];
            pg[j] += static_cast<double>(d * xh);
            pb[j] += static_cast<double>(d);
            dxr[j] = beta * dxr[j] + r * (d * gamma[j] - ai - xh * bi);
          }
        }
      }
    }
  }
  // Pass 2: combine the chunks in chunk order.
#pragma omp parallel for schedule(static) num_threads(threads_for(row_chunks * cols))
  for (index_t j = 0; j < cols; ++j) {
    double sg = 0.0, sb = 0.0;
    for (index_t rc = 0; rc < row_chunks; ++rc) {
      sg += part_g[static_cast<std::size_t>(rc * cols + j)];
      sb += part_b[static_cast<std::size_t>(rc * cols + j)];
    }
    // grad_beta == 0 overwrites without reading dγ, dβ.
    if (grad_beta != 0.0f) {
      sg += static_cast<double>(grad_beta) * dgamma[j];
      sb += static_cast<double>(grad_beta) * dbeta[j];
    }
    dgamma[j] = static_cast<float>(sg);
    dbeta[j] = static_cast<float>(sb);
  }
}

}  // namespace plexus::cpu
