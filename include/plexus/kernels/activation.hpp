#pragma once
// Kernel family: GELU, tanh form (GPT-2's, PyTorch's approximate="tanh"):
//   gelu(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
#include "plexus/tensor.hpp"

namespace plexus {

class ActivationKernels {
 public:
  virtual ~ActivationKernels() = default;
  // y = gelu(x). `y` may alias `x`.
  virtual void gelu_forward(ConstMatrixView x, MatrixView y) = 0;
  // dx = gelu'(x)·dy. `dx` may alias `dy`.
  virtual void gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) = 0;
};

}  // namespace plexus
