// LayerNorm over a possibly column-split feature axis (Backend::layernorm_* in plexus/backend.hpp): the
// oracle. Each per-row sum is divided by the global `width`, so the partials of the column
// shards add up to the statistics of the whole row.
#include <cmath>

#include "kernels/reference/reference_backend.hpp"

namespace plexus::reference {
namespace {


}  // namespace

void ReferenceBackend::do_layernorm_mean(ConstMatrixView x, index_t width, float* mean) {
  for (index_t i = 0; i < x.rows; ++i) {
    double acc = 0.0;
    for (index_t j = 0; j < x.cols; ++j) acc += x.row(i)[j];
    mean[i] = static_cast<float>(acc / static_cast<double>(width));
  }
}

void ReferenceBackend::do_layernorm_var(ConstMatrixView x, const float* mean, index_t width, float* var) {
  for (index_t i = 0; i < x.rows; ++i) {
    double acc = 0.0;
    for (index_t j = 0; j < x.cols; ++j) {
      const double d = static_cast<double>(x.row(i)[j]) - mean[i];
      acc += d * d;
    }
    var[i] = static_cast<float>(acc / static_cast<double>(width));
  }
}

void ReferenceBackend::do_layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps,
                                          const float* gamma, const float* beta, MatrixView y, float* rstd) {
  for (index_t i = 0; i < x.rows; ++i) {
    const double r = 1.0 / std::sqrt(static_cast<double>(var[i]) + eps);
    rstd[i] = static_cast<float>(r);
    for (index_t j = 0; j < x.cols; ++j) {
      const double xhat = (static_cast<double>(x.row(i)[j]) - mean[i]) * r;
      y.row(i)[j] = static_cast<float>(xhat * gamma[j] + beta[j]);  // y may alias x: read first
    }
  }
}

void ReferenceBackend::do_layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean,
                                                  const float* rstd, const float* gamma, index_t width,
                                                  float* a, float* b) {
  for (index_t i = 0; i < x.rows; ++i) {
    double sa = 0.0, sb = 0.0;
    for (index_t j = 0; j < x.cols; ++j) {
      const double xhat = (static_cast<double>(x.row(i)[j]) - mean[i]) * rstd[i];
      const double g = static_cast<double>(dy.row(i)[j]) * gamma[j];
      sa += g;
      sb += g * xhat;
    }
    a[i] = static_cast<float>(sa / static_cast<double>(width));
    b[i] = static_cast<float>(sb / static_cast<double>(width));
  }
}

void ReferenceBackend::do_layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean,
                                             const float* rstd, const float* gamma, const float* a,
                                             const float* b, float beta, MatrixView dx, float grad_beta,
                                             float* dgamma, float* dbeta) {
  auto xhat = [&](index_t i, index_t j) { return (static_cast<double>(x.row(i)[j]) - mean[i]) * rstd[i]; };
  // Parameter gradients before dx, so that they see dy even if a caller writes dx over it.
  for (index_t j = 0; j < x.cols; ++j) {
    double sg = 0.0, sb = 0.0;
    for (index_t i = 0; i < x.rows; ++i) {
      sg += static_cast<double>(dy.row(i)[j]) * xhat(i, j);
      sb += dy.row(i)[j];
    }
    // grad_beta == 0 overwrites: the outputs may hold garbage (NaN) that 0·NaN would keep.
    if (grad_beta != 0.0f) {
      sg += static_cast<double>(grad_beta) * dgamma[j];
      sb += static_cast<double>(grad_beta) * dbeta[j];
    }
    dgamma[j] = static_cast<float>(sg);
    dbeta[j] = static_cast<float>(sb);
  }
  for (index_t i = 0; i < x.rows; ++i) {
    for (index_t j = 0; j < x.cols; ++j) {
      const double g = static_cast<double>(dy.row(i)[j]) * gamma[j];
      double v = rstd[i] * (g - a[i] - xhat(i, j) * b[i]);
      if (beta != 0.0f) v += static_cast<double>(beta) * dx.row(i)[j];
      dx.row(i)[j] = static_cast<float>(v);
    }
  }
}

}  // namespace plexus::reference
