#include "train/finite_loss.hpp"

#include <cmath>

#include "plexus/error.hpp"

namespace plexus {

void require_finite_loss(double loss, ProcessGrid& grid, const std::string& when, const std::string& hint) {
  // 0 finite, 1 infinite, 2 NaN: the max over ranks names the worst.
  double state = std::isnan(loss) ? 2.0 : std::isinf(loss) ? 1.0 : 0.0;
  grid.world().all_reduce(&state, 1, ReduceOp::Max);
  if (state == 0.0) return;
  throw InputError("training", std::string("loss is ") + (state == 2.0 ? "NaN" : "infinite") + " at " + when + " (" +
                                   hint + ")");
}

}  // namespace plexus
