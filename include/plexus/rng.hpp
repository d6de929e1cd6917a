#pragma once
// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
//
// A random number is a pure function of a key and a counter, so a dropout mask element can be
// computed from (seed, epoch, layer, global row, column) alone: the mask never depends on the
// number of threads, the backend, or how a matrix is sharded over ranks. Header-only and
// usable from CUDA device code.
#include <cstdint>

#if defined(__CUDACC__)
#define PLEXUS_HD __host__ __device__ __forceinline__
#else
#define PLEXUS_HD inline
#endif

namespace plexus {

struct Philox4x32 {
  std::uint32_t v[4];
};

PLEXUS_HD Philox4x32 philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2,
                                   std::uint32_t c3, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  constexpr std::uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(M0) * c0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(M1) * c2;
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += W0;
    k1 += W1;
  }
  return {{c0, c1, c2, c3}};
}

// Identifies one dropout application: same key, same mask, on every grid and backend.
struct DropoutKey {
  std::uint64_t seed = 0;
  std::uint32_t epoch = 0;
  std::uint32_t layer = 0;
};

// The four 32-bit random words of column group `col4` (columns 4·col4 .. 4·col4+3) of `row`:
// one Philox call serves four consecutive columns.
PLEXUS_HD Philox4x32 counter_block(const DropoutKey& key, std::uint64_t row, std::uint32_t col4) {
  return philox4x32_10(static_cast<std::uint32_t>(row), static_cast<std::uint32_t>(row >> 32), col4, key.epoch,
                       static_cast<std::uint32_t>(key.seed),
                       static_cast<std::uint32_t>(key.seed >> 32) ^ (key.layer * 0x9E3779B9u));
}

// Uniform float in [0, 1) from one random word (its top 24 bits).
PLEXUS_HD float word_to_uniform(std::uint32_t w) { return static_cast<float>(w >> 8) * (1.0f / 16777216.0f); }

// ⌊w·n / 2^64⌋ for the 64-bit word w = lo + 2^32·hi: an index uniform over [0, n) to within
// n / 2^64 (Lemire's bounded draw without rejection), the high half of a 64×64-bit product
// written with 32-bit products so that it needs no 128-bit type.
PLEXUS_HD std::uint64_t bounded_draw(std::uint32_t lo, std::uint32_t hi, std::uint64_t n) {
  const std::uint64_t n0 = n & 0xFFFFFFFFu, n1 = n >> 32;
  const std::uint64_t p00 = lo * n0, p01 = lo * n1, p10 = hi * n0, p11 = hi * n1;
  const std::uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

// Uniform float in [0, 1) for element (row, col) under `key`. Rows and columns are global
// indices (< 2^64 rows, < 2^32 columns).
PLEXUS_HD float counter_uniform(const DropoutKey& key, std::uint64_t row, std::uint32_t col) {
  return word_to_uniform(counter_block(key, row, col >> 2).v[col & 3u]);
}

// True when element (row, col) is kept by dropout with drop probability p.
PLEXUS_HD bool dropout_keep(const DropoutKey& key, std::uint64_t row, std::uint32_t col, float p) {
  return counter_uniform(key, row, col) >= p;
}

}  // namespace plexus
