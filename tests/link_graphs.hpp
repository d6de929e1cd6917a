#pragma once
// The planted-community graphs the link tests train on (tests/test_link_*.cpp): an SBM whose
// held-out links are learnable (most uniform negatives join two communities).
#include <cstdint>

#include "plexus/convert.hpp"

namespace plexus::test {

inline SbmOptions link_sbm(index_t nodes, std::uint64_t seed, std::int32_t communities = 3, double signal = 0.3) {
  SbmOptions o;
  o.nodes = nodes;
  o.classes = communities;
  o.avg_degree = 6;
  o.homophily = 0.9;
  o.features = 6;
  o.feature_signal = signal;
  o.seed = seed;
  return o;
}

}  // namespace plexus::test
