// Adam / AdamW (Kingma & Ba; Loshchilov & Hutter), in PyTorch's formulation:
//   g  = grad (+ wd·param for plain Adam: L2 regularisation through the moments)
//   m  = b1·m + (1-b1)·g,   v = b2·v + (1-b2)·g²
//   param *= 1 - lr·wd                                   (AdamW only: decoupled decay)
//   param -= lr/bc1 · m / (sqrt(v)/sqrt(bc2) + eps),     bc_k = 1 - b_k^step
#include <cmath>

#include "kernels/cpu/cpu_backend.hpp"

namespace plexus::cpu {

void CpuBackend::do_adam_step(std::size_t n, float* param, const float* grad, float* m, float* v, const AdamParams& hp) {
  // Step-dependent scalars once, in double (b2^step for large step is sensitive to rounding).
  const double bc1 = 1.0 - std::pow(static_cast<double>(hp.beta1), static_cast<double>(hp.step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(hp.beta2), static_cast<double>(hp.step));
  const float step_size = static_cast<float>(hp.lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float b1 = hp.beta1, b2 = hp.beta2, eps = hp.eps;
  const float l2 = hp.decoupled ? 0.0f : hp.weight_decay;
  const float shrink = hp.decoupled ? 1.0f - hp.lr * hp.weight_decay : 1.0f;
  const auto len = static_cast<index_t>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(len))
  for (index_t i = 0; i < len; ++i) {
    const float p = param[i];
    const float g = grad[i] + l2 * p;
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = p * shrink - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

}  // namespace plexus::cpu
