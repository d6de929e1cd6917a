// Masked log-softmax + NLL pieces: row_max, row_sumexp, softmax_xent, row_argmax, the
// accuracy counts (argmax_keys, count_correct), and the deterministic device sum used for the
// loss; and the binary cross-entropy with logits of link prediction (sigmoid_xent).
//
// One warp per row (8 rows per 256-thread block, rows grid-strided): lane l visits columns
// l, l+32, ... in order, then the warp combines with a fixed xor-butterfly, so every result
// is bitwise reproducible run to run. The class axis is short (tens to a few thousand
// columns), so a warp per row keeps all lanes busy without shared memory.
#include <cmath>

#include "kernels/cuda/launch.cuh"

namespace plexus::cuda {
namespace {

constexpr int kWarpsPerBlock = kBlock / 32;

inline unsigned row_grid(index_t rows) {
  return clamp_grid((static_cast<std::size_t>(rows) + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxGrid1D);
}

#define PLEXUS_FOR_EACH_WARP_ROW(row, rows)                                                             \
  for (index_t row = static_cast<index_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; row < (rows); \
       row += static_cast<index_t>(gridDim.x) * kWarpsPerBlock)

__global__ void row_max_kernel(const float* __restrict__ x, index_t rows, index_t cols, index_t ld,
                               float* __restrict__ row_max) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  PLEXUS_FOR_EACH_WARP_ROW(i, rows) {
    const float* xr = x + i * ld;
    float m = -INFINITY;
    for (index_t j = lane; j < cols; j += 32) m = fmaxf(m, xr[j]);
    m = warp_max(m);
    if (lane == 0) row_max[i] = fmaxf(row_max[i], m);
  }
}

__global__ void row_sumexp_kernel(const float* __restrict__ x, index_t rows, index_t cols, index_t ld,
                                  const float* __restrict__ row_max, float* __restrict__ row_sumexp) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  PLEXUS_FOR_EACH_WARP_ROW(i, rows) {
    const float* xr = x + i * ld;
    const float m = row_max[i];
    float s = 0.0f;
    for (index_t j = lane; j < cols; j += 32) s += expf(xr[j] - m);
    s = warp_sum(s);
    if (lane == 0) row_sumexp[i] += s;
  }
}

// x and grad may alias (the gradient written over the logits), hence no __restrict__ on them:
// lane 0 reads the label's logit before the warp writes any gradient (__syncwarp), and every
// other element is read and then written by the same lane. A row is handled by a whole warp, so
// all 32 lanes reach the __syncwarp.
__global__ void softmax_xent_kernel(const float* x, index_t rows, index_t cols, index_t ld,
                                    const float* __restrict__ row_max, const float* __restrict__ row_sumexp,
                                    const std::int32_t* __restrict__ labels, const float* __restrict__ weights,
                                    index_t col0, float* grad, index_t gld, double* __restrict__ row_loss) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  PLEXUS_FOR_EACH_WARP_ROW(i, rows) {
    float* gr = grad + i * gld;
    const float w = weights ? weights[i] : 1.0f;
    const index_t label = labels[i];
    if (w == 0.0f || label < 0) {
      for (index_t j = lane; j < cols; j += 32) gr[j] = 0.0f;
      if (lane == 0) row_loss[i] = 0.0;
      continue;
    }
    const float* xr = x + i * ld;
    const float m = row_max[i], s = row_sumexp[i];
    if (lane == 0) {
      double li = 0.0;
      if (col0 == 0) li += static_cast<double>(w) * (log(static_cast<double>(s)) + static_cast<double>(m));
      if (label >= col0 && label < col0 + cols) li -= static_cast<double>(w) * static_cast<double>(xr[label - col0]);
      row_loss[i] = li;
    }
    __syncwarp();
    for (index_t j = lane; j < cols; j += 32) {
      const float p = expf(xr[j] - m) / s;
      gr[j] = w * (p - (j + col0 == label ? 1.0f : 0.0f));
    }
  }
}

// Binary cross-entropy with logits, one element a thread (grid-strided); each element's loss
// into row_loss for the deterministic sum.
__global__ void sigmoid_xent_kernel(std::size_t n, const float* x, const float* __restrict__ labels,
                                    const float* __restrict__ weights, float* grad, double* __restrict__ loss) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = x[i], y = labels[i], w = weights ? weights[i] : 1.0f;  // read before grad (may alias) is written
    const float e = expf(-fabsf(v));
    loss[i] = static_cast<double>(w) * static_cast<double>(fmaxf(v, 0.0f) - v * y + log1pf(e));
    const float sig = v >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
    grad[i] = w * (sig - y);
  }
}

// Is (v, c) a better argmax candidate than (bv, bc)? Larger value wins; ties go to the lower
// column; c < 0 means "no candidate".
__device__ __forceinline__ bool better(float v, std::int64_t c, float bv, std::int64_t bc) {
  if (c < 0) return false;
  if (bc < 0) return true;
  return v > bv || (v == bv && c < bc);
}

__global__ void row_argmax_kernel(const float* __restrict__ x, index_t rows, index_t cols, index_t ld, index_t col0,
                                  float* __restrict__ best_val, std::int64_t* __restrict__ best_col) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  PLEXUS_FOR_EACH_WARP_ROW(i, rows) {
    const float* xr = x + i * ld;
    float bv = -INFINITY;
    std::int64_t bc = -1;
    for (index_t j = lane; j < cols; j += 32) {  // ascending: strict > keeps the first of ties
      const float v = xr[j];
      if (v > bv || (bc < 0 && v == bv)) {  // an all -inf row still has a candidate; NaN never wins
        bv = v;
        bc = col0 + j;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const std::int64_t oc = __shfl_xor_sync(0xffffffffu, bc, o);
      if (better(ov, oc, bv, bc)) {
        bv = ov;
        bc = oc;
      }
    }
    if (lane == 0 && bc >= 0) {
      const float cur_v = best_val[i];
      const std::int64_t cur_c = best_col[i];
      if (bv > cur_v || (bv == cur_v && (cur_c < 0 || bc < cur_c))) {  // as the CPU backend merges
        best_val[i] = bv;
        best_col[i] = bc;
      }
    }
  }
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// ---- accuracy counts ------------------------------------------------------------------------
// key may alias best_val or global_best (no __restrict__ on them): element i is read, then
// written, by one thread.
__global__ void argmax_keys_kernel(std::size_t n, const float* best_val, const float* global_best,
                                   const std::int64_t* __restrict__ best_col, float* key) {
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::int64_t c = best_col[i];
    const bool here = c >= 0 && best_val[i] == global_best[i];
    key[i] = here ? -static_cast<float>(c) : -INFINITY;
  }
}

// Integer counts, so any order gives the same result; still no atomics: each block writes its
// eight partial counts, and one thread per split adds the blocks' partials in block order.
constexpr int kCountThreads = 256, kCountSplits = 8;
constexpr unsigned kCountMaxBlocks = 1024;

__global__ void __launch_bounds__(kCountThreads)
    count_correct_kernel(std::size_t n, const float* __restrict__ key, const std::int32_t* __restrict__ labels,
                         const std::uint8_t* __restrict__ splits, unsigned long long* __restrict__ partial) {
  unsigned long long c[kCountSplits] = {};
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::int32_t label = labels[i];
    if (label < 0 || -key[i] != static_cast<float>(label)) continue;
    const unsigned bits = splits[i];
#pragma unroll
    for (int s = 0; s < kCountSplits; ++s) c[s] += (bits >> s) & 1u;
  }
  __shared__ unsigned long long sh[kCountSplits][kCountThreads / 32];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
#pragma unroll
  for (int s = 0; s < kCountSplits; ++s) {
    unsigned long long v = c[s];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) sh[s][warp] = v;
  }
  __syncthreads();
  if (threadIdx.x < kCountSplits) {
    unsigned long long t = 0;
    for (int w = 0; w < kCountThreads / 32; ++w) t += sh[threadIdx.x][w];
    partial[static_cast<std::size_t>(blockIdx.x) * kCountSplits + threadIdx.x] = t;
  }
}

__global__ void count_correct_finish_kernel(const unsigned long long* __restrict__ partial, unsigned blocks,
                                            int num_splits, double* __restrict__ counts) {
  const int s = static_cast<int>(threadIdx.x);
  if (s >= num_splits) return;
  unsigned long long t = 0;
  for (unsigned b = 0; b < blocks; ++b) t += partial[static_cast<std::size_t>(b) * kCountSplits + s];
  counts[s] = static_cast<double>(t);
}

}  // namespace

void CudaBackend::do_row_max(ConstMatrixView x, float* row_max) {
  if (x.rows == 0 || x.cols == 0) return;
  activate();
  row_max_kernel<<<row_grid(x.rows), kBlock, 0, stream_>>>(x.data, x.rows, x.cols, x.ld, row_max);
  PLEXUS_CUDA_CHECK_LAUNCH("row_max_kernel");
}

void CudaBackend::do_row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) {
  if (x.rows == 0 || x.cols == 0) return;
  activate();
  row_sumexp_kernel<<<row_grid(x.rows), kBlock, 0, stream_>>>(x.data, x.rows, x.cols, x.ld, row_max, row_sumexp);
  PLEXUS_CUDA_CHECK_LAUNCH("row_sumexp_kernel");
}

LossTerms CudaBackend::do_softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                                       const std::int32_t* labels, const float* weights, index_t col0, MatrixView grad) {
  LossTerms out;
  if (x.rows == 0) return out;
  activate();
  // Scratch layout: [row losses: rows][det_sum workspace][result: 1], all doubles.
  const std::size_t rows = static_cast<std::size_t>(x.rows);
  const std::size_t ws_n = det_sum_workspace(rows);
  auto* row_loss = static_cast<double*>(scratch((rows + ws_n + 1) * sizeof(double)));
  double* ws = row_loss + rows;
  double* result = ws + ws_n;
  softmax_xent_kernel<<<row_grid(x.rows), kBlock, 0, stream_>>>(x.data, x.rows, x.cols, x.ld, row_max, row_sumexp,
                                                                 labels, weights, col0, grad.data, grad.ld, row_loss);
  PLEXUS_CUDA_CHECK_LAUNCH("softmax_xent_kernel");
  det_sum(row_loss, rows, result, ws, stream_);
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(&out.loss_sum, result, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return out;
}

LossTerms CudaBackend::do_sigmoid_xent(std::size_t n, const float* x, const float* labels, const float* weights,
                                       float* grad) {
  LossTerms out;
  if (n == 0) return out;
  activate();
  // Scratch layout: [element losses: n][det_sum workspace][result: 1], all doubles.
  const std::size_t ws_n = det_sum_workspace(n);
  auto* loss = static_cast<double*>(scratch((n + ws_n + 1) * sizeof(double)));
  double* ws = loss + n;
  double* result = ws + ws_n;
  sigmoid_xent_kernel<<<grid_1d(n), kBlock, 0, stream_>>>(n, x, labels, weights, grad, loss);
  PLEXUS_CUDA_CHECK_LAUNCH("sigmoid_xent_kernel");
  det_sum(loss, n, result, ws, stream_);
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(&out.loss_sum, result, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return out;
}

void CudaBackend::do_row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) {
  if (x.rows == 0 || x.cols == 0) return;
  activate();
  row_argmax_kernel<<<row_grid(x.rows), kBlock, 0, stream_>>>(x.data, x.rows, x.cols, x.ld, col0, best_val,
                                                               best_col);
  PLEXUS_CUDA_CHECK_LAUNCH("row_argmax_kernel");
}

void CudaBackend::do_argmax_keys(std::size_t n, const float* best_val, const float* global_best,
                                 const std::int64_t* best_col, float* key) {
  if (n == 0) return;
  activate();
  argmax_keys_kernel<<<grid_1d(n), kBlock, 0, stream_>>>(n, best_val, global_best, best_col, key);
  PLEXUS_CUDA_CHECK_LAUNCH("argmax_keys_kernel");
}

void CudaBackend::do_count_correct(std::size_t n, const float* key, const std::int32_t* labels,
                                   const std::uint8_t* splits, int num_splits, double* counts) {
  if (num_splits == 0) return;
  activate();
  // A few thousand rows per block at most 1024 blocks; n == 0 still runs one block (zeros).
  const unsigned blocks = clamp_grid(ceil_div(n, static_cast<std::size_t>(kCountThreads) * 16), kCountMaxBlocks);
  auto* partial = static_cast<unsigned long long*>(
      scratch(static_cast<std::size_t>(blocks) * kCountSplits * sizeof(unsigned long long)));
  count_correct_kernel<<<blocks, kCountThreads, 0, stream_>>>(n, key, labels, splits, partial);
  PLEXUS_CUDA_CHECK_LAUNCH("count_correct_kernel");
  count_correct_finish_kernel<<<1, kCountSplits, 0, stream_>>>(partial, blocks, num_splits, counts);
  PLEXUS_CUDA_CHECK_LAUNCH("count_correct_finish_kernel");
}

}  // namespace plexus::cuda
