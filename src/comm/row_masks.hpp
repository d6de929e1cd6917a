#pragma once
// Every rank's mask of rows (one byte a row, non-zero: set), gathered bit-packed over a group once
// at set-up: what the row-sparse sum and gather (comm/row_sparse_sum.hpp, row_sparse_gather.hpp)
// decide their forms and lists from, R/8 bytes a rank.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "plexus/comm.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

struct RowMasks {
  std::vector<std::uint8_t> packed;  // rank s's mask at s · bytes, bit r of row r
  std::size_t bytes = 0;             // a mask's, ⌈rows / 8⌉
  // Whether rank s's mask sets row r.
  bool set(int s, index_t r) const {
    return (packed[static_cast<std::size_t>(s) * bytes + static_cast<std::size_t>(r >> 3)] >> (r & 7)) & 1u;
  }
};

// Collective over `comm`: every rank's `mask` (all of one length) packed and all-gathered.
RowMasks all_gather_row_masks(Communicator& comm, const std::vector<std::uint8_t>& mask);

}  // namespace plexus
