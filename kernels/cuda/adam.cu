// Fused Adam / AdamW step: one pass over param, grad, m, v (each element touched once).
//
// Math, per element (bias corrections c1 = 1 - beta1^step, c2 = 1 - beta2^step, computed in
// double on the host):
//   g = grad                       (+ weight_decay·param   when !decoupled: L2 / Adam)
//   param *= 1 - lr·weight_decay   (when decoupled: AdamW)
//   m = beta1·m + (1-beta1)·g
//   v = beta2·v + (1-beta2)·g²
//   param -= (lr / c1) · m / (sqrt(v) / sqrt(c2) + eps)
// (the PyTorch formulation of torch.optim.Adam / AdamW).
#include <cmath>

#include "kernels/cuda/cuda_backend.cuh"

namespace plexus::cuda {
namespace {

struct AdamArgs {
  float beta1, beta2, one_minus_beta1, one_minus_beta2, eps;
  float l2;          // weight decay added to the gradient (0 when decoupled)
  float decay_mul;   // 1 - lr·weight_decay when decoupled, else 1
  float step_size;   // lr / c1
  float inv_sqrt_c2; // 1 / sqrt(c2)
};

__global__ void adam_kernel(std::size_t n, float* __restrict__ param, const float* __restrict__ grad,
                            float* __restrict__ m, float* __restrict__ v, AdamArgs a) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float p = param[i];
    float g = grad[i];
    if (a.l2 != 0.0f) g = fmaf(a.l2, p, g);
    p *= a.decay_mul;
    const float mi = fmaf(a.beta1, m[i], a.one_minus_beta1 * g);
    const float vi = fmaf(a.beta2, v[i], a.one_minus_beta2 * g * g);
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) * a.inv_sqrt_c2 + a.eps;
    param[i] = p - a.step_size * (mi / denom);
  }
}

}  // namespace

void CudaBackend::do_adam_step(std::size_t n, float* param, const float* grad, float* m, float* v, const AdamParams& hp) {
  if (n == 0) return;
  activate();
  const double c1 = 1.0 - std::pow(static_cast<double>(hp.beta1), static_cast<double>(hp.step));
  const double c2 = 1.0 - std::pow(static_cast<double>(hp.beta2), static_cast<double>(hp.step));
  AdamArgs a{};
  a.beta1 = hp.beta1;
  a.beta2 = hp.beta2;
  a.one_minus_beta1 = 1.0f - hp.beta1;
  a.one_minus_beta2 = 1.0f - hp.beta2;
  a.eps = hp.eps;
  a.l2 = hp.decoupled ? 0.0f : hp.weight_decay;
  a.decay_mul = hp.decoupled ? static_cast<float>(1.0 - static_cast<double>(hp.lr) * hp.weight_decay) : 1.0f;
  a.step_size = static_cast<float>(static_cast<double>(hp.lr) / c1);
  a.inv_sqrt_c2 = static_cast<float>(1.0 / std::sqrt(c2));
  adam_kernel<<<grid_1d(n), kBlock, 0, stream_>>>(n, param, grad, m, v, a);
  PLEXUS_CUDA_CHECK_LAUNCH("adam_kernel");
}

}  // namespace plexus::cuda
