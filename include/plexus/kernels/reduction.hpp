#pragma once
// Kernel family: reductions to one number.
#include <cstddef>

namespace plexus {

// One array of a batch of norms (squared_norms).
struct NormPiece {
  std::size_t n = 0;
  const float* x = nullptr;
};

}  // namespace plexus
