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
// precision.cu (bfloat16 conversions), layernorm.cu, activation.cu, attention.cu, reduction.cu.
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
  void* do_allocate(std::size_t bytes) override;
  void do_copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void do_copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void do_copy_on_device(void* dst, const void* src, std::size_t bytes) override;
  HostPinnedPtr do_allocate_host_pinned(std::size_t bytes) override;

  void do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) override;
  std::unique_ptr<SpmmPlan> do_prepare_spmm(const CsrView& a, index_t max_dense_cols) override;
  void do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, const SpmmPlan* plan) override;
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
                            const std::int32_t* labels, const float* weights, index_t col0,
                            MatrixView grad) override;
  void do_row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) override;
  void do_argmax_keys(std::size_t n, const float* best_val, const float* global_best, const std::int64_t* best_col,
                      float* key) override;
  void do_count_correct(std::size_t n, const float* key, const std::int32_t* labels, const std::uint8_t* splits,
                        int num_splits, double* counts) override;

  void do_adam_step(std::size_t n, float* param, const float* grad, float* m, float* v,
                    const AdamParams& hp) override;

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

// Deterministic sum of n doubles on the device (fixed-order tree; the order depends on n only).
// Writes the result to *out (device pointer). Uses `ws` (device, >= det_sum_workspace(n) doubles).
std::size_t det_sum_workspace(std::size_t n);
void det_sum(const double* in, std::size_t n, double* out, double* ws, cudaStream_t stream);

}  // namespace plexus::cuda
