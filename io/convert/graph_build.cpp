// Shared graph construction for the converters (io/convert/graph_build.hpp).
#include "io/convert/graph_build.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/rng.hpp"
#include "plexus/sizes.hpp"
#include "src/core/parallel_work.hpp"

namespace plexus::build {

void require_graph_memory(const std::string& where, const std::string& how, index_t n, std::int64_t edges,
                          bool symmetrize, bool weighted, index_t feature_width) {
  const double stored = static_cast<double>(edges) * (symmetrize ? 2 : 1);
  require_memory(graph_host_bytes(n, static_cast<std::int64_t>(stored), feature_width, weighted) +
                     stored * static_cast<double>(sizeof(Edge)),
                 where, "the graph", how);
}

void require_generated_memory(index_t n, double stored_edges, index_t features, double scratch,
                              const GeneratorOptions& names) {
  const double nodes = static_cast<double>(n);
  const double node_bytes = nodes * (8 + 4 + 3), edge_bytes = stored_edges * 8 + scratch,
               feature_bytes = 4 * nodes * static_cast<double>(features);
  const double total = node_bytes + edge_bytes + feature_bytes;
  const char* where = feature_bytes >= edge_bytes && feature_bytes >= node_bytes ? names.features
                      : edge_bytes >= node_bytes                                  ? names.edges
                                                                                  : names.nodes;
  require_memory(total, where, "the graph",
                 std::to_string(n) + " nodes, about " + std::to_string(static_cast<std::int64_t>(stored_edges)) +
                     " stored edges, " + std::to_string(features) + " features");
}

void csr_from_edges(GraphData& g, index_t n, std::vector<Edge>& edges, bool symmetrize, bool weighted,
                    std::vector<index_t>* orders) {
  // Drop self-loops, then add the reversed copies.
  std::erase_if(edges, [](const Edge& e) { return e.u == e.v; });
  if (symmetrize) {
    const std::size_t m = edges.size();
    edges.reserve(2 * m);
    for (std::size_t k = 0; k < m; ++k) {
      const Edge e = edges[k];
      edges.push_back({e.v, e.u, e.order, e.w});
    }
  }
  g.num_nodes = n;
  g.directed = !symmetrize;
  csr_rows_from_edges(0, n, edges, weighted, g.indptr, g.indices, g.values, orders);
}

void csr_rows_from_edges(index_t row0, index_t rows, std::vector<Edge>& edges, bool weighted,
                         std::vector<index_t>& indptr, std::vector<index_t>& indices, std::vector<float>& values,
                         std::vector<index_t>* orders) {
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    if (a.u != b.u) return a.u < b.u;
    if (a.v != b.v) return a.v < b.v;
    return a.order < b.order;
  });
  const auto last = std::unique(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.u == b.u && a.v == b.v;
  });
  edges.erase(last, edges.end());

  indptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  indices.resize(edges.size());
  values.clear();
  if (weighted) values.resize(edges.size());
  if (orders) orders->resize(edges.size());
  for (std::size_t k = 0; k < edges.size(); ++k) {
    ++indptr[static_cast<std::size_t>(edges[k].u - row0) + 1];
    indices[k] = edges[k].v;
    if (weighted) values[k] = edges[k].w;
    if (orders) (*orders)[k] = edges[k].order;
  }
  for (std::size_t i = 1; i < indptr.size(); ++i) indptr[i] += indptr[i - 1];
  std::vector<Edge>().swap(edges);
}

void synthetic_features(GraphData& g, SyntheticFeatures kind, index_t width, std::uint64_t seed) {
  synthetic_feature_rows(kind, width, seed, g.num_nodes, 0, g.num_nodes, g.indptr.data(), g.features);
  g.num_features = kind == SyntheticFeatures::kRandom ? width : 1;
}

void synthetic_feature_rows(SyntheticFeatures kind, index_t width, std::uint64_t seed, index_t n, index_t row0,
                            index_t rows, const index_t* indptr, std::vector<float>& out) {
  if (kind != SyntheticFeatures::kRandom) width = 1;
  if (width < 1) throw InputError("EdgeListOptions.feature_width", "must be at least 1, got " + std::to_string(width));
  if (width > std::numeric_limits<index_t>::max() / 8 / std::max<index_t>(n, 1) || n * width > (index_t{1} << 34)) {
    throw InputError("EdgeListOptions.feature_width", "num_nodes x features (" + std::to_string(n) + " x " + std::to_string(width) +
                                       ") is too large");
  }
  out.assign(static_cast<std::size_t>(rows * width), 1.0f);
  if (kind == SyntheticFeatures::kDegree) {
    for (index_t i = 0; i < rows; ++i)
      out[static_cast<std::size_t>(i)] = static_cast<float>(std::log1p(static_cast<double>(indptr[i + 1] - indptr[i])));
  } else if (kind == SyntheticFeatures::kRandom) {
    constexpr std::uint32_t kTagFeat = 0x46454154u;  // "FEAT"
    const auto k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
#pragma omp parallel for schedule(static) if(worth_a_team(rows * width))
    for (index_t i = 0; i < rows; ++i) {
      const auto u = static_cast<std::uint64_t>(row0 + i);
      float* row = out.data() + i * width;
      for (index_t j = 0; j < width; j += 4) {
        const auto blk = static_cast<std::uint64_t>(j / 4);
        const Philox4x32 r = philox4x32_10(static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(u >> 32),
                                           static_cast<std::uint32_t>(blk),
                                           kTagFeat ^ static_cast<std::uint32_t>(blk >> 32), k0, k1);
        for (index_t t = 0; t < 4 && j + t < width; ++t) row[j + t] = word_to_uniform(r.v[t]);
      }
    }
  }
}

void unlabelled(GraphData& g, std::int32_t classes) {
  if (classes < 1) throw InputError("EdgeListOptions.classes", "must be at least 1, got " + std::to_string(classes));
  const auto n = static_cast<std::size_t>(g.num_nodes);
  g.num_classes = classes;
  g.labels.assign(n, -1);
  g.train_mask.assign(n, 0);
  g.val_mask.assign(n, 0);
  g.test_mask.assign(n, 0);
}

void require_every_split(const GraphData& g, const SplitOptions& names) {
  const struct {
    const std::vector<std::uint8_t>* mask;
    const char* split;
    const char* option;
  } splits[] = {{&g.train_mask, "training", names.train}, {&g.val_mask, "validation", names.val},
                {&g.test_mask, "test", names.test}};
  for (const auto& s : splits) {
    std::size_t labelled = 0;
    for (std::size_t i = 0; i < s.mask->size(); ++i) labelled += (*s.mask)[i] && g.labels[i] >= 0;
    if (labelled == 0)
      throw InputError(s.option, std::string("the ") + s.split + " split of the " + std::to_string(g.num_nodes) +
                                     " nodes generated is empty: a graph nobody can " +
                                     (s.mask == &g.train_mask ? "train" : "evaluate") + " on (" + names.advice + ")");
  }
}

}  // namespace plexus::build
