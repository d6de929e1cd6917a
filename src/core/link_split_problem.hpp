#pragma once
// The checks of validate_link_split (plexus/link_split.hpp) over any source of edges: what the
// prepare on ranks runs against the rows each rank holds.
#include <cstdint>
#include <functional>
#include <string>

#include "plexus/link_split.hpp"

namespace plexus {

// The first problem of `s` against a graph of `num_nodes` nodes whose stored edges `has_edge`
// knows (validate_link_split's checks and words), "" when none. Over a slice of the rows,
// has_edge(u, v) answers false for a row another rank holds: that rank finds the problem.
std::string link_split_problem(const LinkSplit& s, index_t num_nodes, bool directed,
                               const std::function<bool(std::int64_t, std::int64_t)>& has_edge);

}  // namespace plexus
