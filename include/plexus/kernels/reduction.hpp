#pragma once
// Kernel family: reductions to one number.
#include <cstddef>

namespace plexus {

class ReductionKernels {
 public:
  virtual ~ReductionKernels() = default;
  // Σ x[i]² in double (gradient clipping by the global norm). Deterministic: the summation
  // order depends on n only, not on threads or the device.
  virtual double squared_norm(std::size_t n, const float* x) = 0;
};

}  // namespace plexus
