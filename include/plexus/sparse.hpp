#pragma once
// Host-side sparse-matrix preparation (done once, before training).
#include "plexus/buffer.hpp"

namespace plexus {

// Aᵀ as CSR (a counting sort: O(nnz + rows + cols), column indices stay sorted per row).
HostCsr csr_transpose(const HostCsr& a);

// Â = D^-1/2 (A + I) D^-1/2 for a square adjacency given by global CSR arrays (int64 column
// ids, optional weights). Existing self-loops are replaced by a single loop of weight 1 and
// duplicate entries are summed, so the result is the same whether or not the input already
// had them. D is the row sum of A + I; for a directed graph the same D is used on both sides.
HostCsr gcn_normalize(index_t num_nodes, const std::vector<index_t>& indptr, const std::vector<index_t>& indices,
                      const std::vector<float>& values);

}  // namespace plexus
