#pragma once
// `--edge-split TRAIN,VAL,TEST` of `convert edgelist` and `generate sbm --task link`: a graph's
// links split for the link task (random_link_split, PyG's RandomLinkSplit) and written as a file
// with its own link split (docs/format-v1.md, "Link splits").
#include <cstdint>
#include <string>

#include "plexus/convert.hpp"
#include "plexus/io.hpp"

namespace plexus::cli {

// The shares: TRAIN,VAL,TEST adding up to 1 (every link in one split), VAL + TEST above 0.
// InputError("--edge-split", ...) otherwise.
SplitFractions parse_edge_split(const std::string& text);

// Splits g's links with `seed` (g is left with the training links), writes g, `names` and the split to
// `out` and prints what was held out. InputError("--edge-split", ...) when the split would hold
// out no link of `what` (too few links), or the graph is too dense for the negatives.
void write_with_edge_split(GraphData& g, const NodeNames& names, const SplitFractions& shares, std::uint64_t seed,
                           const std::string& what, const std::string& out);

}  // namespace plexus::cli
