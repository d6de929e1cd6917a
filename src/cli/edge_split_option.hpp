#pragma once
// `--edge-split TRAIN,VAL,TEST` of `convert edgelist` and `generate sbm --task link`, and the
// writing of a graph with its own link split (docs/format-v1.md, "Link splits"), which
// `--edge-split-column` shares.
#include <cstdint>
#include <string>

#include "plexus/convert.hpp"
#include "plexus/io.hpp"

namespace plexus::cli {

// The shares: TRAIN,VAL,TEST adding up to 1 (every link in one split), VAL + TEST above 0.
// InputError("--edge-split", ...) otherwise.
SplitFractions parse_edge_split(const std::string& text);

// g's links split with `seed` (random_link_split: g is left with the training links).
// InputError("--edge-split", ...) when the split would hold out no link of `what` (too few
// links), or the graph is too dense for the negatives.
LinkSplit draw_edge_split(GraphData& g, const SplitFractions& shares, std::uint64_t seed, const std::string& what);

// Writes g (the training links), `names` and the split to `out` and prints what was held out.
void write_with_link_split(const GraphData& g, const NodeNames& names, const LinkSplit& held_out, const std::string& out);

}  // namespace plexus::cli
