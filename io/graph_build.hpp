#pragma once
// Building GraphData from edge tuples, shared by the text converters, private to io/.
#include <cstdint>
#include <vector>

#include "plexus/graph.hpp"
#include "plexus/io.hpp"

namespace plexus::build {

struct Edge {
  index_t u, v;
  index_t order;  // position in the input: the first of duplicate entries wins
  float w;
};

// Sets g.num_nodes = n, g.directed = !symmetrize and the CSR (sorted rows, no duplicates, no
// self-loops; g.values only when `weighted`). With `symmetrize` each edge is also stored
// reversed with the same weight. Ids must already be in [0, n). Consumes `edges`.
void csr_from_edges(GraphData& g, index_t n, std::vector<Edge>& edges, bool symmetrize, bool weighted);

// Fills g.features / g.num_features for inputs without features (see SyntheticFeatures).
// `where` names the option in errors (e.g. "--features").
void synthetic_features(GraphData& g, SyntheticFeatures kind, index_t width, std::uint64_t seed);

// Labels all -1, masks all 0, num_classes = classes (>= 1).
void unlabelled(GraphData& g, std::int32_t classes);

}  // namespace plexus::build
