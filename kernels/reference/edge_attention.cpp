// Graph attention on an Â block's pattern (Backend::gat_edge_scores ... elu_backward in
// plexus/backend.hpp): the oracle. Rows, then heads, then a row's entries in CSR order; sums in
// double; a feature column's head found by dividing its global index, column by column.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/reference/reference_backend.hpp"

namespace plexus::reference {
namespace {

float leaky(float x, float slope) { return x > 0.0f ? x : slope * x; }

// Edge-array index of entry k for head h.
index_t at(const CsrView& a, index_t h, index_t k) { return h * a.nnz + k; }

}  // namespace

// s_dst + s_src, and the entry's own term where there is one.
float score(const CsrView& a, index_t heads, const float* s_dst, const float* s_src, const float* s_edge, index_t r,
            index_t h, index_t k) {
  const float s = s_dst[r * heads + h] + s_src[a.indices[k] * heads + h];
  return s_edge ? s + s_edge[at(a, h, k)] : s;
}

void ReferenceBackend::do_gat_edge_scores(const CsrView& a, index_t heads, const float* s_dst, const float* s_src,
                                          float slope, float* e, const float* s_edge) {
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t h = 0; h < heads; ++h)
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k)
        e[at(a, h, k)] = leaky(score(a, heads, s_dst, s_src, s_edge, r, h, k), slope);
}

void ReferenceBackend::do_gat_edge_scores_backward(const CsrView& a, index_t heads, const float* s_dst,
                                                   const float* s_src, float slope, float* de, const float* s_edge) {
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t h = 0; h < heads; ++h)
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k)
        if (!(score(a, heads, s_dst, s_src, s_edge, r, h, k) > 0.0f)) de[at(a, h, k)] *= slope;
}

void ReferenceBackend::do_edge_row_max(const CsrView& a, index_t heads, const float* e, float* row_max) {
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t h = 0; h < heads; ++h) {
      float m = -std::numeric_limits<float>::infinity();
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) m = std::max(m, e[at(a, h, k)]);
      row_max[r * heads + h] = m;
    }
}

void ReferenceBackend::do_edge_softmax_exp(const CsrView& a, index_t heads, const float* row_max, float* e,
                                           float* row_sum) {
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t h = 0; h < heads; ++h) {
      double sum = 0.0;
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
        float& v = e[at(a, h, k)];
        v = std::exp(v - row_max[r * heads + h]);
        sum += v;
      }
      row_sum[r * heads + h] = static_cast<float>(sum);
    }
}

void ReferenceBackend::do_edge_softmax_normalize(const CsrView& a, index_t heads, const float* row_sum, float* e) {
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t h = 0; h < heads; ++h)
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) e[at(a, h, k)] /= row_sum[r * heads + h];
}

void ReferenceBackend::do_edge_dropout(const CsrView& a, index_t heads, float p, DropoutKey key, index_t row0,
                                       index_t col0, float* e, index_t head0, index_t total_heads) {
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t h = 0; h < heads; ++h)
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
        const bool keep = dropout_keep(key, static_cast<std::uint64_t>((row0 + r) * total_heads + head0 + h),
                                       static_cast<std::uint32_t>(col0 + a.indices[k]), p);
        float& v = e[at(a, h, k)];
        v = keep ? static_cast<float>(v / (1.0 - p)) : 0.0f;
      }
}

void ReferenceBackend::do_edge_softmax_backward(const CsrView& a, index_t heads, const float* alpha,
                                                const float* row_dot, float* d) {
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t h = 0; h < heads; ++h)
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k)
        d[at(a, h, k)] = alpha[at(a, h, k)] * (d[at(a, h, k)] - row_dot[r * heads + h]);
}

void ReferenceBackend::do_edge_row_sum(const CsrView& a, index_t heads, const float* x, const float* y,
                                       const index_t* perm, float* out) {
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t h = 0; h < heads; ++h) {
      double sum = 0.0;
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
        const index_t q = at(a, h, perm ? perm[k] : k);
        sum += static_cast<double>(x[q]) * (y ? y[q] : 1.0f);
      }
      out[r * heads + h] = static_cast<float>(sum);
    }
}

void ReferenceBackend::do_edge_gather(index_t nnz, index_t heads, const index_t* perm, const float* src, float* dst) {
  for (index_t h = 0; h < heads; ++h)
    for (index_t k = 0; k < nnz; ++k) dst[h * nnz + k] = src[h * nnz + perm[k]];
}

void ReferenceBackend::do_edge_dots(const CsrView& a, index_t heads, index_t head_width, index_t col0,
                                    ConstMatrixView x, ConstMatrixView y, float* out) {
  std::vector<double> sum(static_cast<std::size_t>(heads));
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (index_t j = 0; j < x.cols; ++j)
        sum[(col0 + j) / head_width] += static_cast<double>(x.row(r)[j]) * y.row(a.indices[k])[j];
      for (index_t h = 0; h < heads; ++h) out[at(a, h, k)] = static_cast<float>(sum[h]);
    }
}

void ReferenceBackend::do_head_dots(ConstMatrixView z, const float* att, index_t heads, index_t head_width,
                                    index_t col0, float* out) {
  std::vector<double> sum(static_cast<std::size_t>(heads));
  for (index_t i = 0; i < z.rows; ++i) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (index_t j = 0; j < z.cols; ++j) sum[(col0 + j) / head_width] += static_cast<double>(z.row(i)[j]) * att[j];
    for (index_t h = 0; h < heads; ++h) out[i * heads + h] = static_cast<float>(sum[h]);
  }
}

void ReferenceBackend::do_head_dots_backward(ConstMatrixView z, const float* att, index_t heads, index_t head_width,
                                             index_t col0, const float* ds, MatrixView dz, float* datt) {
  for (index_t j = 0; j < z.cols; ++j) {
    const index_t h = (col0 + j) / head_width;
    double sum = 0.0;
    for (index_t i = 0; i < z.rows; ++i) {
      const float g = ds[i * heads + h];
      sum += static_cast<double>(g) * z.row(i)[j];
      dz.row(i)[j] += g * att[j];
    }
    datt[j] = static_cast<float>(datt[j] + sum);
  }
}

void ReferenceBackend::do_elu(MatrixView m) {
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = 0; j < m.cols; ++j) {
      float& v = m.row(i)[j];
      if (!(v > 0.0f)) v = std::expm1(v);  // exp(v) − 1 without its cancellation near 0
    }
}

void ReferenceBackend::do_elu_backward(ConstMatrixView activated, MatrixView grad) {
  for (index_t i = 0; i < grad.rows; ++i)
    for (index_t j = 0; j < grad.cols; ++j)
      if (!(activated.row(i)[j] > 0.0f)) grad.row(i)[j] *= activated.row(i)[j] + 1.0f;
}

}  // namespace plexus::reference
