#pragma once
// What one rank holds of a graph on the 3D grid (GnnShards: its blocks of Â, of the features and
// of the labels, what load_shards_h5 reads and GnnTrainer trains on), and the near-equal blocks
// it is cut in. Sizes need not divide by the grid: block_range gives the first n % parts blocks
// one extra element, so blocks are uneven by at most one. How the blocks are laid out per layer
// (layer geometry, shard ranges, cutting) is the engine's: src/core/shard_layout.hpp.
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "plexus/buffer.hpp"
#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

struct AdjBlockCounts;  // plexus/block_counts.hpp

struct Range {
  index_t begin = 0, end = 0;
  index_t size() const { return end - begin; }
  bool operator==(const Range&) const = default;
};
// Block `idx` of `parts` near-equal blocks of [0, n): the first n % parts blocks one longer.
// Inline: a plan's dry runs cut ranges millions of times.
inline Range block_range(index_t n, int parts, int idx) {
  const index_t base = n / parts, extra = n % parts;
  const index_t begin = idx * base + (idx < extra ? idx : extra);
  return {begin, begin + base + (idx < extra ? 1 : 0)};
}

// Which way round a GCN layer computes OUT = act(Â·H·W + b) (docs/gcn-model.md, "Layer
// order"): aggregate first, (Â·H)·W, whose SpMM is D_l wide, or transform first, Â·(H·W) as
// PyG's GCNConv, whose SpMM is D_{l+1} wide. Auto picks, per layer, the narrower SpMM.
enum class LayerOrder { Auto, AggregateFirst, TransformFirst };
// Per layer of a GCN of widths `dims`: does layer l transform first? Auto: when
// D_{l+1} < D_l (ties aggregate first); the other two force every layer.
std::vector<bool> transform_first_layers(LayerOrder order, const std::vector<index_t>& dims);

// Feature widths D_0..D_L of an L-layer GCN: features, hidden × (L-1), classes.
std::vector<index_t> gnn_dims(index_t num_features, int layers, index_t hidden, index_t num_classes);

// The global index ranges of every shard this rank holds (what build_shards and
// load_shards_h5 cut or read).
struct AdjBlockRange {
  Range rows, cols;
  int which = 0;  // 0: Â1 (= Â with one order), 1: Â2
  // Sharded Â (shard_adj): the block is replicated over the layer's i axis in the Plexus
  // layout; sharded, each rank of that axis stores only its part of it — rows `part_rows` of
  // the block and rows `part_cols` of its transpose (its block of the rows, resp. columns,
  // over i) — and the layer all-gathers the whole block over `axis` before each SpMM.
  // Unsharded (or i has one rank): part_rows == rows, part_cols == cols.
  bool sharded = false;
  Axis axis = Axis::X;
  Range part_rows, part_cols;
  bool operator==(const AdjBlockRange&) const = default;
};
// The link task's pairs (TrainConfig::task), by global row of the last layer's output (the
// shards' node order): the training links (positives; each undirected link once) and each
// held-out split's links with their fixed negatives. The shards hold the lists whole; the link
// task keeps only its rank's block of them for the run, and its tensors only the rank's piece of
// that block (src/pmm/pair_block.hpp), and draws and cuts each epoch's negatives a chunk at a
// time. Empty for node classification.
struct LinkPairs {
  NodePairList train, val_pos, val_neg, test_pos, test_neg;
  std::int64_t negatives_per_link = 0;  // LinkSplit::negatives_per_link: each link's own negatives
  // A balanced run (TrainConfig::balance): the output row of each node of the input graph. The
  // lists above are in output rows already; the task draws its negatives as node pairs of the
  // input and moves them here, so a balanced run draws the pairs an unbalanced one does. Empty:
  // the input's order.
  std::vector<index_t> row_of_node;
};

// Everything one rank holds of the dataset. A layer's Â block depends on its layout: its roles
// (layer_roles) and, with two orders, its parity (l % 2).
struct GnnShards {
  index_t num_nodes = 0;
  index_t num_edges = 0;      // of the whole graph (as stored, before normalisation)
  std::vector<index_t> dims;  // D_0 = features, hidden..., D_L = classes
  int layers() const { return static_cast<int>(dims.size()) - 1; }
  // The layer orders the shards were cut for (one entry per layer; TrainConfig::layer_order):
  // the model built on them follows it.
  std::vector<bool> transform_first;
  // Distinct Â blocks and their transposes (for the backward SpMM). Layouts whose blocks
  // coincide (always on a 1-rank grid with one order) share one. adj[k] holds rows
  // adj_blocks[k].part_rows of the block, adj_t[k] rows adj_blocks[k].part_cols of its
  // transpose: the whole block and transpose unless the block is sharded.
  std::vector<HostCsr> adj, adj_t;
  std::vector<AdjBlockRange> adj_blocks;
  std::vector<int> adj_of_layer;  // per layer: its block's index into adj
  // The first layer of each distinct layout (roles, Â1 or Â2), in layer order: the same list on
  // every rank, so that work done once per layout (collective reads, the degree collectives of
  // SAGE's mean) is issued in the same sequence everywhere.
  std::vector<int> layouts;
  const HostCsr& adj_for_layer(int l) const { return adj[static_cast<std::size_t>(adj_of_layer[l])]; }
  const HostCsr& adj_t_for_layer(int l) const { return adj_t[static_cast<std::size_t>(adj_of_layer[l])]; }
  // Where each node's self-loop Â[v, v] lies in block k: for every row of the whole block
  // (adj_blocks[k].rows), the block's local column of that row's node, or -1 when the node's
  // column is outside the block. SAGE and GIN separate a node from its neighbours with it
  // (models/gnn_operators.hpp); with two node orders a row's self-loop is not column r. Filled
  // by the loaders and build_shards (empty for shape-only shards).
  std::vector<std::vector<index_t>> adj_self_col;
  // The input graph's id of each row and of each column of block k (adj_blocks[k].rows and
  // .cols: a renumbered graph's blocks are in its orders); both empty when the block's rows and
  // columns are in the input order (row r is node r). What reports per edge (GAT's attention)
  // name their nodes by. Filled by the loaders and build_shards.
  std::vector<std::vector<index_t>> adj_row_ids, adj_col_ids;
  // This rank's stored feature block: layer 0's input block with its rows further split over
  // its replication axis (LayerGeometry::in_repl), all-gathered there in the forward pass.
  Range feat_rows, feat_cols;
  std::vector<float> features;   // feat_rows × feat_cols, row-major
  Range label_rows;              // rows of the last layer's output
  std::vector<std::int32_t> labels;
  std::vector<std::uint8_t> train, val, test;
  // The input graph's id of each label row's node (a balanced graph is renumbered); empty
  // when the rows are in the input order (row r is node r).
  std::vector<index_t> label_ids;
  // Each label row's node weight in the loss (GraphData::node_weights); empty: every node 1.
  std::vector<float> loss_weights;
  std::array<index_t, 3> split_sizes{};  // global train / val / test counts
  // Shards of sizes only, for a plan's dry run on a backend that does not compute (src/plan/):
  // adj, adj_t, features, labels and masks stay empty, and block k of adj_blocks holds
  // adj_nnz[k] entries.
  bool shape_only = false;
  std::vector<index_t> adj_nnz;
  // And, where the plan has a table of Â's blocks with their held rows (plexus/block_counts.hpp),
  // the row-sparse sums (--sparse-comm) are planned from its counts (null: planned dense).
  // adj_symmetric: Â's pattern is symmetric (an undirected graph), so the transpose of a block of
  // one order holds the rows of the other order's block (Â2 = Â1ᵀ; with one order Â1 = Â1ᵀ).
  std::shared_ptr<const AdjBlockCounts> adj_counts;
  bool adj_symmetric = false;
  // The link task's pairs (empty for node classification).
  LinkPairs links;
  // Edge features (GraphData::edge_features), for a model whose layers read them (GINE,
  // GnnKindInfo::edge_features): the width, and for each Â block k the feature row of every
  // entry of adj[k] in its CSR order, [adj[k].nnz() × width] row-major — the row of the input's
  // edge (row node → column node); for the row's self-loop (Â's, not an edge) the mean of the
  // row's edges' rows (PyG's GATConv fills its self-loops so; GINE sends it no message). Empty
  // otherwise; a shape-only shard has the width and no rows.
  index_t edge_feature_width = 0;
  std::vector<std::vector<float>> adj_edge_features;
  // Bytes of the arrays held (what a rank's memory for the dataset is, after loading).
  std::size_t host_bytes() const;
};

}  // namespace plexus
