#pragma once
// A slice of a graph's rows (GraphSlice, plexus/prepare_distributed.hpp) checked as validate()
// checks a whole graph, in its names (private to partition/): a rank's slice in the prepare on
// P ranks, a pass's rows in the prepare in passes. Each returns "" or what is wrong.
#include <string>

#include "plexus/prepare_distributed.hpp"

namespace plexus::detail {

// The CSR: indptr (rows + 1 from 0), indices in [0, num_nodes), values (finite, when weighted).
std::string check_slice_edges(const GraphSlice& s);
// The per-node data: features (rows x num_features, finite), labels, masks, node weights, ids.
std::string check_slice_nodes(const GraphSlice& s);

}  // namespace plexus::detail
