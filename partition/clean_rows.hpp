#pragma once
// The row operations of cleaning a graph (private to partition/), on any run of rows: one
// process's whole graph (prepare_graph) or one rank's slice of it (prepare_graph_distributed).
// Both paths call these, so both clean every row the same way.
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus::detail {

// Rows row0 .. row0 + indptr.size() - 2 of a CSR (indptr from 0): per row, self-loops dropped,
// sorted by column, duplicates dropped (the first in row order kept, with its weight), then
// compacted in place. `values` empty = unweighted.
void dedupe_rows(index_t row0, std::vector<index_t>& indptr, std::vector<index_t>& indices, std::vector<float>& values);

// The union of two CSRs over the same rows, each row sorted and duplicate-free: A's rows
// merged with T's (T = the transposed entries), A's weight where both hold a column. Replaces
// A's arrays by the union's.
void merge_union(std::vector<index_t>& a_ptr, std::vector<index_t>& a_idx, std::vector<float>& a_val,
                 const std::vector<index_t>& t_ptr, const std::vector<index_t>& t_idx, const std::vector<float>& t_val);

}  // namespace plexus::detail
