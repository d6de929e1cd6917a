#pragma once
// Kernel family: LayerNorm over the feature axis of a row-major matrix whose columns may be
// split over ranks. Each row is normalised over its *global* width; a rank holds `cols` of
// them. The statistics are therefore computed in phases separated by the caller's
// all-reduce over the axis that splits the columns (two-pass, not E[x²]−E[x]², for accuracy):
//
//   forward   layernorm_mean     mean[i]  = Σ_j x[i][j] / width             (partial → all-reduce)
//             layernorm_var      var[i]   = Σ_j (x[i][j] − mean[i])² / width (partial → all-reduce)
//             layernorm_apply    rstd[i]  = 1/sqrt(var[i] + eps);  y = (x − mean)·rstd·γ + β
//   backward  with x̂ = (x − mean)·rstd and g = dy·γ:
//             layernorm_backward_sums  a[i] = Σ_j g / width,  b[i] = Σ_j g·x̂ / width  (partial → all-reduce)
//             layernorm_backward       dx = beta·dx + rstd·(g − a − x̂·b)
//                                      dγ[j] = grad_beta·dγ[j] + Σ_i dy·x̂,  dβ[j] = grad_beta·dβ[j] + Σ_i dy
// With one rank on the column axis the all-reduces are the identity. All outputs are
// deterministic and independent of the thread count (fixed summation orders, no atomics).
#include "plexus/tensor.hpp"

namespace plexus {

class LayerNormKernels {
 public:
  virtual ~LayerNormKernels() = default;
  virtual void layernorm_mean(ConstMatrixView x, index_t width, float* mean) = 0;
  virtual void layernorm_var(ConstMatrixView x, const float* mean, index_t width, float* var) = 0;
  // `rstd` (rows floats) is written for the backward pass. `y` may alias `x`.
  virtual void layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps,
                               const float* gamma, const float* beta, MatrixView y, float* rstd) = 0;
  virtual void layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean,
                                       const float* rstd, const float* gamma, index_t width, float* a,
                                       float* b) = 0;
  // beta == 0: dx is written without being read. grad_beta == 0: dγ, dβ likewise.
  virtual void layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                                  const float* gamma, const float* a, const float* b, float beta, MatrixView dx,
                                  float grad_beta, float* dgamma, float* dbeta) = 0;
};

}  // namespace plexus
