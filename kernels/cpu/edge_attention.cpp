// Graph attention on an Â block's pattern (Backend::gat_edge_scores ... elu_backward in
// plexus/backend.hpp).
//
// The CSR kernels run OpenMP over rows: a row's values for every head are computed by one
// thread, entries in CSR order, so no result depends on the number of threads. Rows are handed
// out dynamically in chunks of kRowChunk, because a graph's rows differ in cost by orders of
// magnitude (hubs) and which thread takes a row changes nothing in what it computes. Sums are
// taken in double in the reference's order (reference/edge_attention.cpp), so most results
// equal its bits; exp and expm1 are the library's.
//
// head_dots_backward's datt is a sum over rows: as in column_sum (elementwise.cpp), rows are cut
// into chunks fixed by the shape, each chunk's partial sums are taken in row order and the chunks
// are added in chunk order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"

namespace plexus::cpu {
namespace {

constexpr index_t kRowChunk = 64;
// head_dots_backward's partition of the rows and columns (see column_sum).
constexpr index_t kSumMinChunkRows = 512;
constexpr index_t kSumMaxRowChunks = 256;
constexpr index_t kSumColBlock = 1024;

index_t ceil_div(index_t a, index_t b) { return (a + b - 1) / b; }

// Elements a CSR kernel touches: every entry for every head, and a row's own bookkeeping.
index_t edge_work(const CsrView& a, index_t heads) { return a.nnz * heads + a.rows; }

// f(r, begin, end) for every row r of a, whose entries are [begin, end), over `threads` threads.
template <class F>
void for_each_row(const CsrView& a, int threads, F&& f) {
#pragma omp parallel for schedule(dynamic, kRowChunk) num_threads(threads)
  for (index_t r = 0; r < a.rows; ++r) f(r, a.indptr[r], a.indptr[r + 1]);
}

// The local columns [begin, end) of head h, of `cols` local columns whose first is global
// column col0 (empty when the head has none here).
struct Span {
  index_t begin, end;
};
Span head_span(index_t h, index_t head_width, index_t col0, index_t cols) {
  const index_t begin = h * head_width - col0;
  return {std::clamp(begin, index_t{0}, cols), std::clamp(begin + head_width, index_t{0}, cols)};
}

double dot(const float* __restrict x, const float* __restrict y, Span s) {
  double acc = 0.0;
  for (index_t j = s.begin; j < s.end; ++j) acc += static_cast<double>(x[j]) * y[j];
  return acc;
}

}  // namespace

void CpuBackend::do_gat_edge_scores(const CsrView& a, index_t heads, const float* s_dst, const float* s_src,
                                    float slope, float* e, const float* s_edge) {
  for_each_row(a, threads_for(edge_work(a, heads)), [&](index_t r, index_t begin, index_t end) {
    for (index_t h = 0; h < heads; ++h) {
      const float sd = s_dst[r * heads + h];
      float* __restrict eh = e + h * a.nnz;
      const float* se = s_edge ? s_edge + h * a.nnz : nullptr;
      for (index_t k = begin; k < end; ++k) {
        const float s0 = sd + s_src[a.indices[k] * heads + h];
        const float s = se ? s0 + se[k] : s0;
        eh[k] = s > 0.0f ? s : slope * s;
      }
    }
  });
}

void CpuBackend::do_gat_edge_scores_backward(const CsrView& a, index_t heads, const float* s_dst, const float* s_src,
                                             float slope, float* de, const float* s_edge) {
  for_each_row(a, threads_for(edge_work(a, heads)), [&](index_t r, index_t begin, index_t end) {
    for (index_t h = 0; h < heads; ++h) {
      const float sd = s_dst[r * heads + h];
      float* __restrict dh = de + h * a.nnz;
      const float* se = s_edge ? s_edge + h * a.nnz : nullptr;
      for (index_t k = begin; k < end; ++k) {
        const float s0 = sd + s_src[a.indices[k] * heads + h];
        if (!((se ? s0 + se[k] : s0) > 0.0f)) dh[k] *= slope;
      }
    }
  });
}

void CpuBackend::do_edge_row_max(const CsrView& a, index_t heads, const float* e, float* row_max) {
  for_each_row(a, threads_for(edge_work(a, heads)), [&](index_t r, index_t begin, index_t end) {
    for (index_t h = 0; h < heads; ++h) {
      const float* __restrict eh = e + h * a.nnz;
      float m = -std::numeric_limits<float>::infinity();
      for (index_t k = begin; k < end; ++k) m = std::max(m, eh[k]);
      row_max[r * heads + h] = m;
    }
  });
}

void CpuBackend::do_edge_softmax_exp(const CsrView& a, index_t heads, const float* row_max, float* e,
                                     float* row_sum) {
  // exp costs a few memory-bound elements.
  for_each_row(a, threads_for(4 * edge_work(a, heads)), [&](index_t r, index_t begin, index_t end) {
    for (index_t h = 0; h < heads; ++h) {
      const float m = row_max[r * heads + h];
      float* __restrict eh = e + h * a.nnz;
      double sum = 0.0;
      for (index_t k = begin; k < end; ++k) {
        eh[k] = std::exp(eh[k] - m);
        sum += eh[k];
      }
      row_sum[r * heads + h] = static_cast<float>(sum);
    }
  });
}

void CpuBackend::do_edge_softmax_normalize(const CsrView& a, index_t heads, const float* row_sum, float* e) {
  for_each_row(a, threads_for(edge_work(a, heads)), [&](index_t r, index_t begin, index_t end) {
    for (index_t h = 0; h < heads; ++h) {
      const float s = row_sum[r * heads + h];
      float* __restrict eh = e + h * a.nnz;
#pragma omp simd
      for (index_t k = begin; k < end; ++k) eh[k] /= s;
    }
  });
}

void CpuBackend::do_edge_dropout(const CsrView& a, index_t heads, float p, DropoutKey key, index_t row0,
                                 index_t col0, float* e, index_t head0, index_t total_heads) {
  if (p == 0.0f) return;  // every edge kept, scaled by 1
  const float scale = 1.0f / (1.0f - p);
  // A Philox call per entry and head: the columns of a sparse row are too scattered to share the
  // four words of one call, as dense dropout does.
  for_each_row(a, threads_for(8 * edge_work(a, heads)), [&](index_t r, index_t begin, index_t end) {
    for (index_t h = 0; h < heads; ++h) {
      const auto row = static_cast<std::uint64_t>((row0 + r) * total_heads + head0 + h);
      float* __restrict eh = e + h * a.nnz;
      for (index_t k = begin; k < end; ++k)
        eh[k] = dropout_keep(key, row, static_cast<std::uint32_t>(col0 + a.indices[k]), p) ? eh[k] * scale : 0.0f;
    }
  });
}

void CpuBackend::do_edge_softmax_backward(const CsrView& a, index_t heads, const float* alpha, const float* row_dot,
                                          float* d) {
  for_each_row(a, threads_for(edge_work(a, heads)), [&](index_t r, index_t begin, index_t end) {
    for (index_t h = 0; h < heads; ++h) {
      const float rd = row_dot[r * heads + h];
      const float* __restrict ah = alpha + h * a.nnz;
      float* __restrict dh = d + h * a.nnz;
#pragma omp simd
      for (index_t k = begin; k < end; ++k) dh[k] = ah[k] * (dh[k] - rd);
    }
  });
}

void CpuBackend::do_edge_row_sum(const CsrView& a, index_t heads, const float* x, const float* y, const index_t* perm,
                                 float* out) {
  for_each_row(a, threads_for(edge_work(a, heads)), [&](index_t r, index_t begin, index_t end) {
    for (index_t h = 0; h < heads; ++h) {
      const float* __restrict xh = x + h * a.nnz;
      const float* __restrict yh = y ? y + h * a.nnz : nullptr;
      double sum = 0.0;
      for (index_t k = begin; k < end; ++k) {
        const index_t q = perm ? perm[k] : k;
        sum += static_cast<double>(xh[q]) * (yh ? yh[q] : 1.0f);
      }
      out[r * heads + h] = static_cast<float>(sum);
    }
  });
}

void CpuBackend::do_edge_gather(index_t nnz, index_t heads, const index_t* perm, const float* src, float* dst) {
#pragma omp parallel for schedule(static) num_threads(threads_for(nnz * heads))
  for (index_t k = 0; k < nnz; ++k) {
    const index_t from = perm[k];
    for (index_t h = 0; h < heads; ++h) dst[h * nnz + k] = src[h * nnz + from];
  }
}

void CpuBackend::do_edge_dots(const CsrView& a, index_t heads, index_t head_width, index_t col0, ConstMatrixView x,
                              ConstMatrixView y, float* out) {
  for_each_row(a, threads_for(a.nnz * x.cols + edge_work(a, heads)), [&](index_t r, index_t begin, index_t end) {
    const float* xr = x.row(r);
    for (index_t k = begin; k < end; ++k) {
      const float* yr = y.row(a.indices[k]);
      for (index_t h = 0; h < heads; ++h)
        out[h * a.nnz + k] = static_cast<float>(dot(xr, yr, head_span(h, head_width, col0, x.cols)));
    }
  });
}

void CpuBackend::do_head_dots(ConstMatrixView z, const float* att, index_t heads, index_t head_width, index_t col0,
                              float* out) {
#pragma omp parallel for schedule(static) num_threads(threads_for(z.rows * (z.cols + heads)))
  for (index_t i = 0; i < z.rows; ++i)
    for (index_t h = 0; h < heads; ++h)
      out[i * heads + h] = static_cast<float>(dot(z.row(i), att, head_span(h, head_width, col0, z.cols)));
}

void CpuBackend::do_head_dots_backward(ConstMatrixView z, const float* att, index_t heads, index_t head_width,
                                       index_t col0, const float* ds, MatrixView dz, float* datt) {
  const index_t rows = z.rows, cols = z.cols;
  if (cols == 0) return;
  const index_t chunk_rows = std::max(kSumMinChunkRows, ceil_div(rows, kSumMaxRowChunks));
  const index_t row_chunks = ceil_div(rows, chunk_rows), col_blocks = ceil_div(cols, kSumColBlock);

  // Pass 1, per (row chunk, column block): dz, and the chunk's partial sums of ds·z per column,
  // in row order. A column block is walked head by head, so that ds is one number per stretch.
  std::vector<double> partial(static_cast<std::size_t>(row_chunks * cols));
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_for(rows * cols))
  for (index_t rc = 0; rc < row_chunks; ++rc) {
    for (index_t cb = 0; cb < col_blocks; ++cb) {
      const index_t j0 = cb * kSumColBlock, j1 = std::min(cols, j0 + kSumColBlock);
      double* __restrict acc = partial.data() + rc * cols;
      for (index_t i = rc * chunk_rows, i1 = std::min(rows, i + chunk_rows); i < i1; ++i) {
        const float* __restrict zr = z.row(i);
        float* __restrict dzr = dz.row(i);
        for (index_t j = j0; j < j1;) {
          const index_t h = (col0 + j) / head_width;
          const index_t stop = std::min(j1, (h + 1) * head_width - col0);
          const float g = ds[i * heads + h];
#pragma omp simd
          for (index_t jj = j; jj < stop; ++jj) {
            acc[jj] += static_cast<double>(g) * zr[jj];
            dzr[jj] += g * att[jj];
          }
          j = stop;
        }
      }
    }
  }
  // Pass 2: the chunks in chunk order, added to datt.
#pragma omp parallel for schedule(static) num_threads(threads_for(row_chunks * cols))
  for (index_t j = 0; j < cols; ++j) {
    double total = 0.0;
    for (index_t rc = 0; rc < row_chunks; ++rc) total += partial[static_cast<std::size_t>(rc * cols + j)];
    datt[j] = static_cast<float>(datt[j] + total);
  }
}

void CpuBackend::do_elu(MatrixView m) {
#pragma omp parallel for schedule(static) num_threads(threads_for(4 * m.rows * m.cols))
  for (index_t i = 0; i < m.rows; ++i) {
    float* __restrict r = m.row(i);
    for (index_t j = 0; j < m.cols; ++j)
      if (!(r[j] > 0.0f)) r[j] = std::expm1(r[j]);  // exp(x) − 1 without its cancellation near 0
  }
}

void CpuBackend::do_elu_backward(ConstMatrixView activated, MatrixView grad) {
#pragma omp parallel for schedule(static) num_threads(threads_for(grad.rows * grad.cols))
  for (index_t i = 0; i < grad.rows; ++i) {
    const float* act = activated.row(i);
    float* g = grad.row(i);
#pragma omp simd
    for (index_t j = 0; j < grad.cols; ++j) g[j] = act[j] > 0.0f ? g[j] : g[j] * (act[j] + 1.0f);
  }
}

}  // namespace plexus::cpu
