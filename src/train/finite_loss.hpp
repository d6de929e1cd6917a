#pragma once
// A loss that overflowed to Inf or NaN poisons every weight after it: training on would
// report NaN losses and chance accuracy as a normal run. Both training loops stop instead.
#include <string>

#include "plexus/process_grid.hpp"

namespace plexus {

// Throws InputError("training", "loss is NaN at <when> (<hint>)") on every rank when `loss`
// is not finite on any rank (one all-reduce of a flag over the world, not counted in the
// axes' traffic), so that all ranks stop together.
void require_finite_loss(double loss, ProcessGrid& grid, const std::string& when, const std::string& hint);

}  // namespace plexus
