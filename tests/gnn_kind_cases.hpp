#pragma once
// What the one-rank tests over every GNN kind share (test_recompute, test_bf16_kinds): a named
// case of a kind and its layer order, and the plan's dry run of a training run on one rank.
#include <ostream>
#include <string>

#include "plan/plan.hpp"
#include "plexus/graph.hpp"
#include "plexus/io.hpp"
#include "plexus/train.hpp"

namespace plexus::testing {

struct KindCase {
  std::string name;
  GnnSpec model;
  LayerOrder order = LayerOrder::Auto;
  bool gcn() const { return model.kind() == "gcn"; }
};

inline std::ostream& operator<<(std::ostream& os, const KindCase& c) { return os << c.name; }

// What the plan predicts for training `cfg` on `g` on one rank (its dry run, docs/dry-run.md).
inline RankCost planned_on_one_rank(const GraphData& g, const TrainConfig& cfg) {
  GraphInfo info;
  info.num_nodes = g.num_nodes;
  info.num_features = g.num_features;
  info.nnz = g.num_edges();
  info.num_classes = g.num_classes;
  return predict_ranks(gnn_problem(info, cfg), GridShape{1, 1, 1}, false)[0];
}

}  // namespace plexus::testing
