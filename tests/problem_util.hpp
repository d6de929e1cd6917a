#pragma once
// ProblemSize of given widths, for the plan's tests: D_0 features, D_L classes, L layers of the
// hidden width D_1 (every hidden layer as wide: what gnn_dims makes).
#include <vector>

#include "plan/plan.hpp"

namespace plexus::test {

inline void set_dims(ProblemSize& p, const std::vector<index_t>& dims) {
  p.num_features = dims.front();
  p.num_classes = dims.back();
  p.config.layers = static_cast<int>(dims.size()) - 1;
  if (dims.size() > 2) p.config.hidden = dims[1];
}

}  // namespace plexus::test
