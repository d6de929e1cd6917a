// A rank's partial result of a row-sparse collective's tests (test_row_sparse_sum.cpp,
// test_row_sparse_scatter.cpp): which rows it may hold, and its values there; elsewhere zeros of
// either sign, as an SpMM may leave them.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "plexus/shard.hpp"

namespace plexus::testing {

struct RankBlock {
  std::vector<std::uint8_t> holds;
  std::vector<float> values;
};

// Random: each row held with probability `density`; Diagonal: the rows of block (s + shift) % p
// of block_range (shift 1: each rank the next one's rows, every held row moving in a scatter);
// Full, Empty: every row, none.
enum class Pattern { Random, Diagonal, Full, Empty };

inline RankBlock rank_block(int s, int p, index_t rows, index_t cols, Pattern pattern, double density, unsigned seed,
                            int diagonal_shift = 0) {
  std::mt19937 rng(seed * 7919u + static_cast<unsigned>(s));
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::bernoulli_distribution held(density), sign(0.5);
  const Range diagonal = block_range(rows, p, (s + diagonal_shift) % p);
  RankBlock b;
  for (index_t r = 0; r < rows; ++r) {
    bool h = false;
    switch (pattern) {
      case Pattern::Random: h = held(rng); break;
      case Pattern::Diagonal: h = diagonal.begin <= r && r < diagonal.end; break;
      case Pattern::Full: h = true; break;
      case Pattern::Empty: h = false; break;
    }
    b.holds.push_back(h ? 1 : 0);
    for (index_t j = 0; j < cols; ++j) {
      // A held row may hold zeros too (an entry times a zero); a row not held holds ±0 only.
      const bool zero = !h || (j % 5 == 4);
      b.values.push_back(zero ? (sign(rng) ? -0.0f : 0.0f) : value(rng));
    }
  }
  return b;
}

}  // namespace plexus::testing
