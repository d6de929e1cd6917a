#pragma once
// Preparing a graph for training, once, ahead of time (`plexus prepare`, docs/balancing.md):
// clean the adjacency, normalise it for the GCN and store it in the balanced orders that the
// layers use, so that training only reads blocks.
//
// With node orders P (rows) and P2 (columns) -- new ids of every node, see NodeOrder -- the
// prepared graph holds
//   Â1 = P·Â·P2ᵀ  used by even layers: input rows in P2 order, output rows in P order,
//   Â2 = P2·Â·Pᵀ  used by odd layers:  input rows in P order, output rows in P2 order,
// so layer l's output order is layer l+1's input order. The features (layer 0's input) are
// in P2 order, and the labels in the order of the last layer's output: P2 after an even
// number of layers, P after an odd one; both are kept. With one order (none, metis) Â1 == Â2.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plexus/balance.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/buffer.hpp"
#include "plexus/graph.hpp"
#include "plexus/link_split.hpp"

namespace plexus {

struct PrepareOptions {
  // Drop self-loops and duplicate edges (the first occurrence in row order keeps its weight).
  bool clean = true;
  // Store every edge in both directions (after cleaning; an edge stored both ways keeps each
  // direction's own weight). The result is undirected.
  bool symmetrize = true;
  Balance balance = Balance::kNone;
  std::uint64_t seed = 1;  // of the permutations
  int metis_parts = 1;     // METIS parts (order_parts of `--grid`): metis lcm(X, Y, Z), locality Z·X
  int order_col_parts = 1;  // locality: the column blocks its column order deals the parts over (X)
  // Store /features in bfloat16, rounded to nearest even (`--feature-precision bf16`; half the
  // bytes; docs/format-v1.md): readers convert them to float32 exactly.
  bool features_bf16 = false;
};

struct PreparedGraph {
  // The cleaned graph renumbered by P2 (format v1: adjacency, features, labels and masks all
  // in P2 order), i.e. a plain graph any v1 reader can use.
  GraphData graph;
  Balance balance = Balance::kNone;
  std::uint64_t seed = 1;
  int metis_parts = 1;
  HostCsr a1;  // Â1 = P·Â·P2ᵀ
  HostCsr a2;  // Â2 = P2·Â·Pᵀ; empty (0 rows) when P == P2
  bool two_orders() const { return a2.rows > 0; }
  const HostCsr& adj(int which) const { return which == 1 && two_orders() ? a2 : a1; }
  // The original id of the node at each position of P and of P2.
  std::vector<index_t> node_id_p, node_id_p2;
  // Labels and masks in P order (empty when P == P2: graph.labels etc. serve both).
  std::vector<std::int32_t> labels_p;
  std::vector<std::uint8_t> train_p, val_p, test_p;
  // Each order's entries counted by block (plexus/block_counts.hpp): what plans read to be exact.
  AdjBlockCounts block_counts;
  bool features_bf16 = false;  // how the writer stores /features (PrepareOptions::features_bf16)
  // The graph's link split (the held-out links and their negatives) in P2 order, as /graph:
  // written as /links (docs/format-v1.md, "Link splits"). Nullopt: the graph has none.
  std::optional<LinkSplit> links;
};

// Self-loops and duplicates dropped (and, with `symmetrize`, every edge stored both ways),
// rows sorted by column. Validates `g` first. Edge features move with their entries: a
// duplicate's first row is kept, an edge stored by symmetrizing takes its reverse's row.
GraphData clean_graph(GraphData g, bool symmetrize);

// Cleans `g` (opt.clean / opt.symmetrize), computes Â = D^-1/2 (A+I) D^-1/2 exactly as
// gcn_normalize does, the orders of opt.balance, and everything PreparedGraph holds. Memory:
// docs/balancing.md ("Memory of prepare"). Throws InputError on an invalid graph or option.
PreparedGraph prepare_graph(GraphData g, const PrepareOptions& opt);
// The same for a graph with a link split (`g` holding the training links only, as a file with
// /links does): the split is checked against `g`, renumbered into P2 order with the graph
// (PreparedGraph::links) and checked again against the cleaned graph (symmetrizing a directed
// graph can make a held-out link an edge: InputError).
PreparedGraph prepare_graph(GraphData g, const PrepareOptions& opt, const LinkSplit& held_out);

// A prepared graph (P2 order: PreparedGraph::graph, a prepared file's /graph) back in the order
// of the graph that was prepared: node k of `g` becomes node node_id_p2[k], rows sorted by
// column, edge feature rows moved with their entries. What the models that read the whole
// graph (the link task, edge features) train on, so that a prepared file trains as the cleaned
// plain one. InputError("/prepared/node_id_p2", ...) when it is no permutation of the nodes.
GraphData original_order(GraphData g, const std::vector<index_t>& node_id_p2);
// A link split's nodes renumbered: node u becomes new_id[u] (every node of it in range).
LinkSplit renumbered(const LinkSplit& s, const std::vector<index_t>& new_id);
// The same for one list of pairs.
NodePairList renumbered(NodePairList p, const std::vector<index_t>& new_id);

// Rows and columns of a CSR renumbered: row r of `a` becomes row row_new[r], column c becomes
// col_new[c]; every output row sorted by column. Values move with their entries unchanged.
HostCsr permute_csr(const HostCsr& a, const std::vector<index_t>& row_new, const std::vector<index_t>& col_new);

// Atomic, like write_graph_h5: the v1 datasets from `p.graph` plus the /prepared group
// (docs/format-v1.md, "Prepared graphs"). The overload that also keeps the input's original
// node ids and class names (NodeNames) is declared in plexus/io.hpp.
void write_prepared_h5(const PreparedGraph& p, const std::string& path);

// What a file says about its preparation (read_prepared_info_h5): prepared == false for a
// plain v1 file. The node ids are read only when asked (`with_ids`).
struct PreparedInfo {
  bool prepared = false;
  Balance balance = Balance::kNone;
  std::uint64_t seed = 0;
  int metis_parts = 1;
  bool two_orders = false;
  std::vector<index_t> node_id_p, node_id_p2;
};
PreparedInfo read_prepared_info_h5(const std::string& path, bool with_ids = false);
// The block counts a prepared file stores (/prepared/block_counts), checked against its node
// count; empty for a plain file or one prepared before they were stored.
AdjBlockCounts read_adj_block_counts_h5(const std::string& path);

}  // namespace plexus
