// Link prediction's edge batches (edge_batches.hpp has the key).
#include "train/tasks/edge_batches.hpp"

#include <stdexcept>
#include <string>

namespace plexus {

EdgeOrder::EdgeOrder(std::uint64_t seed, std::uint32_t epoch, std::int64_t n) : key_{seed, epoch, kEdgeBatchStream}, n_(n) {
  if (n < 1) throw std::invalid_argument("EdgeOrder: no links to order");
  int bits = 2;  // the smallest even number of bits whose range holds n (at least 2: halves of a bit)
  while (bits < 64 && (std::uint64_t{1} << bits) < static_cast<std::uint64_t>(n)) bits += 2;
  half_ = bits / 2;
  mask_ = (std::uint64_t{1} << half_) - 1;
}

std::uint64_t EdgeOrder::round(std::uint64_t x) const {
  std::uint64_t l = x >> half_, r = x & mask_;
  for (std::uint32_t k = 0; k < 4; ++k) {
    const std::uint64_t f = counter_block(key_, r, k).v[0] & mask_;
    const std::uint64_t next = l ^ f;
    l = r;
    r = next;
  }
  return (l << half_) | r;
}

std::int64_t EdgeOrder::place(std::int64_t i) const {
  if (i < 0 || i >= n_) throw std::invalid_argument("EdgeOrder: link " + std::to_string(i) + " is not one of the " + std::to_string(n_));
  // Cycle walking: the network permutes [0, 2^bits) < 4n, so the walk from i meets [0, n) again
  // (on i's own cycle), in under four rounds on average.
  std::uint64_t y = round(static_cast<std::uint64_t>(i));
  while (y >= static_cast<std::uint64_t>(n_)) y = round(y);
  return static_cast<std::int64_t>(y);
}

}  // namespace plexus
