// Element-wise kernels: axpby, fill, copy, add_bias, column_sum, relu, relu_backward, dropout.
//
// All 2D kernels take row-major views with a leading dimension (ld >= cols) and touch only the
// rows×cols elements (padding between rows is never written). Threads run along columns, so
// accesses are coalesced; grid-stride loops make every grid size valid.
#include <cmath>

#include "kernels/cuda/launch.cuh"

namespace plexus::cuda {
namespace {

// ---- 1D ----------------------------------------------------------------------------------
// No __restrict__: x may be y (each element is read and written by one thread).
__global__ void axpby_kernel(std::size_t n, float alpha, const float* x, float beta, float* y) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = (beta == 0.0f) ? alpha * x[i] : fmaf(alpha, x[i], beta * y[i]);
}

// ---- 2D functors (see map2d) ------------------------------------------------------------------
struct FillOp {
  float* data;
  index_t ld;
  float value;
  __device__ void operator()(index_t i, index_t j) const { data[i * ld + j] = value; }
};
struct AddBiasOp {
  float* data;
  index_t ld;
  const float* bias;
  __device__ void operator()(index_t i, index_t j) const { data[i * ld + j] += bias[j]; }
};
struct ReluOp {
  float* data;
  index_t ld;
  __device__ void operator()(index_t i, index_t j) const {
    float& v = data[i * ld + j];
    v = v > 0.0f ? v : 0.0f;
  }
};
struct ReluBackwardOp {
  const float* act;
  index_t act_ld;
  float* grad;
  index_t grad_ld;
  __device__ void operator()(index_t i, index_t j) const {
    if (act[i * act_ld + j] <= 0.0f) grad[i * grad_ld + j] = 0.0f;
  }
};
struct DropoutOp {
  const float* x;
  index_t x_ld;
  float* out;
  index_t out_ld;
  float p, scale;
  DropoutKey key;
  index_t row0, col0;
  __device__ void operator()(index_t i, index_t j) const {
    const bool keep = dropout_keep(key, static_cast<std::uint64_t>(row0 + i), static_cast<std::uint32_t>(col0 + j), p);
    const float v = x[i * x_ld + j];  // read before write: x and out may alias
    out[i * out_ld + j] = keep ? v * scale : 0.0f;
  }
};

// ---- column_sum: deterministic two-pass reduction --------------------------------------------
// Pass 1: the rows are cut into chunks of `chunk` rows (a function of the row count only);
// block (32, 8) handles 32 columns of one chunk: thread (x, y) sums rows y, y+8, ... of the
// chunk in order (double), then the 8 partials are combined by a fixed shared-memory tree.
// Pass 2 combines the per-chunk partials of each column the same way. The summation order
// depends only on the matrix shape, never on the GPU or the grid, so results are bitwise
// reproducible.
constexpr int kCsX = 32, kCsY = 8;

__device__ __forceinline__ double tree_reduce_y(double v, double (*sh)[kCsX + 1]) {
  sh[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
#pragma unroll
  for (int s = kCsY / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.y) < s) sh[threadIdx.y][threadIdx.x] += sh[threadIdx.y + s][threadIdx.x];
    __syncthreads();
  }
  return sh[0][threadIdx.x];
}

__global__ void column_sum_partial_kernel(const float* __restrict__ m, index_t rows, index_t cols, index_t ld,
                                          index_t chunk, index_t nchunks, double* __restrict__ partial) {
  __shared__ double sh[kCsY][kCsX + 1];
  for (index_t cb = blockIdx.x; cb * kCsX < cols; cb += gridDim.x) {
    const index_t j = cb * kCsX + threadIdx.x;
    for (index_t ch = blockIdx.y; ch < nchunks; ch += gridDim.y) {
      const index_t r0 = ch * chunk;
      const index_t r1 = (r0 + chunk < rows) ? r0 + chunk : rows;
      double acc = 0.0;
      if (j < cols)
        for (index_t i = r0 + threadIdx.y; i < r1; i += kCsY) acc += static_cast<double>(m[i * ld + j]);
      const double total = tree_reduce_y(acc, sh);
      if (threadIdx.y == 0 && j < cols) partial[ch * cols + j] = total;
      __syncthreads();  // sh is reused by the next iteration
    }
  }
}

__global__ void column_sum_final_kernel(const double* __restrict__ partial, index_t cols, index_t nchunks, float beta,
                                        float* __restrict__ out) {
  __shared__ double sh[kCsY][kCsX + 1];
  for (index_t cb = blockIdx.x; cb * kCsX < cols; cb += gridDim.x) {
    const index_t j = cb * kCsX + threadIdx.x;
    double acc = 0.0;
    if (j < cols)
      for (index_t ch = threadIdx.y; ch < nchunks; ch += kCsY) acc += partial[ch * cols + j];
    const double total = tree_reduce_y(acc, sh);
    if (threadIdx.y == 0 && j < cols) {
      const float s = static_cast<float>(total);
      out[j] = (beta == 0.0f) ? s : fmaf(beta, out[j], s);
    }
    __syncthreads();
  }
}

// Whether the elements of two non-empty views share memory: their address ranges, from the first
// element to one past the last, intersect.
bool overlap(ConstMatrixView a, ConstMatrixView b) {
  const float* a_end = a.data + (a.rows - 1) * a.ld + a.cols;
  const float* b_end = b.data + (b.rows - 1) * b.ld + b.cols;
  return a.data < b_end && b.data < a_end;
}

// rows×cols floats from src (leading dimension src_ld) to dst (dst_ld); the two must not overlap.
void copy_2d(const float* src, index_t src_ld, float* dst, index_t dst_ld, index_t rows, index_t cols,
             cudaStream_t stream) {
  const auto bytes = [](index_t n) { return static_cast<std::size_t>(n) * sizeof(float); };
  const auto height = static_cast<std::size_t>(rows);
  PLEXUS_CUDA_CHECK(cudaMemcpy2DAsync(dst, bytes(dst_ld), src, bytes(src_ld), bytes(cols), height,
                                      cudaMemcpyDeviceToDevice, stream));
}

}  // namespace

void CudaBackend::do_axpby(std::size_t n, float alpha, const float* x, float beta, float* y) {
  if (n == 0) return;
  activate();
  axpby_kernel<<<grid_1d(n), kBlock, 0, stream_>>>(n, alpha, x, beta, y);
  PLEXUS_CUDA_CHECK_LAUNCH("axpby_kernel");
}

void CudaBackend::do_fill(MatrixView m, float value) {
  if (m.rows == 0 || m.cols == 0) return;
  activate();
  if (value == 0.0f && !std::signbit(value)) {  // +0.0f is all-zero bytes
    PLEXUS_CUDA_CHECK(cudaMemset2DAsync(m.data, static_cast<std::size_t>(m.ld) * sizeof(float), 0,
                                        static_cast<std::size_t>(m.cols) * sizeof(float),
                                        static_cast<std::size_t>(m.rows), stream_));
    return;
  }
  map2d(m.rows, m.cols, stream_, "fill", FillOp{m.data, m.ld, value});
}

void CudaBackend::do_copy(ConstMatrixView src, MatrixView dst) {
  // The same elements: nothing to move. The same data with another ld is a real (in-place) move.
  if (src.rows == 0 || src.cols == 0 || (src.data == dst.data && src.ld == dst.ld)) return;
  activate();
  if (!overlap(src, dst)) {
    copy_2d(src.data, src.ld, dst.data, dst.ld, src.rows, src.cols, stream_);
    return;
  }
  // cudaMemcpy2D's areas may not overlap: go through packed scratch space.
  auto* staged = static_cast<float*>(scratch(static_cast<std::size_t>(src.rows * src.cols) * sizeof(float)));
  copy_2d(src.data, src.ld, staged, src.cols, src.rows, src.cols, stream_);
  copy_2d(staged, src.cols, dst.data, dst.ld, src.rows, src.cols, stream_);
}

void CudaBackend::do_add_bias(MatrixView m, const float* bias) {
  activate();
  map2d(m.rows, m.cols, stream_, "add_bias", AddBiasOp{m.data, m.ld, bias});
}

void CudaBackend::do_column_sum(ConstMatrixView m, float beta, float* out) {
  if (m.cols == 0) return;
  activate();
  // Chunk size: a function of the row count alone (>= 1024 rows, at most 4096 chunks).
  constexpr index_t kMinChunk = 1024, kMaxChunks = 4096;
  index_t chunk = (m.rows + kMaxChunks - 1) / kMaxChunks;
  if (chunk < kMinChunk) chunk = kMinChunk;
  const index_t nchunks = (m.rows + chunk - 1) / chunk;
  const std::size_t col_blocks = (static_cast<std::size_t>(m.cols) + kCsX - 1) / kCsX;
  const dim3 block(kCsX, kCsY);
  double* partial = nullptr;
  if (nchunks > 0) {
    partial = static_cast<double*>(scratch(static_cast<std::size_t>(nchunks * m.cols) * sizeof(double)));
    column_sum_partial_kernel<<<dim3(clamp_grid(col_blocks, kMaxGrid1D), clamp_grid(nchunks, kMaxGridY)), block, 0,
                                stream_>>>(m.data, m.rows, m.cols, m.ld, chunk, nchunks, partial);
    PLEXUS_CUDA_CHECK_LAUNCH("column_sum_partial_kernel");
  }
  // With no rows (no chunks) the final pass alone gives out = beta·out, infinities included.
  column_sum_final_kernel<<<clamp_grid(col_blocks, kMaxGrid1D), block, 0, stream_>>>(partial, m.cols, nchunks, beta,
                                                                                      out);
  PLEXUS_CUDA_CHECK_LAUNCH("column_sum_final_kernel");
}

void CudaBackend::do_relu(MatrixView m) {
  activate();
  map2d(m.rows, m.cols, stream_, "relu", ReluOp{m.data, m.ld});
}

void CudaBackend::do_relu_backward(ConstMatrixView activated, MatrixView grad) {
  activate();
  map2d(grad.rows, grad.cols, stream_, "relu_backward",
        ReluBackwardOp{activated.data, activated.ld, grad.data, grad.ld});
}

void CudaBackend::do_dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0, index_t col0) {
  activate();
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  map2d(out.rows, out.cols, stream_, "dropout", DropoutOp{x.data, x.ld, out.data, out.ld, p, scale, key, row0, col0});
}

}  // namespace plexus::cuda
