#pragma once
// Host-side sparse-matrix preparation (done once, before training).
#include <utility>
#include <vector>

#include "plexus/buffer.hpp"

namespace plexus {

// Aᵀ as CSR (a counting sort: O(nnz + rows + cols), column indices stay sorted per row).
HostCsr csr_transpose(const HostCsr& a);
// For `a` and its transpose `a_t` (the pattern csr_transpose gives: each row's columns sorted):
// map[q] = the entry of `a` that entry q of `a_t` is, so that an array of per-entry values of
// `a` is gathered into `a_t`'s order (GAT's attention coefficients for the backward product).
// Throws invalid_argument when `a_t` is not that transpose.
std::vector<index_t> csr_transpose_map(const HostCsr& a, const HostCsr& a_t);

// Â = D^-1/2 (A + I) D^-1/2 for a square adjacency given by global CSR arrays (int64 column
// ids, optional weights). Existing self-loops are replaced by a single loop of weight 1 and
// duplicate entries are summed, so the result is the same whether or not the input already
// had them. D is the row sum of A + I; for a directed graph the same D is used on both sides.
// A row whose sum is not positive (negative weights) is InputError("graph", "/graph/values: ...").
HostCsr gcn_normalize(index_t num_nodes, const std::vector<index_t>& indptr, const std::vector<index_t>& indices,
                      const std::vector<float>& values);

// The pieces of gcn_normalize for a slice of rows, so that ranks can normalise only the rows
// they hold (the sharded loader) with exactly the same arithmetic.
//
// Rows [row0, row0 + rows) of A with global column ids; the slice's arrays start at
// indptr[0] (which need not be 0). Per row: off-diagonal entries sorted by column with
// duplicates summed; self-loops removed.
struct MergedRows {
  index_t row0 = 0;
  std::vector<index_t> indptr;                      // rows + 1, from 0
  std::vector<std::pair<index_t, float>> entries;   // (global column, weight)
  index_t rows() const { return static_cast<index_t>(indptr.size()) - 1; }
};
MergedRows merge_rows(index_t num_nodes, index_t row0, index_t rows, const index_t* indptr, const index_t* indices,
                      const float* values);
// 1 / sqrt(row sum of A + I) for each merged row.
std::vector<double> inv_sqrt_degrees(const MergedRows& m);
// Â restricted to the merged rows and global columns [col_begin, col_end), re-indexed from
// col_begin; `inv_sqrt_deg` is indexed by global node id (all rows and columns involved).
HostCsr normalized_block(const MergedRows& m, const std::vector<double>& inv_sqrt_deg, index_t col_begin,
                         index_t col_end);

}  // namespace plexus
