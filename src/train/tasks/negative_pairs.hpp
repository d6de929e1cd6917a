#pragma once
// Link prediction's negative pairs: drawn afresh each epoch, uniformly over the ordered pairs
// of nodes, and keyed by their global index — negative k of an epoch is a pure function of
// (seed, epoch, k), so every grid (and every rank of it, whichever part it draws) sees the
// same negatives. docs/link-prediction.md, "Random streams", has the key:
//   words = counter_block(DropoutKey{seed, epoch, kNegativePairStream}, k, 0)
//   u = ⌊(words[0] + 2^32·words[1])·N / 2^64⌋,  v = ⌊(words[2] + 2^32·words[3])·N / 2^64⌋
// (a 64-bit word scaled to [0, N): uniform to within N / 2^64).
#include <cstdint>
#include <vector>

#include "plexus/graph.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

inline constexpr std::uint32_t kNegativePairStream = 0x11E6;
// MRR's negatives of a held-out split (LinkConfig::mrr_negatives), fixed for the run: positive
// i's j-th negative is (u_i, v of pair i·K + j of this stream), its `epoch` word the split
// (1 validation, 2 test).
inline constexpr std::uint32_t kMrrNegativeStream = 0x11E7;

// Negatives [begin, end) of `epoch` over `num_nodes` nodes (≥ 1), from `stream`.
NodePairList negative_pairs(std::uint64_t seed, std::uint32_t epoch, index_t num_nodes, std::int64_t begin,
                            std::int64_t end, std::uint32_t stream = kNegativePairStream);

}  // namespace plexus
