#pragma once
// Link prediction's split of a graph's links into training, validation and test (PyG's
// RandomLinkSplit): what the link task (TrainConfig::task, plexus/train.hpp) trains and
// evaluates on when a graph brings no split of its own. docs/link-prediction.md.
#include <cstdint>
#include <string>

#include "plexus/graph.hpp"

namespace plexus {

// Held-out links and their negatives (validation and test), as PyG's RandomLinkSplit gives them.
struct LinkSplit {
  NodePairList val_pos, val_neg, test_pos, test_neg;
  // A published benchmark's split taken as it is (OGB's; read_ogb_links): a held-out link may
  // also be a link of the graph (ogbl-collab's repeat collaborations) and a negative a link
  // (ogbl-citation2's uniform targets). The checks keep node ranges and counts only.
  bool as_published = false;
  // > 0: each split's negatives are this many per held-out link, row-major (val_neg pairs
  // i·K .. i·K + K - 1 are val_pos link i's own, as ogbl-citation2's): the MRR ranks each link
  // against its own (link task). 0: one shared set of any size.
  std::int64_t negatives_per_link = 0;
};
// PyG's RandomLinkSplit(num_val=val, num_test=test, is_undirected=!g.directed) with one
// negative per held-out link. The candidate links are the graph's edges without self-loops,
// each undirected edge once (u < v); in a Philox order of (seed, edge) the first
// ⌊val·E⌋ + ⌊test·E⌋ are held out (validation, then test), and `g` keeps the rest — both
// directions of an undirected one, values included — so that message passing never sees a
// held-out link. The negatives are distinct pairs that are no edge of the input and no
// self-loop (u < v when undirected), drawn uniformly by rejection, as many for each split as
// it holds links. InputError("LinkSplit", ...) for fractions outside [0, 1) or summing to 1 or
// more, or a graph too dense to have that many non-edges. Deterministic for a seed.
LinkSplit random_link_split(GraphData& g, double val, double test, std::uint64_t seed);
// The same with the held-out links given (an edge list's split column): each a link of `g`
// (either direction when undirected; no self-loop; none twice), each undirected one written with
// its smaller node first; `g` keeps the rest and the negatives are drawn as above with `seed`.
// InputError("LinkSplit", "<validation|test> link k (u, v) ...") naming the first that is not.
LinkSplit given_link_split(GraphData& g, const NodePairList& val, const NodePairList& test, std::uint64_t seed);

// Checks a split against the graph message passing sees (`g`: the training links only, as a
// file with /links holds it; docs/format-v1.md, "Link splits"): every pair's nodes in range, no
// held-out link an edge of `g` (message passing would see it), no negative an edge of `g` or a
// held-out link (either direction when undirected) — these two unless as_published — and with
// negatives_per_link K, K negatives for each held-out link. InputError(where, "/links/<split>: pair k
// (u, v) ...") naming the first problem.
void validate_link_split(const GraphData& g, const LinkSplit& s, const std::string& where);

}  // namespace plexus
