// --edge-split and the writing of a split graph (edge_split_option.hpp).
#include "src/cli/edge_split_option.hpp"

#include <fmt/format.h>

#include <cmath>

#include "plexus/error.hpp"
#include "plexus/link_split.hpp"

namespace plexus::cli {

SplitFractions parse_edge_split(const std::string& text) {
  SplitFractions f;
  try {
    f = parse_split_fractions(text);
  } catch (const InputError& e) {
    throw InputError("--edge-split", e.what());
  }
  if (std::abs(f.train + f.val + f.test - 1.0) > 1e-9)
    throw InputError("--edge-split", "the fractions must add up to 1 (every link in one split), got '" + text + "'");
  if (f.val + f.test <= 0) throw InputError("--edge-split", "holds out no link (VAL and TEST are 0): '" + text + "'");
  return f;
}

LinkSplit draw_edge_split(GraphData& g, const SplitFractions& shares, std::uint64_t seed, const std::string& what) {
  const index_t links = g.num_edges();
  LinkSplit held_out = random_link_split(g, shares.val, shares.test, seed);
  if (held_out.val_pos.size() + held_out.test_pos.size() == 0)
    throw InputError("--edge-split", fmt::format("holds out no link of {}: its {} stored edges are too few for VAL {} "
                                                 "and TEST {}",
                                                 what, links, shares.val, shares.test));
  return held_out;
}

void write_with_link_split(const GraphData& g, const NodeNames& names, const LinkSplit& held_out, const std::string& out) {
  write_graph_h5(g, names, held_out, out);
  if (held_out.as_published) {
    const std::string negatives =
        held_out.negatives_per_link > 0
            ? fmt::format("{} negatives each", held_out.negatives_per_link)
            : fmt::format("{} and {} shared negatives", held_out.val_neg.size(), held_out.test_neg.size());
    fmt::print("links held out as published: {} validation, {} test ({})\n", held_out.val_pos.size(),
               held_out.test_pos.size(), negatives);
    return;
  }
  fmt::print("links held out: {} validation, {} test (each with as many negatives; the graph keeps the rest)\n",
             held_out.val_pos.size(), held_out.test_pos.size());
}

}  // namespace plexus::cli
