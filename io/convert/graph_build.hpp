#pragma once
// Building GraphData from edge tuples, shared by the text converters, private to io/.
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/convert.hpp"
#include "plexus/graph.hpp"
#include "plexus/io.hpp"

namespace plexus::build {

struct Edge {
  index_t u, v;
  index_t order;  // position in the input: the first of duplicate entries wins
  float w;
};

// Refuses (require_memory, plexus/sizes.hpp) a graph of n nodes and `edges` input edges whose
// build would not fit this process's memory: the edge tuples (doubled by `symmetrize`), the
// CSR, `feature_width` float features, labels and masks. `where` names the file or option that
// declares the sizes, `how` what it declares (e.g. "1500000000 rows, 3 entries").
void require_graph_memory(const std::string& where, const std::string& how, index_t n, std::int64_t edges,
                          bool symmetrize, bool weighted, index_t feature_width);

// The same for a generator (generate rmat, sbm): n nodes, `stored_edges` CSR entries, float
// features and `scratch` bytes of generation, naming the option behind the largest part.
struct GeneratorOptions {
  const char* nodes;
  const char* edges;
  const char* features;
};
void require_generated_memory(index_t n, double stored_edges, index_t features, double scratch,
                              const GeneratorOptions& names);

// A generated graph must be one a GCN can be trained and evaluated on: every split (train,
// validation, test) holds a labelled node. Throws InputError(option, ...) naming the split that
// came out empty, the option that decides it and what to change (docs/hardening.md: generators
// refuse graphs nobody can train on).
struct SplitOptions {
  const char* train;  // the option that sizes each split
  const char* val;
  const char* test;
  const char* advice;  // e.g. "raise --nodes or the fraction"
};
void require_every_split(const GraphData& g, const SplitOptions& names);

// Sets g.num_nodes = n, g.directed = !symmetrize and the CSR (sorted rows, no duplicates, no
// self-loops; g.values only when `weighted`). With `symmetrize` each edge is also stored
// reversed with the same weight. Ids must already be in [0, n). Consumes `edges`.
// `orders` (when given): each stored entry's Edge::order, in CSR order.
void csr_from_edges(GraphData& g, index_t n, std::vector<Edge>& edges, bool symmetrize, bool weighted,
                    std::vector<index_t>* orders = nullptr);
// Rows [row0, row0 + rows) of that CSR from their edges (every e.u in the range; self-loops
// dropped and reversed copies added already): indptr from 0. Consumes `edges`.
void csr_rows_from_edges(index_t row0, index_t rows, std::vector<Edge>& edges, bool weighted,
                         std::vector<index_t>& indptr, std::vector<index_t>& indices, std::vector<float>& values,
                         std::vector<index_t>* orders = nullptr);

// Fills g.features / g.num_features for inputs without features (see SyntheticFeatures).
// `where` names the option in errors (e.g. "EdgeListOptions.feature_width").
void synthetic_features(GraphData& g, SyntheticFeatures kind, index_t width, std::uint64_t seed);
// The same for rows [row0, row0 + rows) of a graph of n nodes (indptr of those rows, any base):
// `width` values a row into `out` (width 1 unless kind is random; checked as above).
void synthetic_feature_rows(SyntheticFeatures kind, index_t width, std::uint64_t seed, index_t n, index_t row0,
                            index_t rows, const index_t* indptr, std::vector<float>& out);

// Labels all -1, masks all 0, num_classes = classes (>= 1).
void unlabelled(GraphData& g, std::int32_t classes);

}  // namespace plexus::build
