#pragma once
// Random embeddings and node pairs for the link decoders' tests (test_link_decoder.cpp,
// test_mlp_link_decoder.cpp): Z [n × width] normal (rounded to float), `pairs` pairs uniform over
// the nodes with a node paired with itself now and then, and a normal dL/ds per pair.
#include <cstdint>
#include <random>
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus::test {

struct RandomPairs {
  std::vector<double> z;           // n × width
  std::vector<std::int64_t> u, v;  // the pairs
  std::vector<double> g;           // dL/ds per pair
};

inline RandomPairs random_pairs(index_t n, index_t width, std::size_t pairs, std::uint64_t seed) {
  RandomPairs p;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<std::int64_t> node(0, n - 1);
  for (index_t i = 0; i < n * width; ++i) p.z.push_back(static_cast<float>(normal(rng)));
  for (std::size_t k = 0; k < pairs; ++k) {
    p.u.push_back(node(rng));
    p.v.push_back(k % 11 == 3 ? p.u.back() : node(rng));  // a node with itself, now and then
    p.g.push_back(static_cast<float>(normal(rng)));
  }
  return p;
}

}  // namespace plexus::test
