#pragma once
// Device-side helpers shared by the kernel files: a 2D element-wise launcher over a
// row-major matrix with a leading dimension, and warp reductions.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_backend.cuh"

namespace plexus::cuda {

// Calls f(i, j) for every element of a rows×cols matrix. blockDim.x runs along columns
// (coalesced), blockDim.y along rows; grid-stride loops in both directions, so any grid works.
template <class F>
__global__ void map2d_kernel(index_t rows, index_t cols, F f) {
  const index_t j0 = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i0 = static_cast<index_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  const index_t sj = static_cast<index_t>(gridDim.x) * blockDim.x;
  const index_t si = static_cast<index_t>(gridDim.y) * blockDim.y;
  for (index_t i = i0; i < rows; i += si)
    for (index_t j = j0; j < cols; j += sj) f(i, j);
}

// Block shape: as many column threads as the matrix is wide (power of two, <= 32) so that a
// narrow matrix (e.g. 16 classes) does not leave half of every warp idle.
template <class F>
void map2d(index_t rows, index_t cols, cudaStream_t stream, const char* name, F f) {
  if (rows <= 0 || cols <= 0) return;
  unsigned tx = 1;
  while (tx < 32 && static_cast<index_t>(tx) < cols) tx *= 2;
  const unsigned ty = static_cast<unsigned>(kBlock) / tx;
  const dim3 block(tx, ty);
  const dim3 grid(clamp_grid((static_cast<std::size_t>(cols) + tx - 1) / tx, kMaxGrid1D),
                  clamp_grid((static_cast<std::size_t>(rows) + ty - 1) / ty, kMaxGridY));
  map2d_kernel<<<grid, block, 0, stream>>>(rows, cols, f);
  check_launch(name, __FILE__, __LINE__);
}

// Warp reductions with a fixed butterfly pattern: bit-reproducible run to run.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace plexus::cuda
