// Host-side sparse preparation: CSR transpose and GCN normalisation.
#include "plexus/sparse.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "plexus/error.hpp"
#include "src/core/parallel_work.hpp"

namespace plexus {

std::vector<index_t> csr_transpose_map(const HostCsr& a, const HostCsr& a_t) {
  if (a_t.rows != a.cols || a_t.cols != a.rows || a_t.nnz() != a.nnz() ||
      static_cast<index_t>(a_t.indptr.size()) != a_t.rows + 1 || static_cast<index_t>(a.indptr.size()) != a.rows + 1)
    throw std::invalid_argument("csr_transpose_map: the shapes are not those of a matrix and its transpose");
  std::vector<index_t> map(static_cast<std::size_t>(a.nnz()));
  std::vector<index_t> next(a_t.indptr.begin(), a_t.indptr.end() - 1);  // write cursor per row of Aᵀ
  for (index_t i = 0; i < a.rows; ++i)
    for (index_t p = a.indptr[i]; p < a.indptr[i + 1]; ++p) {
      const col_t c = a.indices[p];
      if (c < 0 || c >= a.cols) throw std::invalid_argument("csr_transpose_map: column index out of range");
      const index_t q = next[static_cast<std::size_t>(c)]++;
      if (q >= a_t.indptr[c + 1] || a_t.indices[q] != i)
        throw std::invalid_argument("csr_transpose_map: the second matrix is not the sorted transpose of the first");
      map[static_cast<std::size_t>(q)] = p;
    }
  return map;
}

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

MergedRows merge_rows(index_t num_nodes, index_t row0, index_t rows, const index_t* indptr, const index_t* indices,
                      const float* values) {
  MergedRows m;
  m.row0 = row0;
  m.indptr.assign(static_cast<std::size_t>(rows + 1), 0);
  const index_t base = rows > 0 ? indptr[0] : 0;
  for (index_t i = 0; i < rows; ++i)
    if (indptr[i + 1] < indptr[i]) throw std::invalid_argument("indptr is not non-decreasing");
  const index_t nnz = rows > 0 ? indptr[rows] - base : 0;
  m.entries.resize(static_cast<std::size_t>(nnz));
  std::vector<index_t> kept(static_cast<std::size_t>(rows), 0);
  bool bad_index = false;
  // Per row: sort the off-diagonal entries by column and merge duplicates (summing their
  // weights) in place; self-loops are dropped here and re-added with weight 1 later.
#pragma omp parallel for schedule(dynamic, 1024) reduction(|| : bad_index) if(worth_a_team(rows + nnz))
  for (index_t i = 0; i < rows; ++i) {
    const index_t b = indptr[i] - base, e = indptr[i + 1] - base;
    index_t k = b;
    for (index_t p = b; p < e; ++p) {
      const index_t c = indices[p];
      if (c < 0 || c >= num_nodes) bad_index = true;
      if (c == row0 + i) continue;
      m.entries[k++] = {c, values ? values[p] : 1.0f};
    }
    std::sort(m.entries.begin() + b, m.entries.begin() + k,
              [](const auto& x, const auto& y) { return x.first < y.first; });
    index_t out = b;
    for (index_t p = b; p < k; ++p) {
      if (out > b && m.entries[out - 1].first == m.entries[p].first)
        m.entries[out - 1].second += m.entries[p].second;
      else
        m.entries[out++] = m.entries[p];
    }
    kept[i] = out - b;
  }
  if (bad_index) throw std::invalid_argument("column index out of range [0, num_nodes)");
  // Compact the merged rows.
  index_t q = 0;
  for (index_t i = 0; i < rows; ++i) {
    const index_t b = indptr[i] - base;
    std::copy(m.entries.begin() + b, m.entries.begin() + b + kept[i], m.entries.begin() + q);
    q += kept[i];
    m.indptr[i + 1] = q;
  }
  m.entries.resize(static_cast<std::size_t>(q));
  m.entries.shrink_to_fit();
  return m;
}

std::vector<double> inv_sqrt_degrees(const MergedRows& m) {
  const index_t rows = m.rows();
  std::vector<double> out(static_cast<std::size_t>(rows));
  index_t bad_row = rows;  // the first row whose degree is not positive
#pragma omp parallel for schedule(static) reduction(min : bad_row) if(worth_a_team(rows + static_cast<index_t>(m.entries.size())))
  for (index_t i = 0; i < rows; ++i) {
    double d = 1.0;  // the self-loop
    for (index_t p = m.indptr[i]; p < m.indptr[i + 1]; ++p) d += m.entries[p].second;
    if (!(d > 0.0)) bad_row = std::min(bad_row, i);
    out[i] = 1.0 / std::sqrt(d);
  }
  if (bad_row < rows)
    throw std::invalid_argument("row " + std::to_string(m.row0 + bad_row) +
                                " of A + I has a non-positive weight sum (negative edge weights)");
  return out;
}

HostCsr normalized_block(const MergedRows& m, const std::vector<double>& inv_sqrt_deg, index_t col_begin,
                         index_t col_end) {
  if (col_end - col_begin > std::numeric_limits<col_t>::max())
    throw std::invalid_argument("normalized_block: 2^31 or more columns do not fit col_t");
  const index_t rows = m.rows();
  HostCsr out;
  out.rows = rows;
  out.cols = col_end - col_begin;
  out.indptr.assign(static_cast<std::size_t>(rows + 1), 0);
  // Count, then fill: each row's entries in [col_begin, col_end), with the self-loop at its
  // sorted position when the diagonal falls in the block.
  const auto in_block = [&](index_t c) { return c >= col_begin && c < col_end; };
  for (index_t i = 0; i < rows; ++i) {
    index_t k = in_block(m.row0 + i) ? 1 : 0;
    for (index_t p = m.indptr[i]; p < m.indptr[i + 1]; ++p) k += in_block(m.entries[p].first);
    out.indptr[i + 1] = out.indptr[i] + k;
  }
  out.indices.resize(static_cast<std::size_t>(out.indptr[rows]));
  out.values.resize(out.indices.size());
#pragma omp parallel for schedule(dynamic, 1024) if(worth_a_team(rows + static_cast<index_t>(m.entries.size())))
  for (index_t i = 0; i < rows; ++i) {
    const index_t gi = m.row0 + i;
    index_t q = out.indptr[i];
    bool loop_done = !in_block(gi);
    auto emit = [&](index_t c, double w) {
      out.indices[q] = static_cast<col_t>(c - col_begin);
      out.values[q] = static_cast<float>(w * inv_sqrt_deg[gi] * inv_sqrt_deg[c]);
      ++q;
    };
    for (index_t p = m.indptr[i]; p < m.indptr[i + 1]; ++p) {
      const index_t c = m.entries[p].first;
      if (!loop_done && c > gi) {
        emit(gi, 1.0);
        loop_done = true;
      }
      if (in_block(c)) emit(c, m.entries[p].second);
    }
    if (!loop_done) emit(gi, 1.0);
  }
  return out;
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
  MergedRows m;
  try {
    m = merge_rows(n, 0, n, indptr.data(), indices.data(), values.empty() ? nullptr : values.data());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("gcn_normalize: ") + e.what());
  }
  std::vector<double> inv_sqrt_deg;
  try {
    inv_sqrt_deg = inv_sqrt_degrees(m);
  } catch (const std::invalid_argument& e) {  // the edge weights' fault, not the arrays'
    throw InputError("graph", std::string("/graph/values: ") + e.what());
  }
  return normalized_block(m, inv_sqrt_deg, 0, n);
}

}  // namespace plexus
