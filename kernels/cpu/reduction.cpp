// Squared L2 norm (Backend::squared_norm) in double.
//
// The summation order is the CUDA backend's (det_sum in kernels/cuda/loss.cu): the input is
// cut into chunks of 2048; in a chunk, lane t (of 256) adds elements t, t+256, ..., t+7·256 in
// order, then the lanes are combined by a halving tree (lane t += lane t+s, s = 128, ..., 1);
// the chunk sums are reduced the same way, level after level, until one value is left. Every
// square x² of a float is exact in double, so the same order gives the same bits on both
// backends, for any thread count. The lane loops are SIMD-friendly as they stand.
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"

namespace plexus::cpu {
namespace {

constexpr std::size_t kLanes = 256, kPerLane = 8, kChunk = kLanes * kPerLane;

// Sum of term(e) for e in chunk c of [0, n), in the order described above.
template <class Term>
double chunk_sum(std::size_t c, std::size_t n, Term term) {
  double acc[kLanes] = {};
  const std::size_t base = c * kChunk;
  if (base + kChunk <= n) {
    for (std::size_t k = 0; k < kPerLane; ++k) {
      const std::size_t row = base + k * kLanes;
#pragma omp simd
      for (std::size_t t = 0; t < kLanes; ++t) acc[t] += term(row + t);
    }
  } else {  // the last, partial chunk: missing elements leave their lane unchanged
    for (std::size_t k = 0; k < kPerLane; ++k)
      for (std::size_t t = 0; t < kLanes; ++t)
        if (base + k * kLanes + t < n) acc[t] += term(base + k * kLanes + t);
  }
  for (std::size_t s = kLanes / 2; s > 0; s >>= 1) {
#pragma omp simd
    for (std::size_t t = 0; t < s; ++t) acc[t] += acc[t + s];
  }
  return acc[0];
}

// One level: out[c] = chunk_sum(c) for every chunk of [0, n).
template <class Term>
std::vector<double> reduce_level(const CpuBackend& be, std::size_t n, Term term) {
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> out(chunks);
  const auto len = static_cast<index_t>(chunks);
#pragma omp parallel for schedule(static) num_threads(be.threads_for(static_cast<index_t>(n)))
  for (index_t c = 0; c < len; ++c)
    out[static_cast<std::size_t>(c)] = chunk_sum(static_cast<std::size_t>(c), n, term);
  return out;
}

}  // namespace

double CpuBackend::do_squared_norm(std::size_t n, const float* x) {
  if (n == 0) return 0.0;
  std::vector<double> level = reduce_level(*this, n, [x](std::size_t e) {
    const double v = x[e];
    return v * v;
  });
  while (level.size() > 1) {
    const std::vector<double> prev = std::move(level);
    level = reduce_level(*this, prev.size(), [&prev](std::size_t e) { return prev[e]; });
  }
  return level[0];
}

}  // namespace plexus::cpu
