// plexus::validate: the shape and semantic invariants of format v1 (docs/format-v1.md),
// checked on an in-memory GraphData. Messages name a field as GraphNames says: the format-v1
// dataset it maps to ("/graph/indptr", "/features", ...) for a graph read from a file, the
// member ("GraphData.indptr", ...) for one a library caller built.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "plexus/error.hpp"
#include "plexus/graph.hpp"

namespace plexus {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& object, const std::string& what) {
  throw InputError(where, object + ": " + what);
}

std::string str(index_t v) { return std::to_string(v); }

// The name of each field in messages.
struct Names {
  const char *num_nodes, *num_features, *num_classes, *indptr, *indices, *values, *edge_features, *features, *labels, *train, *val,
      *test, *node_ids, *node_weights;
};
constexpr Names kFileNames{"num_nodes", "num_features", "num_classes", "/graph/indptr", "/graph/indices",
                           "/graph/values", "/graph/edge_features", "/features", "/labels", "/masks/train", "/masks/val", "/masks/test",
                           "node_ids", "/node_weights"};
constexpr Names kMemoryNames{"GraphData.num_nodes", "GraphData.num_features", "GraphData.num_classes",
                             "GraphData.indptr", "GraphData.indices", "GraphData.values", "GraphData.edge_features", "GraphData.features",
                             "GraphData.labels", "GraphData.train_mask", "GraphData.val_mask",
                             "GraphData.test_mask", "GraphData.node_ids", "GraphData.node_weights"};
const Names& names_of(GraphNames names) { return names == GraphNames::Memory ? kMemoryNames : kFileNames; }
std::string str(std::size_t v) { return std::to_string(v); }

void check_length(const std::string& where, const std::string& object, std::size_t got, index_t expected,
                  const char* expected_desc) {
  if (expected < 0 || got != static_cast<std::size_t>(expected))
    fail(where, object, "expected " + str(expected) + " entries (" + expected_desc + "), got " + str(got));
}

void check_mask(const std::string& where, const std::string& object, const std::vector<std::uint8_t>& m,
                index_t n) {
  check_length(where, object, m.size(), n, "num_nodes");
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i] > 1)
      fail(where, object, "value " + std::to_string(static_cast<unsigned>(m[i])) + " at node " + str(i) +
                              ", expected 0 or 1");
}

}  // namespace

void validate(const GraphData& g, const std::string& where, GraphNames field_names) {
  const Names& nm = names_of(field_names);
  // ---- scalars ----
  if (g.num_nodes <= 0)
    fail(where, nm.num_nodes, g.num_nodes == 0 ? "empty graph (0 nodes)" : "negative (" + str(g.num_nodes) + ")");
  if (g.num_features <= 0) fail(where, nm.num_features, "must be >= 1, got " + str(g.num_features));
  if (g.num_classes <= 0) fail(where, nm.num_classes, "must be >= 1, got " + std::to_string(g.num_classes));
  const index_t n = g.num_nodes;

  // ---- CSR ----
  if (n == std::numeric_limits<index_t>::max()) fail(where, nm.num_nodes, "too large (" + str(n) + ")");
  check_length(where, nm.indptr, g.indptr.size(), n + 1, "num_nodes + 1");
  const index_t nnz = g.num_edges();
  if (g.indptr[0] != 0) fail(where, nm.indptr, "must start at 0, got " + str(g.indptr[0]));
  for (index_t i = 0; i < n; ++i)
    if (g.indptr[i + 1] < g.indptr[i])
      fail(where, nm.indptr, "not monotone: indptr[" + str(i + 1) + "] = " + str(g.indptr[i + 1]) +
                                       " < indptr[" + str(i) + "] = " + str(g.indptr[i]));
  if (g.indptr[n] != nnz)
    fail(where, nm.indptr,
         "last entry " + str(g.indptr[n]) + " != number of edges (length of " + nm.indices + ") " + str(nnz));
  for (index_t row = 0; row < n; ++row)
    for (index_t e = g.indptr[row]; e < g.indptr[row + 1]; ++e) {
      const index_t c = g.indices[e];
      if (c < 0 || c >= n)
        fail(where, nm.indices,
             "column index " + str(c) + " out of range [0, " + str(n) + ") at position " + str(e) + " (row " +
                 str(row) + ")");
    }
  if (!g.values.empty()) {
    check_length(where, nm.values, g.values.size(), nnz, "number of edges, or empty if unweighted");
    for (std::size_t e = 0; e < g.values.size(); ++e)
      if (!std::isfinite(g.values[e])) fail(where, nm.values, "non-finite value at position " + str(e));
  }
  if (g.num_edge_features < 0) fail(where, nm.edge_features, "negative width " + str(g.num_edge_features));
  if (g.num_edge_features > 0 && nnz > 0 && g.num_edge_features > std::numeric_limits<index_t>::max() / nnz)
    fail(where, nm.edge_features, "number of edges x width overflows");
  if (g.edge_features.size() != static_cast<std::size_t>(nnz * g.num_edge_features))
    fail(where, nm.edge_features,
         "expected " + str(nnz) + " edges x " + str(g.num_edge_features) + " = " + str(nnz * g.num_edge_features) +
             " values, got " + str(g.edge_features.size()));
  for (std::size_t k = 0; k < g.edge_features.size(); ++k)
    if (!std::isfinite(g.edge_features[k])) {
      const auto d = static_cast<std::size_t>(g.num_edge_features);
      fail(where, nm.edge_features,
           std::string(std::isnan(g.edge_features[k]) ? "NaN" : "Inf") + " at [" + str(k / d) + ", " + str(k % d) + "]");
    }

  // ---- features ----
  if (g.num_features > std::numeric_limits<index_t>::max() / n)
    fail(where, nm.features, "num_nodes x num_features overflows");
  const index_t nf = n * g.num_features;
  if (g.features.size() != static_cast<std::size_t>(nf))
    fail(where, nm.features,
         "expected " + str(n) + " x " + str(g.num_features) + " = " + str(nf) + " values, got " +
             str(g.features.size()));
  for (std::size_t k = 0; k < g.features.size(); ++k)
    if (!std::isfinite(g.features[k])) {
      const auto f = static_cast<std::size_t>(g.num_features);
      fail(where, nm.features,
           std::string(std::isnan(g.features[k]) ? "NaN" : "Inf") + " at [" + str(k / f) + ", " + str(k % f) + "]");
    }

  // ---- labels, masks ----
  check_length(where, nm.labels, g.labels.size(), n, "num_nodes");
  for (std::size_t i = 0; i < g.labels.size(); ++i) {
    const std::int32_t y = g.labels[i];
    if (y < -1 || y >= g.num_classes)
      fail(where, nm.labels,
           "label " + std::to_string(y) + " at node " + str(i) + " out of range [-1, num_classes = " +
               std::to_string(g.num_classes) + ")");
  }
  check_mask(where, nm.train, g.train_mask, n);
  check_mask(where, nm.val, g.val_mask, n);
  check_mask(where, nm.test, g.test_mask, n);
  if (!g.node_weights.empty()) {
    check_length(where, nm.node_weights, g.node_weights.size(), n, "num_nodes, or empty");
    for (std::size_t i = 0; i < g.node_weights.size(); ++i)
      if (!std::isfinite(g.node_weights[i]) || g.node_weights[i] < 0.0f)
        fail(where, nm.node_weights, "weight " + std::to_string(g.node_weights[i]) + " of node " + str(i) +
                                         " is not a finite number >= 0");
  }
  if (!g.node_ids.empty()) {
    check_length(where, nm.node_ids, g.node_ids.size(), n, "num_nodes, or empty");
    std::vector<std::int64_t> sorted = g.node_ids;
    std::sort(sorted.begin(), sorted.end());
    const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
    if (twice != sorted.end()) fail(where, nm.node_ids, "id " + std::to_string(*twice) + " names two nodes");
  }
}

std::string no_labelled_training_node(index_t train_nodes) {
  return train_nodes == 0 ? "empty train mask: nothing to train on"
                          : "no node of the train mask has a label (all -1): nothing to train on";
}

void require_labelled_training_node(const GraphData& g, const std::string& where, GraphNames names) {
  index_t train = 0;
  for (std::size_t i = 0; i < g.train_mask.size(); ++i) {
    if (g.train_mask[i] && g.labels[i] >= 0) return;
    train += g.train_mask[i];
  }
  fail(where, names_of(names).train, no_labelled_training_node(train));
}

}  // namespace plexus
