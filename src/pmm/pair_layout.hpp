#pragma once
// Where the two rows of a node pair meet on the 3D grid: the layout the link decoders and the
// top-K search share (dot_link_decoder_3d.hpp describes it). The encoder's last output Z is
// [rows of N over R × features over F], replicated over Q; a rank also holds the rows of its Q
// block (block_range(N, |Q|, q)), gathered from the ranks of its R line.
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
