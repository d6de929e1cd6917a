// validate_link_split (plexus/link_split.hpp): a link split against the graph message passing
// sees. Beside validate (graph_validate.cpp): what a file's /links claims is checked against its
// /graph before anything trains on it.
#include <algorithm>
#include <functional>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/link_split.hpp"
#include "src/core/link_split_problem.hpp"

namespace plexus {

namespace {

// Whether v is in row u of the graph (rows need not be sorted: a scan of u's row).
bool has_edge(const GraphData& g, std::int64_t u, std::int64_t v) {
  const auto b = g.indices.begin() + g.indptr[static_cast<std::size_t>(u)],
             e = g.indices.begin() + g.indptr[static_cast<std::size_t>(u) + 1];
  return std::find(b, e, v) != e;
}

struct PairHash {
  std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const noexcept {
    return std::hash<std::int64_t>()(p.first * 0x9E3779B97F4A7C15LL ^ p.second);
  }
};

}  // namespace

void validate_link_split(const GraphData& g, const LinkSplit& s, const std::string& where) {
  const std::string why = link_split_problem(s, g.num_nodes, g.directed,
                                             [&](std::int64_t u, std::int64_t v) { return has_edge(g, u, v); });
  if (!why.empty()) throw InputError(where, why);
}

std::string link_split_problem(const LinkSplit& s, index_t num_nodes, bool directed,
                               const std::function<bool(std::int64_t, std::int64_t)>& has_edge) {
  const struct {
    const char* name;
    const NodePairList* pairs;
    bool negative;
  } lists[] = {{"/links/val_pos", &s.val_pos, false},
               {"/links/val_neg", &s.val_neg, true},
               {"/links/test_pos", &s.test_pos, false},
               {"/links/test_neg", &s.test_neg, true}};
  // The held-out links, both directions when undirected: no negative may be one.
  std::unordered_set<std::pair<std::int64_t, std::int64_t>, PairHash> held_out;
  const auto pair_text = [](std::size_t k, std::int64_t u, std::int64_t v) {
    return "pair " + std::to_string(k + 1) + " (" + std::to_string(u) + ", " + std::to_string(v) + ")";
  };
  if (s.negatives_per_link < 0)
    return "negatives_per_link " + std::to_string(s.negatives_per_link) + " is negative";
  if (s.negatives_per_link > 0)
    for (const auto& [pos, neg, name] : {std::tuple{&s.val_pos, &s.val_neg, "/links/val_neg"},
                                         std::tuple{&s.test_pos, &s.test_neg, "/links/test_neg"}})
      if (neg->size() != pos->size() * static_cast<std::size_t>(s.negatives_per_link))
        return std::string(name) + ": " + std::to_string(neg->size()) + " negatives for " + std::to_string(pos->size()) +
               " links, negatives_per_link " + std::to_string(s.negatives_per_link) + " needs " +
               std::to_string(pos->size() * static_cast<std::size_t>(s.negatives_per_link));
  for (const auto& l : lists) {
    if (l.pairs->u.size() != l.pairs->v.size())
      return std::string(l.name) + ": " + std::to_string(l.pairs->u.size()) + " first and " +
             std::to_string(l.pairs->v.size()) + " second nodes";
    for (std::size_t k = 0; k < l.pairs->size(); ++k) {
      const std::int64_t u = l.pairs->u[k], v = l.pairs->v[k];
      if (u < 0 || u >= num_nodes || v < 0 || v >= num_nodes)
        return std::string(l.name) + ": " + pair_text(k, u, v) + " names a node outside [0, " +
               std::to_string(num_nodes) + ")";
      if (s.as_published) continue;  // a benchmark's split as published: ranges only
      if (has_edge(u, v) || (!directed && has_edge(v, u)))
        return std::string(l.name) + ": " + pair_text(k, u, v) + " is an edge of /graph" +
               (l.negative ? ": a negative must be no link" : ": message passing would see the held-out link");
      if (!l.negative) {
        held_out.insert({u, v});
        if (!directed) held_out.insert({v, u});
      }
    }
  }
  for (const auto& l : lists)
    if (l.negative && !s.as_published)
      for (std::size_t k = 0; k < l.pairs->size(); ++k)
        if (held_out.count({l.pairs->u[k], l.pairs->v[k]}))
          return std::string(l.name) + ": " + pair_text(k, l.pairs->u[k], l.pairs->v[k]) +
                 " is a held-out link: a negative must be no link";
  return "";
}

}  // namespace plexus
