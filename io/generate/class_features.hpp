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

// The checks of the options every such generator takes, each InputError naming its field:
// features in 1..2^34/nodes, feature_signal in [0, 1e6], train_fraction in (0, 1], val_fraction
// in [0, 1 − train_fraction] (a graph nobody can train on is refused here rather than by every
// `plexus train` later). The names are written out by each caller, as the CLI's table of option
// names (src/cli/option_names.cpp) finds them.
struct FeatureOptionNames {
  const char *features, *feature_signal, *train_fraction, *val_fraction;
};
void check_feature_options(const FeatureOptionNames& names, index_t nodes, index_t features, double feature_signal,
                           double train_fraction, double val_fraction);

}  // namespace plexus
