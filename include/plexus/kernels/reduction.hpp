#pragma once
// Kernel family: reductions to one number.
#include <cstddef>

namespace plexus {

// One array of a batch of norms (squared_norms).
struct NormPiece {
  std::size_t n = 0;
  const float* x = nullptr;
};

class ReductionKernels {
 public:
  virtual ~ReductionKernels() = default;
  // Σ x[i]² in double (gradient clipping by the global norm). Deterministic: the summation
  // order depends on n only, not on threads or the device.
  virtual double squared_norm(std::size_t n, const float* x) = 0;
  // out[i] = squared_norm(pieces[i]) for every piece, bit for bit, into host memory. A device
  // backend computes them all before it waits once, instead of once per piece (a GPT step
  // takes the norm of every parameter's gradient).
  virtual void squared_norms(const NormPiece* pieces, std::size_t count, double* out) {
    for (std::size_t i = 0; i < count; ++i) out[i] = squared_norm(pieces[i].n, pieces[i].x);
  }
};

}  // namespace plexus
