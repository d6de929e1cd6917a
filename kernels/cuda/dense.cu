// GEMM: C = alpha·op(A)·op(B) + beta·C on row-major matrices, with cuBLAS (column-major).
//
// A row-major matrix X (r×c, leading dimension ld) is, read column-major, Xᵀ (c×r, same ld).
// So the row-major product C = op(A)·op(B) is computed as the column-major product
//   Cᵀ = op(B)ᵀ·op(A)ᵀ
// i.e. cublasSgemm(opB, opA, N, M, K, alpha, B, ldb, A, lda, beta, C, ldc), where opX is the
// same flag as the caller's (Trans::Yes -> CUBLAS_OP_T): the stored column-major buffer of B
// is Bᵀ, so op(B)ᵀ needs a transpose exactly when op(B) is not one.
// The 64-bit-size entry point (cublasSgemm_64) is used so that no dimension is truncated; on an
// H100 (CUDA 13) it times the same as cublasSgemm on the GCN's shapes (bench_spmm_cuda shows both).
// With matmul_precision() TF32 or BF16 the same product goes through cublasGemmEx_64 with compute
// type CUBLAS_COMPUTE_32F_FAST_TF32 / _FAST_16BF: fp32 matrices in and out, the inputs rounded to
// tf32 / bf16 inside cuBLAS for the tensor cores, products accumulated in fp32. No reduced copies
// of A and B are kept.
#include "kernels/common/shape_checks.hpp"
#include "kernels/cuda/launch.cuh"

namespace plexus::cuda {
namespace {

struct ScaleOp {  // m[i][j] *= beta
  float* data;
  index_t ld;
  float beta;
  __device__ void operator()(index_t i, index_t j) const { data[i * ld + j] *= beta; }
};
struct ZeroOp {
  float* data;
  index_t ld;
  __device__ void operator()(index_t i, index_t j) const { data[i * ld + j] = 0.0f; }
};

}  // namespace

void CudaBackend::do_gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
                          MatrixView c) {
  const auto d = detail::gemm_dims(ta, a, c);
  const index_t m = d.m, n = d.n, k = d.k;
  if (m == 0 || n == 0) return;
  activate();
  if (k == 0 || alpha == 0.0f) {  // C = beta·C; beta == 0 does not read C
    if (beta == 0.0f)
      map2d(m, n, stream_, "gemm_zero", ZeroOp{c.data, c.ld});
    else if (beta != 1.0f)
      map2d(m, n, stream_, "gemm_scale", ScaleOp{c.data, c.ld, beta});
    return;
  }
  // Leading dimensions must be >= the column-major row count of each stored buffer.
  const auto ld_of = [](ConstMatrixView x) -> std::int64_t { return x.ld > 0 ? x.ld : 1; };
  const cublasOperation_t op_b = tb == Trans::Yes ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = ta == Trans::Yes ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::int64_t ldc = c.ld > 0 ? c.ld : 1;
  if (matmul_precision() != MatmulPrecision::FP32) {
    const cublasComputeType_t compute = matmul_precision() == MatmulPrecision::TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                    : CUBLAS_COMPUTE_32F_FAST_16BF;
    PLEXUS_CUBLAS_CHECK(cublasGemmEx_64(cublas_, op_b, op_a, n, m, k, &alpha, b.data, CUDA_R_32F, ld_of(b), a.data,
                                        CUDA_R_32F, ld_of(a), &beta, c.data, CUDA_R_32F, ldc, compute,
                                        CUBLAS_GEMM_DEFAULT));
    return;
  }
  PLEXUS_CUBLAS_CHECK(
      cublasSgemm_64(cublas_, op_b, op_a, n, m, k, &alpha, b.data, ld_of(b), a.data, ld_of(a), &beta, c.data, ldc));
}

}  // namespace plexus::cuda
