// bfloat16 conversions: to_bf16 (narrow, or accumulate into 16-bit storage) and from_bf16.
//
// Element-wise, so every result is independent of the thread count. Rounding is float_to_bf16
// (tensor.hpp), shared with the reference backend, so the two agree bit for bit.
#include <cmath>

#include "kernels/cpu/cpu_backend.hpp"

namespace plexus::cpu {
namespace {

// y[i] = bf16(value(i)) over n elements. No __restrict: value(i) may read y[i].
template <class F>
void narrow(index_t n, bf16* y, int threads, F value) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (index_t i = 0; i < n; ++i) y[i] = float_to_bf16(value(i));
}

}  // namespace

void CpuBackend::do_to_bf16(std::size_t n, const float* x, float beta, bf16* y) {
  const auto len = static_cast<index_t>(n);
  const int threads = threads_for(len);
  // The defined sum is fma(beta, float(y), x) (see the reference backend). beta == 1 is the
  // common case (gradient accumulation) and there x + float(y) is the same single rounding,
  // without a libm fmaf call per element where the target has no FMA instruction.
  if (beta == 0.0f)  // y may be uninitialised: not read
    narrow(len, y, threads, [x](index_t i) { return x[i]; });
  else if (beta == 1.0f)
    narrow(len, y, threads, [x, y](index_t i) { return x[i] + bf16_to_float(y[i]); });
  else
    narrow(len, y, threads, [x, y, beta](index_t i) { return std::fma(beta, bf16_to_float(y[i]), x[i]); });
}

void CpuBackend::do_from_bf16(std::size_t n, const bf16* x, float* y) {
  const auto len = static_cast<index_t>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(len))
  for (index_t i = 0; i < len; ++i) y[i] = bf16_to_float(x[i]);
}

}  // namespace plexus::cpu
