#pragma once
// Deterministic column sums on CUDA (LayerNorm's dγ/dβ, GAT's d a_src/d a_dst): a block of
// kBx columns × kBy row lanes accumulates in double, then the lanes are summed by a fixed tree.
namespace plexus::cuda {

inline constexpr int kBx = 32, kBy = 8;

// Sums v over threadIdx.y with a fixed tree; the total is in sh[0][threadIdx.x].
__device__ __forceinline__ void tree_y(double v, double (*sh)[kBx + 1]) {
  sh[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
#pragma unroll
  for (int s = kBy / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.y) < s) sh[threadIdx.y][threadIdx.x] += sh[threadIdx.y + s][threadIdx.x];
    __syncthreads();
  }
}

}  // namespace plexus::cuda
