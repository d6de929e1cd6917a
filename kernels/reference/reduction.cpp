// Reductions to one number (plexus/kernels/reduction.hpp): the oracle, one double sum in index
// order.
#include "kernels/reference/transformer.hpp"

namespace plexus::reference {

double ReferenceTransformerKernels::squared_norm(std::size_t n, const float* x) {
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * x[i];
  return acc;
}

}  // namespace plexus::reference
