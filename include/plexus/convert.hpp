#pragma once
// Graphs from other formats and generated ones (library plexus::tools, which the `plexus`
// command links; the core library plexus::plexus does not need it). Every function returns a
// validated GraphData, which write_graph_h5 (plexus/io.hpp) stores or train_gcn trains on.
#include <cstdint>
#include <string>

#include "plexus/graph.hpp"

namespace plexus {

// Planetoid raw files `DIR/ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index}` (cora, citeseer,
// pubmed). Features are row-normalized unless `normalize_features` is false (as in Kipf &
// Welling's preprocessing). Citeseer's isolated test nodes get zero features and label -1,
// as in the original GCN code.
GraphData read_planetoid(const std::string& dir, const std::string& name, bool normalize_features = true);

// Graph500 R-MAT generator (a=0.57, b=0.19, c=0.19, d=0.05): 2^scale nodes,
// edge_factor * 2^scale undirected edges (symmetrized, deduplicated, no self-loops),
// random features and labels, 60/20/20 random split. Deterministic for a given seed,
// whatever the thread count.
struct RmatOptions {
  int scale = 16;
  int edge_factor = 16;
  index_t features = 128;
  std::int32_t classes = 16;
  std::uint64_t seed = 1;
  double a = 0.57, b = 0.19, c = 0.19;
};
GraphData generate_rmat(const RmatOptions& opt);

// ---- converters from other formats ---------------------------------------------------------
// Text inputs may be plain or gzip-compressed (detected by the gzip magic bytes, not by the
// file name). Errors in a text file are InputError("<file>:<line>", ...).
// Every converter drops self-loops (GCN adds its own), deduplicates edges (the first
// occurrence in file order keeps its weight) and calls plexus::validate on its result.

// Node features for inputs that carry none (edge lists, MatrixMarket):
//  - kDegree: one column, log(1 + degree)  (degree = stored row length)
//  - kOnes:   one column of 1.0
//  - kRandom: `feature_width` columns uniform in [0, 1), counter-based on (seed, node): the
//             same for a given seed whatever the thread count.
enum class SyntheticFeatures { kDegree, kOnes, kRandom };

struct EdgeListOptions {
  // Store every edge in both directions (@directed = 0). Otherwise rows are out-neighbours
  // and the graph is written with @directed = 1.
  bool symmetrize = true;
  // 0: node ids may be sparse; the distinct ids that occur are relabelled 0..n-1 in
  // increasing id order (reproducible; ids that never occur in an edge are not nodes).
  // > 0: ids are taken as they are (minus `base`) and must lie in [0, num_nodes); nodes
  // without edges are kept.
  index_t num_nodes = 0;
  int base = 0;  // the id of the first node (0 or 1); with relabelling only checks ids >= base
  SyntheticFeatures features = SyntheticFeatures::kDegree;
  index_t feature_width = 16;  // kRandom only
  std::int32_t classes = 1;    // no labels in these formats: all labels -1, masks all 0
  std::uint64_t seed = 1;
  // Refuse node counts above this (a corrupt header or id must not make us allocate without
  // bound).
  index_t max_nodes = index_t{1} << 33;
};

// SNAP-style edge list: one edge "u v" or "u v w" per line, fields separated by spaces, tabs
// or a comma; lines starting with '#' or '%' and blank lines are comments. Either all edge
// lines carry a weight (w, finite float -> /graph/values) or none does.
GraphData read_edge_list(const std::string& path, const EdgeListOptions& opt = {});

// MatrixMarket "%%MatrixMarket matrix coordinate real|integer|pattern general|symmetric":
// a square N x N matrix, 1-based entries, exactly the announced number of entries.
// `symmetric` files store the lower triangle and are expanded; `general` ones are symmetrized
// when opt.symmetrize (else @directed = 1). real/integer values become edge weights.
// opt.num_nodes and opt.base are ignored (the size line gives N; ids are 1-based).
GraphData read_matrix_market(const std::string& path, const EdgeListOptions& opt = {});

// OGB node-property-prediction raw layout, DIR = the dataset directory (e.g. ogbn_arxiv/):
//   raw/edge.csv.gz          "src,dst" per row (0-based)
//   raw/num-node-list.csv.gz optional, one row: N
//   raw/node-feat.csv.gz     optional, N rows of F floats (absent -> degree feature)
//   raw/node-label.csv.gz    optional, N rows of one label ("nan" or empty -> -1)
//   split/<split>/{train,valid,test}.csv.gz  node ids, one per row
// N is num-node-list, else the number of feature rows, else the number of label rows, else
// max id + 1. num_classes = max label + 1. An empty `split` picks the only directory under
// split/ (none -> all masks 0).
struct OgbOptions {
  bool symmetrize = true;  // ogbn-arxiv is directed; GCN setups symmetrize it
  std::string split;
  index_t max_nodes = index_t{1} << 33;
};
GraphData read_ogb(const std::string& dir, const OgbOptions& opt = {});

// ---- stochastic block model ------------------------------------------------------------------
// Planted classes (each node uniform over `classes`), O(edges) generation: node u emits
// k_u ~ uniform{0..avg_degree} edge stubs; each stub goes to a node of u's own class with
// probability `homophily`, otherwise to a uniform other class, and then to a uniform node of
// that class. Symmetrized, deduplicated, no self-loops: mean degree ~ avg_degree. Features are
// feature_signal * centroid[class] + N(0, 1) noise, centroids with entries +-1. Split: each
// node is train with probability train_fraction, else val with val_fraction, else test.
// Everything is counter-based on (seed, node): deterministic whatever the thread count.
struct SbmOptions {
  index_t nodes = 10000;
  std::int32_t classes = 8;
  double avg_degree = 10;
  double homophily = 0.8;
  index_t features = 32;
  double feature_signal = 0.3;
  double train_fraction = 0.6, val_fraction = 0.2;
  std::uint64_t seed = 1;
};
GraphData generate_sbm(const SbmOptions& opt);

}  // namespace plexus
