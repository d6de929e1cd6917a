#pragma once
// CudaBackend: the CUDA implementation of plexus::Backend (private to kernels/cuda/).
//
// One backend = one device, one stream, one cuBLAS handle (cuSPARSE handle created lazily).
// Every kernel is enqueued on the backend's stream, so calls are ordered among themselves;
// copies to/from the host are synchronous (the call returns when the data has arrived).
// The stream is created as a *blocking* stream, so it is also ordered with work other code
// puts on the legacy default stream.
//
// Kernel families live in one file each: spmm.cu, dense.cu, elementwise.cu, loss.cu, adam.cu,
// precision.cu (bfloat16 conversions), layernorm.cu, activation.cu, attention.cu, reduction.cu,
// edge_attention.cu (graph attention).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "plexus/backend.hpp"

namespace plexus::cuda {

// ---- error checking: every failure throws std::runtime_error("file:line: ...") --------------
[[noreturn]] void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t s, const char* expr, const char* file, int line);
[[noreturn]] void throw_cusparse_error(cusparseStatus_t s, const char* expr, const char* file, int line);

#define PLEXUS_CUDA_CHECK(expr)                                                                   \
  do {                                                                                            \
    const cudaError_t plexus_err_ = (expr);                                                       \
    if (plexus_err_ != cudaSuccess) ::plexus::cuda::throw_cuda_error(plexus_err_, #expr, __FILE__, __LINE__); \
  } while (0)

#define PLEXUS_CUBLAS_CHECK(expr)                                                                 \
  do {                                                                                            \
    const cublasStatus_t plexus_st_ = (expr);                                                     \
    if (plexus_st_ != CUBLAS_STATUS_SUCCESS)                                                      \
      ::plexus::cuda::throw_cublas_error(plexus_st_, #expr, __FILE__, __LINE__);                  \
  } while (0)

#define PLEXUS_CUSPARSE_CHECK(expr)                                                               \
  do {                                                                                            \
    const cusparseStatus_t plexus_st_ = (expr);                                                   \
    if (plexus_st_ != CUSPARSE_STATUS_SUCCESS)                                                    \
      ::plexus::cuda::throw_cusparse_error(plexus_st_, #expr, __FILE__, __LINE__);                \
  } while (0)

// After a kernel launch: reports launch-configuration errors at the call site. With the
// environment variable PLEXUS_CUDA_SYNC_CHECK=1 it also synchronizes, so that an error inside
// the kernel is reported by the kernel that caused it (slow; for debugging).
#define PLEXUS_CUDA_CHECK_LAUNCH(name) ::plexus::cuda::check_launch((name), __FILE__, __LINE__)
void check_launch(const char* kernel, const char* file, int line);

// ---- launch geometry helpers ----------------------------------------------------------------
constexpr int kBlock = 256;            // default 1D block size
constexpr unsigned kMaxGrid1D = 65535u * 32u;  // grid-stride loops cover the rest
constexpr unsigned kMaxGridY = 65535u;

inline unsigned grid_1d(std::size_t n, int block = kBlock) {
  const std::size_t g = (n + static_cast<std::size_t>(block) - 1) / static_cast<std::size_t>(block);
  return static_cast<unsigned>(g < 1 ? 1 : (g > kMaxGrid1D ? kMaxGrid1D : g));
}
inline unsigned clamp_grid(std::size_t g, unsigned max_g) {
  return static_cast<unsigned>(g < 1 ? 1 : (g > max_g ? max_g : g));
}

// True when p is aligned to `bytes`.
inline bool aligned(const void* p, std::size_t bytes) {
  return (reinterpret_cast<std::uintptr_t>(p) % bytes) == 0;
}

// Which kernel a *prepared* spmm runs (spmm.cu; unprepared calls always run the custom kernel):
// the custom kernel with long rows split over several groups (Plexus), or cusparseSpMM
// (Cusparse). Chosen by PLEXUS_CUDA_SPMM=plexus|cusparse, read when a backend is made.
enum class SpmmPath { Plexus, Cusparse };
SpmmPath spmm_path_from_env();  // throws InputError on a value other than plexus / cusparse

// ---- the backend -----------------------------------------------------------------------------
class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return Device::CUDA; }
  std::string name() const override;

  void deallocate(void* p, std::size_t bytes) noexcept override;
  bool is_device_pointer(const void* p) const override;
  void synchronize() override;
  void* native_stream() const override { return stream_; }
  int device_ordinal() const override { return device_; }
  // The path plans prepared from now on take (PLEXUS_CUDA_SPMM sets the initial one).
  SpmmPath spmm_path() const { return spmm_path_; }
  void set_spmm_path(SpmmPath p) { spmm_path_ = p; }

  // ---- internals shared by the kernel files ----
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cusparseHandle_t cusparse();  // created on first use
  // Device scratch space of at least `bytes` (not counted in live_bytes; reused between calls,
  // valid until the next scratch() call). Growing it synchronizes the device (cudaFree).
  void* scratch(std::size_t bytes);
  // Makes this backend's device current on the calling thread.
  void activate() const;

 private:
  // The kernels: Backend's public calls check the arguments and call these.
#include "kernels/common/backend_kernels.inc"  // every backend's kernels, declared once
  HostPinnedPtr do_allocate_host_pinned(std::size_t bytes) override;

  std::unique_ptr<SpmmPlan> do_prepare_spmm(const CsrView& a, index_t max_dense_cols) override;
  void do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, const SpmmPlan* plan) override;








  void do_squared_norms(const NormPiece* pieces, std::size_t count, double* out) override;

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  // The device's default memory pool, when it has one: allocate/deallocate are then
  // stream-ordered (cudaMallocAsync/cudaFreeAsync on stream_) and freed memory stays in the pool
  // for the next request, instead of cudaFree synchronising the device in every training step.
  cudaMemPool_t pool_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cusparseHandle_t cusparse_ = nullptr;
  SpmmPath spmm_path_ = spmm_path_from_env();
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
};

// Deterministic sum of n doubles on the device (fixed-order tree; the order depends on n only;
// kernels/cuda/reduction.cu, whose squared norms add in the same order).
// Writes the result to *out (device pointer). Uses `ws` (device, >= det_sum_workspace(n) doubles).
std::size_t det_sum_workspace(std::size_t n);
void det_sum(const double* in, std::size_t n, double* out, double* ws, cudaStream_t stream);

}  // namespace plexus::cuda
