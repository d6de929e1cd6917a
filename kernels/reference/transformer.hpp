#pragma once
// The reference backend's transformer kernel families (plexus/kernels/*.hpp), one file each:
//   layernorm.cpp  activation.cpp  attention.cpp  reduction.cpp
// Plain loops, one thread, double accumulation: the oracle. Keep it obviously correct.
#include "plexus/kernels/transformer.hpp"

namespace plexus::reference {

class ReferenceTransformerKernels final : public TransformerKernels {
 public:
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
};

}  // namespace plexus::reference
