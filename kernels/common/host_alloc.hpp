#pragma once
// Host allocation shared by the CPU-side backends (reference and cpu). Only the raw aligned
// allocation lives here; zero-filling is each backend's business (the cpu backend zeroes
// large buffers in parallel so that pages are first touched by the threads that use them).
#include <cstddef>
#include <cstdlib>
#include <new>

namespace plexus::detail {

// 64 bytes: one cache line, and the width of an AVX-512 register.
inline constexpr std::size_t kHostAlignment = 64;

// Uninitialised, 64-byte aligned. Never returns nullptr (a zero-byte request still yields a
// unique pointer), throws std::bad_alloc on failure. Free with host_free.
inline void* host_aligned_alloc(std::size_t bytes) {
  // std::aligned_alloc requires the size to be a multiple of the alignment.
  const std::size_t rounded = bytes == 0 ? kHostAlignment : (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  if (rounded < bytes) throw std::bad_alloc();  // overflow in the rounding
  void* p = std::aligned_alloc(kHostAlignment, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

inline void host_free(void* p) noexcept { std::free(p); }

}  // namespace plexus::detail
