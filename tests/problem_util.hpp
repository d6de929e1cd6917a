#pragma once
// ProblemSize of given widths, for the plan's tests: D_0 features, D_L classes, L layers of the
// hidden width D_1 (every hidden layer as wide: what gnn_dims makes); and the graph the
// row-sparse sums' tests plan and train on.
#include <vector>

#include "plan/plan.hpp"
#include "plexus/convert.hpp"

namespace plexus::test {

// 211 nodes of degree 1.5: a block of a few ranks' columns leaves most of its rows empty, and on
// 3 to 6 ranks some sums' rows forms save too little to pay for their copies.
inline GraphData sparse_sbm() {
  SbmOptions o;
  o.nodes = 211;
  o.classes = 4;
  o.features = 9;
  o.avg_degree = 1.5;
  o.seed = 31;
  return generate_sbm(o);
}

inline void set_dims(ProblemSize& p, const std::vector<index_t>& dims) {
  p.num_features = dims.front();
  p.num_classes = dims.back();
  p.config.layers = static_cast<int>(dims.size()) - 1;
  if (dims.size() > 2) p.config.hidden = dims[1];
}

}  // namespace plexus::test
