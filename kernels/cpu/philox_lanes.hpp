#pragma once
// Vectorised Philox for the CPU kernels that draw dropout masks (elementwise.cpp, attention.cpp).
#include <cstdint>

namespace plexus::cpu {

// Philox4x32-10 (rng.hpp) for kLanes counters at once, written as loops over lanes so that they
// vectorize (32x32->64-bit multiplies map to vpmuludq).
inline constexpr std::uint32_t kLanes = 16;

// Philox4x32-10 of kLanes counters (a[l], b[l], c[l], c3) at once, in place: words[0..3][l] =
// philox4x32_10(a[l], b[l], c[l], c3, k0, k1).
inline void philox_lanes_of(std::uint32_t (&a)[kLanes], std::uint32_t (&b)[kLanes], std::uint32_t (&c)[kLanes],
                            std::uint32_t c3, std::uint32_t k0, std::uint32_t k1, std::uint32_t (&words)[4][kLanes]) {
  constexpr std::uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  std::uint32_t d[kLanes];
#pragma omp simd
  for (std::uint32_t l = 0; l < kLanes; ++l) d[l] = c3;
  for (int r = 0; r < 10; ++r) {
#pragma omp simd
    for (std::uint32_t l = 0; l < kLanes; ++l) {
      const std::uint64_t p0 = static_cast<std::uint64_t>(M0) * a[l];
      const std::uint64_t p1 = static_cast<std::uint64_t>(M1) * c[l];
      const std::uint32_t na = static_cast<std::uint32_t>(p1 >> 32) ^ b[l] ^ k0;
      const std::uint32_t nc = static_cast<std::uint32_t>(p0 >> 32) ^ d[l] ^ k1;
      b[l] = static_cast<std::uint32_t>(p1);
      d[l] = static_cast<std::uint32_t>(p0);
      a[l] = na;
      c[l] = nc;
    }
    k0 += W0;
    k1 += W1;
  }
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    words[0][l] = a[l];
    words[1][l] = b[l];
    words[2][l] = c[l];
    words[3][l] = d[l];
  }
}

// kLanes consecutive column groups of one row: words[*][lane] = philox4x32_10(c0, c1, group0 +
// lane, c3, k0, k1).
inline void philox_lanes(std::uint32_t c0, std::uint32_t c1, std::uint32_t group0, std::uint32_t c3, std::uint32_t k0,
                         std::uint32_t k1, std::uint32_t (&words)[4][kLanes]) {
  std::uint32_t a[kLanes], b[kLanes], c[kLanes];
#pragma omp simd
  for (std::uint32_t l = 0; l < kLanes; ++l) {
    a[l] = c0;
    b[l] = c1;
    c[l] = group0 + l;
  }
  philox_lanes_of(a, b, c, c3, k0, k1, words);
}

}  // namespace plexus::cpu
