// LayerNorm over a possibly column-split feature axis (Backend::layernorm_* in plexus/backend.hpp).
//
// Row statistics (mean, var, the backward sums a and b) and the forward apply: one warp per row,
// lane l visiting columns l, l+32, ... in order (double accumulators), then a fixed xor
// butterfly, as in loss.cu. The backward pass is one fused kernel shaped like column_sum's
// first pass (elementwise.cu): a (32 × 8) block owns 32 columns of a chunk of rows, writes dx
// for them, and reduces its per-column partial sums of dy·x̂ (dγ) and dy (dβ) by a fixed
// shared-memory tree; a second kernel combines the chunks. Chunk sizes depend on the row count
// only, so every result is bitwise reproducible and no atomics are needed.
#include <cmath>

#include "kernels/cuda/column_tree.cuh"
#include "kernels/cuda/launch.cuh"

namespace plexus::cuda {
namespace {

constexpr int kWarpsPerBlock = kBlock / 32;

inline unsigned row_grid(index_t rows) {
  return clamp_grid((static_cast<std::size_t>(rows) + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxGrid1D);
}

#define PLEXUS_LN_FOR_EACH_WARP_ROW(row, rows)                                                           \
  for (index_t row = static_cast<index_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; row < (rows); \
       row += static_cast<index_t>(gridDim.x) * kWarpsPerBlock)

// Every lane ends with the same value: IEEE addition is commutative, so the two lanes of a
// butterfly pair compute the same sum.
__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void ln_mean_kernel(const float* __restrict__ x, index_t rows, index_t cols, index_t ld, double inv_width,
                               float* __restrict__ mean) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  PLEXUS_LN_FOR_EACH_WARP_ROW(i, rows) {
    const float* xr = x + i * ld;
    double acc = 0.0;
    for (index_t j = lane; j < cols; j += 32) acc += static_cast<double>(xr[j]);
    acc = warp_sum_d(acc);
    if (lane == 0) mean[i] = static_cast<float>(acc * inv_width);
  }
}

__global__ void ln_var_kernel(const float* __restrict__ x, index_t rows, index_t cols, index_t ld,
                              const float* __restrict__ mean, double inv_width, float* __restrict__ var) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  PLEXUS_LN_FOR_EACH_WARP_ROW(i, rows) {
    const float* xr = x + i * ld;
    const float m = mean[i];
    double acc = 0.0;
    for (index_t j = lane; j < cols; j += 32) {
      const float d = xr[j] - m;
      acc += static_cast<double>(d * d);
    }
    acc = warp_sum_d(acc);
    if (lane == 0) var[i] = static_cast<float>(acc * inv_width);
  }
}

// x and y may alias (no __restrict__ on them): each element is read before it is written.
__global__ void ln_apply_kernel(const float* x, index_t xld, index_t rows, index_t cols, const float* __restrict__ mean,
                                const float* __restrict__ var, float eps, const float* __restrict__ gamma,
                                const float* __restrict__ beta, float* y, index_t yld, float* __restrict__ rstd) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  PLEXUS_LN_FOR_EACH_WARP_ROW(i, rows) {
    const float m = mean[i], r = 1.0f / sqrtf(var[i] + eps);
    if (lane == 0) rstd[i] = r;
    const float* xr = x + i * xld;
    float* yr = y + i * yld;
    for (index_t j = lane; j < cols; j += 32) yr[j] = (xr[j] - m) * r * gamma[j] + beta[j];
  }
}

__global__ void ln_backward_sums_kernel(const float* __restrict__ x, index_t xld, const float* __restrict__ dy,
                                        index_t dyld, index_t rows, index_t cols, const float* __restrict__ mean,
                                        const float* __restrict__ rstd, const float* __restrict__ gamma,
                                        double inv_width, float* __restrict__ a, float* __restrict__ b) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  PLEXUS_LN_FOR_EACH_WARP_ROW(i, rows) {
    const float* xr = x + i * xld;
    const float* dr = dy + i * dyld;
    const float m = mean[i], r = rstd[i];
    double sa = 0.0, sb = 0.0;
    for (index_t j = lane; j < cols; j += 32) {
      const float g = dr[j] * gamma[j];
      sa += static_cast<double>(g);
      sb += static_cast<double>(g * ((xr[j] - m) * r));
    }
    sa = warp_sum_d(sa);
    sb = warp_sum_d(sb);
    if (lane == 0) {
      a[i] = static_cast<float>(sa * inv_width);
      b[i] = static_cast<float>(sb * inv_width);
    }
  }
}

// ---- backward: dx, and dγ/dβ as deterministic column sums -----------------------------------
// (kBx, kBy, tree_y: kernels/cuda/column_tree.cuh)

struct BackwardArgs {
  const float* x;
  index_t xld;
  const float* dy;  // dx may alias dy: each element of dy is read before that of dx is written
  index_t dyld;
  const float *mean, *rstd, *gamma, *a, *b;
  float beta;
  float* dx;
  index_t dxld;
  index_t rows, cols, chunk, nchunks;
};

__global__ void ln_backward_partial_kernel(BackwardArgs p, double* __restrict__ part_g, double* __restrict__ part_b) {
  __shared__ double sg[kBy][kBx + 1], sb[kBy][kBx + 1];
  for (index_t cb = blockIdx.x; cb * kBx < p.cols; cb += gridDim.x) {
    const index_t j = cb * kBx + threadIdx.x;
    for (index_t ch = blockIdx.y; ch < p.nchunks; ch += gridDim.y) {
      const index_t r0 = ch * p.chunk;
      const index_t r1 = (r0 + p.chunk < p.rows) ? r0 + p.chunk : p.rows;
      double acc_g = 0.0, acc_b = 0.0;
      if (j < p.cols) {
        const float gj = p.gamma[j];
        for (index_t i = r0 + threadIdx.y; i < r1; i += kBy) {
          const float r = p.rstd[i];
          const float xh = (p.x[i * p.xld + j] - p.mean[i]) * r, d = p.dy[i * p.dyld + j];
          acc_g += static_cast<double>(d * xh);
          acc_b += static_cast<double>(d);
          const float v = r * (d * gj - p.a[i] - xh * p.b[i]);
          float& out = p.dx[i * p.dxld + j];
          out = (p.beta == 0.0f) ? v : fmaf(p.beta, out, v);  // beta == 0: dx is not read
        }
      }
      tree_y(acc_g, sg);
      tree_y(acc_b, sb);
      if (threadIdx.y == 0 && j < p.cols) {
        part_g[ch * p.cols + j] = sg[0][threadIdx.x];
        part_b[ch * p.cols + j] = sb[0][threadIdx.x];
      }
      __syncthreads();  // sg, sb are reused by the next iteration
    }
  }
}

// dγ[j] = grad_beta·dγ[j] + Σ_chunks part_g, dβ likewise; nchunks == 0 (no rows) scales only.
__global__ void ln_backward_final_kernel(const double* __restrict__ part_g, const double* __restrict__ part_b,
                                         index_t cols, index_t nchunks, float grad_beta, float* __restrict__ dgamma,
                                         float* __restrict__ dbeta) {
  __shared__ double sg[kBy][kBx + 1], sb[kBy][kBx + 1];
  for (index_t cb = blockIdx.x; cb * kBx < cols; cb += gridDim.x) {
    const index_t j = cb * kBx + threadIdx.x;
    double acc_g = 0.0, acc_b = 0.0;
    if (j < cols)
      for (index_t ch = threadIdx.y; ch < nchunks; ch += kBy) {
        acc_g += part_g[ch * cols + j];
        acc_b += part_b[ch * cols + j];
      }
    tree_y(acc_g, sg);
    tree_y(acc_b, sb);
    if (threadIdx.y == 0 && j < cols) {
      double tg = sg[0][threadIdx.x], tb = sb[0][threadIdx.x];
      if (grad_beta != 0.0f) {  // grad_beta == 0: dγ, dβ are not read
        tg += static_cast<double>(grad_beta) * dgamma[j];
        tb += static_cast<double>(grad_beta) * dbeta[j];
      }
      dgamma[j] = static_cast<float>(tg);
      dbeta[j] = static_cast<float>(tb);
    }
    __syncthreads();
  }
}


}  // namespace

void CudaBackend::do_layernorm_mean(ConstMatrixView x, index_t width, float* mean) {
  if (x.rows <= 0) return;  // cols == 0 still writes the (zero) partial means
  activate();
  ln_mean_kernel<<<row_grid(x.rows), kBlock, 0, stream()>>>(x.data, x.rows, x.cols, x.ld,
                                                                 1.0 / static_cast<double>(width), mean);
  PLEXUS_CUDA_CHECK_LAUNCH("ln_mean_kernel");
}

void CudaBackend::do_layernorm_var(ConstMatrixView x, const float* mean, index_t width, float* var) {
  if (x.rows <= 0) return;
  activate();
  ln_var_kernel<<<row_grid(x.rows), kBlock, 0, stream()>>>(x.data, x.rows, x.cols, x.ld, mean,
                                                                1.0 / static_cast<double>(width), var);
  PLEXUS_CUDA_CHECK_LAUNCH("ln_var_kernel");
}

void CudaBackend::do_layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps,
                                     const float* gamma, const float* beta, MatrixView y, float* rstd) {
  if (x.rows <= 0) return;  // cols == 0 still writes rstd
  activate();
  ln_apply_kernel<<<row_grid(x.rows), kBlock, 0, stream()>>>(x.data, x.ld, x.rows, x.cols, mean, var, eps, gamma,
                                                                  beta, y.data, y.ld, rstd);
  PLEXUS_CUDA_CHECK_LAUNCH("ln_apply_kernel");
}

void CudaBackend::do_layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean,
                                             const float* rstd, const float* gamma, index_t width, float* a,
                                             float* b) {
  if (x.rows <= 0) return;
  activate();
  ln_backward_sums_kernel<<<row_grid(x.rows), kBlock, 0, stream()>>>(
      x.data, x.ld, dy.data, dy.ld, x.rows, x.cols, mean, rstd, gamma, 1.0 / static_cast<double>(width), a, b);
  PLEXUS_CUDA_CHECK_LAUNCH("ln_backward_sums_kernel");
}

void CudaBackend::do_layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean,
                                        const float* rstd, const float* gamma, const float* a, const float* b,
                                        float beta, MatrixView dx, float grad_beta, float* dgamma,
                                        float* dbeta) {
  if (x.cols <= 0) return;
  activate();
  // Chunk size: a function of the row count alone (>= 64 rows, at most 256 chunks). Smaller
  // than column_sum's, since the chunks are the parallelism for a few thousand rows.
  constexpr index_t kMinChunk = 64, kMaxChunks = 256;
  index_t chunk = (x.rows + kMaxChunks - 1) / kMaxChunks;
  if (chunk < kMinChunk) chunk = kMinChunk;
  const index_t nchunks = (x.rows + chunk - 1) / chunk;
  const std::size_t part = static_cast<std::size_t>(nchunks * x.cols);
  auto* part_g = static_cast<double*>(scratch(2 * part * sizeof(double)));
  double* part_b = part_g + part;
  const std::size_t col_blocks = (static_cast<std::size_t>(x.cols) + kBx - 1) / kBx;
  const dim3 block(kBx, kBy);
  if (nchunks > 0) {
    const BackwardArgs args{x.data, x.ld, dy.data, dy.ld, mean, rstd, gamma, a, b, beta, dx.data, dx.ld,
                            x.rows, x.cols, chunk, nchunks};
    ln_backward_partial_kernel<<<dim3(clamp_grid(col_blocks, kMaxGrid1D), clamp_grid(nchunks, kMaxGridY)), block, 0,
                                 stream()>>>(args, part_g, part_b);
    PLEXUS_CUDA_CHECK_LAUNCH("ln_backward_partial_kernel");
  }
  ln_backward_final_kernel<<<clamp_grid(col_blocks, kMaxGrid1D), block, 0, stream()>>>(
      part_g, part_b, x.cols, nchunks, grad_beta, dgamma, dbeta);
  PLEXUS_CUDA_CHECK_LAUNCH("ln_backward_final_kernel");
}

}  // namespace plexus::cuda
