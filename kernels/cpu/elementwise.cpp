// Elementwise kernels and the bias gradient (column_sum).
#include <algorithm>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/philox_lanes.hpp"

namespace plexus::cpu {
namespace {

// column_sum partition. Row chunks are at least kSumMinChunkRows long and there are at most
// about kSumMaxRowChunks of them (bounding the scratch memory); columns go in blocks of
// kSumColBlock. All three depend only on the shape, never on the thread count, which is what
// makes the result identical for any number of threads.
constexpr index_t kSumMinChunkRows = 512;
constexpr index_t kSumMaxRowChunks = 256;
constexpr index_t kSumColBlock = 1024;
// Rows a thread's piece of a narrow dropout (do_dropout): its pairs of row and column group.
constexpr index_t kDropoutRowBlock = 256;

index_t ceil_div(index_t a, index_t b) { return (a + b - 1) / b; }

// Dropout's factor for word w of lane l at keep_scale[4·l + w]: 1/(1 − p) where the word's
// uniform is at least p (kept), else 0.
inline void keep_scales(const std::uint32_t (&words)[4][kLanes], float p, float scale, float* keep_scale) {
#pragma omp simd
  for (std::uint32_t l = 0; l < kLanes; ++l)
    for (std::uint32_t w = 0; w < 4; ++w) keep_scale[4 * l + w] = word_to_uniform(words[w][l]) >= p ? scale : 0.0f;
}

}  // namespace

void CpuBackend::do_add_bias(MatrixView m, const float* bias) {
#pragma omp parallel for schedule(static) num_threads(threads_for(m.rows * m.cols))
  for (index_t i = 0; i < m.rows; ++i) {
    float* __restrict r = m.row(i);
#pragma omp simd
    for (index_t j = 0; j < m.cols; ++j) r[j] += bias[j];
  }
}

void CpuBackend::do_column_sum(ConstMatrixView m, float beta, float* out) {
  const index_t rows = m.rows, cols = m.cols;
  if (cols == 0) return;
  const index_t chunk_rows = std::max(kSumMinChunkRows, ceil_div(rows, kSumMaxRowChunks));
  const index_t row_chunks = ceil_div(rows, chunk_rows), col_blocks = ceil_div(cols, kSumColBlock);
  const int threads = threads_for(rows * cols);

  // Pass 1: partial[rc][j] = sum of column j over row chunk rc, in row order (double, so the
  // float inputs add without rounding drift over long chunks).
  std::vector<double> partial(static_cast<std::size_t>(row_chunks * cols));
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
  for (index_t rc = 0; rc < row_chunks; ++rc) {
    for (index_t cb = 0; cb < col_blocks; ++cb) {
      const index_t j0 = cb * kSumColBlock, j1 = std::min(cols, j0 + kSumColBlock);
      double* __restrict acc = partial.data() + rc * cols;
      for (index_t i = rc * chunk_rows, i1 = std::min(rows, i + chunk_rows); i < i1; ++i) {
        const float* __restrict r = m.row(i);
#pragma omp simd
        for (index_t j = j0; j < j1; ++j) acc[j] += r[j];
      }
    }
  }
  // Pass 2: combine the chunks in chunk order.
#pragma omp parallel for schedule(static) num_threads(threads_for(row_chunks * cols))
  for (index_t j = 0; j < cols; ++j) {
    double total = 0.0;
    for (index_t rc = 0; rc < row_chunks; ++rc) total += partial[static_cast<std::size_t>(rc * cols + j)];
    // beta == 0 overwrites without reading `out`.
    out[j] = static_cast<float>(beta == 0.0f ? total : total + static_cast<double>(beta) * out[j]);
  }
}

void CpuBackend::do_relu(MatrixView m) {
#pragma omp parallel for schedule(static) num_threads(threads_for(m.rows * m.cols))
  for (index_t i = 0; i < m.rows; ++i) {
    float* __restrict r = m.row(i);
#pragma omp simd
    for (index_t j = 0; j < m.cols; ++j) r[j] = r[j] > 0.0f ? r[j] : 0.0f;  // NaN -> 0, like max(x, 0)
  }
}

void CpuBackend::do_relu_backward(ConstMatrixView activated, MatrixView grad) {
#pragma omp parallel for schedule(static) num_threads(threads_for(grad.rows * grad.cols))
  for (index_t i = 0; i < grad.rows; ++i) {
    const float* a = activated.row(i);
    float* g = grad.row(i);
#pragma omp simd
    for (index_t j = 0; j < grad.cols; ++j) g[j] = a[j] <= 0.0f ? 0.0f : g[j];
  }
}


void CpuBackend::do_dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0, index_t col0) {
  if (x.rows == 0 || x.cols == 0) return;  // (col0 − 1 >> 2 would make the last group of no column huge)
  if (p == 0.0f) {  // identity
    copy(x, out);
    return;
  }
  if (p == 1.0f) {  // everything dropped; avoids computing x·inf for masked-out lanes
    fill(out, 0.0f);
    return;
  }
  const float scale = 1.0f / (1.0f - p);
  // The mask depends only on (key, global row, global column): one Philox call gives the
  // words of four consecutive global columns (rng.hpp). Philox is ~30 integer ops a call, so
  // this kernel is compute-bound: the groups of a row are generated kLanes at a time by
  // philox_lanes, whose loops the compiler vectorizes. x and out may alias: each element is
  // read before it is written.
  const std::uint32_t k0 = static_cast<std::uint32_t>(key.seed);
  const std::uint32_t k1 = static_cast<std::uint32_t>(key.seed >> 32) ^ (key.layer * 0x9E3779B9u);
  const auto first_group = static_cast<std::uint32_t>(col0 >> 2);  // a row's column groups
  const auto last_group = static_cast<std::uint32_t>((col0 + x.cols - 1) >> 2);
  const auto groups = static_cast<index_t>(last_group - first_group) + 1;
  if (groups < static_cast<index_t>(kLanes)) {
    // Rows of fewer groups than lanes (fewer than 64 columns: a GNN's hidden layer) would leave
    // lanes idle a row, so the lanes run over the (row, group) pairs of a block of rows in turn:
    // the same counters, so the same mask, at up to 4x the rate (32 columns: 2x).
    const bool packed = x.ld == x.cols && out.ld == out.cols && col0 % 4 == 0 && x.cols % 4 == 0;
    const index_t blocks = ceil_div(x.rows, kDropoutRowBlock);
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols * 2))
    for (index_t blk = 0; blk < blocks; ++blk) {
      const index_t i0 = blk * kDropoutRowBlock, pairs = std::min(kDropoutRowBlock, x.rows - i0) * groups;
      alignas(64) std::uint32_t a[kLanes], b[kLanes], c[kLanes], words[4][kLanes];
      alignas(64) float keep_scale[4 * kLanes];
      for (index_t q0 = 0; q0 < pairs; q0 += kLanes) {
        const index_t lanes = std::min<index_t>(kLanes, pairs - q0);
        for (index_t l = 0; l < static_cast<index_t>(kLanes); ++l) {  // past `lanes`: the last pair again
          const index_t q = q0 + std::min(l, lanes - 1);
          const auto grow = static_cast<std::uint64_t>(row0 + i0 + q / groups);
          a[l] = static_cast<std::uint32_t>(grow);
          b[l] = static_cast<std::uint32_t>(grow >> 32);
          c[l] = first_group + static_cast<std::uint32_t>(q % groups);
        }
        philox_lanes_of(a, b, c, key.epoch, k0, k1, words);
        keep_scales(words, p, scale, keep_scale);
        if (packed) {  // the pairs' columns are consecutive elements: 4 a pair
          const index_t at = i0 * x.cols + 4 * q0;
          const float* xs = x.data + at;  // (x and out may alias: element by element)
          float* o = out.data + at;
#pragma omp simd
          for (index_t k = 0; k < 4 * lanes; ++k) o[k] = xs[k] * keep_scale[k];
          continue;
        }
        for (index_t l = 0; l < lanes; ++l) {
          const index_t q = q0 + l, i = i0 + q / groups;
          const index_t base = 4 * static_cast<index_t>(first_group + q % groups) - col0;  // its first column
          for (index_t w = 0; w < 4; ++w)
            if (base + w >= 0 && base + w < x.cols) out.row(i)[base + w] = x.row(i)[base + w] * keep_scale[4 * l + w];
        }
      }
    }
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols * 2))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* xr = x.row(i);
    float* o = out.row(i);
    const auto grow = static_cast<std::uint64_t>(row0 + i);
    alignas(64) std::uint32_t words[4][kLanes];
    alignas(64) float keep_scale[4 * kLanes];
    for (std::uint32_t g0 = first_group; g0 <= last_group; g0 += kLanes) {
      philox_lanes(static_cast<std::uint32_t>(grow), static_cast<std::uint32_t>(grow >> 32), g0, key.epoch, k0, k1, words);
      // Column 4·(g0+l)+w of the row takes word w of lane l.
      keep_scales(words, p, scale, keep_scale);
      const index_t base = static_cast<index_t>(4) * g0 - col0;  // local column of keep_scale[0]
      const index_t j0 = std::max<index_t>(base, 0), j1 = std::min<index_t>(base + 4 * kLanes, x.cols);
#pragma omp simd
      for (index_t j = j0; j < j1; ++j) o[j] = xr[j] * keep_scale[j - base];
    }
  }
}

}  // namespace plexus::cpu
