#pragma once
// The dot-product link decoder on the 3D grid (link prediction's GAE / PyG link_pred decoder):
// the score of a node pair (u, v) is the dot product of their rows of the encoder's last
// output Z,  s = Σ_j Z[u,j]·Z[v,j]  — an SDDMM over a second sparse pattern, the pairs.
//
// Layout. The last layer's output block is Z [rows of N over R × features over F], replicated
// over Q (R = its rows' axis d, F = out_feat(), Q = out_repl(): three distinct axes). The pairs
// are cut like Â's blocks: pair (u, v) belongs to the (R, Q) block whose R block holds u and
// whose Q block (block_range(N, |Q|, q)) holds v; every rank of that block's F line computes the
// partial dot product over its feature columns, and one of them keeps the pair (its piece,
// pair_block.hpp), so a rank keeps 1/P of the pairs. The pieces go round the F line a chunk at
// a time (for_each_pair_chunk); each chunk's partial scores are summed into its owner. The Q
// block's rows of Z come from the ranks of this rank's R line, which hold them between them
// (each its R block's part of the Q block).
//
// Collectives, in order (a forward/backward pair each):
//   forward   Zq = Z[Q block, F cols]        all-gather        over R   (|Q block| × |F cols|)
//             a chunk's node ids             all-gather (int32) over F  (2 × chunk, from its owner)
//             s  = Σ_F partial dots          reduce-scatter    over F   (a chunk, to its owner)
//   backward  a chunk's node ids, dL/ds      all-gather        over F   (from its owner)
//             dZq = Sᵀ_g·Z  back to owners   reduce-scatter    over R   (|Q block| × |F cols|)
//             dZ = S_g·Zq + dZq's part, whole all-reduce(sum)   over Q   (|R rows| × |F cols|)
// where S_g is the pairs' pattern with dL/ds as its values. The gradient left in dZ is the whole
// gradient of the rank's Z block (every replica over Q the same), as a task's loss gives it.
//
// Pair memory (the piece's node ids, its scores and gradients, one chunk's pattern) falls as 1/P:
// each score is computed once, on the rank that keeps its pair, so a loss sums every rank's.
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "core/shard_layout.hpp"
#include "pmm/link_decoder_3d.hpp"
#include "pmm/pair_block.hpp"
#include "pmm/pair_layout.hpp"

namespace plexus {

class DotLinkDecoder3D : public LinkDecoder3D {
 public:
  // `last`: the geometry of the encoder's last layer (its output is what is scored), over
  // `num_nodes` nodes.
  DotLinkDecoder3D(Backend& be, ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes);

  // The pairs of (u[k], v[k]) (global rows in the order of the last layer's output) that this
  // rank keeps (select_pairs: its piece of its block). The ranks of an F line pass lists with
  // the same pairs of their block (the whole list, say). Rows out of [0, N) are
  // invalid_argument. Collective over F.
  PairBlock select(const std::vector<std::int64_t>& u, const std::vector<std::int64_t>& v) const;
  // The same with the pairs' own indices (entry k's PairBlock::index is index[k], not k): a list
  // already cut to this rank's block (PairLayout::in_block) keeps the places of its pairs in the
  // whole list.
  PairBlock select(const std::vector<std::int64_t>& u, const std::vector<std::int64_t>& v,
                   const std::vector<std::int64_t>& index) const;
  const PairLayout& layout() const { return at_; }

  // The scores of this rank's pairs from its block of Z (rows × features of `last`'s output),
  // whole (summed over F), into `scores` (pairs() floats, on the backend). Collective over R and
  // F. Keeps the gathered Q rows for backward().
  void forward(const Matrix& z, const PairBlock& pairs, float* scores) override;
  // dZ from dL/ds of this rank's pairs (`grad`, pairs() floats): written over `dz` (Z's shape),
  // whole on every replica. Collective over R, F and Q. Uses the Q rows of the last forward().
  void backward(const Matrix& z, const PairBlock& pairs, const float* grad, Matrix& dz) override;

  Range rows() const { return at_.rows; }        // the R block of nodes: Z's rows here
  Range q_rows() const { return at_.q_rows; }    // the Q block: the pairs' second nodes here
  Range features() const { return at_.cols; }    // Z's columns here

 private:
  Backend& be_;
  ProcessGrid& grid_;
  PairLayout at_;
  Matrix zq_;  // Z's rows of the Q block (this rank's feature columns)
};

}  // namespace plexus
