#pragma once
// The planted-community graphs the link tests train on (tests/test_link_*.cpp): an SBM whose
// held-out links are learnable (most uniform negatives join two communities).
#include <cmath>
#include <cstdint>

#include <string>
#include <vector>

#include "plexus/convert.hpp"
#include "plexus/gnn_spec.hpp"
#include "plexus/graph.hpp"

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

// Every kind's name, and "kind+flag" for each kind whose flag makes it read edge features
// ("gat+edge-features"): the models the tests over every kind train.
inline std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const GnnKindInfo& k : gnn_kinds()) {
    names.push_back(k.name);
    if (!k.edge_features_flag.empty()) names.push_back(k.name + "+" + k.edge_features_flag);
  }
  return names;
}
// The model a name of model_names() stands for.
inline GnnSpec model_spec(const std::string& name) {
  const std::size_t plus = name.find('+');
  if (plus == std::string::npos) return GnnSpec(name);
  return GnnSpec(name.substr(0, plus)).set(name.substr(plus + 1), true);
}

// `g` with `width` features on every stored edge (what GINE reads; the other kinds ignore them),
// a function of the edge's two ends in order: u -> v and v -> u differ.
inline GraphData with_edge_features(GraphData g, index_t width = 3) {
  g.num_edge_features = width;
  g.edge_features.clear();
  for (index_t u = 0; u < g.num_nodes; ++u)
    for (index_t e = g.indptr[static_cast<std::size_t>(u)]; e < g.indptr[static_cast<std::size_t>(u) + 1]; ++e)
      for (index_t f = 0; f < width; ++f)
        g.edge_features.push_back(static_cast<float>(
            std::sin(0.7 * static_cast<double>(u) + 1.3 * static_cast<double>(g.indices[static_cast<std::size_t>(e)]) + 0.9 * static_cast<double>(f))));
  return g;
}

}  // namespace plexus::test
