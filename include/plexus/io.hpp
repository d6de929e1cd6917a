#pragma once
// Reading and writing graphs. Every reader validates what it reads and throws InputError
// naming the file (and the HDF5 dataset) on bad input.
#include <cstdint>
#include <string>

#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"

namespace plexus {

inline constexpr std::int32_t kFormatVersion = 1;

// Format v1 HDF5 (docs/format-v1.md).
GraphData read_graph_h5(const std::string& path);
// Only the sizes of a format v1 file (root attributes and the length of /graph/indices),
// without reading the data: what `plexus plan` needs. Bad files throw InputError(path, ...).
struct GraphInfo {
  index_t num_nodes = 0, num_features = 0, nnz = 0;
  std::int32_t num_classes = 0;
};
GraphInfo read_graph_info_h5(const std::string& path);
// This rank's shards of a `layers`-layer GCN (hidden width `hidden`) over `grid`, reading
// only the hyperslabs they need, with MPI-IO collective reads when the grid has several
// ranks (every rank of the grid must call it). Validates everything it reads; the ranks
// together read, and so validate, the whole file.
GcnShards load_shards_h5(const std::string& path, const ProcessGrid& grid, int layers, index_t hidden);
// Atomic: writes `path.tmp.<pid>` then renames, so an interrupted write never leaves a file
// that later loads.
void write_graph_h5(const GraphData& g, const std::string& path);

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

}  // namespace plexus
