#pragma once
// The aggregation operators of SAGE and GIN on an Â block's stored pattern (docs/gnn-models.md).
//
// Â's pattern is that of A + I: every node's neighbours and its self-loop. SAGE and GIN need
// the neighbours apart from the node itself, so their operators are new values on the same
// pattern (no second copy of the indices):
//   sum   N = A           1 on each edge,     `self_value` on the self-loop (0: neighbours only)
//   mean  N = D⁻¹A        1/deg(row) on each edge (deg: the row's neighbours, self-loop not counted)
// and the node itself is selected by S, one entry per row of the block (1 at the row's
// self-loop, an explicit 0 where the node's column lies in another block, so that S and Sᵀ
// hold one entry per row of the block whatever the node orders: sizes of the shape only). ROOT = S·H moves each node's row of H from the input order
// to the output order (the two differ with two node orders), summed over o as N·H is.
//
// Collectives (setup, once per block): the mean's degrees, all-reduce (double) of this rank's
// row counts over the layer's o axis (the column blocks of the same rows), and for a sharded
// block an all-gather (int32) of the parts' degrees over its axis.
#include <vector>

#include "plexus/buffer.hpp"
#include "plexus/comm.hpp"
#include "plexus/shard.hpp"

namespace plexus {

struct NeighbourOperator {
  bool mean = false;        // D⁻¹A instead of A
  float self_value = 0.0f;  // the self-loop's value (GIN with a fixed ε: 1 + ε; SAGE: 0)
};

// Replaces the values of this rank's part of block `b` in place: `part` (rows b.part_rows of
// the block) and `part_t` (rows b.part_cols of its transpose). `self_col`: the block's
// GnnShards::adj_self_col. `row_peers`: the communicator of the layer's o axis; `part_axis`:
// that of b.axis when the block is sharded (else unused).
void set_neighbour_values(HostCsr& part, HostCsr& part_t, const AdjBlockRange& b, const std::vector<index_t>& self_col,
                          NeighbourOperator op, Communicator& row_peers, Communicator* part_axis);
// The degree collectives alone, for a block of sizes only (a plan's dry run).
void neighbour_value_collectives(const AdjBlockRange& b, Communicator& row_peers, Communicator* part_axis);

// S for the whole block (rows b.rows × columns b.cols) and Sᵀ.
HostCsr self_loop_selector(const std::vector<index_t>& self_col, index_t cols);
HostCsr self_loop_selector_t(const std::vector<index_t>& self_col, index_t cols);
// The entry count of each, for a block of `rows` × `cols` (one per row while there is a column).
inline index_t self_loop_selector_nnz(index_t rows, index_t cols) { return cols > 0 ? rows : 0; }

}  // namespace plexus
