#pragma once
// A slice of a graph's rows (GraphSlice, plexus/prepare_distributed.hpp) checked as validate()
// checks a whole graph, in its names (private to partition/): a rank's slice in the prepare on
// P ranks, a pass's rows in the prepare in passes. Each returns "" or what is wrong.
#include <cstdint>
#include <string>

#include "plexus/prepare_distributed.hpp"

namespace plexus::detail {

// The CSR: indptr (rows + 1 from 0), indices in [0, num_nodes), values (finite, when weighted).
std::string check_slice_edges(const GraphSlice& s);
// The per-node data: features (rows x num_features, finite), labels, masks, node weights, ids.
std::string check_slice_nodes(const GraphSlice& s);
// The edge feature rows: num_edge_features finite values per index (none when it is 0).
std::string check_slice_edge_features(const GraphSlice& s);
// Whether the slice stores the edge u -> v (u one of its rows; false for another's): a scan of
// row u, whose columns need not be sorted.
bool slice_has_edge(const GraphSlice& s, std::int64_t u, std::int64_t v);

}  // namespace plexus::detail
