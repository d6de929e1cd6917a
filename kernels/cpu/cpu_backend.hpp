#pragma once
// The fast CPU backend: OpenMP over rows, SIMD over the feature axis, OpenBLAS for GEMM.
// The class is declared here and its kernels are defined one family per file:
//   cpu_backend.cpp  memory, factory        spmm.cpp      sparse × dense
//   dense.cpp        gemm, axpby, fill, copy  elementwise.cpp  bias, relu, dropout, column_sum
//   blocked_gemm.cpp the GEMM of our own (AVX-512)  blas_kernels.cpp  which OpenBLAS kernels run
//   loss.cpp         softmax / NLL / argmax  adam.cpp      optimizer
//   precision.cpp    to_bf16, from_bf16 (bfloat16 conversions)
//   layernorm.cpp    LayerNorm             activation.cpp   GELU
//   attention.cpp    fused causal attention  reduction.cpp  squared norm
//   edge_attention.cpp  graph attention (GAT) on a CSR block's pattern, ELU
//
// Determinism rule: every result is bit-for-bit independent of the number of threads. Work is
// split into pieces whose boundaries depend only on the problem shape, each piece is computed
// by one thread in a fixed order, and partial results are combined in a fixed order.
#include <omp.h>

#include <algorithm>

#include "kernels/common/block_cache.hpp"
#include "plexus/backend.hpp"

namespace plexus::cpu {

// Below this many elements a kernel runs on the calling thread: waking the OpenMP team
// costs a few microseconds, more than the work itself.
inline constexpr index_t kParallelMinElements = 1 << 15;

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {}
  ~CpuBackend() override;
  // Bytes of freed buffers kept for reuse, and the most live bytes this backend ever held: the
  // first never exceeds the second minus live_bytes().
  std::size_t cached_bytes() const { return cache_.cached_bytes(); }
  std::size_t high_water_bytes() const { return high_water_; }
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
  // Team size for a GEMM of C m×n over an inner dimension k. Its weight is op(B)'s n·k elements
  // (a few rows decoding stream the weights once) or its multiply-adds over 64, whichever is
  // larger: a tall product of narrow matrices — a GNN layer's N × 128 · 128 × 128 — has n·k =
  // 16,384, under the bar, and ran on one thread at half the machine's rate.
  int threads_for_gemm(index_t m, index_t n, index_t k) const {
    const double fmas = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    return threads_for(std::max(n * k, static_cast<index_t>(std::min(fmas / 64.0, 1e18))));
  }

 private:
  // The kernels: Backend's public calls check the arguments and call these.
#include "kernels/common/backend_kernels.inc"  // every backend's kernels, declared once











  int threads_;  // <= 0: the OpenMP default
  // Freed buffers kept for the next request of the same size, live + cached never above the
  // high water mark of live bytes (kernels/common/block_cache.hpp says why).
  detail::BlockCache cache_;
  std::size_t high_water_ = 0;
};

}  // namespace plexus::cpu
