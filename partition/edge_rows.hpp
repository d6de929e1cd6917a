#pragma once
// Edge feature rows carried through a prepare (private to partition/): every entry of the
// prepared graph takes the row of the input edge it came from, found by looking the edge up in
// the input — so the moves of cleaning and renumbering stay as they are, rows of any width or
// none. One lookup for the prepare in one process (carried_edge_features) and on P ranks
// (carry_edge_features_on_ranks, which asks the rank holding the input row).
//
// Which row an entry (u, v) takes: the first stored row of u -> v in row order (cleaning keeps
// the first of duplicates, with its weight), else — an entry symmetrizing added — the first of
// v -> u (as PyG's to_undirected copies edge_attr to the reversed edges).
#include <utility>
#include <vector>

#include "plexus/graph.hpp"
#include "plexus/prepare_distributed.hpp"
#include "src/comm/rank_exchange.hpp"

namespace plexus::detail {

// Rows [row0, row0 + indptr.size() - 1) of a CSR (indptr from 0), each searchable by column:
// 16 bytes per stored edge.
class EdgeRowIndex {
 public:
  EdgeRowIndex(index_t row0, const std::vector<index_t>& indptr, const std::vector<index_t>& indices);
  // The position (in the CSR) of the first stored u -> v, or -1; u must be one of the rows.
  index_t find(index_t u, index_t v) const;

 private:
  index_t row0_;
  const std::vector<index_t>& indptr_;
  std::vector<std::pair<index_t, index_t>> by_col_;  // (column, position), each row's run sorted
};

// The rows of `out`'s entries (`width` floats each), `in_rows` being the rows of the input
// edges `index` indexes (the whole input graph); out's node q is the input's node source_of[q].
// A logic_error when an entry comes from no input edge either way.
std::vector<float> carried_edge_features(const EdgeRowIndex& index, const std::vector<float>& in_rows, index_t width,
                                         const GraphData& out, const std::vector<index_t>& source_of);

// The same on P ranks: `index` and `in_rows` are this rank's input rows (whose owners
// `input_owner` gives), `out` this rank's output rows [out_rows) whose columns are positions of
// the new order, `source_of` the whole order's inverse (the input node at each position). Two
// exchanges per direction in rounds of at most `round` items: each entry asks the rank holding
// its input row, which answers with the row (or that it has none). Collective.
std::vector<float> carry_edge_features_on_ranks(const comm::Ranks& ranks, const EdgeRowIndex& index,
                                                const std::vector<float>& in_rows, index_t width,
                                                const CsrSlice<index_t>& out, Range out_rows,
                                                const std::vector<index_t>& source_of,
                                                const comm::RowOwners& input_owner, index_t round);

}  // namespace plexus::detail
