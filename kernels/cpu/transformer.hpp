#pragma once
// The CPU backend's transformer kernel families (plexus/kernels/*.hpp), one file each:
//   layernorm.cpp  activation.cpp  attention.cpp  reduction.cpp
// Same determinism rule as cpu_backend.hpp: results are bit-for-bit independent of the thread
// count (work split by shape only, partials combined in a fixed order).
#include "plexus/kernels/transformer.hpp"

namespace plexus::cpu {

class CpuBackend;

class CpuTransformerKernels final : public TransformerKernels {
 public:
  explicit CpuTransformerKernels(const CpuBackend& be) : be_(be) {}

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

 private:
  const CpuBackend& be_;  // for threads_for()
};

}  // namespace plexus::cpu
