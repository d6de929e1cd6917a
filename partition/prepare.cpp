// prepare_graph: clean → normalise → order → renumber (include/plexus/prepare.hpp).
#include "partition/bf16_features.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/progress.hpp"
#include "plexus/prepare.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/sparse.hpp"
#include "partition/clean_rows.hpp"
#include "partition/edge_rows.hpp"
#include "src/core/array_census.hpp"
#include "src/core/parallel_work.hpp"

namespace plexus {

namespace {

// Renumbers a CSR given by arrays (any index type): out row row_new[r] holds the entries of
// row r with columns col_new[c], sorted by column. One implementation for HostCsr (int32
// columns) and GraphData (int64 columns).
template <class Idx>
void permute_arrays(index_t rows, const std::vector<index_t>& indptr, const std::vector<Idx>& indices,
                    const std::vector<float>& values, const std::vector<index_t>& row_new,
                    const std::vector<index_t>& col_new, std::vector<index_t>& out_indptr, std::vector<Idx>& out_indices,
                    std::vector<float>& out_values) {
  const bool weighted = !values.empty();
  const std::vector<index_t> old_of = inverse_permutation(row_new);
  out_indptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (index_t q = 0; q < rows; ++q) out_indptr[q + 1] = out_indptr[q] + (indptr[old_of[q] + 1] - indptr[old_of[q]]);
  out_indices.resize(indices.size());
  out_values.resize(weighted ? values.size() : 0);
#pragma omp parallel if(worth_a_team(rows + static_cast<index_t>(indices.size())))
  {
    std::vector<std::pair<Idx, float>> row;
#pragma omp for schedule(dynamic, 512)
    for (index_t q = 0; q < rows; ++q) {
      const index_t r = old_of[q];
      row.clear();
      for (index_t k = indptr[r]; k < indptr[r + 1]; ++k)
        row.emplace_back(static_cast<Idx>(col_new[indices[k]]), weighted ? values[k] : 1.0f);
      std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      index_t o = out_indptr[q];
      for (const auto& [c, w] : row) {
        out_indices[o] = c;
        if (weighted) out_values[o] = w;
        ++o;
      }
    }
  }
}

template <class T>
std::vector<T> permute_rows(const std::vector<T>& v, const std::vector<index_t>& new_id, index_t width = 1) {
  std::vector<T> out(v.size());
  const auto n = static_cast<index_t>(new_id.size());
#pragma omp parallel for schedule(static) if(worth_a_team(n * width))
  for (index_t u = 0; u < n; ++u)
    std::copy_n(v.begin() + u * width, width, out.begin() + new_id[u] * width);
  return out;
}

// A's rows (sorted, unique) merged with Aᵀ's: the union, A's own weight where both exist.
void symmetrize_sorted(GraphData& g) {
  const index_t n = g.num_nodes;
  const bool weighted = !g.values.empty();
  // Aᵀ by a counting sort; scanning rows in order leaves each row of Aᵀ sorted.
  std::vector<index_t> t_ptr(static_cast<std::size_t>(n) + 1, 0);
  for (index_t v : g.indices) ++t_ptr[v + 1];
  for (index_t u = 0; u < n; ++u) t_ptr[u + 1] += t_ptr[u];
  std::vector<index_t> t_idx(g.indices.size()), cursor(t_ptr.begin(), t_ptr.end() - 1);
  std::vector<float> t_val(weighted ? g.values.size() : 0);
  for (index_t u = 0; u < n; ++u)
    for (index_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k) {
      const index_t q = cursor[g.indices[k]]++;
      t_idx[q] = u;
      if (weighted) t_val[q] = g.values[k];
    }
  cursor = {};
  detail::merge_union(g.indptr, g.indices, g.values, t_ptr, t_idx, t_val);
  g.directed = false;
}

}  // namespace

namespace {
// clean_graph without edge features (the caller carries them).
GraphData clean_rows_of(GraphData g, bool symmetrize) {
  detail::dedupe_rows(0, g.indptr, g.indices, g.values);
  if (symmetrize) symmetrize_sorted(g);
  return g;
}
// The input's CSR and edge feature rows, kept while the graph is cleaned and renumbered
// (carried_edge_features reads them at the end); `g` is left without edge features.
struct EdgeFeatureSource {
  index_t width = 0;
  std::vector<index_t> indptr, indices;
  std::vector<float> rows;
  explicit EdgeFeatureSource(GraphData& g) : width(g.num_edge_features) {
    if (width == 0) return;
    indptr = g.indptr;
    indices = g.indices;
    rows = std::move(g.edge_features);
    g.edge_features = {};
    g.num_edge_features = 0;
  }
  void carry_to(GraphData& out, const std::vector<index_t>& source_of) const {
    if (width == 0) return;
    out.edge_features = detail::carried_edge_features(detail::EdgeRowIndex(0, indptr, indices), rows, width, out, source_of);
    out.num_edge_features = width;
  }
};
std::vector<index_t> identity(index_t n) {
  std::vector<index_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), index_t{0});
  return v;
}
}  // namespace

GraphData clean_graph(GraphData g, bool symmetrize) {
  validate(g, "graph", GraphNames::Memory);
  const EdgeFeatureSource edges(g);
  g = clean_rows_of(std::move(g), symmetrize);
  edges.carry_to(g, identity(g.num_nodes));
  return g;
}

namespace detail {

void dedupe_rows(index_t row0, std::vector<index_t>& indptr, std::vector<index_t>& indices, std::vector<float>& values) {
  const auto n = static_cast<index_t>(indptr.size()) - 1;
  const bool weighted = !values.empty();
  std::vector<index_t> kept(static_cast<std::size_t>(n), 0);
  const ArrayWatch held(kept);
#pragma omp parallel if(worth_a_team(n + static_cast<index_t>(indices.size())))
  {
    std::vector<std::pair<index_t, float>> row;
#pragma omp for schedule(dynamic, 512)
    for (index_t u = 0; u < n; ++u) {
      row.clear();
      for (index_t k = indptr[u]; k < indptr[u + 1]; ++k)
        if (indices[k] != row0 + u) row.emplace_back(indices[k], weighted ? values[k] : 1.0f);
      std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      index_t o = indptr[u];
      for (std::size_t i = 0; i < row.size(); ++i) {
        if (i > 0 && row[i].first == row[i - 1].first) continue;
        indices[o] = row[i].first;
        if (weighted) values[o] = row[i].second;
        ++o;
      }
      kept[u] = o - indptr[u];
    }
  }
  // Compact the kept entries.
  index_t q = 0;
  for (index_t u = 0; u < n; ++u) {
    const index_t b = indptr[u];
    std::copy_n(indices.begin() + b, kept[u], indices.begin() + q);
    if (weighted) std::copy_n(values.begin() + b, kept[u], values.begin() + q);
    indptr[u] = q;
    q += kept[u];
  }
  indptr[n] = q;
  indices.resize(static_cast<std::size_t>(q));
  indices.shrink_to_fit();
  if (weighted) {
    values.resize(static_cast<std::size_t>(q));
    values.shrink_to_fit();
  }
}

void merge_union(std::vector<index_t>& a_ptr, std::vector<index_t>& a_idx, std::vector<float>& a_val,
                 const std::vector<index_t>& t_ptr, const std::vector<index_t>& t_idx, const std::vector<float>& t_val) {
  const auto n = static_cast<index_t>(a_ptr.size()) - 1;
  const bool weighted = !a_val.empty();
  // Row lengths of the union, then the merge.
  std::vector<index_t> ptr(static_cast<std::size_t>(n) + 1, 0);
  const bool team = worth_a_team(n + static_cast<index_t>(a_idx.size() + t_idx.size()));
#pragma omp parallel for schedule(dynamic, 512) if(team)
  for (index_t u = 0; u < n; ++u) {
    index_t a = a_ptr[u], b = t_ptr[u], c = 0;
    while (a < a_ptr[u + 1] || b < t_ptr[u + 1]) {
      if (b == t_ptr[u + 1] || (a < a_ptr[u + 1] && a_idx[a] < t_idx[b])) ++a;
      else if (a == a_ptr[u + 1] || t_idx[b] < a_idx[a]) ++b;
      else ++a, ++b;
      ++c;
    }
    ptr[u + 1] = c;
  }
  for (index_t u = 0; u < n; ++u) ptr[u + 1] += ptr[u];
  std::vector<index_t> idx(static_cast<std::size_t>(ptr[n]));
  std::vector<float> val(weighted ? idx.size() : 0);
  const ArrayWatch held(ptr, idx, val);  // with A's and T's arrays: the peak of the merge
#pragma omp parallel for schedule(dynamic, 512) if(team)
  for (index_t u = 0; u < n; ++u) {
    index_t a = a_ptr[u], b = t_ptr[u], o = ptr[u];
    while (a < a_ptr[u + 1] || b < t_ptr[u + 1]) {
      const bool take_a = b == t_ptr[u + 1] || (a < a_ptr[u + 1] && a_idx[a] <= t_idx[b]);
      const bool both = take_a && b < t_ptr[u + 1] && a_idx[a] == t_idx[b];
      idx[o] = take_a ? a_idx[a] : t_idx[b];
      if (weighted) val[o] = take_a ? a_val[a] : t_val[b];
      ++o;
      if (take_a) ++a;
      if (!take_a || both) ++b;
    }
  }
  a_ptr = std::move(ptr);
  a_idx = std::move(idx);
  a_val = std::move(val);
}

}  // namespace detail

HostCsr permute_csr(const HostCsr& a, const std::vector<index_t>& row_new, const std::vector<index_t>& col_new) {
  if (static_cast<index_t>(row_new.size()) != a.rows || static_cast<index_t>(col_new.size()) != a.cols)
    throw std::invalid_argument("permute_csr: orders do not match the matrix");
  HostCsr out;
  out.rows = a.rows;
  out.cols = a.cols;
  permute_arrays(a.rows, a.indptr, a.indices, a.values, row_new, col_new, out.indptr, out.indices, out.values);
  return out;
}

namespace {
// prepare_graph of a graph validated already.
PreparedGraph prepare_valid_graph(GraphData g, const PrepareOptions& opt) {
  // Edge feature rows move with their entries (through cleaning and the P2 renumbering), found
  // at the end by where each entry came from.
  const EdgeFeatureSource edges(g);
  if (g.num_nodes > std::numeric_limits<col_t>::max())
    throw InputError("graph", "num_nodes: more than 2^31-1 nodes are not supported yet");
  if (opt.features_bf16)
    if (const std::string why = detail::bf16_feature_overflow(g.features, 0, g.num_features); !why.empty())
      throw InputError("graph", why);
  // Progress by stage (plexus/progress.hpp): kStages steps of unequal length, a rough ETA.
  constexpr std::uint64_t kStages = 6;
  if (opt.clean || opt.symmetrize) g = clean_rows_of(std::move(g), opt.symmetrize);
  report_progress(1, kStages);
  PreparedGraph p;
  p.balance = opt.balance;
  p.seed = opt.seed;
  p.metis_parts = opt.metis_parts;
  p.features_bf16 = opt.features_bf16;

  // Â in the original order, then in the orders of the layers (values untouched, so a layer
  // computes the same products in another order).
  const NodeOrder order = make_order(g, opt.balance, opt.seed, opt.metis_parts, opt.order_col_parts);
  report_progress(2, kStages);
  {
    HostCsr a_hat = gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values);
    report_progress(3, kStages);
    const bool two = order.row != order.col;
    if (opt.balance == Balance::kNone) {
      p.a1 = std::move(a_hat);
    } else {
      p.a1 = permute_csr(a_hat, order.row, order.col);
      if (two) p.a2 = permute_csr(a_hat, order.col, order.row);
    }
  }
  p.block_counts = count_adj_blocks(p.a1, p.a2);  // exact plans on this graph (block_counts.hpp)
  report_progress(4, kStages);
  p.node_id_p = inverse_permutation(order.row);
  p.node_id_p2 = inverse_permutation(order.col);

  // The v1 part: the cleaned graph renumbered by P2.
  const std::vector<index_t>& p2 = order.col;
  GraphData& out = p.graph;
  out.num_nodes = g.num_nodes;
  out.num_features = g.num_features;
  out.num_classes = g.num_classes;
  out.directed = g.directed;
  if (opt.balance == Balance::kNone) {
    out.indptr = std::move(g.indptr);
    out.indices = std::move(g.indices);
    out.values = std::move(g.values);
  } else {
    permute_arrays(g.num_nodes, g.indptr, g.indices, g.values, p2, p2, out.indptr, out.indices, out.values);
    g.indptr = {};
    g.indices = {};
    g.values = {};
  }
  edges.carry_to(out, p.node_id_p2);
  report_progress(5, kStages);
  out.features = permute_rows(g.features, p2, g.num_features);
  g.features = {};
  out.labels = permute_rows(g.labels, p2);
  out.train_mask = permute_rows(g.train_mask, p2);
  out.val_mask = permute_rows(g.val_mask, p2);
  out.test_mask = permute_rows(g.test_mask, p2);
  if (!g.node_weights.empty()) out.node_weights = permute_rows(g.node_weights, p2);  // stored like /labels
  if (p.two_orders()) {
    p.labels_p = permute_rows(g.labels, order.row);
    p.train_p = permute_rows(g.train_mask, order.row);
    p.val_p = permute_rows(g.val_mask, order.row);
    p.test_p = permute_rows(g.test_mask, order.row);
  }
  report_progress(kStages, kStages);
  return p;
}
}  // namespace

PreparedGraph prepare_graph(GraphData g, const PrepareOptions& opt) {
  validate(g, "graph", GraphNames::Memory);
  return prepare_valid_graph(std::move(g), opt);
}

PreparedGraph prepare_graph(GraphData g, const PrepareOptions& opt, const LinkSplit& held_out) {
  validate(g, "graph", GraphNames::Memory);
  validate_link_split(g, held_out, "graph");
  PreparedGraph p = prepare_valid_graph(std::move(g), opt);
  p.links = renumbered(held_out, inverse_permutation(p.node_id_p2));
  // Cleaning can make a held-out link an edge again (symmetrizing a directed graph stores its
  // reverse): refused, as message passing would see it.
  validate_link_split(p.graph, *p.links, "the prepared graph");
  return p;
}

GraphData original_order(GraphData g, const std::vector<index_t>& node_id_p2) {
  const index_t n = g.num_nodes;
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  bool permutation = static_cast<index_t>(node_id_p2.size()) == n;
  for (std::size_t k = 0; permutation && k < node_id_p2.size(); ++k) {
    const index_t u = node_id_p2[k];
    permutation = u >= 0 && u < n && !seen[static_cast<std::size_t>(u)];
    if (permutation) seen[static_cast<std::size_t>(u)] = 1;
  }
  if (!permutation) throw InputError("/prepared/node_id_p2", "not a permutation of the graph's " + std::to_string(n) + " nodes");
  const EdgeFeatureSource edges(g);
  GraphData out;
  out.num_nodes = n;
  out.num_features = g.num_features;
  out.num_classes = g.num_classes;
  out.directed = g.directed;
  permute_arrays(n, g.indptr, g.indices, g.values, node_id_p2, node_id_p2, out.indptr, out.indices, out.values);
  g.indptr = {};
  g.indices = {};
  g.values = {};
  edges.carry_to(out, inverse_permutation(node_id_p2));
  out.features = permute_rows(g.features, node_id_p2, g.num_features);
  out.labels = permute_rows(g.labels, node_id_p2);
  out.train_mask = permute_rows(g.train_mask, node_id_p2);
  out.val_mask = permute_rows(g.val_mask, node_id_p2);
  out.test_mask = permute_rows(g.test_mask, node_id_p2);
  if (!g.node_weights.empty()) out.node_weights = permute_rows(g.node_weights, node_id_p2);
  if (!g.node_ids.empty()) out.node_ids = permute_rows(g.node_ids, node_id_p2);
  return out;
}

NodePairList renumbered(NodePairList p, const std::vector<index_t>& new_id) {
  for (std::size_t k = 0; k < p.size(); ++k) {
    p.u[k] = new_id[static_cast<std::size_t>(p.u[k])];
    p.v[k] = new_id[static_cast<std::size_t>(p.v[k])];
  }
  return p;
}

LinkSplit renumbered(const LinkSplit& s, const std::vector<index_t>& new_id) {
  LinkSplit out = s;
  for (NodePairList* l : {&out.val_pos, &out.val_neg, &out.test_pos, &out.test_neg}) *l = renumbered(std::move(*l), new_id);
  return out;
}

}  // namespace plexus
