// Row L2 normalisation (GraphSAGE's normalize). row_dots: one warp per row, each lane a
// strided double sum, then a fixed butterfly: deterministic (no atomics). The two element-wise
// phases use map2d (launch.cuh).
#include <cmath>

#include "kernels/cuda/cuda_backend.cuh"
#include "kernels/cuda/launch.cuh"

namespace plexus::cuda {
namespace {

constexpr int kRowsPerBlock = 8;  // warps per block

__global__ void row_dots_kernel(const float* __restrict__ a, index_t lda, const float* __restrict__ b, index_t ldb,
                                index_t rows, index_t cols, float* __restrict__ out) {
  const index_t i = static_cast<index_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (i >= rows) return;
  double acc = 0.0;
  for (index_t j = threadIdx.x; j < cols; j += 32) acc += static_cast<double>(a[i * lda + j]) * b[i * ldb + j];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) out[i] = static_cast<float>(acc);
}

struct NormalizeOp {
  float* x;
  index_t ld;
  const float* sumsq;
  float eps;
  __device__ void operator()(index_t i, index_t j) const { x[i * ld + j] /= fmaxf(sqrtf(sumsq[i]), eps); }
};

struct NormalizeBackwardOp {
  const float* y;
  index_t ldy;
  const float* sumsq;
  const float* dots;
  float eps;
  float* dy;
  index_t ldd;
  __device__ void operator()(index_t i, index_t j) const {
    const float norm = sqrtf(sumsq[i]);
    float& g = dy[i * ldd + j];
    g = norm > eps ? (g - y[i * ldy + j] * dots[i]) / norm : g / eps;
  }
};

}  // namespace

void CudaBackend::do_row_dots(ConstMatrixView a, ConstMatrixView b, float* out) {
  if (a.rows <= 0) return;
  const dim3 block(32, kRowsPerBlock);
  const auto blocks = static_cast<unsigned>((a.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  row_dots_kernel<<<blocks, block, 0, stream_>>>(a.data, a.ld, b.data, b.ld, a.rows, a.cols, out);
  PLEXUS_CUDA_CHECK_LAUNCH("row_dots_kernel");
}

void CudaBackend::do_l2_normalize_rows(MatrixView x, const float* sumsq, float eps) {
  map2d(x.rows, x.cols, stream_, "l2_normalize_rows", NormalizeOp{x.data, x.ld, sumsq, eps});
}

void CudaBackend::do_l2_normalize_rows_backward(ConstMatrixView y, const float* sumsq, const float* dots, float eps,
                                                MatrixView dy) {
  map2d(y.rows, y.cols, stream_, "l2_normalize_rows_backward",
        NormalizeBackwardOp{y.data, y.ld, sumsq, dots, eps, dy.data, dy.ld});
}

}  // namespace plexus::cuda
