#pragma once
// Â's entries counted by block, so that plans are exact on real graphs too: `plexus prepare`
// stores the table (docs/format-v1.md, "Prepared graphs"), and plan, --grid auto and train's
// memory check read it (docs/dry-run.md).
//
// The nodes are cut at the block boundaries of every part count of kBlockCountParts
// (block_range(N, p, k) for each p and k); the tile between two consecutive cuts of the rows and
// two of the columns holds its count of entries, for each node order (Â1 and Â2). Every Â block
// of a grid whose axis sizes are all among those part counts starts and ends on cuts, so its
// exact count is a sum of tiles.
//
// Beside the entries, the rows that hold them (`held`): for each row tile and each column block
// of each part count (block_range(N, p, j)), how many of the tile's rows hold at least one entry
// in that block. A row-sparse sum over a grid axis (comm/row_sparse_sum.hpp, --sparse-comm) moves
// rows by these numbers, so a plan predicts its bytes from them (docs/dry-run.md). They add up
// over rows (a rank's or a pass's rows counted apart and summed), not over columns: a block of
// columns is queried as itself, not as a sum of tiles.
#include <array>
#include <vector>

#include "plexus/buffer.hpp"
#include "plexus/shard.hpp"

namespace plexus {

// The part counts whose blocks are cut exactly: 1 to 16, 32 and 64.
inline constexpr std::array<int, 18> kBlockCountParts{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 32, 64};
// The column blocks of all those part counts, one slot each: part count p's blocks j = 0..p−1
// follow those of the smaller part counts (slot 0: p = 1, the whole row).
inline constexpr int kHeldSlots = [] {
  int n = 0;
  for (int p : kBlockCountParts) n += p;
  return n;
}();

struct AdjBlockCounts {
  std::vector<index_t> cuts;  // sorted and distinct, 0 and N included
  // Per order (Â1, Â2): tiles[t] is (cuts.size() − 1)² counts, row tile by column tile. With one
  // order both are the same.
  std::array<std::vector<index_t>, 2> tiles;
  // Their 2-D prefix sums, (cuts.size())² each: set by sum_tiles(), which entries() reads.
  std::array<std::vector<index_t>, 2> prefix;
  // Per order: held[o] is (cuts.size() − 1) × kHeldSlots counts, row tile by column block: the
  // tile's rows with an entry in the block. Empty where not counted (a file from before them).
  std::array<std::vector<index_t>, 2> held;
  // Their prefix sums over the row tiles, cuts.size() × kHeldSlots: set by sum_tiles().
  std::array<std::vector<index_t>, 2> held_prefix;
  bool empty() const { return cuts.size() < 2; }
  bool has_held() const { return !empty() && !held_prefix[0].empty(); }
  void sum_tiles();
  // The entries of rows × cols of order `which` (0: Â1, 1: Â2), or -1 when a bound of the
  // ranges is not a cut (a part count outside kBlockCountParts).
  index_t entries(int which, Range rows, Range cols) const;
  // The rows of `rows` with an entry in `cols` of order `which`, or -1 when not counted: the
  // rows' bounds are not cuts, or `cols` is not a block of a part count of kBlockCountParts.
  index_t held_rows(int which, Range rows, Range cols) const;
};

// The cuts of a graph of n nodes.
std::vector<index_t> block_count_cuts(index_t n);
// Counts the entries of `a1` and `a2` (n × n CSR; a2 with 0 rows: one order, the same tiles).
AdjBlockCounts count_adj_blocks(const HostCsr& a1, const HostCsr& a2);
// The entries of rows [row0, row0 + rows) of an n × n matrix (n = cuts.back(); indptr[0 ..= rows]
// of those rows) counted by tile: one rank's share of a `tiles` table, summed over the ranks
// (prepare_graph_distributed). indptr holds offsets into `indices`.
std::vector<index_t> count_tiles_of_rows(const std::vector<index_t>& cuts, index_t row0, index_t rows,
                                         const index_t* indptr, const col_t* indices);
// The same rows' share of a `held` table (tiles × kHeldSlots), summed over the ranks likewise.
std::vector<index_t> count_held_of_rows(const std::vector<index_t>& cuts, index_t row0, index_t rows,
                                        const index_t* indptr, const col_t* indices);
// The slot of column block `cols` of an n-node graph, or -1 when it is no part count's block.
int held_slot(index_t n, Range cols);

}  // namespace plexus
