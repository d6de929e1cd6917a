// GELU, tanh form (Backend::gelu_forward in plexus/backend.hpp), elementwise through map2d.
//
// Same formulation as the CPU backend (kernels/cpu/activation.cpp): through the logistic
// function, which avoids the cancellation of 1 + tanh(u) for negative x, from q = e^(−2|u|)
// (never overflows); with s = 0.5·(1 + tanh(u)) and c = 1 − s:
//   u >= 0:  s = 1/(1 + q),  c = q/(1 + q);      u < 0:  s = q/(1 + q),  c = 1/(1 + q)
//   gelu(x) = x·s,   gelu'(x) = s + 2·x·u'·s·c,   u' = √(2/π)·(1 + 3·0.044715·x²)
#include "kernels/cuda/launch.cuh"

namespace plexus::cuda {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608f;
constexpr float kCubic = 0.044715f;
constexpr float kSquareMax = 1e30f;  // x² capped in u', so that u'·0 stays 0 for huge |x|

// s = 0.5·(1 + tanh(u)) and c = 1 − s. expf underflows to 0 gracefully; NaN propagates.
struct Logistic {
  float s, c;
};
__device__ __forceinline__ Logistic logistic_of(float x) {
  const float u = kSqrt2OverPi * x * (1.0f + kCubic * x * x);
  const float q = expf(-2.0f * fabsf(u));
  const float inv = 1.0f / (1.0f + q);
  return signbit(u) ? Logistic{q * inv, inv} : Logistic{inv, q * inv};
}

// x and y may alias: each element is read before it is written.
struct GeluForwardOp {
  const float* x;
  index_t x_ld;
  float* y;
  index_t y_ld;
  __device__ void operator()(index_t i, index_t j) const {
    const float v = x[i * x_ld + j];
    y[i * y_ld + j] = v * logistic_of(v).s;
  }
};

// dy and dx may alias: each element is read before it is written.
struct GeluBackwardOp {
  const float* x;
  index_t x_ld;
  const float* dy;
  index_t dy_ld;
  float* dx;
  index_t dx_ld;
  __device__ void operator()(index_t i, index_t j) const {
    const float v = x[i * x_ld + j];
    const Logistic l = logistic_of(v);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * fminf(v * v, kSquareMax));
    dx[i * dx_ld + j] = (l.s + 2.0f * v * (l.s * l.c) * du) * dy[i * dy_ld + j];
  }
};

}  // namespace

void CudaBackend::do_gelu_forward(ConstMatrixView x, MatrixView y) {
  activate();
  map2d(x.rows, x.cols, stream(), "gelu_forward", GeluForwardOp{x.data, x.ld, y.data, y.ld});
}

void CudaBackend::do_gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) {
  activate();
  map2d(x.rows, x.cols, stream(), "gelu_backward",
        GeluBackwardOp{x.data, x.ld, dy.data, dy.ld, dx.data, dx.ld});
}

}  // namespace plexus::cuda
