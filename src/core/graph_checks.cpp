// The strict checks of plexus/graph_checks.hpp: an undirected graph's edges both ways, disjoint
// masks, and the same graph on every rank (a hash compared over the grid).
#include "plexus/graph_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>
#include <vector>

#include "plexus/buffer.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "core/hasher.hpp"
#include "core/rank_agreement.hpp"

namespace plexus {
namespace {

std::string number(float v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

void validate_strict(const GraphData& g, const std::string& where, GraphNames names) {
  const bool memory = names == GraphNames::Memory;
  const std::string indices = memory ? "GraphData.indices" : "/graph/indices";
  const std::string values = memory ? "GraphData.values" : "/graph/values";
  const index_t n = g.num_nodes;
  if (!g.directed) {
    // Each row's (column, value) pairs, sorted: the reverse of u -> v is looked up in row v.
    const bool weighted = !g.values.empty();
    std::vector<std::pair<index_t, float>> rows(g.indices.size());
    for (index_t e = 0; e < g.num_edges(); ++e) rows[e] = {g.indices[e], weighted ? g.values[e] : 1.0f};
    for (index_t u = 0; u < n; ++u) std::sort(rows.begin() + g.indptr[u], rows.begin() + g.indptr[u + 1]);
    for (index_t u = 0; u < n; ++u)
      for (index_t e = g.indptr[u]; e < g.indptr[u + 1]; ++e) {
        const index_t v = g.indices[e];
        const float w = weighted ? g.values[e] : 1.0f;
        const auto first = rows.begin() + g.indptr[v], last = rows.begin() + g.indptr[v + 1];
        const auto lo = std::lower_bound(first, last, std::make_pair(u, -INFINITY));
        const std::string edge = "edge " + std::to_string(u) + " -> " + std::to_string(v);
        const std::string back = std::to_string(v) + " -> " + std::to_string(u);
        if (lo == last || lo->first != u) throw InputError(where, indices + ": undirected graph, but " + edge + " has no " + back);
        bool equal = false;
        for (auto it = lo; it != last && it->first == u && !equal; ++it) equal = it->second == w;
        if (!equal)
          throw InputError(where, values + ": undirected graph, but " + edge + " has value " + number(w) + " and " +
                                      back + " has " + number(lo->second));
      }
  }
  const std::string train = memory ? "train_mask" : "/masks/train", val = memory ? "val_mask" : "/masks/val",
                    test = memory ? "test_mask" : "/masks/test";
  const std::string prefix = memory ? "GraphData." : "";
  const auto in = [&](const std::vector<std::uint8_t>& m, index_t i) { return i < static_cast<index_t>(m.size()) && m[i]; };
  for (index_t i = 0; i < n; ++i) {
    const auto both = [&](const std::string& later, const std::string& earlier) {
      throw InputError(where, prefix + later + ": node " + std::to_string(i) + " is also in " + earlier);
    };
    if (in(g.val_mask, i) && in(g.train_mask, i)) both(val, train);
    if (in(g.test_mask, i) && in(g.train_mask, i)) both(test, train);
    if (in(g.test_mask, i) && in(g.val_mask, i)) both(test, val);
  }
}

std::uint64_t graph_hash(const GraphData& g) {
  Hasher h;
  h.word(static_cast<std::uint64_t>(g.num_nodes));
  h.word(static_cast<std::uint64_t>(g.num_features));
  h.word(static_cast<std::uint64_t>(static_cast<std::int64_t>(g.num_classes)));
  h.word(g.directed ? 1 : 0);
  h.array(g.indptr);
  h.array(g.indices);
  h.array(g.values);
  h.array(g.features);
  h.array(g.labels);
  h.array(g.train_mask);
  h.array(g.val_mask);
  h.array(g.test_mask);
  h.array(g.node_ids);
  if (g.num_edge_features > 0) {  // (a graph without them hashes as before)
    h.word(static_cast<std::uint64_t>(g.num_edge_features));
    h.array(g.edge_features);
  }
  return h.value();
}

void require_same_graph(const GraphData& g, ProcessGrid& grid, const std::string& where) {
  if (grid.world().size() == 1) return;
  require_same_on_ranks(graph_hash(g), grid.world(), where, "GraphData",
                        "graphs (every rank of the grid must pass the same graph)");
}

namespace {

std::uint64_t mix(std::uint64_t u, std::uint64_t v) {
  std::uint64_t z = u * 0x9e3779b97f4a7c15ULL + v + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Σ over the ranks of `mine`, mod 2^64, exactly: the sums of its 16-bit pieces (exact as doubles
// for up to 2^37 ranks), carried.
std::uint64_t sum_mod64(std::uint64_t mine, Communicator& world) {
  double piece[4];
  for (int k = 0; k < 4; ++k) piece[k] = static_cast<double>((mine >> (16 * k)) & 0xffff);
  world.all_reduce(piece, 4, ReduceOp::Sum);
  std::uint64_t total = 0;
  for (int k = 0; k < 4; ++k) total += static_cast<std::uint64_t>(piece[k]) << (16 * k);
  return total;
}

}  // namespace

void validate_strict(const GnnShards& s, bool directed, ProcessGrid& grid, const std::string& where) {
  Communicator& world = grid.world();
  // Masks: this rank's label rows; the lowest node in two of them over all ranks, and which two.
  const char* pairs[3][2] = {{"/masks/val", "/masks/train"}, {"/masks/test", "/masks/train"}, {"/masks/test", "/masks/val"}};
  double worst = -1e300;  // max of -(node * 3 + pair)
  const auto at = [](const std::vector<std::uint8_t>& m, std::size_t k) { return k < m.size() && m[k]; };
  for (std::size_t k = 0; k < s.train.size() || k < s.val.size() || k < s.test.size(); ++k) {
    const double node = static_cast<double>(s.label_ids.empty() ? s.label_rows.begin + static_cast<index_t>(k)
                                                                 : s.label_ids[k]);
    const bool hit[3] = {at(s.val, k) && at(s.train, k), at(s.test, k) && at(s.train, k), at(s.test, k) && at(s.val, k)};
    for (int p = 0; p < 3; ++p)
      if (hit[p]) worst = std::max(worst, -(node * 3 + p));
  }
  // Symmetry: Σ h(u, v) over the entries of every rank's layer-0 block equals Σ h(v, u) when the
  // pattern is symmetric (every block is held by as many ranks as every other).
  std::uint64_t diff = 0;
  if (!directed && !s.shape_only && !s.adj_of_layer.empty()) {
    const auto b = static_cast<std::size_t>(s.adj_of_layer[0]);
    const HostCsr& a = s.adj[b];
    const AdjBlockRange& range = s.adj_blocks[b];
    const std::vector<index_t>* row_ids = b < s.adj_row_ids.size() && !s.adj_row_ids[b].empty() ? &s.adj_row_ids[b] : nullptr;
    const std::vector<index_t>* col_ids = b < s.adj_col_ids.size() && !s.adj_col_ids[b].empty() ? &s.adj_col_ids[b] : nullptr;
    const index_t first_row = range.part_rows.begin - range.rows.begin;  // a sharded block holds part of its rows
    for (index_t r = 0; r < a.rows; ++r) {
      const index_t br = first_row + r;
      const auto u = static_cast<std::uint64_t>(row_ids ? (*row_ids)[br] : range.rows.begin + br);
      for (index_t e = a.indptr[r]; e < a.indptr[r + 1]; ++e) {
        const index_t c = a.indices[e];
        const auto v = static_cast<std::uint64_t>(col_ids ? (*col_ids)[c] : range.cols.begin + c);
        diff += mix(u, v) - mix(v, u);
      }
    }
  }
  double found = worst;
  world.all_reduce(&found, 1, ReduceOp::Max);
  const std::uint64_t total = sum_mod64(diff, world);
  if (found > -1e300) {
    const auto code = static_cast<long long>(-found);
    const auto pair = pairs[code % 3];
    throw InputError(where, std::string(pair[0]) + ": node " + std::to_string(code / 3) + " is also in " + pair[1]);
  }
  if (total != 0) throw InputError(where, "/graph/indices: undirected graph, but an edge is stored one way only");
}

}  // namespace plexus
