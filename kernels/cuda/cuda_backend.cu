// CudaBackend: construction, error reporting, memory, factories.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/cuda/cuda_backend.cuh"
#include "kernels/cuda/factory.hpp"

namespace plexus::cuda {

namespace {
std::string where(const char* file, int line) { return std::string(file) + ":" + std::to_string(line) + ": "; }

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}
}  // namespace

void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line) {
  throw std::runtime_error(where(file, line) + expr + " failed: " + cudaGetErrorName(e) + ": " +
                           cudaGetErrorString(e));
}
void throw_cublas_error(cublasStatus_t s, const char* expr, const char* file, int line) {
  throw std::runtime_error(where(file, line) + expr + " failed: " + cublasGetStatusName(s) + ": " +
                           cublasGetStatusString(s));
}
void throw_cusparse_error(cusparseStatus_t s, const char* expr, const char* file, int line) {
  throw std::runtime_error(where(file, line) + expr + " failed: " + cusparseGetErrorName(s) + ": " +
                           cusparseGetErrorString(s));
}

void check_launch(const char* kernel, const char* file, int line) {
  static const bool sync_check = env_flag("PLEXUS_CUDA_SYNC_CHECK");
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && sync_check) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw_cuda_error(e, kernel, file, line);
}

// ---- construction ----------------------------------------------------------------------------
CudaBackend::CudaBackend(int device) : device_(device) {
  // PLEXUS_CUDA_TF32=1: TF32 GEMMs unless a command's --matmul-precision says otherwise.
  if (env_flag("PLEXUS_CUDA_TF32")) Backend::set_matmul_precision(MatmulPrecision::TF32);
  PLEXUS_CUDA_CHECK(cudaSetDevice(device_));
  // Blocking stream: ordered with the legacy default stream, so cudaMemcpy & co. issued by
  // other code on the default stream cannot race with our kernels.
  PLEXUS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamDefault));
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device_) == cudaSuccess && pools &&
      cudaDeviceGetDefaultMemPool(&pool_, device_) == cudaSuccess) {
    std::uint64_t keep_all = UINT64_MAX;  // never hand freed memory back to the driver on its own
    if (cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_all) != cudaSuccess) pool_ = nullptr;
  }
  cudaGetLastError();  // a device without pools just uses cudaMalloc/cudaFree
  try {
    PLEXUS_CUBLAS_CHECK(cublasCreate(&cublas_));
    PLEXUS_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    PLEXUS_CUBLAS_CHECK(cublasSetPointerMode(cublas_, CUBLAS_POINTER_MODE_HOST));
    // Full fp32 in cublasSgemm (numerical parity with the CPU backends); the reduced modes of
    // matmul_precision() ask for their compute type per call (dense.cu).
    PLEXUS_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  } catch (...) {
    if (cublas_) cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

CudaBackend::~CudaBackend() {
  // Destructors must not throw: errors here are reported and otherwise ignored.
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  if (pool_) cudaMemPoolTrimTo(pool_, 0);  // what this backend freed into the pool goes back
  if (scratch_) cudaFree(scratch_);
  if (cusparse_) cusparseDestroy(cusparse_);
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

std::string CudaBackend::name() const {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device_) != cudaSuccess) {
    cudaGetLastError();
    return "cuda:" + std::to_string(device_);
  }
  return "cuda:" + std::to_string(device_) + " (" + prop.name + ", sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ")";
}

void CudaBackend::activate() const {
  int cur = -1;
  PLEXUS_CUDA_CHECK(cudaGetDevice(&cur));
  if (cur != device_) PLEXUS_CUDA_CHECK(cudaSetDevice(device_));
}

cusparseHandle_t CudaBackend::cusparse() {
  if (!cusparse_) {
    activate();
    PLEXUS_CUSPARSE_CHECK(cusparseCreate(&cusparse_));
    PLEXUS_CUSPARSE_CHECK(cusparseSetStream(cusparse_, stream_));
  }
  return cusparse_;
}

void* CudaBackend::scratch(std::size_t bytes) {
  if (bytes > scratch_bytes_) {
    activate();
    if (scratch_) {
      PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_));  // earlier kernels may still read it
      PLEXUS_CUDA_CHECK(cudaFree(scratch_));
      scratch_ = nullptr;
      scratch_bytes_ = 0;
    }
    const std::size_t want = bytes < 4096 ? 4096 : bytes + bytes / 2;
    PLEXUS_CUDA_CHECK(cudaMalloc(&scratch_, want));
    scratch_bytes_ = want;
  }
  return scratch_;
}

// ---- memory ----------------------------------------------------------------------------------
void* CudaBackend::do_allocate(std::size_t bytes, bool zero) {
  if (bytes == 0) return nullptr;
  activate();
  void* p = nullptr;
  cudaError_t e = pool_ ? cudaMallocAsync(&p, bytes, stream_) : cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation && pool_) {
    // The pool may hold enough free memory in pieces that do not fit this request: return it
    // all to the driver (once the queued work that may still use it is done) and try again.
    cudaGetLastError();
    PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_));
    PLEXUS_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
    e = cudaMallocAsync(&p, bytes, stream_);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw_cuda_error(e, pool_ ? "cudaMallocAsync(&p, bytes, stream_)" : "cudaMalloc(&p, bytes)", __FILE__, __LINE__);
  }
  e = zero ? cudaMemsetAsync(p, 0, bytes, stream_) : cudaSuccess;
  if (e != cudaSuccess) {
    (void)(pool_ ? cudaFreeAsync(p, stream_) : cudaFree(p));
    throw_cuda_error(e, "cudaMemsetAsync(p, 0, bytes, stream_)", __FILE__, __LINE__);
  }
  count_alloc(bytes);
  return p;
}

void CudaBackend::deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  int cur = -1;
  if (cudaGetDevice(&cur) == cudaSuccess && cur != device_) cudaSetDevice(device_);
  // Both are safe for kernels still using p: cudaFreeAsync is ordered after the work queued on
  // stream_ (all of this backend's kernels and library calls; the legacy default stream, which
  // host copies use, is synchronous with it), and cudaFree waits for the whole device.
  const cudaError_t e = pool_ ? cudaFreeAsync(p, stream_) : cudaFree(p);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "plexus: %s failed: %s: %s\n", pool_ ? "cudaFreeAsync" : "cudaFree", cudaGetErrorName(e),
                 cudaGetErrorString(e));
    cudaGetLastError();
  }
  count_free(bytes);
}

void CudaBackend::do_copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  activate();
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::do_copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  activate();
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

bool CudaBackend::is_device_pointer(const void* p) const {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // an unregistered host pointer on older runtimes: clear the error
    return false;
  }
  return a.type == cudaMemoryTypeDevice;  // managed memory is host-addressable
}

namespace {
void free_host_pinned(void* p) {
  const cudaError_t e = cudaFreeHost(p);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "plexus: cudaFreeHost failed: %s: %s\n", cudaGetErrorName(e), cudaGetErrorString(e));
    cudaGetLastError();
  }
}
}  // namespace

// Page-locked host memory (portable: pinned for every device, whichever backend asked). When the
// system refuses to pin that much, ordinary host memory: copies through it still work, slower.
HostPinnedPtr CudaBackend::do_allocate_host_pinned(std::size_t bytes) {
  if (bytes == 0) return HostPinnedPtr(nullptr, HostPinnedFree{free_host_pinned});
  activate();
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return Backend::do_allocate_host_pinned(bytes);
  }
  if (e != cudaSuccess) throw_cuda_error(e, "cudaHostAlloc(&p, bytes, cudaHostAllocPortable)", __FILE__, __LINE__);
  return HostPinnedPtr(p, HostPinnedFree{free_host_pinned});
}

void CudaBackend::do_copy_on_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  activate();
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::synchronize() {
  activate();
  PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace plexus::cuda

// ---- factories (kernels/cuda/factory.hpp; programs reach them through plexus::make_cuda_backend
// and plexus::cuda_device_count once plexus::cuda::enable() ran) ------------------------------
namespace plexus::cuda {

int device_count() {
  try {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear, so that later calls do not see it
      return 0;
    }
    return n;
  } catch (...) {
    return 0;
  }
}

std::unique_ptr<Backend> make_backend(int device) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(std::string("CUDA backend unavailable: ") + cudaGetErrorName(e) + ": " +
                             cudaGetErrorString(e));
  }
  if (n <= 0) throw std::runtime_error("CUDA backend unavailable: no CUDA device is visible");
  if (device < 0 || device >= n)
    throw std::runtime_error("CUDA device " + std::to_string(device) + " does not exist (" +
                             std::to_string(n) + " visible)");
  return std::make_unique<CudaBackend>(device);
}

}  // namespace plexus::cuda
