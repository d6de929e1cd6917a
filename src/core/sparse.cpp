// Host-side sparse preparation: CSR transpose and GCN normalisation.
#include "plexus/sparse.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace plexus {

HostCsr csr_transpose(const HostCsr& a) {
  const index_t nnz = a.nnz();
  if (a.rows < 0 || a.cols < 0 || static_cast<index_t>(a.indptr.size()) != a.rows + 1 || a.indptr.front() != 0 ||
      a.indptr.back() != nnz || (!a.values.empty() && static_cast<index_t>(a.values.size()) != nnz))
    throw std::invalid_argument("csr_transpose: inconsistent CSR arrays");
  // Rows of A become column indices of Aᵀ, which are 32-bit.
  if (a.rows > std::numeric_limits<col_t>::max())
    throw std::invalid_argument("csr_transpose: more than 2^31-1 rows cannot become col_t column indices");

  HostCsr t;
  t.rows = a.cols;
  t.cols = a.rows;
  // Counting sort by column: count, prefix-sum into row pointers, then scatter. Scanning A's
  // rows in order makes each row of Aᵀ come out with sorted column indices.
  t.indptr.assign(static_cast<std::size_t>(t.rows + 1), 0);
  for (const col_t c : a.indices) {
    if (c < 0 || c >= a.cols) throw std::invalid_argument("csr_transpose: column index out of range");
    ++t.indptr[static_cast<std::size_t>(c) + 1];
  }
  for (index_t r = 0; r < t.rows; ++r) t.indptr[r + 1] += t.indptr[r];
  t.indices.resize(static_cast<std::size_t>(nnz));
  if (!a.values.empty()) t.values.resize(static_cast<std::size_t>(nnz));
  std::vector<index_t> next(t.indptr.begin(), t.indptr.end() - 1);  // write cursor per row of Aᵀ
  for (index_t i = 0; i < a.rows; ++i) {
    for (index_t p = a.indptr[i]; p < a.indptr[i + 1]; ++p) {
      const index_t q = next[static_cast<std::size_t>(a.indices[p])]++;
      t.indices[q] = static_cast<col_t>(i);
      if (!a.values.empty()) t.values[q] = a.values[p];
    }
  }
  return t;
}

HostCsr gcn_normalize(index_t num_nodes, const std::vector<index_t>& indptr, const std::vector<index_t>& indices,
                      const std::vector<float>& values) {
  const index_t n = num_nodes;
  if (n < 0) throw std::invalid_argument("gcn_normalize: negative num_nodes");
  // The result uses col_t (int32) column indices.
  if (n > std::numeric_limits<col_t>::max())
    throw std::invalid_argument("gcn_normalize: num_nodes " + std::to_string(n) +
                                " does not fit 32-bit column indices (must be < 2^31)");
  const auto nnz = static_cast<index_t>(indices.size());
  if (static_cast<index_t>(indptr.size()) != n + 1 || indptr.front() != 0 || indptr.back() != nnz ||
      (!values.empty() && static_cast<index_t>(values.size()) != nnz))
    throw std::invalid_argument("gcn_normalize: inconsistent CSR arrays");
  for (index_t i = 0; i < n; ++i)
    if (indptr[i + 1] < indptr[i]) throw std::invalid_argument("gcn_normalize: indptr is not non-decreasing");

  // Pass 1: per row, sort the off-diagonal entries by column and merge duplicates (summing
  // their weights) in place; self-loops are dropped here and re-added with weight 1 below.
  std::vector<std::pair<index_t, float>> entries(static_cast<std::size_t>(nnz));
  std::vector<index_t> kept(static_cast<std::size_t>(n), 0);  // merged off-diagonal count per row
  bool bad_index = false;
#pragma omp parallel for schedule(dynamic, 1024) reduction(|| : bad_index)
  for (index_t i = 0; i < n; ++i) {
    const index_t b = indptr[i], e = indptr[i + 1];
    index_t k = b;
    for (index_t p = b; p < e; ++p) {
      const index_t c = indices[p];
      if (c < 0 || c >= n) bad_index = true;
      if (c == i) continue;
      entries[k++] = {c, values.empty() ? 1.0f : values[p]};
    }
    std::sort(entries.begin() + b, entries.begin() + k,
              [](const auto& x, const auto& y) { return x.first < y.first; });
    index_t out = b;
    for (index_t p = b; p < k; ++p) {
      if (out > b && entries[out - 1].first == entries[p].first)
        entries[out - 1].second += entries[p].second;
      else
        entries[out++] = entries[p];
    }
    kept[i] = out - b;
  }
  if (bad_index) throw std::invalid_argument("gcn_normalize: column index out of range [0, num_nodes)");

  // Degrees of A + I, in double.
  std::vector<double> inv_sqrt_deg(static_cast<std::size_t>(n));
  bool bad_degree = false;
#pragma omp parallel for schedule(static) reduction(|| : bad_degree)
  for (index_t i = 0; i < n; ++i) {
    double d = 1.0;  // the self-loop
    for (index_t p = indptr[i]; p < indptr[i] + kept[i]; ++p) d += entries[p].second;
    if (!(d > 0.0)) bad_degree = true;
    inv_sqrt_deg[i] = 1.0 / std::sqrt(d);
  }
  if (bad_degree) throw std::invalid_argument("gcn_normalize: a row of A + I has a non-positive weight sum");

  HostCsr out;
  out.rows = out.cols = n;
  out.indptr.assign(static_cast<std::size_t>(n + 1), 0);
  for (index_t i = 0; i < n; ++i) out.indptr[i + 1] = out.indptr[i] + kept[i] + 1;
  const index_t out_nnz = out.indptr[n];
  out.indices.resize(static_cast<std::size_t>(out_nnz));
  out.values.resize(static_cast<std::size_t>(out_nnz));

  // Pass 2: write each row with its self-loop inserted at its sorted position.
#pragma omp parallel for schedule(dynamic, 1024)
  for (index_t i = 0; i < n; ++i) {
    index_t q = out.indptr[i];
    bool loop_done = false;
    auto emit = [&](index_t c, double w) {
      out.indices[q] = static_cast<col_t>(c);
      out.values[q] = static_cast<float>(w * inv_sqrt_deg[i] * inv_sqrt_deg[c]);
      ++q;
    };
    for (index_t p = indptr[i]; p < indptr[i] + kept[i]; ++p) {
      if (!loop_done && entries[p].first > i) {
        emit(i, 1.0);
        loop_done = true;
      }
      emit(entries[p].first, entries[p].second);
    }
    if (!loop_done) emit(i, 1.0);
  }
  return out;
}

}  // namespace plexus
