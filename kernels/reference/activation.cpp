// GELU, tanh form (plexus/kernels/activation.hpp): the oracle, the formula as written, in double.
#include <cmath>

#include "kernels/common/shape_checks.hpp"
#include "kernels/reference/transformer.hpp"

namespace plexus::reference {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // √(2/π)
constexpr double kCubic = 0.044715;

}  // namespace

void ReferenceTransformerKernels::gelu_forward(ConstMatrixView x, MatrixView y) {
  detail::check_same_shape(x, y, "gelu_forward");
  for (index_t i = 0; i < x.rows; ++i) {
    for (index_t j = 0; j < x.cols; ++j) {
      const double v = x.row(i)[j];
      const double t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
      y.row(i)[j] = static_cast<float>(0.5 * v * (1.0 + t));
    }
  }
}

void ReferenceTransformerKernels::gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) {
  detail::check_same_shape(x, dx, "gelu_backward");
  detail::check_same_shape(dy, dx, "gelu_backward");
  for (index_t i = 0; i < x.rows; ++i) {
    for (index_t j = 0; j < x.cols; ++j) {
      const double v = x.row(i)[j];
      const double t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
      const double du = kSqrt2OverPi * (1.0 + 3.0 * kCubic * v * v);
      const double d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du;
      dx.row(i)[j] = static_cast<float>(d * dy.row(i)[j]);  // dx may alias dy: read first
    }
  }
}

}  // namespace plexus::reference
