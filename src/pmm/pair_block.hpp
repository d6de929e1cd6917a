#pragma once
// The node pairs a rank keeps for the link decoders (dot_link_decoder_3d.hpp has the layout),
// and the rounds in which the ranks of a block's F line visit all of them.
//
// A pair (u, v) is scored by the (R, Q) block whose R block holds u and whose Q block holds v
// (the way round PairLayout::orient says). Each rank of F holds only its columns of the two rows,
// so every pair of the block needs a partial score from every rank of its F line; but a pair's
// tensors are kept by one rank of the line (PairLayout::orient: its piece). A pass over the pairs
// goes round: for each rank of the F line in turn, its piece a chunk at a time — the chunk's
// node ids are all-gathered over F from it (two 32-bit ids a pair), every rank of the line
// builds the chunk's pattern, works on it and frees it. So a rank's pair memory is its piece
// and one chunk (a sixteenth of the largest piece, at least kMinPairChunk pairs): 1/P of it.
// A large block is cut into kPairTiles × kPairTiles tiles (ranges of its R rows × ranges of its
// Q rows) and no chunk crosses a tile, so a chunk's pattern and its transpose span a tile's
// rows, not the block's: their row pointers stay a small part of the chunk.
//
// The chunks' shapes (sizes and rows) are known to every rank of the line from the list the
// pairs were selected from, which holds the whole block on each of them, so no collective
// tells them and a plan's dry run, which moves no data, allocates what training does.
//
// Collectives, per chunk, over F:
//   the chunk's node ids            all-gather (int32)   2 × chunk, from its owner
//   what the caller adds            share_from_owner: an all-gather from the owner;
//                                   sum_to_owner: a reduce-scatter to the owner
// and, when the backend computes, once per selection the pieces' sizes (a host all-gather over
// F, to check that every rank of the line selected from the same block).
#include <cstdint>
#include <functional>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/pair_layout.hpp"

namespace plexus {

// The shape of a chunk of one piece of the block.
struct PairChunkShape {
  int owner = 0;                 // the rank of F whose piece it is
  index_t offset = 0, size = 0;  // its entries [offset, offset + size) of the owner's piece
  index_t row0 = 0, span = 0;    // its rows: R-block rows [row0, row0 + span)
  index_t col0 = 0, cspan = 0;   // its columns: Q-block rows [col0, col0 + cspan)
};

// The pairs a rank keeps: those of its (R, Q) block whose piece is its own, tile by tile, each
// tile's in row order (each row's pairs in the order given), and the chunks of every piece of
// its F line.
// `index[k]`: the position, in the list they were selected from, of the pair that is entry k
// (scores and gradients are in entry order).
struct PairBlock {
  Buffer<col_t> nodes;                 // entry k's row in the R block and in the Q block: 2k, 2k + 1
  std::vector<std::int64_t> index;     // entry k's place in its list
  std::vector<PairChunkShape> chunks;  // every piece's, the F line's ranks in order
  index_t pairs() const { return static_cast<index_t>(index.size()); }
};

// A chunk of one piece of the block, as every rank of the F line holds it in its round.
struct PairChunk : PairChunkShape {
  CsrMatrix pattern;              // [span × cspan], the chunk's entries in order
  CsrMatrix transpose;            // [cspan × span], when asked for
  Buffer<index_t> transpose_map;  // entry k of the transpose is entry transpose_map[k]
};

inline constexpr index_t kMinPairChunk = 4096;
// Tiles a side of a block whose largest piece holds at least 16·kMinPairChunk pairs (one below).
inline constexpr index_t kPairTiles = 4;

// The pairs of (u[k], v[k]) (global rows in the order of the last layer's output) that this
// rank keeps (its block's whose piece is its own: PairLayout::orient), with index[k] as their
// places (k without). Every rank of the F line must pass a list holding the same pairs of its
// block, such as the whole list (a rank whose list lacks pairs that another's holds is a
// logic_error, when the backend computes).
// Rows out of [0, N) are invalid_argument (`who` names the caller). Collective over F.
PairBlock select_pairs(Backend& be, ProcessGrid& grid, const PairLayout& at, const std::vector<std::int64_t>& u,
                       const std::vector<std::int64_t>& v, const std::vector<std::int64_t>& index, const char* who);

// Calls `visit` for every chunk of every piece of the block, the F line's ranks in order, each
// piece from its start: the same chunks on every rank of the line, so `visit` may run
// collectives over F. `transpose`: build each chunk's transpose too. Collective over F.
void for_each_pair_chunk(Backend& be, ProcessGrid& grid, const PairLayout& at, const PairBlock& pairs, bool transpose,
                         const std::function<void(const PairChunk&)>& visit);

// `width` floats a pair of the chunk, from the owner's `mine` (rows of its piece) into `out`
// (chunk.size × width) on every rank of F: an all-gather over F.
void share_from_owner(ProcessGrid& grid, const PairLayout& at, const PairChunk& chunk, const float* mine, index_t width,
                      float* out);
// The sum over F of `partial` (chunk.size × width on every rank of F) into the owner's `mine`
// (rows of its piece, at the chunk's offset): a reduce-scatter over F.
void sum_to_owner(ProcessGrid& grid, const PairLayout& at, const PairChunk& chunk, const float* partial, index_t width,
                  float* mine);

}  // namespace plexus
