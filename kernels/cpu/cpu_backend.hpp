#pragma once
// The fast CPU backend: OpenMP over rows, SIMD over the feature axis, OpenBLAS for GEMM.
// The class is declared here and its kernels are defined one family per file:
//   cpu_backend.cpp  memory, factory        spmm.cpp      sparse × dense
//   dense.cpp        gemm, axpby, fill, copy  elementwise.cpp  bias, relu, dropout, column_sum
//   loss.cpp         softmax / NLL / argmax  adam.cpp      optimizer
//   precision.cpp    to_bf16, from_bf16 (bfloat16 conversions)
//   transformer.hpp  LayerNorm, GELU, attention, squared norm (layernorm.cpp, activation.cpp, attention.cpp, reduction.cpp)
//
// Determinism rule: every result is bit-for-bit independent of the number of threads. Work is
// split into pieces whose boundaries depend only on the problem shape, each piece is computed
// by one thread in a fixed order, and partial results are combined in a fixed order.
#include <omp.h>

#include <unordered_map>
#include <vector>

#include "kernels/cpu/transformer.hpp"
#include "plexus/backend.hpp"

namespace plexus::cpu {

// Below this many elements a kernel runs on the calling thread: waking the OpenMP team
// costs a few microseconds, more than the work itself.
inline constexpr index_t kParallelMinElements = 1 << 15;

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads), transformer_(*this) {}
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;
  Device device() const override { return Device::CPU; }
  std::string name() const override { return "cpu"; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_on_device(void* dst, const void* src, std::size_t bytes) override;

  void spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) override;

  void gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
            MatrixView c) override;
  void axpby(std::size_t n, float alpha, const float* x, float beta, float* y) override;
  void fill(MatrixView m, float value) override;
  void copy(ConstMatrixView src, MatrixView dst) override;

  void add_bias(MatrixView m, const float* bias) override;
  void column_sum(ConstMatrixView m, float beta, float* out) override;
  void relu(MatrixView m) override;
  void relu_backward(ConstMatrixView activated, MatrixView grad) override;
  void dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0, index_t col0) override;

  void row_max(ConstMatrixView x, float* row_max) override;
  void row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) override;
  LossTerms softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                         const std::int32_t* labels, const float* weights, index_t col0, MatrixView grad) override;
  void row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) override;
  void argmax_keys(std::size_t n, const float* best_val, const float* global_best, const std::int64_t* best_col,
                   float* key) override;
  void count_correct(std::size_t n, const float* key, const std::int32_t* labels, const std::uint8_t* splits,
                     int num_splits, double* counts) override;

  void adam_step(std::size_t n, float* param, const float* grad, float* m, float* v, const AdamParams& hp) override;

  void to_bf16(std::size_t n, const float* x, float beta, bf16* y) override;
  void from_bf16(std::size_t n, const bf16* x, float* y) override;

  TransformerKernels& transformer() override { return transformer_; }

  // Team size for a parallel region over `work` elements: 1 for small work, otherwise the
  // backend's own thread count (passed as num_threads so that two backends with different
  // counts can live in one process, e.g. in the determinism tests).
  int threads_for(index_t work) const {
    if (work < kParallelMinElements) return 1;
    return threads_ > 0 ? threads_ : omp_get_max_threads();
  }

 private:
  int threads_;  // <= 0: the OpenMP default
  CpuTransformerKernels transformer_;
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
