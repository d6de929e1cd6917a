// Link prediction's negative pairs (negative_pairs.hpp has the key).
#include "train/tasks/negative_pairs.hpp"

#include <stdexcept>
#include <string>

#include "plexus/rng.hpp"

namespace plexus {

NodePairList negative_pairs(std::uint64_t seed, std::uint32_t epoch, index_t num_nodes, std::int64_t begin,
                            std::int64_t end, std::uint32_t stream) {
  if (num_nodes < 1) throw std::invalid_argument("negative_pairs: no nodes to draw from");
  if (begin < 0 || end < begin)
    throw std::invalid_argument("negative_pairs: [" + std::to_string(begin) + ", " + std::to_string(end) +
                                ") is not a range of negatives");
  const DropoutKey key{seed, epoch, stream};
  NodePairList p;
  p.u.reserve(static_cast<std::size_t>(end - begin));
  p.v.reserve(static_cast<std::size_t>(end - begin));
  for (std::int64_t k = begin; k < end; ++k) {
    const Philox4x32 w = counter_block(key, static_cast<std::uint64_t>(k), 0);
    p.u.push_back(static_cast<std::int64_t>(bounded_draw(w.v[0], w.v[1], static_cast<std::uint64_t>(num_nodes))));
    p.v.push_back(static_cast<std::int64_t>(bounded_draw(w.v[2], w.v[3], static_cast<std::uint64_t>(num_nodes))));
  }
  return p;
}

}  // namespace plexus
