#pragma once
// The 3D layout of a GNN's shards, per layer and per rank (docs/architecture.md; the Plexus
// layout): where a layer's tensors live on a rank (LayerGeometry), which Â blocks, feature and
// label rows a rank holds (ShardRanges), and the cutting of whole graphs into them
// (build_shards; implemented in partition/shard_layout.cpp). The engine's own: a pipeline reads
// or builds its GnnShards through plexus/io.hpp and plexus/gnn_trainer.hpp.
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"

namespace plexus {

// Block `idx` of `parts` near-equal blocks of `r`.
Range sub_range(Range r, int parts, int idx);
// Block `idx` of `parts` near-equal blocks of [0, n) cut in whole units of `unit` (n a multiple
// of it): a GPT's sequences of `unit` rows, one row where unit = 1.
Range unit_range(index_t n, index_t unit, int parts, int idx);
// The sizes of all `parts` blocks of [0, n), times `scale` (counts for all-gather/reduce-scatter).
std::vector<std::size_t> block_counts(index_t n, int parts, index_t scale);

// Where one layer's tensors live on this rank (global index ranges). The rows of the input
// lie over o and those of the output over d, whichever the order; the features and the
// replication axis depend on it (LayerRoles, include/plexus/process_grid.hpp).
struct LayerGeometry {
  int layer = 0;
  LayerRoles roles{};
  bool transform_first = false;
  index_t in_dim = 0, out_dim = 0;  // D_l, D_{l+1}
  Range in_rows, in_cols;    // H_l block:   rows of N over o, cols of D_l over in_feat()
  Range out_rows, out_cols;  // output block: rows of N over d, cols of D_{l+1} over out_feat()
  // This rank's rows of W_l: in_cols further split over the Linear3D's row axis (d when
  // aggregating first, o when transforming first).
  Range w_rows;
  // The axes of the input's features and replication, and of the output's.
  Axis in_feat() const { return transform_first ? roles.d : roles.i; }
  Axis in_repl() const { return transform_first ? roles.i : roles.d; }
  Axis out_feat() const { return transform_first ? roles.i : roles.o; }
  Axis out_repl() const { return transform_first ? roles.o : roles.i; }
};
// Layer `layer` of a GNN of widths `dims` whose layers transform first where transform_first
// says (layer_roles; empty: every layer aggregates first).
LayerGeometry layer_geometry(const ProcessGrid& grid, int layer, index_t num_nodes, const std::vector<index_t>& dims,
                             const std::vector<bool>& transform_first = {});
// The same for the rank at `coords` (x, y, z) of a grid of `shape` (no communicators needed).
LayerGeometry layer_geometry_at(GridShape shape, const std::array<int, 3>& coords, int layer, index_t num_nodes,
                                const std::vector<index_t>& dims, const std::vector<bool>& transform_first = {});

// Which Â a layer multiplies by: with two node orders (a prepared, balanced graph) even
// layers use Â1 and odd layers Â2 (include/plexus/prepare.hpp); otherwise always Â1 = Â.
inline int which_adj(int layer, bool two_orders) { return two_orders ? layer % 2 : 0; }
// The order of the last of `layers` layers' output rows (0: P2, 1: P): an even layer multiplies
// by Â1 = P·Â·P2ᵀ, whose rows are in P order.
inline int output_order(int layers, bool two_orders) { return two_orders && (layers - 1) % 2 == 0 ? 1 : 0; }

struct ShardRanges {
  std::vector<bool> transform_first;  // per layer (as given, padded to one entry a layer)
  std::vector<LayerGeometry> geometry;  // per layer: layer_geometry_at this rank
  std::vector<AdjBlockRange> adj;     // distinct Â blocks
  std::vector<int> adj_of_layer;      // per layer: index into adj
  std::vector<int> layouts;           // first layer of each distinct layout (GnnShards::layouts)
  Range feat_rows, feat_cols, label_rows;
  int label_order = 0;  // the labels' order: that of the last layer's output (0: P2, 1: P)
};
// `shard_adj`: store each Â block split over its layer's i axis (AdjBlockRange), so that Â
// memory per rank falls as 1/P; TrainConfig::shard_adj. `transform_first`: the layers' orders
// (transform_first_layers; empty: every layer aggregates first).
ShardRanges shard_ranges(const ProcessGrid& grid, index_t num_nodes, const std::vector<index_t>& dims,
                         bool two_orders = false, bool shard_adj = false, const std::vector<bool>& transform_first = {});
// The same for the rank at `coords` (x, y, z) of a grid of `shape`.
ShardRanges shard_ranges_at(GridShape shape, const std::array<int, 3>& coords, index_t num_nodes,
                            const std::vector<index_t>& dims, bool two_orders = false, bool shard_adj = false,
                            const std::vector<bool>& transform_first = {});
// The same into `out`, whose lists keep their capacity (a plan's rank keys, millions of them).
void shard_ranges_at(GridShape shape, const std::array<int, 3>& coords, index_t num_nodes,
                     const std::vector<index_t>& dims, bool two_orders, bool shard_adj,
                     const std::vector<bool>& transform_first, ShardRanges& out);

// Cuts this rank's shards out of a whole in-memory graph and its normalized adjacency Â
// (global CSR, int32 columns). `dims` as in GnnShards, `transform_first` as in shard_ranges.
GnnShards build_shards(const GraphData& g, const HostCsr& a_hat, const ProcessGrid& grid,
                       const std::vector<index_t>& dims, bool shard_adj = false,
                       const std::vector<bool>& transform_first = {});
// The same from a prepared graph (Â1/Â2, features in P2 order, labels in both orders).
struct PreparedGraph;
GnnShards build_shards(const PreparedGraph& p, const ProcessGrid& grid, const std::vector<index_t>& dims,
                       bool shard_adj = false, const std::vector<bool>& transform_first = {});
// The Â part of a rank's shards cut from a whole matrix: rows b.part_rows of its block of `a`
// and rows b.part_cols of the block's transpose.
std::pair<HostCsr, HostCsr> cut_adj_block(const HostCsr& a, const AdjBlockRange& b);

// adj_self_col of a block of rows `rows` and columns `cols` whose rows and columns hold the
// nodes row_nodes[0, rows.size()) and col_nodes[0, cols.size()) (original ids); with null
// pointers both orders are the identity (row r's node is column r's).
std::vector<index_t> block_self_columns(Range rows, Range cols, const index_t* row_nodes = nullptr,
                                        const index_t* col_nodes = nullptr);

// Rows [rows) and columns [cols) of a CSR with sorted column indices, re-indexed locally.
HostCsr extract_block(const HostCsr& a, Range rows, Range cols);

}  // namespace plexus
