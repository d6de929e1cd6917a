// Squared L2 norm (plexus/kernels/reduction.hpp) in double, in det_sum's order (loss.cu).
//
// The first level reads the floats: block b squares chunk [b·2048, (b+1)·2048) into double
// (exact: a float's square fits a double's mantissa), thread t adds elements t, t+256, ...,
// t+7·256 of it in order, then a fixed shared-memory tree; det_sum reduces the chunk sums the
// same way. The order depends on n only, and the CPU backend (kernels/cpu/reduction.cpp)
// follows it too, so both return the same bits. No atomics.
#include "kernels/cuda/cuda_backend.cuh"

namespace plexus::cuda {
namespace {

// det_sum_kernel's geometry: the orders must stay identical.
constexpr int kSumThreads = 256, kSumPerThread = 8;
constexpr std::size_t kSumChunk = static_cast<std::size_t>(kSumThreads) * kSumPerThread;

__global__ void __launch_bounds__(kSumThreads) squares_sum_kernel(const float* __restrict__ in, std::size_t n,
                                                                  double* __restrict__ out) {
  __shared__ double sh[kSumThreads];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kSumChunk;
  double acc = 0.0;
#pragma unroll
  for (int k = 0; k < kSumPerThread; ++k) {
    const std::size_t e = base + static_cast<std::size_t>(k) * kSumThreads + threadIdx.x;
    if (e < n) {
      const double v = in[e];
      acc += v * v;
    }
  }
  sh[threadIdx.x] = acc;
  __syncthreads();
#pragma unroll
  for (int s = kSumThreads / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}

}  // namespace

double CudaTransformerKernels::squared_norm(std::size_t n, const float* x) {
  if (n == 0) return 0.0;
  be_.activate();
  // Scratch layout: [chunk sums: blocks][det_sum workspace][result: 1], all doubles.
  const std::size_t blocks = (n + kSumChunk - 1) / kSumChunk;
  const std::size_t ws_n = det_sum_workspace(blocks);
  auto* sums = static_cast<double*>(be_.scratch((blocks + ws_n + 1) * sizeof(double)));
  double* ws = sums + blocks;
  double* result = ws + ws_n;
  cudaStream_t stream = be_.stream();
  squares_sum_kernel<<<static_cast<unsigned>(blocks), kSumThreads, 0, stream>>>(x, n, sums);
  PLEXUS_CUDA_CHECK_LAUNCH("squares_sum_kernel");
  det_sum(sums, blocks, result, ws, stream);
  double out = 0.0;
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(&out, result, sizeof(double), cudaMemcpyDeviceToHost, stream));
  PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace plexus::cuda
