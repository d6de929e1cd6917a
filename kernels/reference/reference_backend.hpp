#pragma once
// The reference backend: the oracle every other backend is tested against.
//
// Plain loops, one thread, sums accumulated in double. Nothing here is tuned; it is written
// to be obviously correct, so keep it that way (no SIMD, no blocking, no OpenMP). The class is
// declared here and its kernels are defined one family per file: reference_backend.cpp (memory,
// the GCN's kernels, optimizer, precision), layernorm.cpp, activation.cpp, attention.cpp,
// reduction.cpp.
#include "plexus/backend.hpp"

namespace plexus::reference {

class ReferenceBackend final : public Backend {
 public:
  Device device() const override { return Device::CPU; }
  std::string name() const override { return "reference"; }
  void deallocate(void* p, std::size_t bytes) noexcept override;

 private:
  // The kernels: Backend's public calls check the arguments and call these.
  // ---- memory -----------------------------------------------------------------------------
  void* do_allocate(std::size_t bytes) override;
  void do_copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void do_copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void do_copy_on_device(void* dst, const void* src, std::size_t bytes) override;

  // ---- sparse -----------------------------------------------------------------------------
  void do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) override;

  // ---- dense ------------------------------------------------------------------------------
  void do_gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
               MatrixView c) override;
  void do_axpby(std::size_t n, float alpha, const float* x, float beta, float* y) override;
  void do_fill(MatrixView m, float value) override;
  void do_copy(ConstMatrixView src, MatrixView dst) override;

  // ---- elementwise / activation -----------------------------------------------------------
  void do_add_bias(MatrixView m, const float* bias) override;
  void do_column_sum(ConstMatrixView m, float beta, float* out) override;
  void do_relu(MatrixView m) override;
  void do_relu_backward(ConstMatrixView activated, MatrixView grad) override;
  void do_dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0, index_t col0) override;

  // ---- loss -------------------------------------------------------------------------------
  void do_row_max(ConstMatrixView x, float* row_max) override;
  void do_row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) override;
  LossTerms do_softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                            const std::int32_t* labels, const float* weights, index_t col0, MatrixView grad) override;
  void do_row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) override;
  void do_argmax_keys(std::size_t n, const float* best_val, const float* global_best, const std::int64_t* best_col,
                      float* key) override;
  void do_count_correct(std::size_t n, const float* key, const std::int32_t* labels, const std::uint8_t* splits,
                        int num_splits, double* counts) override;

  // ---- optimizer --------------------------------------------------------------------------
  void do_adam_step(std::size_t n, float* param, const float* grad, float* m, float* v, const AdamParams& hp) override;

  // ---- precision --------------------------------------------------------------------------
  // y = bf16(fma(beta, float(y), x)): one fused multiply-add in float (a single rounding), then
  // rounded to bf16. Every backend computes exactly this, so results match bit for bit whatever
  // a compiler would do with a separate multiply and add. beta == 0 does not read y.
  void do_to_bf16(std::size_t n, const float* x, float beta, bf16* y) override;
  void do_from_bf16(std::size_t n, const bf16* x, float* y) override;

  // ---- transformer families (one file each) -----------------------------------------------
  void do_layernorm_mean(ConstMatrixView x, index_t width, float* mean) override;
  void do_layernorm_var(ConstMatrixView x, const float* mean, index_t width, float* var) override;
  void do_layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps, const float* gamma,
                          const float* beta, MatrixView y, float* rstd) override;
  void do_layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                                  const float* gamma, index_t width, float* a, float* b) override;
  void do_layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                             const float* gamma, const float* a, const float* b, float beta, MatrixView dx,
                             float grad_beta, float* dgamma, float* dbeta) override;
  void do_gelu_forward(ConstMatrixView x, MatrixView y) override;
  void do_gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) override;
  void do_attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p, DropoutKey key,
                            MatrixView y, float* lse) override;
  void do_attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                             const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView dqkv) override;
  double do_squared_norm(std::size_t n, const float* x) override;
};

}  // namespace plexus::reference
