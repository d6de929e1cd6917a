#pragma once
// Where the two rows of a node pair meet on the 3D grid: the layout the link decoders and the
// top-K search share (dot_link_decoder_3d.hpp describes it). The encoder's last output Z is
// [rows of N over R × features over F], replicated over Q; a rank also holds the rows of its Q
// block (block_range(N, |Q|, q)), gathered from the ranks of its R line. A pair (u, v) is
// scored by the (R, Q) block that holds u and v, and kept by one rank of that block's F line,
// its piece (orient): so each rank keeps 1/P of the pairs (pair_block.hpp).
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

struct PairLayout {
  PairLayout(const ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes);

  Axis r, f, q;          // Z's rows' axis, its features' axis, its replication axis
  index_t n = 0, width = 0;
  Range rows, cols;      // Z's rows and columns here
  Range q_rows;          // the Q block of nodes: the second rows of the pairs scored here
  int r_parts = 1;       // ranks of the R line
  int f_parts = 1, f_coord = 0;  // ranks of the F line, and this rank's place on it

  // The way round a pair is scored: (u, v) or (v, u), by a hash of the unordered pair. Both
  // decoders are symmetric in the pair (a dot product, an MLP of z_u ⊙ z_v), so the score is the
  // same either way; a fixed way (u < v, as a split lists its links) would put every link in the
  // blocks above the diagonal, half of them with none.
  struct Oriented {
    std::int64_t u, v;
    int piece;  // the rank of the block's F line that keeps it
  };
  Oriented orient(std::int64_t u, std::int64_t v) const;
  // Whether this rank's (R, Q) block scores pair (u, v), the way orient() says: its first node
  // in rows, its second in q_rows. The rank keeps it when its piece is f_coord too (the piece
  // is a hash of the pair, so every list a pair is selected from, a batch or a whole split,
  // gives it to the same rank, and the pieces of a block are even whatever the pairs' order).
  bool in_block(const Oriented& o) const {
    return o.u >= rows.begin && o.u < rows.end && o.v >= q_rows.begin && o.v < q_rows.end;
  }
  bool in_block(std::int64_t u, std::int64_t v) const { return in_block(orient(u, v)); }

  // rows ∩ q_rows: what this rank gives its R line's gather (maybe empty).
  Range shared_rows() const;
  // Floats of the Q block each rank of the R line holds: its R block's part of it.
  std::vector<std::size_t> q_counts() const;
  // Zq = Z[Q block, F cols] (zq: |Q block| × |F cols|): all-gather over R.
  void gather_q(ProcessGrid& grid, const Matrix& z, Matrix& zq) const;
  // The R line's sum of dZq (|Q block| × |F cols|), this rank's rows of it added into dz:
  // reduce-scatter over R.
  void add_q_gradient(ProcessGrid& grid, Backend& be, const Matrix& dzq, Matrix& dz) const;
  // Invalid_argument unless m is this rank's contiguous rows × cols block.
  void require_block(const Matrix& m, const char* who, const char* what) const;
};

}  // namespace plexus
