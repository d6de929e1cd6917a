// Reductions to one number (Backend::squared_norm): the oracle, one double sum in index
// order.
#include "kernels/reference/reference_backend.hpp"

namespace plexus::reference {

double ReferenceBackend::do_squared_norm(std::size_t n, const float* x) {
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * x[i];
  return acc;
}

}  // namespace plexus::reference
