#pragma once
// Adam / AdamW over a model's parameter shards. Adam is elementwise, so each rank updates
// its shards independently and the result equals the single-rank update.
#include <vector>

#include "models/gcn.hpp"

namespace plexus {

class Adam {
 public:
  Adam(Backend& be, std::vector<ParamRef> params, AdamParams hp);
  void step();
  std::int64_t steps() const { return hp_.step - 1; }

 private:
  Backend& be_;
  std::vector<ParamRef> params_;
  AdamParams hp_;
  std::vector<Buffer<float>> m_, v_;
};

}  // namespace plexus
