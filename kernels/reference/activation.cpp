// GELU, tanh form (Backend::gelu_forward in plexus/backend.hpp): the oracle, the formula as written, in double.
#include <cmath>

#include "kernels/reference/reference_backend.hpp"

namespace plexus::reference {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // √(2/π)
constexpr double kCubic = 0.044715;

}  // namespace

void ReferenceBackend::do_gelu_forward(ConstMatrixView x, MatrixView y) {
  for (index_t i = 0; i < x.rows; ++i) {
    for (index_t j = 0; j < x.cols; ++j) {
      const double v = x.row(i)[j];
      const double t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
      y.row(i)[j] = static_cast<float>(0.5 * v * (1.0 + t));
    }
  }
}

void ReferenceBackend::do_gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) {
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
