#pragma once
// Adam / AdamW over a model's parameter shards. Adam is elementwise, so each rank updates
// its shards independently and the result equals the single-rank update.
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"

namespace plexus {

// One parameter shard and its gradient on the backend; `decay`: weight decay applies to it.
struct ParamRef {
  float* value;
  float* grad;
  std::size_t size;
  bool decay;
};

struct AdamMoments {
  float* m;
  float* v;
};

class Adam {
 public:
  Adam(Backend& be, std::vector<ParamRef> params, AdamParams hp);
  void step();
  std::int64_t steps() const { return hp_.step - 1; }
  // The learning rate of the next steps (a schedule sets it before each step).
  void set_lr(float lr) { hp_.lr = lr; }
  // The first and second moments of each parameter (same order and sizes), on the backend:
  // what a checkpoint saves and restores.
  std::vector<AdamMoments> moments();
  // Restores the step count (bias correction) of a run that took `steps` steps.
  void set_steps(std::int64_t steps) { hp_.step = steps + 1; }

 private:
  Backend& be_;
  std::vector<ParamRef> params_;
  AdamParams hp_;
  std::vector<Buffer<float>> m_, v_;
};

}  // namespace plexus
