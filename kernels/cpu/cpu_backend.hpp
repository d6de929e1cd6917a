#pragma once
// The fast CPU backend: OpenMP over rows, SIMD over the feature axis, OpenBLAS for GEMM.
// The class is declared here and its kernels are defined one family per file:
//   cpu_backend.cpp  memory, factory        spmm.cpp      sparse × dense
//   dense.cpp        gemm, axpby, fill, copy  elementwise.cpp  bias, relu, dropout, column_sum
//   loss.cpp         softmax / NLL / argmax  adam.cpp      optimizer
//   precision.cpp    to_bf16, from_bf16 (bfloat16 conversions)
//   layernorm.cpp    LayerNorm             activation.cpp   GELU
//   attention.cpp    fused causal attention  reduction.cpp  squared norm
//
// Determinism rule: every result is bit-for-bit independent of the number of threads. Work is
// split into pieces whose boundaries depend only on the problem shape, each piece is computed
// by one thread in a fixed order, and partial results are combined in a fixed order.
#include <omp.h>

#include <unordered_map>
#include <vector>

#include "plexus/backend.hpp"

namespace plexus::cpu {

// Below this many elements a kernel runs on the calling thread: waking the OpenMP team
// costs a few microseconds, more than the work itself.
inline constexpr index_t kParallelMinElements = 1 << 15;

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {}
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;
  Device device() const override { return Device::CPU; }
  std::string name() const override { return "cpu"; }

  void deallocate(void* p, std::size_t bytes) noexcept override;

  // Team size for a parallel region over `work` elements: 1 for small work, otherwise the
  // backend's own thread count (passed as num_threads so that two backends with different
  // counts can live in one process, e.g. in the determinism tests).
  int threads_for(index_t work) const {
    if (work < kParallelMinElements) return 1;
    return threads_ > 0 ? threads_ : omp_get_max_threads();
  }

 private:
  // The kernels: Backend's public calls check the arguments and call these.
  void* do_allocate(std::size_t bytes) override;
  void do_copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void do_copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void do_copy_on_device(void* dst, const void* src, std::size_t bytes) override;

  void do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) override;

  void do_gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
               MatrixView c) override;
  void do_axpby(std::size_t n, float alpha, const float* x, float beta, float* y) override;
  void do_fill(MatrixView m, float value) override;
  void do_copy(ConstMatrixView src, MatrixView dst) override;

  void do_add_bias(MatrixView m, const float* bias) override;
  void do_column_sum(ConstMatrixView m, float beta, float* out) override;
  void do_relu(MatrixView m) override;
  void do_relu_backward(ConstMatrixView activated, MatrixView grad) override;
  void do_dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0, index_t col0) override;

  void do_row_max(ConstMatrixView x, float* row_max) override;
  void do_row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) override;
  LossTerms do_softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                            const std::int32_t* labels, const float* weights, index_t col0, MatrixView grad) override;
  void do_row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) override;
  void do_argmax_keys(std::size_t n, const float* best_val, const float* global_best, const std::int64_t* best_col,
                      float* key) override;
  void do_count_correct(std::size_t n, const float* key, const std::int32_t* labels, const std::uint8_t* splits,
                        int num_splits, double* counts) override;

  void do_adam_step(std::size_t n, float* param, const float* grad, float* m, float* v, const AdamParams& hp) override;

  void do_to_bf16(std::size_t n, const float* x, float beta, bf16* y) override;
  void do_from_bf16(std::size_t n, const bf16* x, float* y) override;

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

  void do_attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView y,
                            float* lse) override;
  void do_attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                             const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView dqkv) override;

  double do_squared_norm(std::size_t n, const float* x) override;

  int threads_;  // <= 0: the OpenMP default
  // Freed buffers kept for the next request of the same size: a training step allocates the
  // same temporaries every time, and fresh pages from the kernel would be faulted in again on
  // every step. Only buffers up to kCachedBlockMax bytes, kCachedTotalMax in all; larger ones
  // (a graph's feature blocks) go straight back to the system.
  static constexpr std::size_t kCachedBlockMax = std::size_t{64} << 20;
  static constexpr std::size_t kCachedTotalMax = std::size_t{256} << 20;
  std::unordered_map<std::size_t, std::vector<void*>> cached_;
  std::size_t cached_bytes_ = 0;
};

}  // namespace plexus::cpu
