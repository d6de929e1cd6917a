// GELU, tanh form (Backend::gelu_forward in plexus/backend.hpp), elementwise over rows (OpenMP) and columns
// (SIMD).
//
// Written through the logistic function, 0.5·(1 + tanh(u)) = 1/(1 + e^(−2u)), which has no
// cancellation for negative x (1 + tanh(u) → 0 loses every digit) and gives the derivative
// from the same exponential. Only q = e^(−2|u|) <= 1 is computed, so nothing overflows; with
// s = 0.5·(1 + tanh(u)) and c = 1 − s:
//   u >= 0:  s = 1/(1 + q),  c = q/(1 + q);      u < 0:  s = q/(1 + q),  c = 1/(1 + q)
//   gelu(x) = x·s,   gelu'(x) = s + 2·x·u'·s·c,   u' = √(2/π)·(1 + 3·0.044715·x²)
// glibc has SIMD variants of expf/tanhf only under -ffast-math, so calling either would keep
// these loops scalar: exp_neg is simd_exp.hpp's vectorizable expf. Clamps and the
// choice by sign work on integer bits, because under the default -ftrapping-math GCC does not
// turn float comparisons or conditional divisions into selects, and a branch stops
// vectorization.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/simd_exp.hpp"

namespace plexus::cpu {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608f;
constexpr float kCubic = 0.044715f;
// e^−87 ≈ 1.6e-38 is still a normal float (2^n with n >= −126 in exp_neg); smaller values of
// e^(−2|u|) are flushed to 0, which moves s or c by less than 1.6e-38.
constexpr float kExpMax = 87.0f;
// x² is capped here in u', so that u'·0 stays 0 (not inf·0) for |x| beyond 1e15, where
// s·c is 0 anyway.
constexpr float kSquareMax = 1e30f;

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

// min(a, b) for a >= 0 or NaN (which gives b) and b >= 0: the integer order of non-negative
// floats' bits is their order.
float min_nonneg(float a, float b) { return std::bit_cast<float>(std::min(bits(a), bits(b))); }

// e^(−a) for 0 <= a <= kExpMax.
inline float exp_neg(float a) { return exp_in_range(-a); }

// s = 0.5·(1 + tanh(u)) and c = 1 − s for the GELU argument u of x. A NaN x gives s, c of 0
// and 1, but x itself then makes gelu = x·s and the gelu' term 2·x·s·c NaN.
struct Logistic {
  float s, c;
};
inline Logistic logistic_of(float x) {
  const float u = kSqrt2OverPi * x * (1.0f + kCubic * x * x);
  const float a = 2.0f * std::abs(u);
  // Masks (all ones or zero) in place of branches: q flushed to 0 beyond kExpMax (also for an
  // inf or NaN a), and the two cases of the sign of u.
  const std::uint32_t small = 0u - static_cast<std::uint32_t>(bits(a) <= bits(kExpMax));
  const float q = std::bit_cast<float>(bits(exp_neg(min_nonneg(a, kExpMax))) & small);
  const float inv = 1.0f / (1.0f + q);
  const std::uint32_t neg = 0u - (bits(u) >> 31);
  const auto pick = [neg](float if_neg, float if_pos) {
    return std::bit_cast<float>((bits(if_neg) & neg) | (bits(if_pos) & ~neg));
  };
  return {pick(q, 1.0f) * inv, pick(1.0f, q) * inv};
}

}  // namespace

void CpuBackend::do_gelu_forward(ConstMatrixView x, MatrixView y) {
  // The exponential is the cost: weigh an element as a few memory-bound ones.
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols * 4))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* xr = x.row(i);  // no __restrict: y may alias x
    float* yr = y.row(i);
#pragma omp simd
    for (index_t j = 0; j < x.cols; ++j) {
      const float v = xr[j];
      yr[j] = v * logistic_of(v).s;
    }
  }
}

void CpuBackend::do_gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) {
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols * 4))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* xr = x.row(i);
    const float* dr = dy.row(i);  // no __restrict: dx may alias dy
    float* out = dx.row(i);
#pragma omp simd
    for (index_t j = 0; j < x.cols; ++j) {
      const float v = xr[j];
      const Logistic l = logistic_of(v);
      const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * min_nonneg(v * v, kSquareMax));
      out[j] = (l.s + 2.0f * v * (l.s * l.c) * du) * dr[j];
    }
  }
}

}  // namespace plexus::cpu
