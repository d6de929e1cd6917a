// Masked log-softmax + NLL and accuracy counts, with the class axis possibly sharded (see backend.hpp).
// Rows are independent, so every per-row result is computed by one thread; the only
// reduction across rows, the loss sum, uses fixed row chunks combined in chunk order.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"

namespace plexus::cpu {
namespace {
// Rows per partial loss sum. Fixed (not derived from the thread count) for determinism.
constexpr index_t kLossChunkRows = 1024;
}  // namespace

void CpuBackend::do_row_max(ConstMatrixView x, float* row_max) {
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* __restrict r = x.row(i);
    float mx = row_max[i];
#pragma omp simd reduction(max : mx)
    for (index_t j = 0; j < x.cols; ++j) mx = r[j] > mx ? r[j] : mx;
    row_max[i] = mx;
  }
}

void CpuBackend::do_row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) {
  // exp is the cost here, hence the 16x work weight for the parallel threshold.
#pragma omp parallel for schedule(static) num_threads(threads_for(x.rows * x.cols * 16))
  for (index_t i = 0; i < x.rows; ++i) {
    const float* __restrict r = x.row(i);
    const float mx = row_max[i];
    double acc = 0.0;  // a row may have many classes; keep the sum exact-ish
    for (index_t j = 0; j < x.cols; ++j) acc += std::exp(r[j] - mx);
    row_sumexp[i] = static_cast<float>(row_sumexp[i] + acc);
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
    for (index_t i = ch * kLossChunkRows, i1 = std::min(rows, i + kLossChunkRows); i < i1; ++i) {
      // x and grad may alias (gradient written over the logits): read what the loss needs
      // first; the grad loop below reads each element before writing it.
      const float* xr = x.row(i);
      float* g = grad.row(i);
      const float w = weights ? weights[i] : 1.0f;
      const index_t label = labels[i];
      if (w == 0.0f || label < 0) {  // not a selected row: no loss, zero gradient
#pragma omp simd
        for (index_t j = 0; j < cols; ++j) g[j] = 0.0f;
        continue;
      }
      const float mx = row_max[i], se = row_sumexp[i];
      const index_t local = label - col0;  // the label's column in this shard, if it is here
      if (col0 == 0) loss += static_cast<double>(w) * (std::log(static_cast<double>(se)) + mx);
      if (local >= 0 && local < cols) loss -= static_cast<double>(w) * xr[local];
      const float inv_se = 1.0f / se;
      for (index_t j = 0; j < cols; ++j) {
        const float softmax = std::exp(xr[j] - mx) * inv_se;
        g[j] = w * (softmax - (j == local ? 1.0f : 0.0f));
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
