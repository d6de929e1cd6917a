// build_graph: a GraphData from edge and node arrays named by the caller's own ids
// (plexus/convert.hpp) — the id map, symmetrising, deduplication and sorting every embedding
// program would otherwise write, with errors that name the array and the position.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/convert/graph_build.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"

namespace plexus {

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& what) { throw InputError(field, what); }

std::string pos(std::size_t k) { return " at position " + std::to_string(k); }

}  // namespace

GraphData build_graph(const EdgeArrays& edges, const NodeArrays& nodes, const GraphBuildOptions& options) {
  const std::size_t m = edges.src.size();
  if (edges.dst.size() != m)
    fail("EdgeArrays.dst", std::to_string(edges.dst.size()) + " entries, EdgeArrays.src has " + std::to_string(m));
  const bool weighted = !edges.weights.empty();
  if (weighted && edges.weights.size() != m)
    fail("EdgeArrays.weights", std::to_string(edges.weights.size()) + " entries for " + std::to_string(m) +
                                   " edges (one per edge, or none)");
  for (std::size_t k = 0; weighted && k < m; ++k)
    if (!std::isfinite(edges.weights[k])) fail("EdgeArrays.weights", "non-finite weight" + pos(k));

  // The nodes: given, or the ids the edges name, ascending.
  std::vector<std::int64_t> ids = nodes.ids;
  if (ids.empty()) {
    if (!nodes.features.empty() || !nodes.labels.empty() || !nodes.split.empty())
      fail("NodeArrays.ids", "empty, but features, labels or a split are given: name the nodes they belong to");
    ids.reserve(2 * m);
    ids.insert(ids.end(), edges.src.begin(), edges.src.end());
    ids.insert(ids.end(), edges.dst.begin(), edges.dst.end());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  const auto n = static_cast<index_t>(ids.size());
  if (n == 0) fail("EdgeArrays.src", "no edges and no nodes: an empty graph");
  std::unordered_map<std::int64_t, index_t> row;
  row.reserve(ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k)
    if (!row.emplace(ids[k], static_cast<index_t>(k)).second)
      fail("NodeArrays.ids", "id " + std::to_string(ids[k]) + " given twice (" + pos(k).substr(1) + ")");

  std::vector<build::Edge> list;
  list.reserve(m);
  for (std::size_t k = 0; k < m; ++k) {
    const auto u = row.find(edges.src[k]), v = row.find(edges.dst[k]);
    if (u == row.end()) fail("EdgeArrays.src", "id " + std::to_string(edges.src[k]) + pos(k) + " is not one of NodeArrays.ids");
    if (v == row.end()) fail("EdgeArrays.dst", "id " + std::to_string(edges.dst[k]) + pos(k) + " is not one of NodeArrays.ids");
    list.push_back({u->second, v->second, static_cast<index_t>(k), weighted ? edges.weights[k] : 1.0f});
  }
  GraphData g;
  build::csr_from_edges(g, n, list, options.symmetrize, weighted);

  // Features: given, or log(1 + degree).
  if (nodes.num_features > 0 || !nodes.features.empty()) {
    if (nodes.num_features <= 0) fail("NodeArrays.num_features", "0 with features given");
    if (nodes.features.size() != static_cast<std::size_t>(n * nodes.num_features))
      fail("NodeArrays.features", std::to_string(nodes.features.size()) + " values, expected " + std::to_string(n) +
                                      " nodes x " + std::to_string(nodes.num_features) + " features");
    for (std::size_t k = 0; k < nodes.features.size(); ++k)
      if (!std::isfinite(nodes.features[k]))
        fail("NodeArrays.features", "non-finite value at node " + std::to_string(ids[k / static_cast<std::size_t>(nodes.num_features)]) +
                                        ", feature " + std::to_string(k % static_cast<std::size_t>(nodes.num_features)));
    g.num_features = nodes.num_features;
    g.features = nodes.features;
  } else {
    build::synthetic_features(g, SyntheticFeatures::kDegree, 1, 0);
  }

  // Labels, classes and the split.
  std::int32_t top = -1;
  if (!nodes.labels.empty()) {
    if (nodes.labels.size() != ids.size())
      fail("NodeArrays.labels", std::to_string(nodes.labels.size()) + " labels for " + std::to_string(n) + " nodes");
    for (std::size_t k = 0; k < nodes.labels.size(); ++k) {
      if (nodes.labels[k] < -1 || (nodes.num_classes > 0 && nodes.labels[k] >= nodes.num_classes))
        fail("NodeArrays.labels", "label " + std::to_string(nodes.labels[k]) + " of node " + std::to_string(ids[k]) +
                                      " outside [-1, " +
                                      (nodes.num_classes > 0 ? std::to_string(nodes.num_classes) : "...") + ")");
      top = std::max(top, nodes.labels[k]);
    }
  }
  build::unlabelled(g, nodes.num_classes > 0 ? nodes.num_classes : std::max(top + 1, 1));
  if (!nodes.labels.empty()) g.labels = nodes.labels;
  if (!nodes.split.empty()) {
    if (nodes.split.size() != ids.size())
      fail("NodeArrays.split", std::to_string(nodes.split.size()) + " entries for " + std::to_string(n) + " nodes");
    for (std::size_t k = 0; k < nodes.split.size(); ++k) {
      const std::uint8_t s = nodes.split[k];
      if (s > 3)
        fail("NodeArrays.split", "value " + std::to_string(s) + " of node " + std::to_string(ids[k]) +
                                     " (0 none, 1 train, 2 validation, 3 test)");
      g.train_mask[k] = s == 1;
      g.val_mask[k] = s == 2;
      g.test_mask[k] = s == 3;
    }
  }
  g.node_ids = std::move(ids);
  validate(g, "build_graph", GraphNames::Memory);
  return g;
}

}  // namespace plexus
