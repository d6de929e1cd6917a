// Checks of a slice of a graph's rows (partition/slice_checks.hpp).
#include "partition/slice_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace plexus::detail {

std::string check_slice_edges(const GraphSlice& s) {
  const index_t rows = s.rows.size();
  if (static_cast<index_t>(s.indptr.size()) != rows + 1 || s.indptr.front() != 0 ||
      s.indptr.back() != static_cast<index_t>(s.indices.size()))
    return "GraphSlice.indptr: expected rows + 1 entries from 0 to the number of indices";
  for (index_t i = 0; i < rows; ++i)
    if (s.indptr[i + 1] < s.indptr[i]) return "GraphSlice.indptr: not monotone at row " + std::to_string(s.rows.begin + i);
  for (std::size_t k = 0; k < s.indices.size(); ++k)
    if (s.indices[k] < 0 || s.indices[k] >= s.num_nodes)
      return "GraphSlice.indices: node id " + std::to_string(s.indices[k]) + " out of range [0, num_nodes = " +
             std::to_string(s.num_nodes) + ")";
  if (s.weighted != !s.values.empty() && !(s.weighted && s.indices.empty()))
    return "GraphSlice.values: expected one value per index exactly when weighted";
  if (s.weighted && s.values.size() != s.indices.size()) return "GraphSlice.values: expected one value per index";
  for (float v : s.values)
    if (!std::isfinite(v)) return "GraphSlice.values: non-finite edge weight";
  return {};
}

std::string check_slice_nodes(const GraphSlice& s) {
  const index_t rows = s.rows.size();
  if (static_cast<index_t>(s.features.size()) != rows * s.num_features)
    return "GraphSlice.features: expected rows x num_features values";
  for (float v : s.features)
    if (!std::isfinite(v)) return "GraphSlice.features: non-finite value";
  if (static_cast<index_t>(s.labels.size()) != rows) return "GraphSlice.labels: expected one label per row";
  for (index_t i = 0; i < rows; ++i)
    if (s.labels[i] < -1 || s.labels[i] >= s.num_classes)
      return "GraphSlice.labels: label " + std::to_string(s.labels[i]) + " at node " + std::to_string(s.rows.begin + i) +
             " out of range [-1, num_classes)";
  for (const auto* m : {&s.train_mask, &s.val_mask, &s.test_mask}) {
    if (static_cast<index_t>(m->size()) != rows) return "GraphSlice masks: expected one entry per row";
    for (std::uint8_t b : *m)
      if (b > 1) return "GraphSlice masks: expected 0 or 1";
  }
  if (!s.node_weights.empty() && static_cast<index_t>(s.node_weights.size()) != rows)
    return "GraphSlice.node_weights: expected one weight per row";
  for (float w : s.node_weights)
    if (!std::isfinite(w) || w < 0) return "GraphSlice.node_weights: expected finite weights >= 0";
  if (!s.node_ids.empty() && static_cast<index_t>(s.node_ids.size()) != rows)
    return "GraphSlice.node_ids: expected one id per row";
  return {};
}

std::string check_slice_edge_features(const GraphSlice& s) {
  const index_t d = s.num_edge_features;
  if (d < 0 || s.edge_features.size() != s.indices.size() * static_cast<std::size_t>(d))
    return "GraphSlice.edge_features: " + std::to_string(s.edge_features.size()) + " values for " +
           std::to_string(s.indices.size()) + " entries of " + std::to_string(d);
  for (std::size_t k = 0; k < s.edge_features.size(); ++k)
    if (!std::isfinite(s.edge_features[k]))
      return "GraphSlice.edge_features: non-finite value at entry " + std::to_string(k / static_cast<std::size_t>(d)) +
             " of row run " + std::to_string(s.rows.begin);
  return {};
}

bool slice_has_edge(const GraphSlice& s, std::int64_t u, std::int64_t v) {
  if (u < s.rows.begin || u >= s.rows.end) return false;
  const auto first = s.indices.begin() + s.indptr[u - s.rows.begin], last = s.indices.begin() + s.indptr[u - s.rows.begin + 1];
  return std::find(first, last, v) != last;
}

}  // namespace plexus::detail
