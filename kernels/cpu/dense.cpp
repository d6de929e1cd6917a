// Dense kernels: GEMM through the blocked kernel (kernels/cpu/blocked_gemm.cpp) or OpenBLAS, and
// the simple streaming ops.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "kernels/common/shape_checks.hpp"
#include "kernels/cpu/blocked_gemm.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace plexus::cpu {
namespace {

// C = beta·C without BLAS (used when k == 0: op(A)·op(B) is an empty sum). beta == 0 writes
// zeros without reading C, which may hold garbage.
void scale_matrix(MatrixView c, float beta, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (index_t i = 0; i < c.rows; ++i) {
    float* __restrict r = c.row(i);
    if (beta == 0.0f) {
#pragma omp simd
      for (index_t j = 0; j < c.cols; ++j) r[j] = 0.0f;
    } else {
#pragma omp simd
      for (index_t j = 0; j < c.cols; ++j) r[j] *= beta;
    }
  }
}

bool fits_blas_int(index_t v) { return v >= 0 && v <= INT_MAX; }

// The least C's columns and k of a product the blocked GEMM runs (do_gemm says why).
constexpr index_t kBlockedMinColumns = 48;
constexpr index_t kBlockedMinDepth = 32;
// Without it, GEMMs of at most kFewRows rows run as slabs of kSlabColumns of C's columns,
// shared out over the threads (do_gemm says why).
constexpr index_t kFewRows = 32;
constexpr index_t kSlabColumns = 64;
// A one-row product's slab of C (one_row_product): 512 bytes of partial sums, and slabs enough
// to share out over the threads at the widths of a GPT's linears.
constexpr index_t kOneRowSlab = 128;
// The longest k a one-row product runs over itself (a GPT's linears: up to 4 × embed).
constexpr index_t kOneRowLongestK = 16384;

// C (one row) = alpha·a·B + beta·C for B stored k×n (op(B) = B): a linear's product when one
// sequence decodes, bound by the stream of B. OpenBLAS's path for it ran at about 7 GB/s on one
// thread here and a fifth faster on two (docs/gpt.md, "Generation"). Row by row of B, each C
// element's sum runs over k in order with the same code for every column, so the bits do not
// depend on how the slabs of kOneRowSlab columns are shared out over the threads.
void one_row_product(float alpha, ConstMatrixView a, Trans ta, ConstMatrixView b, float beta, MatrixView c, index_t k,
                     int threads) {
  const index_t n = c.cols;
  std::vector<float> column;  // a transposed A's one column, gathered into a row
  if (ta == Trans::Yes) {
    column.resize(static_cast<std::size_t>(k));
    for (index_t i = 0; i < k; ++i) column[static_cast<std::size_t>(i)] = a.data[i * a.ld];
  }
  const float* x = ta == Trans::No ? a.data : column.data();
  const index_t slabs = (n + kOneRowSlab - 1) / kOneRowSlab;
  const int teams = static_cast<int>(std::min<index_t>(threads, slabs));
#pragma omp parallel num_threads(teams)
  {
    alignas(64) float acc[kOneRowSlab];
#pragma omp for schedule(static)
    for (index_t s = 0; s < slabs; ++s) {
      const index_t j0 = s * kOneRowSlab, w = std::min(kOneRowSlab, n - j0);
      for (index_t j = 0; j < w; ++j) acc[j] = 0.0f;
      for (index_t i = 0; i < k; ++i) {
        const float xi = x[i];
        const float* __restrict row = b.data + i * b.ld + j0;
#pragma omp simd
        for (index_t j = 0; j < w; ++j) acc[j] += xi * row[j];
      }
      float* __restrict out = c.data + j0;
      if (beta == 0.0f) {
        for (index_t j = 0; j < w; ++j) out[j] = alpha * acc[j];
      } else {
        for (index_t j = 0; j < w; ++j) out[j] = alpha * acc[j] + beta * out[j];
      }
    }
  }
}

}  // namespace

void CpuBackend::do_gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
                         MatrixView c) {
  const auto d = detail::gemm_dims(ta, a, c);
  if (d.m == 0 || d.n == 0) return;
  if (d.k == 0) {
    if (beta != 1.0f) scale_matrix(c, beta, threads_for(d.m * d.n));
    return;
  }
  // BLAS takes int dimensions; a block that large is not something this engine produces.
  detail::require(fits_blas_int(d.m) && fits_blas_int(d.n) && fits_blas_int(d.k) && fits_blas_int(a.ld) &&
                      fits_blas_int(b.ld) && fits_blas_int(c.ld),
                  "gemm", "dimension exceeds the BLAS int range");
  // The blocked GEMM where this build has it (kernels/cpu/blocked_gemm.cpp): 1.5-1.8x the
  // OpenBLAS Haswell kernels' rate on large products here, 1.4x over a baby GPT's training
  // step's, and 2.5x on a few rows' (decoding; bench_sgemm). Not where C is narrower than a
  // block of 3 vectors of 16 or k is shorter than 32: there its per-item work (the sums kept
  // between chunks, alpha and beta) weighs more than the product, and OpenBLAS was faster
  // (bench_sgemm --m 2708 --k 16 --n 7).
  if (has_blocked_gemm() && alpha != 0.0f && d.n >= kBlockedMinColumns && d.k >= kBlockedMinDepth) {
    blocked_gemm(ta, tb, alpha, a, b, beta, c, d.k, threads_for_gemm(d.m, d.n, d.k));
    return;
  }
  // Our views are row-major with a leading dimension, which is exactly CblasRowMajor: the
  // stored matrix of op(A) is m×k (No) or k×m (Yes), and its ld is the view's ld. m, n, k > 0
  // here, so every ld is >= max(1, stored cols) as BLAS requires. OpenBLAS treats beta == 0
  // as "overwrite" and never reads C then.
  const auto sgemm = [&](index_t col, index_t cols) {  // C's columns [col, col + cols)
    const float* bs = b.data + (tb == Trans::No ? col : col * b.ld);
    cblas_sgemm(CblasRowMajor, ta == Trans::No ? CblasNoTrans : CblasTrans, tb == Trans::No ? CblasNoTrans : CblasTrans,
                static_cast<int>(d.m), static_cast<int>(cols), static_cast<int>(d.k), alpha, a.data,
                static_cast<int>(a.ld), bs, static_cast<int>(b.ld), beta, c.data + col, static_cast<int>(c.ld));
  };
  // One row (one sequence decoding): one_row_product. Not for a narrow C or a long k — a
  // weight's gradient over many nodes with one feature is OpenBLAS's, which splits it over the
  // threads whatever its width.
  if (d.m == 1 && tb == Trans::No && d.n >= kOneRowSlab && d.k <= kOneRowLongestK) {
    one_row_product(alpha, a, ta, b, beta, c, d.k, threads_for(d.n * d.k));
    return;
  }
  // A product of few rows (decoding: a row a sequence) streams all of op(B) once per call and
  // is bound by memory, but OpenBLAS runs it on one thread from 2 rows up (a batch of 8
  // prompts decoded no faster on 2 threads than on 1). It is cut into slabs of kSlabColumns of
  // C's columns instead, each a one-thread sgemm (OpenBLAS's OpenMP build runs single-threaded
  // inside a parallel region), shared out over the threads. The slabs are the same on any
  // thread count — OpenBLAS's sums over k differ with the width of the product it is given —
  // so the result does not depend on it (CpuDeterminism.FewRowGemm...).
  if (d.m > 1 && d.m <= kFewRows && d.n > kSlabColumns) {
    const index_t slabs = (d.n + kSlabColumns - 1) / kSlabColumns;
    const int threads = static_cast<int>(std::min<index_t>(threads_for(d.n * d.k), slabs));
#pragma omp parallel for schedule(static) num_threads(threads)
    for (index_t t = 0; t < slabs; ++t) sgemm(t * kSlabColumns, std::min(kSlabColumns, d.n - t * kSlabColumns));
    return;
  }
  sgemm(0, d.n);
}

void CpuBackend::do_axpby(std::size_t n, float alpha, const float* x, float beta, float* y) {
  const auto len = static_cast<index_t>(n);
  const int threads = threads_for(len);
  if (beta == 0.0f) {  // y may be uninitialised
#pragma omp parallel for simd schedule(static) num_threads(threads)
    for (index_t i = 0; i < len; ++i) y[i] = alpha * x[i];
  } else {
#pragma omp parallel for simd schedule(static) num_threads(threads)
    for (index_t i = 0; i < len; ++i) y[i] = alpha * x[i] + beta * y[i];
  }
}

void CpuBackend::do_fill(MatrixView m, float value) {
#pragma omp parallel for schedule(static) num_threads(threads_for(m.rows * m.cols))
  for (index_t i = 0; i < m.rows; ++i) {
    float* __restrict r = m.row(i);
#pragma omp simd
    for (index_t j = 0; j < m.cols; ++j) r[j] = value;
  }
}

void CpuBackend::do_copy(ConstMatrixView src, MatrixView dst) {
  if (src.data == dst.data && src.ld == dst.ld) return;
  if (detail::views_overlap(src, dst)) {  // rows run in parallel: copy from a packed copy instead
    std::vector<float> packed(static_cast<std::size_t>(src.rows * src.cols));
    const MatrixView tmp{packed.data(), src.rows, src.cols, src.cols};
    copy(src, tmp);
    copy(tmp, dst);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads_for(src.rows * src.cols))
  for (index_t i = 0; i < src.rows; ++i) {
    const float* __restrict s = src.row(i);
    float* __restrict d = dst.row(i);
#pragma omp simd
    for (index_t j = 0; j < src.cols; ++j) d[j] = s[j];
  }
}

}  // namespace plexus::cpu
