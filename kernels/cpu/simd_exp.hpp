#pragma once
// A vectorisable expf for the CPU kernels (GELU, attention's softmax, the loss). glibc has SIMD expf
// only under -ffast-math, so a call to std::exp keeps a loop scalar.
#include <bit>
#include <cstdint>
#include <cstring>

namespace plexus::cpu {

// e^x for −87 <= x <= 88 (callers clamp): Cody–Waite reduction x = n·ln2 + r (|r| <= ln2/2),
// Cephes' expf polynomial for e^r (about 2 ulp), and 2^n assembled in the exponent bits.
inline float exp_in_range(float x) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5·2^23: adding and subtracting it rounds to an integer
  const float t = x * kLog2e + kRound;
  const float n = t - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // n as an integer from t's bits (t = 1.5·2^23 + n, whose last place is 1): exactly n, and
  // defined for a NaN x too (a cast of NaN to int is undefined; the NaN then comes through p).
  const std::uint32_t ni = std::bit_cast<std::uint32_t>(t) - std::bit_cast<std::uint32_t>(kRound);
  const std::uint32_t scale = (ni + 127u) << 23;
  return p * std::bit_cast<float>(scale);
}

// exp(x), branch-free so that the softmax loops (attention's, the loss's) vectorize. x is clamped
// to [-87, 88], where 2^n is a normal float; softmax
// arguments are <= 0 (up to rounding), and exp(-87) ≈ 1.6e-38 is as good as 0 next to the
// row's largest term, which is 1. The clamp is an integer blend because GCC (with the
// default -ftrapping-math) does not vectorize a loop holding a float select.
inline float exp_clamped(float x) {
  {
    const std::uint32_t below = 0u - static_cast<std::uint32_t>(x < -87.0f);
    const std::uint32_t above = 0u - static_cast<std::uint32_t>(x > 88.0f);
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    bits = (bits & ~below) | (0xC2AE0000u & below);  // -87.0f
    bits = (bits & ~above) | (0x42B00000u & above);  // 88.0f
    std::memcpy(&x, &bits, sizeof x);
  }
  return exp_in_range(x);
}

}  // namespace plexus::cpu
