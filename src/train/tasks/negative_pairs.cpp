// Link prediction's negative pairs (negative_pairs.hpp has the key).
#include "train/tasks/negative_pairs.hpp"

#include <stdexcept>
#include <string>

#include "plexus/rng.hpp"

namespace plexus {

namespace {
// The high 64 bits of a·b (portable: four 32-bit products).
std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
  const std::uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const std::uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
// ⌊w·n / 2^64⌋ (Lemire's bounded draw without rejection).
std::int64_t scaled(std::uint32_t lo, std::uint32_t hi, index_t n) {
  const std::uint64_t w = static_cast<std::uint64_t>(lo) | (static_cast<std::uint64_t>(hi) << 32);
  return static_cast<std::int64_t>(mul_high(w, static_cast<std::uint64_t>(n)));
}
}  // namespace

NodePairs negative_pairs(std::uint64_t seed, std::uint32_t epoch, index_t num_nodes, std::int64_t begin,
                         std::int64_t end) {
  if (num_nodes < 1) throw std::invalid_argument("negative_pairs: no nodes to draw from");
  if (begin < 0 || end < begin)
    throw std::invalid_argument("negative_pairs: [" + std::to_string(begin) + ", " + std::to_string(end) +
                                ") is not a range of negatives");
  const DropoutKey key{seed, epoch, kNegativePairStream};
  NodePairs p;
  p.u.reserve(static_cast<std::size_t>(end - begin));
  p.v.reserve(static_cast<std::size_t>(end - begin));
  for (std::int64_t k = begin; k < end; ++k) {
    const Philox4x32 w = counter_block(key, static_cast<std::uint64_t>(k), 0);
    p.u.push_back(scaled(w.v[0], w.v[1], num_nodes));
    p.v.push_back(scaled(w.v[2], w.v[3], num_nodes));
  }
  return p;
}

}  // namespace plexus
