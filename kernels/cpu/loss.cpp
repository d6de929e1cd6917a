// Masked log-softmax + NLL and accuracy counts, with the class axis possibly sharded (see backend.hpp).
// Rows are independent, so every per-row result is computed by one thread; the only
// reduction across rows, the loss sum, uses fixed row chunks combined in chunk order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/simd_exp.hpp"

namespace plexus::cpu {
namespace {
// Rows per partial loss sum. Fixed (not derived from the thread count) for determinism.
constexpr index_t kLossChunkRows = 1024;
// Below this many columns a row's reduction runs as a plain loop (do_row_max).
constexpr index_t kVectorRowColumns = 16;
// exp_tile's tile: rows (dividing kLossChunkRows) by at most this many columns.
constexpr index_t kExpTileRows = 64;
constexpr index_t kExpTileColumns = 256;

// d(loss)/d(logit) of a selected row's column: its weight times (softmax − one-hot).
inline float xent_gradient(float softmax, float w, bool is_label) { return w * (softmax - (is_label ? 1.0f : 0.0f)); }

// exp(x[i][c0 + j] − row_max[i]) for the n rows from i0 and w <= kExpTileColumns columns from c0,
// row after row in this thread's scratch ([n × w], valid until its next call). Over rows of a
// few classes a vector loop a row costs more to set up than it computes (3.5x a scalar std::exp
// loop's time at 8 columns), so where the tile's rows are one run of memory the exps run as
// one loop over the tile. exp_clamped: the arguments are <= 0, within 2 ulp; std::exp kept
// the loops scalar, 10 ns an element, a quarter of an 8-rank GCN epoch with 8 classes.
const float* exp_tile(ConstMatrixView x, const float* row_max, index_t i0, index_t n, index_t c0, index_t w) {
  thread_local std::vector<float> scratch, shift;
  const auto size = static_cast<std::size_t>(n * w);
  if (scratch.size() < size) scratch.resize(size), shift.resize(size);
  float* __restrict e = scratch.data();
  if (x.ld == w && c0 == 0) {
    float* __restrict m = shift.data();
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < w; ++j) m[i * w + j] = row_max[i0 + i];
    const float* __restrict r = x.row(i0);
#pragma omp simd
    for (index_t k = 0; k < n * w; ++k) e[k] = exp_clamped(r[k] - m[k]);
    return e;
  }
  for (index_t i = 0; i < n; ++i) {
    const float* __restrict r = x.row(i0 + i) + c0;
    const float mx = row_max[i0 + i];
#pragma omp simd
    for (index_t j = 0; j < w; ++j) e[i * w + j] = exp_clamped(r[j] - mx);
  }
  return e;
}
}  // namespace

void CpuBackend::do_row_max(ConstMatrixView x, float* row_max) {
  // A vector reduction's set-up and epilogue cost more than a row of a few classes: 4.6x a plain
  // loop's time at 8 columns, 0.5x at 16.
  const bool wide = x.cols >= kVectorRowColumns;
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* __restrict r = x.row(i);
    float mx = row_max[i];
    if (wide) {
#pragma omp simd reduction(max : mx)
      for (index_t j = 0; j < x.cols; ++j) mx = r[j] > mx ? r[j] : mx;
    } else {
      for (index_t j = 0; j < x.cols; ++j)
        if (r[j] > mx) mx = r[j];
    }
    row_max[i] = mx;
  }
}

void CpuBackend::do_row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) {
  // exp is the cost here, hence the 16x work weight for the parallel threshold. The exps of a
  // tile of rows first (exp_tile: vectorized), then each row's sum in column order in double (a row
  // may have many classes; keep the sum exact-ish).
  const index_t tiles = (x.rows + kExpTileRows - 1) / kExpTileRows;
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols * 16))
  for (index_t t = 0; t < tiles; ++t) {
    const index_t i0 = t * kExpTileRows, n = std::min(kExpTileRows, x.rows - i0);
    for (index_t c0 = 0; c0 < x.cols; c0 += kExpTileColumns) {  // (columns a piece: the tile's scratch)
      const index_t w = std::min(kExpTileColumns, x.cols - c0);
      const float* e = exp_tile(x, row_max, i0, n, c0, w);
      for (index_t i = 0; i < n; ++i) {
        double acc = 0.0;
        for (index_t j = 0; j < w; ++j) acc += static_cast<double>(e[i * w + j]);
        row_sumexp[i0 + i] = static_cast<float>(row_sumexp[i0 + i] + acc);
      }
    }
  }
}

LossTerms CpuBackend::do_softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                                      const std::int32_t* labels, const float* weights, index_t col0, MatrixView grad) {
  const index_t rows = x.rows, cols = x.cols;
  const index_t chunks = (rows + kLossChunkRows - 1) / kLossChunkRows;
  std::vector<double> partial(static_cast<std::size_t>(chunks), 0.0);

#pragma omp parallel for schedule(static) num_threads(threads_for(rows * cols * 16))
  for (index_t ch = 0; ch < chunks; ++ch) {
    double loss = 0.0;
    const index_t end = std::min(rows, (ch + 1) * kLossChunkRows);
    for (index_t i0 = ch * kLossChunkRows; i0 < end; i0 += kExpTileRows) {
      const index_t n = std::min(kExpTileRows, end - i0);
      // The rows' loss terms first: x and grad may alias (the gradient written over the logits).
      for (index_t i = i0; i < i0 + n; ++i) {
        const float w = weights ? weights[i] : 1.0f;
        const index_t local = labels[i] - col0;  // the label's column in this shard, if it is here
        if (w == 0.0f || labels[i] < 0) continue;  // not a selected row: no loss
        if (col0 == 0) loss += static_cast<double>(w) * (std::log(static_cast<double>(row_sumexp[i])) + row_max[i]);
        if (local >= 0 && local < cols) loss -= static_cast<double>(w) * x.row(i)[local];
      }
      // Then the gradient, a piece of columns at a time from the tile's exps (exp_tile reads
      // x before any of those rows' gradient is written).
      for (index_t c0 = 0; c0 < cols; c0 += kExpTileColumns) {
        const index_t width = std::min(kExpTileColumns, cols - c0);
        const float* e = exp_tile(x, row_max, i0, n, c0, width);
        for (index_t i = i0; i < i0 + n; ++i) {
          float* __restrict g = grad.row(i) + c0;
          const float w = weights ? weights[i] : 1.0f;
          const index_t label = labels[i];
          if (w == 0.0f || label < 0) {  // not a selected row: zero gradient
            for (index_t j = 0; j < width; ++j) g[j] = 0.0f;
            continue;
          }
          const index_t local = label - col0 - c0;
          const float inv_se = 1.0f / row_sumexp[i];
          const float* er = e + (i - i0) * width;
          if (width >= kVectorRowColumns) {
#pragma omp simd
            for (index_t j = 0; j < width; ++j) g[j] = xent_gradient(er[j] * inv_se, w, j == local);
          } else {  // (a row of a few classes: do_row_max says why)
            for (index_t j = 0; j < width; ++j) g[j] = xent_gradient(er[j] * inv_se, w, j == local);
          }
        }
      }
    }
    partial[static_cast<std::size_t>(ch)] = loss;
  }
  LossTerms out;
  for (const double l : partial) out.loss_sum += l;  // chunk order: thread-count independent
  return out;
}

LossTerms CpuBackend::do_sigmoid_xent(std::size_t n, const float* x, const float* labels, const float* weights,
                                      float* grad) {
  const auto count = static_cast<index_t>(n);
  const index_t chunks = (count + kLossChunkRows - 1) / kLossChunkRows;
  std::vector<double> partial(static_cast<std::size_t>(chunks), 0.0);
#pragma omp parallel for schedule(static) num_threads(threads_for(count * 16))
  for (index_t ch = 0; ch < chunks; ++ch) {
    double loss = 0.0;
    for (index_t i = ch * kLossChunkRows, i1 = std::min(count, i + kLossChunkRows); i < i1; ++i) {
      const float v = x[i], y = labels[i], w = weights ? weights[i] : 1.0f;  // read before grad (may alias) is written
      const float e = std::exp(-std::fabs(v));
      loss += static_cast<double>(w) * (std::max(v, 0.0f) - v * y + std::log1p(e));
      const float sig = v >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
      grad[i] = w * (sig - y);
    }
    partial[static_cast<std::size_t>(ch)] = loss;
  }
  LossTerms out;
  for (const double l : partial) out.loss_sum += l;  // chunk order: thread-count independent
  return out;
}

void CpuBackend::do_row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) {
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* r = x.row(i);
    // Best in this shard: strict > keeps the first of ties; NaN never compares greater.
    float v = -std::numeric_limits<float>::infinity();
    index_t c = -1;
    for (index_t j = 0; j < x.cols; ++j) {
      if (r[j] > v || (c < 0 && r[j] == v)) {
        v = r[j];
        c = j;
      }
    }
    if (c < 0) continue;
    c += col0;
    // Merge with earlier shards: on a tie the lower global column wins, so the result does
    // not depend on the order in which shards are merged.
    if (v > best_val[i] || (v == best_val[i] && (best_col[i] < 0 || c < best_col[i]))) {
      best_val[i] = v;
      best_col[i] = c;
    }
  }
}

void CpuBackend::do_argmax_keys(std::size_t n, const float* best_val, const float* global_best,
                                const std::int64_t* best_col, float* key) {
  const auto rows = static_cast<index_t>(n);
  // key may alias best_val or global_best: element i is read, then written, by one thread.
#pragma omp parallel for schedule(static) num_threads(threads_for(rows))
  for (index_t i = 0; i < rows; ++i) {
    const bool here = best_col[i] >= 0 && best_val[i] == global_best[i];
    key[i] = here ? -static_cast<float>(best_col[i]) : -std::numeric_limits<float>::infinity();
  }
}

void CpuBackend::do_count_correct(std::size_t n, const float* key, const std::int32_t* labels,
                                  const std::uint8_t* splits, int num_splits, double* counts) {
  const auto rows = static_cast<index_t>(n);
  // Integer counts: exact, whatever the order threads add them in.
  std::int64_t c[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma omp parallel for schedule(static) num_threads(threads_for(rows)) reduction(+ : c[:8])
  for (index_t i = 0; i < rows; ++i) {
    if (labels[i] < 0 || -key[i] != static_cast<float>(labels[i])) continue;
    for (int s = 0; s < 8; ++s) c[s] += splits[i] >> s & 1;
  }
  for (int s = 0; s < num_splits; ++s) counts[s] = static_cast<double>(c[s]);
}

}  // namespace plexus::cpu
