#pragma once
// Features that carry a node's class (private to io/): feature_signal · centroid[label] + N(0, 1),
// the centroids' entries ±1 — the generators' (sbm.cpp, road.cpp), so that a GNN learns the
// labels from the features as well as from the structure.
#include "plexus/graph.hpp"

namespace plexus {

// Sets g.num_features = F and g.features from g.labels (g.num_classes classes, set before).
// Counter-based Philox under key = seed: centroid c (c, blk, 0, "CENT"), features of node i
// (i, blk, 0, "FEAT"): the same whatever the thread count.
void class_centroid_features(GraphData& g, index_t F, double feature_signal, std::uint64_t seed);

}  // namespace plexus
