// SpMM: C = A·B + beta·C, A in CSR.
//
// Memory-bound: each stored entry gathers one row of B. Rows of C are independent, so each is
// computed by exactly one thread, entries in CSR order: no atomics, and the result is the same
// bit for bit whatever the number of threads. Graphs are power-law, so rows are split into
// chunks of roughly equal cost (nnz + a per-row overhead) rather than equal row counts, and
// chunks are handed out dynamically.
#include <algorithm>

#include "kernels/cpu/cpu_backend.hpp"

namespace plexus::cpu {
namespace {

// Feature columns are processed in tiles of this width: a tile of C's row is accumulated in
// registers (64 floats = 8 AVX2 / 4 AVX-512 registers) and written once, instead of being
// loaded and stored again for every nonzero.
constexpr index_t kTile = 64;
// Cost of a row beyond its nonzeros (loading indptr, writing its C row), in nonzero units.
constexpr index_t kRowCost = 1;
// Chunks per thread: enough for dynamic scheduling to even out the hubs of power-law graphs.
constexpr index_t kChunksPerThread = 16;
// Software prefetch distance, in nonzeros. The B rows an SpMM gathers are random, so the
// hardware prefetcher cannot predict them; requesting the row kPrefetch entries ahead keeps
// several DRAM misses in flight per thread instead of one.
constexpr index_t kPrefetch = 16;

// One tile of one row. W is the tile width when known at compile time (the full tiles);
// W == 0 means the runtime width `w` (the last, partial tile).
template <bool kHasValues, index_t W>
inline void spmm_tile(const index_t* __restrict indptr, const col_t* __restrict indices,
                      const float* __restrict values, const float* __restrict b, index_t ldb,
                      float* __restrict crow, index_t row, index_t w_runtime, float beta, index_t nnz) {
  const index_t w = W ? W : w_runtime;
  float acc[W ? W : kTile];
  // beta == 0 must not read C: it may hold garbage (NaN), and 0·NaN is NaN.
  if (beta == 0.0f) {
#pragma omp simd
    for (index_t j = 0; j < w; ++j) acc[j] = 0.0f;
  } else {
#pragma omp simd
    for (index_t j = 0; j < w; ++j) acc[j] = beta * crow[j];
  }
  const index_t end = indptr[row + 1];
  for (index_t p = indptr[row]; p < end; ++p) {
    // Prefetch across row boundaries too (bounded by nnz, not by this row's end).
    if (p + kPrefetch < nnz) {
      const float* ahead = b + static_cast<index_t>(indices[p + kPrefetch]) * ldb;
      for (index_t j = 0; j < w; j += 16) __builtin_prefetch(ahead + j, 0, 1);  // 16 floats = 1 line
    }
    // values == nullptr (unweighted graph): the multiply by the constant 1 is compiled away,
    // so the inner loop has no branch in either instantiation.
    const float v = kHasValues ? values[p] : 1.0f;
    const float* __restrict brow = b + static_cast<index_t>(indices[p]) * ldb;
#pragma omp simd
    for (index_t j = 0; j < w; ++j) acc[j] += v * brow[j];
  }
#pragma omp simd
  for (index_t j = 0; j < w; ++j) crow[j] = acc[j];
}

template <bool kHasValues>
void spmm_rows(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, index_t r0, index_t r1) {
  const index_t n = b.cols, full = n / kTile * kTile;
  for (index_t i = r0; i < r1; ++i) {
    float* crow = c.row(i);
    for (index_t j0 = 0; j0 < full; j0 += kTile)
      spmm_tile<kHasValues, kTile>(a.indptr, a.indices, a.values, b.data + j0, b.ld, crow + j0, i, kTile, beta, a.nnz);
    if (full < n)
      spmm_tile<kHasValues, 0>(a.indptr, a.indices, a.values, b.data + full, b.ld, crow + full, i, n - full, beta, a.nnz);
  }
}

// First row whose cumulative cost (indptr[i] + i·kRowCost) reaches `target`.
index_t row_at_cost(const CsrView& a, index_t target) {
  index_t lo = 0, hi = a.rows;
  while (lo < hi) {
    const index_t mid = lo + (hi - lo) / 2;
    if (a.indptr[mid] + mid * kRowCost < target)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

template <bool kHasValues>
void spmm_impl(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, int threads) {
  if (threads <= 1) {
    spmm_rows<kHasValues>(a, b, c, beta, 0, a.rows);
    return;
  }
  const index_t total = a.nnz + a.rows * kRowCost;
  const index_t chunks = std::min<index_t>(a.rows, kChunksPerThread * threads);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (index_t ch = 0; ch < chunks; ++ch) {
    // Boundaries by binary search on the cost prefix: O(chunks · log rows), no setup pass.
    const index_t r0 = ch == 0 ? 0 : row_at_cost(a, total / chunks * ch + total % chunks * ch / chunks);
    const index_t r1 = ch + 1 == chunks ? a.rows
                                        : row_at_cost(a, total / chunks * (ch + 1) + total % chunks * (ch + 1) / chunks);
    spmm_rows<kHasValues>(a, b, c, beta, r0, r1);
  }
}

}  // namespace

void CpuBackend::do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) {
  if (c.rows == 0 || c.cols == 0) return;
  const int threads = threads_for((a.nnz + a.rows) * std::max<index_t>(c.cols, 1));
  if (a.values)
    spmm_impl<true>(a, b, c, beta, threads);
  else
    spmm_impl<false>(a, b, c, beta, threads);
}

}  // namespace plexus::cpu
