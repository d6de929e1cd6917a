// A random split of a graph's edges for link prediction (random_link_split,
// include/plexus/link_split.hpp): PyG's RandomLinkSplit, with Philox orders instead of torch's
// generator, so that a seed gives the same split on every platform.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "plexus/link_split.hpp"
#include "plexus/error.hpp"
#include "plexus/rng.hpp"

namespace plexus {

namespace {

constexpr std::uint32_t kTagLinkOrder = 0x11E5, kTagNegative = 0x11E7;

std::uint32_t lo32(std::uint64_t x) { return static_cast<std::uint32_t>(x); }
std::uint32_t hi32(std::uint64_t x) { return static_cast<std::uint32_t>(x >> 32); }

struct PairHash {
  std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const noexcept {
    const std::uint64_t h = static_cast<std::uint64_t>(p.first) * 0x9E3779B97F4A7C15ULL ^
                            (static_cast<std::uint64_t>(p.second) + 0x632BE59BD9B4E019ULL);
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};
using PairSet = std::unordered_set<std::pair<std::int64_t, std::int64_t>, PairHash>;

// A link as the split counts it: an undirected one with its smaller node first.
std::pair<std::int64_t, std::int64_t> link(std::int64_t u, std::int64_t v, bool directed) {
  return directed || u < v ? std::pair{u, v} : std::pair{v, u};
}

}  // namespace

namespace {

// The input's distinct links without self-loops (an undirected one once, whether stored both ways
// round or one), in the order first seen in the CSR, and the set of them.
struct InputLinks {
  std::vector<std::pair<std::int64_t, std::int64_t>> list;
  PairSet set;
};
InputLinks input_links(const GraphData& g) {
  InputLinks l;
  for (index_t u = 0; u < g.num_nodes; ++u)
    for (index_t e = g.indptr[static_cast<std::size_t>(u)]; e < g.indptr[static_cast<std::size_t>(u) + 1]; ++e) {
      const index_t v = g.indices[static_cast<std::size_t>(e)];
      if (u == v) continue;
      const auto k = link(u, v, g.directed);
      if (l.set.insert(k).second) l.list.push_back(k);
    }
  return l;
}

// s's held-out links (val_pos, test_pos: links of the input) leave `g`, which keeps the rest
// (both directions of an undirected link, self-loops, values, edge features); then each split's negatives:
// distinct non-edges of the input (`edges`), no self-loop, drawn uniformly by rejection.
LinkSplit hold_out(GraphData& g, const PairSet& edges, LinkSplit s, std::uint64_t seed) {
  const index_t n = g.num_nodes;
  const bool directed = g.directed;
  PairSet held;
  for (const NodePairList* p : {&s.val_pos, &s.test_pos})
    for (std::size_t k = 0; k < p->size(); ++k) held.insert({p->u[k], p->v[k]});
  if (!held.empty()) {
    std::vector<index_t> indptr{0}, indices;
    std::vector<float> values, edge_features;
    const auto width = static_cast<std::size_t>(g.num_edge_features);
    for (index_t u = 0; u < n; ++u) {
      for (index_t e = g.indptr[static_cast<std::size_t>(u)]; e < g.indptr[static_cast<std::size_t>(u) + 1]; ++e) {
        const index_t v = g.indices[static_cast<std::size_t>(e)];
        if (u != v && held.count(link(u, v, directed))) continue;
        indices.push_back(v);
        if (!g.values.empty()) values.push_back(g.values[static_cast<std::size_t>(e)]);
        const auto row = g.edge_features.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(e) * width);
        edge_features.insert(edge_features.end(), row, row + static_cast<std::ptrdiff_t>(width));
      }
      indptr.push_back(static_cast<index_t>(indices.size()));
    }
    g.indptr = std::move(indptr);
    g.indices = std::move(indices);
    g.values = std::move(values);
    g.edge_features = std::move(edge_features);
  }

  const auto n_val = static_cast<std::int64_t>(s.val_pos.size());
  const std::int64_t want = n_val + static_cast<std::int64_t>(s.test_pos.size());
  const long double pairs = static_cast<long double>(n) * static_cast<long double>(n - 1) / (directed ? 1 : 2);
  if (static_cast<long double>(want) > pairs - static_cast<long double>(edges.size()))
    throw InputError("LinkSplit", "the graph has " + std::to_string(static_cast<double>(pairs) - edges.size()) +
                                      " pairs of nodes that are no edge, fewer than the " + std::to_string(want) +
                                      " negatives the held-out links need");
  const std::uint64_t attempts = 64 * static_cast<std::uint64_t>(want) + 10000;
  PairSet drawn;
  std::uint64_t a = 0;
  for (; static_cast<std::int64_t>(drawn.size()) < want && a < attempts; ++a) {
    const Philox4x32 r = philox4x32_10(lo32(a), hi32(a), 0, kTagNegative, lo32(seed), hi32(seed));
    const auto u = static_cast<std::int64_t>(bounded_draw(r.v[0], r.v[1], static_cast<std::uint64_t>(n)));
    const auto v = static_cast<std::int64_t>(bounded_draw(r.v[2], r.v[3], static_cast<std::uint64_t>(n)));
    if (u == v) continue;
    const auto l = link(u, v, directed);
    if (edges.count(l) || !drawn.insert(l).second) continue;
    NodePairList& into = static_cast<std::int64_t>(drawn.size()) <= n_val ? s.val_neg : s.test_neg;
    into.u.push_back(l.first);
    into.v.push_back(l.second);
  }
  if (static_cast<std::int64_t>(drawn.size()) < want)
    throw InputError("LinkSplit", "drew only " + std::to_string(drawn.size()) + " of the " + std::to_string(want) +
                                      " negatives in " + std::to_string(attempts) +
                                      " tries: the graph is too dense for uniform negatives");
  return s;
}

}  // namespace

LinkSplit random_link_split(GraphData& g, double val, double test, std::uint64_t seed) {
  if (!(val >= 0 && val < 1) || !(test >= 0 && test < 1) || !(val + test < 1))
    throw InputError("LinkSplit", "the validation and test fractions must lie in [0, 1) and sum to less than 1, got " +
                                      std::to_string(val) + " and " + std::to_string(test));
  const InputLinks links = input_links(g);
  const auto total = static_cast<std::int64_t>(links.list.size());
  const auto n_val = static_cast<std::int64_t>(std::floor(val * static_cast<double>(total)));
  const auto n_test = static_cast<std::int64_t>(std::floor(test * static_cast<double>(total)));

  // Held out: the first n_val + n_test links in a Philox order of (seed, link index).
  std::vector<std::pair<std::uint64_t, std::int64_t>> order(links.list.size());
  for (std::int64_t k = 0; k < total; ++k) {
    const Philox4x32 r = philox4x32_10(lo32(static_cast<std::uint64_t>(k)), hi32(static_cast<std::uint64_t>(k)), 0,
                                       kTagLinkOrder, lo32(seed), hi32(seed));
    order[static_cast<std::size_t>(k)] = {static_cast<std::uint64_t>(r.v[0]) << 32 | r.v[1], k};
  }
  std::sort(order.begin(), order.end());
  LinkSplit s;
  for (std::int64_t i = 0; i < n_val + n_test; ++i) {
    const auto& l = links.list[static_cast<std::size_t>(order[static_cast<std::size_t>(i)].second)];
    NodePairList& into = i < n_val ? s.val_pos : s.test_pos;
    into.u.push_back(l.first);
    into.v.push_back(l.second);
  }
  return hold_out(g, links.set, std::move(s), seed);
}

LinkSplit given_link_split(GraphData& g, const NodePairList& val, const NodePairList& test, std::uint64_t seed) {
  const InputLinks links = input_links(g);
  LinkSplit s;
  PairSet seen;
  for (const auto& [name, given, into] : {std::tuple{"validation", &val, &s.val_pos}, std::tuple{"test", &test, &s.test_pos}}) {
    if (given->u.size() != given->v.size()) throw InputError("LinkSplit", std::string("the ") + name + " pairs differ in length");
    for (std::size_t k = 0; k < given->size(); ++k) {
      const std::int64_t u = given->u[k], v = given->v[k];
      const std::string which = std::string(name) + " link " + std::to_string(k + 1) + " (" + std::to_string(u) + ", " +
                                std::to_string(v) + ")";
      if (u < 0 || v < 0 || u >= g.num_nodes || v >= g.num_nodes)
        throw InputError("LinkSplit", which + " names a node outside [0, " + std::to_string(g.num_nodes) + ")");
      const auto l = link(u, v, g.directed);
      if (u == v || !links.set.count(l)) throw InputError("LinkSplit", which + " is not a link of the input (a self-loop or no edge)");
      if (!seen.insert(l).second) throw InputError("LinkSplit", which + " is held out twice");
      into->u.push_back(l.first);
      into->v.push_back(l.second);
    }
  }
  return hold_out(g, links.set, std::move(s), seed);
}

}  // namespace plexus
