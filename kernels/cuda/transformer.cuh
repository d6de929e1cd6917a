#pragma once
// The CUDA backend's transformer kernel families (plexus/kernels/*.hpp), one file each:
//   layernorm.cu  activation.cu  attention.cu  reduction.cu
// Same rules as the rest of kernels/cuda: every launch on the backend's stream, no atomics,
// reduction orders fixed by the shapes alone.
#include "plexus/kernels/transformer.hpp"

namespace plexus::cuda {

class CudaBackend;

class CudaTransformerKernels final : public TransformerKernels {
 public:
  explicit CudaTransformerKernels(CudaBackend& be) : be_(be) {}

  void layernorm_mean(ConstMatrixView x, index_t width, float* mean) override;
  void layernorm_var(ConstMatrixView x, const float* mean, index_t width, float* var) override;
  void layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps, const float* gamma,
                       const float* beta, MatrixView y, float* rstd) override;
  void layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                               const float* gamma, index_t width, float* a, float* b) override;
  void layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                          const float* gamma, const float* a, const float* b, float beta, MatrixView dx,
                          float grad_beta, float* dgamma, float* dbeta) override;

  void gelu_forward(ConstMatrixView x, MatrixView y) override;
  void gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) override;

  void attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView y,
                         float* lse) override;
  void attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                          const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView dqkv) override;

  double squared_norm(std::size_t n, const float* x) override;
  void squared_norms(const NormPiece* pieces, std::size_t count, double* out) override;

 private:
  CudaBackend& be_;  // stream, scratch, activate()
};

}  // namespace plexus::cuda
