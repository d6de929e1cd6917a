#pragma once
// Link prediction's edge batches (LinkConfig::edge_batch): each epoch takes the n training links
// in a fresh order and cuts it into batches of S, batch b the links at places [b·S, b·S + S).
// The order is a keyed bijection of [0, n) computed link by link — a 4-round Feistel network
// over the smallest even number of bits covering n, walked until it lands in [0, n) — so a rank
// finds where its own links go without any rank holding the whole order (the pairs are kept per
// block, link_prediction.hpp). docs/link-prediction.md, "Edge batches", has the key:
//   round r of x = (L, R), h bits each:  (L, R) → (R, L ⊕ (w mod 2^h)),
//   w = counter_block(DropoutKey{seed, epoch, kEdgeBatchStream}, R, r).v[0]
#include <cstdint>
#include <vector>

#include "plexus/rng.hpp"

namespace plexus {

inline constexpr std::uint32_t kEdgeBatchStream = 0x11E8;

class EdgeOrder {
 public:
  // The order of `n` (≥ 1) links in epoch `epoch` of a run seeded `seed`.
  EdgeOrder(std::uint64_t seed, std::uint32_t epoch, std::int64_t n);
  // Where link i (0 ≤ i < n) goes: a place in [0, n), each once.
  std::int64_t place(std::int64_t i) const;

 private:
  std::uint64_t round(std::uint64_t x) const;  // one pass of the Feistel network over [0, 2^bits)
  DropoutKey key_;
  std::int64_t n_;
  int half_;  // bits of each half
  std::uint64_t mask_;
};

// The batches of an epoch: n links in batches of `size` (≥ 1), the last one short.
inline std::int64_t edge_batches(std::int64_t n, std::int64_t size) { return n <= size ? 1 : (n + size - 1) / size; }

}  // namespace plexus
