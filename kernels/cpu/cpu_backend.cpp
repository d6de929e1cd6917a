// CpuBackend: memory and the factory.
#include "kernels/cpu/cpu_backend.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "kernels/common/host_alloc.hpp"

namespace plexus {
namespace cpu {

namespace {
// Buffers at least this large are zeroed by the whole team: with first-touch NUMA placement
// each thread's pages then live near it, and one core cannot saturate memory bandwidth anyway.
constexpr std::size_t kParallelZeroBytes = std::size_t{4} << 20;
constexpr std::size_t kZeroChunkBytes = std::size_t{1} << 20;

void parallel_memset_zero(void* p, std::size_t bytes, int threads) {
  auto* base = static_cast<unsigned char*>(p);
  const auto chunks = static_cast<std::int64_t>((bytes + kZeroChunkBytes - 1) / kZeroChunkBytes);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t begin = static_cast<std::size_t>(c) * kZeroChunkBytes;
    std::memset(base + begin, 0, std::min(kZeroChunkBytes, bytes - begin));
  }
}

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}
}  // namespace

CpuBackend::~CpuBackend() { cache_.clear(detail::host_free); }

void* CpuBackend::do_allocate(std::size_t bytes, bool zero) {
  void* p = cache_.take(bytes);
  const bool from_cache = p != nullptr;
  if (!from_cache) {
    const std::size_t live_after = live_bytes() + bytes;
    high_water_ = std::max(high_water_, live_after);
    cache_.trim_to(high_water_ - live_after, detail::host_free);
    p = detail::host_aligned_alloc(bytes);
  }
  if (!zero) {
#ifndef NDEBUG
    std::memset(p, 0xFF, bytes);  // every float a NaN: a kernel that reads before it writes shows
#endif
  } else if (bytes >= kParallelZeroBytes) {
    parallel_memset_zero(p, bytes, threads_for(static_cast<index_t>(bytes)));
  } else {
    std::memset(p, 0, bytes);
  }
  count_alloc(bytes);
  return p;
}

void CpuBackend::deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  count_free(bytes);
  if (!cache_.keep(p, bytes)) detail::host_free(p);
}

// Host and "device" are the same memory here; memmove also tolerates overlapping ranges.
void CpuBackend::do_copy_from_host(void* dst, const void* src, std::size_t bytes) { copy_bytes(dst, src, bytes); }
void CpuBackend::do_copy_to_host(void* dst, const void* src, std::size_t bytes) { copy_bytes(dst, src, bytes); }
void CpuBackend::do_copy_on_device(void* dst, const void* src, std::size_t bytes) { copy_bytes(dst, src, bytes); }

}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  if (threads > 0) {
    // Our own kernels pass the count explicitly (num_threads); these set the defaults for
    // OpenMP code elsewhere in the process and for OpenBLAS's GEMM.
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
  }
  return std::make_unique<cpu::CpuBackend>(threads);
}

}  // namespace plexus
