// bfloat16 conversions: to_bf16 (narrow, or accumulate into 16-bit storage) and from_bf16.
//
// Bit for bit the reference backend's results: the sum is one fused multiply-add in float
// (__fmaf_rn, never contracted differently) and the rounding repeats float_to_bf16
// (tensor.hpp) on the raw bits, so NaN, infinities, denormals and ties behave the same.
#include <cstdint>

#include "kernels/cuda/launch.cuh"

namespace plexus::cuda {
namespace {

__device__ __forceinline__ float widen(bf16 h) { return __uint_as_float(static_cast<std::uint32_t>(h.bits) << 16); }

// Round to nearest, ties to even; NaN stays a (quiet) NaN. Same logic as float_to_bf16.
__device__ __forceinline__ bf16 narrow(float f) {
  std::uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{static_cast<std::uint16_t>(u >> 16)};
}

// Each element is read and written by one thread. beta == 0 does not read y (may be garbage).
__global__ void to_bf16_kernel(std::size_t n, const float* x, float beta, bf16* y) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = narrow(beta == 0.0f ? x[i] : __fmaf_rn(beta, widen(y[i]), x[i]));
}

__global__ void from_bf16_kernel(std::size_t n, const bf16* x, float* y) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = widen(x[i]);
}

}  // namespace

void CudaBackend::do_to_bf16(std::size_t n, const float* x, float beta, bf16* y) {
  if (n == 0) return;
  activate();
  to_bf16_kernel<<<grid_1d(n), kBlock, 0, stream_>>>(n, x, beta, y);
  PLEXUS_CUDA_CHECK_LAUNCH("to_bf16_kernel");
}

void CudaBackend::do_from_bf16(std::size_t n, const bf16* x, float* y) {
  if (n == 0) return;
  activate();
  from_bf16_kernel<<<grid_1d(n), kBlock, 0, stream_>>>(n, x, y);
  PLEXUS_CUDA_CHECK_LAUNCH("from_bf16_kernel");
}

}  // namespace plexus::cuda
