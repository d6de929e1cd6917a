#pragma once
// Load balance of the 3D layout: node orderings that even out the nnz of the Â blocks, and
// the measure of how even they are (docs/balancing.md).
//
// The layout of layer l cuts Â into G_d × G_o blocks by index (rows over the d axis, columns
// over the o axis, block_range sizes). On a power-law graph whose ids carry structure (R-MAT,
// crawls, ids sorted by degree) the blocks then hold very different nnz, and the slowest rank
// sets the pace of every SpMM. A node order renumbers the graph before it is cut.
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

enum class Balance { kNone, kPermute, kMetis, kLocality };
inline constexpr Balance kAllBalances[] = {Balance::kNone, Balance::kPermute, Balance::kMetis, Balance::kLocality};
// A balance_name of kAllBalances ("none" | "permute" | "metis" | "locality"); anything else throws
// InputError("Balance", ...).
Balance parse_balance(const std::string& text);
const char* balance_name(Balance b);

// New ids of every node: node v becomes row[v] of the row order and col[v] of the column order
// (both bijections of [0, n)). Even layers use Â1 = P·Â·P2ᵀ (rows renumbered by `row` = P,
// columns by `col` = P2); odd layers use Â2 = P2·Â·Pᵀ (the two swapped), so that layer l's
// output order is layer l+1's input order. none and metis use one order for both (row == col);
// locality two, except where a grid axis it deals over has size 1.
struct NodeOrder {
  Balance kind = Balance::kNone;
  std::vector<index_t> row, col;
  // The orders used for the rows / columns of Â in layer l.
  const std::vector<index_t>& rows_for_layer(int l) const { return l % 2 == 0 ? row : col; }
  const std::vector<index_t>& cols_for_layer(int l) const { return l % 2 == 0 ? col : row; }
};

// A uniformly random permutation of [0, n) (Fisher–Yates driven by Philox on (seed, stream)):
// the same for the same arguments on every machine.
std::vector<index_t> random_permutation(index_t n, std::uint64_t seed, std::uint32_t stream);

// The inverse of a bijection of [0, n): out[new_id[v]] = v (e.g. the node at each position).
std::vector<index_t> inverse_permutation(const std::vector<index_t>& new_id);

// A random permutation stratified by `weight` (new id of every node): nodes sorted by weight
// (random tie-breaks) are dealt to positions along a Kronecker (golden-ratio) sequence with a
// random offset, so every run of consecutive positions -- whatever the block count -- holds
// an even share of the heavy nodes. Keyed by (seed, stream) like random_permutation.
std::vector<index_t> stratified_permutation(const std::vector<index_t>& weight, std::uint64_t seed,
                                           std::uint32_t stream);

// none: identity. permute: P and P2 independent weight-stratified random permutations keyed
// by `seed` (streams 0 and 1), weighted by the row's nnz in Â.
// metis: METIS_PartGraphKway into `parts` parts of the symmetrized graph, balancing two
// vertex weights, 1 and degree + 1 (= the row's nnz in Â), so parts hold equal node counts
// and equal nnz; nodes numbered part by part (stable inside a part);
// parts <= 1 gives the identity. Throws InputError("Balance", ...) when METIS fails.
// locality: METIS as metis into `parts` = G_d·G_o parts (G_o = `col_parts`, layer 0's column
// blocks), numbered part by part in two sequences: P (rows) in part order, so row block i holds
// parts i·G_o .. i·G_o + G_o - 1, and P2 (columns) column-major, so column block j holds parts
// j, G_o + j, 2·G_o + j, ...: block (i, j) meets the rows and the columns of one part, i·G_o + j,
// and holds its internal edges. Equal-nnz parts give blocks of about equal nnz (what the SpMM
// needs, unlike metis's heavy diagonal), and each block touches about 1/G_o of its rows and 1/G_d
// of its columns (what the row-sparse sums and gathers move: docs/balancing.md, "locality").
NodeOrder make_order(const GraphData& g, Balance kind, std::uint64_t seed, int parts, int col_parts = 1);

// The METIS parts an order cuts for a grid (make_order's `parts` and `col_parts`): metis
// lcm(X, Y, Z), so every layer's blocks end on parts; locality Z·X and X, layer 0's G_d·G_o and
// G_o; none and permute 1 (the grid does not change them).
struct OrderParts {
  int parts = 1, col_parts = 1;
};
OrderParts order_parts(Balance kind, GridShape grid);
// Whether the order is METIS's parts cut for a grid (metis, locality): it needs the grid to train
// on, and the whole graph in one process (not a distributed prepare, not passes).
bool cuts_metis_parts(Balance kind);

// nnz of the Â blocks of one layer's layout.
struct LayerBlockNnz {
  int layer = 0;
  int row_parts = 1, col_parts = 1;  // G_d, G_o
  index_t nodes = 0;
  index_t total = 0;                 // nnz of Â (off-diagonal stored entries + n self-loops)
  index_t max = 0, min = 0;
  double mean = 0;                   // total / (G_d·G_o)
  double imbalance() const { return mean > 0 ? static_cast<double>(max) / mean : 1.0; }
  std::vector<index_t> counts;       // row-major G_d × G_o
  // Per block, as counts: its rows holding an entry, and its columns holding one (its
  // transpose's rows) — what the row-sparse sums of --sparse-comm move (docs/communication.md).
  std::vector<index_t> held_rows, held_cols;
  // Rows the layer's sums move over their groups, all blocks together, per unit of width: the
  // forward sum of Â·H over o and the backward one of Âᵀ·G over d, in the dense form and with
  // --sparse-comm rows, auto's across nodes (each group's form of fewer rows).
  double forward_dense = 0, forward_auto = 0, backward_dense = 0, backward_auto = 0;
  // Rows a gather over d of the layer's input H (its block's columns, stored in G_d parts) moves,
  // all groups together, per unit of width: the all-gather's, and with --sparse-comm rows (auto's
  // across nodes) only the rows of the others' parts each block's columns hold (each group's form
  // of fewer rows; what layer 0 aggregating first gathers: docs/communication.md, "Row-sparse
  // gathers").
  double gather_dense = 0, gather_auto = 0;
  // Of all the blocks' rows, those holding an entry.
  double held_fraction() const;
};

// For layers 0..layers-1: Â = A + I (stored self-loops replaced by one per node, stored
// entries otherwise counted as they are) renumbered by `order`, cut as layer_geometry_at cuts
// it (rows over G_d, columns over G_o, the roles of layers whose orders `transform_first`
// gives: layer_roles). One pass over the edges per distinct layout; O(n + nnz / threads) time,
// O(n) extra memory.
std::vector<LayerBlockNnz> block_nnz_imbalance(const GraphData& g, const NodeOrder& order, GridShape grid,
                                               int layers, const std::vector<bool>& transform_first = {});

// The block (of `parts` near-equal blocks of [0, n), as block_range) holding index i: O(1).
inline int block_of(index_t n, int parts, index_t i) {
  const index_t base = n / parts, extra = n % parts;
  const index_t big = extra * (base + 1);  // indices in the first `extra` blocks of size base + 1
  return static_cast<int>(i < big ? i / (base + 1) : extra + (i - big) / base);
}

}  // namespace plexus
