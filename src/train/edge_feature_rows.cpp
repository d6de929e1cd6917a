// attach_edge_features (src/train/graph_shards.hpp): each Â block entry's edge-feature row, found
// by the entry's input node ids in the input graph's rows.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "plexus/error.hpp"
#include "core/parallel_work.hpp"
#include "plexus/link_split.hpp"
#include "train/graph_shards.hpp"

namespace plexus {

namespace {

// The input's edges by (row, column): each row's entry positions sorted by column, so that an
// edge is found by a binary search in its row.
class EdgeIndex {
 public:
  explicit EdgeIndex(const GraphData& g) : g_(g), order_(g.indices.size()) {
    const index_t n = g.num_nodes;
#pragma omp parallel for schedule(dynamic, 1024) if(worth_a_team(n + g.num_edges()))
    for (index_t u = 0; u < n; ++u) {
      const index_t b = g.indptr[u], e = g.indptr[u + 1];
      for (index_t k = b; k < e; ++k) order_[k] = k;
      std::sort(order_.begin() + b, order_.begin() + e,
                [&](index_t x, index_t y) { return g.indices[x] < g.indices[y]; });
    }
    for (index_t u = 0; u < n; ++u)
      for (index_t k = g.indptr[u] + 1; k < g.indptr[u + 1]; ++k)
        if (g.indices[order_[k]] == g.indices[order_[k - 1]])
          throw InputError("graph", "/graph/edge_features: the edge " + std::to_string(u) + " -> " +
                                        std::to_string(g.indices[order_[k]]) +
                                        " is stored twice (with edge features every edge is stored once: each is "
                                        "its own message)");
  }
  // The stored position of edge u -> v, or -1.
  index_t find(index_t u, index_t v) const {
    const auto b = order_.begin() + g_.indptr[u], e = order_.begin() + g_.indptr[u + 1];
    const auto it = std::lower_bound(b, e, v, [&](index_t k, index_t col) { return g_.indices[k] < col; });
    return it != e && g_.indices[*it] == v ? *it : -1;
  }

 private:
  const GraphData& g_;
  std::vector<index_t> order_;
};

}  // namespace

void attach_edge_features(GnnShards& s, const GraphData& input) {
  const index_t width = input.num_edge_features;
  if (width <= 0)
    throw InputError("graph", "/graph/edge_features: the model reads edge features and the graph has none");
  s.edge_feature_width = width;
  s.adj_edge_features.clear();
  if (s.shape_only) return;
  const EdgeIndex edges(input);
  const auto w = static_cast<std::size_t>(width);
  // The mean of node u's edges' feature rows, its own self-loops left out (0 without an edge).
  const auto row_mean = [&](index_t u, std::vector<float>::iterator out) {
    std::vector<double> sum(w, 0.0);
    index_t count = 0;
    for (index_t e = input.indptr[u]; e < input.indptr[u + 1]; ++e) {
      if (input.indices[e] == u) continue;
      ++count;
      for (std::size_t f = 0; f < w; ++f) sum[f] += input.edge_features[static_cast<std::size_t>(e) * w + f];
    }
    for (std::size_t f = 0; f < w; ++f) out[static_cast<std::ptrdiff_t>(f)] = count ? static_cast<float>(sum[f] / static_cast<double>(count)) : 0.0f;
  };
  for (std::size_t k = 0; k < s.adj.size(); ++k) {
    const AdjBlockRange b = k < s.adj_blocks.size() ? s.adj_blocks[k] : AdjBlockRange{};
    const HostCsr& a = s.adj[k];
    if (b.sharded || a.rows != b.rows.size())
      throw std::invalid_argument("attach_edge_features: edge features need Â blocks held whole (no sharded Â)");
    const std::vector<index_t>* row_ids = k < s.adj_row_ids.size() && !s.adj_row_ids[k].empty() ? &s.adj_row_ids[k] : nullptr;
    const std::vector<index_t>* col_ids = k < s.adj_col_ids.size() && !s.adj_col_ids[k].empty() ? &s.adj_col_ids[k] : nullptr;
    std::vector<float> rows(static_cast<std::size_t>(a.nnz()) * w, 0.0f);
    for (index_t r = 0; r < a.rows; ++r) {
      const index_t u = row_ids ? (*row_ids)[static_cast<std::size_t>(r)] : b.rows.begin + r;
      for (index_t q = a.indptr[r]; q < a.indptr[r + 1]; ++q) {
        const index_t c = a.indices[static_cast<std::size_t>(q)];
        const index_t v = col_ids ? (*col_ids)[static_cast<std::size_t>(c)] : b.cols.begin + c;
        if (u == v) {  // the self-loop: the mean of the row's edges' rows (GATConv's fill_value "mean")
          row_mean(u, rows.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(q) * w));
          continue;
        }
        index_t e = edges.find(u, v);
        if (e < 0) e = edges.find(v, u);  // (an undirected graph symmetrised in memory)
        if (e < 0)
          throw std::logic_error("attach_edge_features: Â holds " + std::to_string(u) + " -> " + std::to_string(v) +
                                 ", which is no edge of the graph");
        std::copy_n(input.edge_features.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(e) * w), w,
                    rows.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(q) * w));
      }
    }
    s.adj_edge_features.push_back(std::move(rows));
  }
}

}  // namespace plexus
