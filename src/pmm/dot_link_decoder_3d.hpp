#pragma once
// The dot-product link decoder on the 3D grid (link prediction's GAE / PyG link_pred decoder):
// the score of a node pair (u, v) is the dot product of their rows of the encoder's last
// output Z,  s = Σ_j Z[u,j]·Z[v,j]  — an SDDMM over a second sparse pattern, the pairs.
//
// Layout. The last layer's output block is Z [rows of N over R × features over F], replicated
// over Q (R = its rows' axis d, F = out_feat(), Q = out_repl(): three distinct axes). The pairs
// are cut like Â's blocks: pair (u, v) belongs to the rank whose R block holds u and whose Q
// block (block_range(N, |Q|, q)) holds v, and to all |F| ranks of that block, each of which
// computes the partial dot product over its feature columns. So a rank stores the pairs of one
// (R, Q) block, 1/(|R|·|Q|) of them, as a CSR pattern (rows: its R rows, columns: its Q rows).
// The Q block's rows of Z come from the ranks of this rank's R line, which hold them between
// them (each its R block's part of the Q block).
//
// Collectives, in order (a forward/backward pair each):
//   forward   Zq = Z[Q block, F cols]        all-gather        over R   (|Q block| × |F cols|)
//             s  = Σ_F partial dots          all-reduce(sum)   over F   (the block's pairs)
//   backward  dZq = Sᵀ_g·Z  back to owners   reduce-scatter    over R   (|Q block| × |F cols|)
//             dZ = S_g·Zq + dZq's part, whole all-reduce(sum)   over Q   (|R rows| × |F cols|)
// where S_g is the pairs' pattern with dL/ds as its values. The gradient left in dZ is the whole
// gradient of the rank's Z block (every replica over Q the same), as a task's loss gives it.
//
// Pair memory (pattern, scores, gradients) falls as 1/(|R|·|Q|): the |F| ranks of a block hold
// its pairs alike. Every rank computes every score of its block, so a loss summed over the
// pairs counts each block's scores on one rank of F only (the caller's choice).
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "core/shard_layout.hpp"
#include "pmm/link_decoder_3d.hpp"
#include "pmm/pair_layout.hpp"

namespace plexus {

// A set of node pairs as this rank scores them: the pairs of its (R, Q) block, as a CSR pattern
// with each row's pairs in the order given. `index[k]`: the position, in the list they were
// selected from, of the pair that is entry k (scores and gradients are in entry order).
struct PairBlock {
  CsrMatrix pattern, transpose;   // [R rows × Q rows] and its transpose
  Buffer<index_t> transpose_map;  // entry k of the transpose is entry transpose_map[k]
  std::vector<std::int64_t> index;
  index_t pairs() const { return pattern.nnz(); }
};

class DotLinkDecoder3D : public LinkDecoder3D {
 public:
  // `last`: the geometry of the encoder's last layer (its output is what is scored), over
  // `num_nodes` nodes.
  DotLinkDecoder3D(Backend& be, ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes);

  // The pairs of (u[k], v[k]) (global rows in the order of the last layer's output) that this
  // rank scores. Every rank may pass the whole list; each keeps its block's. Rows out of [0, N)
  // are invalid_argument. Not collective.
  PairBlock select(const std::vector<std::int64_t>& u, const std::vector<std::int64_t>& v) const;
  // The same with the pairs' own indices (entry k's PairBlock::index is index[k], not k): a list
  // already cut to this rank's block (owns) keeps the places of its pairs in the whole list.
  PairBlock select(const std::vector<std::int64_t>& u, const std::vector<std::int64_t>& v,
                   const std::vector<std::int64_t>& index) const;
  // Whether this rank's block scores pair (u, v): u in rows(), v in q_rows().
  bool owns(std::int64_t u, std::int64_t v) const {
    return u >= at_.rows.begin && u < at_.rows.end && v >= at_.q_rows.begin && v < at_.q_rows.end;
  }

  // The scores of the block's pairs from this rank's block of Z (rows × features of `last`'s
  // output), whole (summed over F), into `scores` (pairs() floats, on the backend). Collective
  // over R and F. Keeps the gathered Q rows for backward().
  void forward(const Matrix& z, const PairBlock& pairs, float* scores) override;
  // dZ from dL/ds of the block's pairs (`grad`, pairs() floats; every rank of F the same):
  // written over `dz` (Z's shape), whole on every replica. Collective over R and Q. Uses the
  // Q rows of the last forward().
  void backward(const Matrix& z, const PairBlock& pairs, const float* grad, Matrix& dz) override;

  Range rows() const { return at_.rows; }        // the R block of nodes: Z's rows here
  Range q_rows() const { return at_.q_rows; }    // the Q block: the pairs' second nodes here
  Range features() const { return at_.cols; }    // Z's columns here
  Axis feature_axis() const override { return at_.f; }

 private:
  Backend& be_;
  ProcessGrid& grid_;
  PairLayout at_;
  Matrix zq_;  // Z's rows of the Q block (this rank's feature columns)
};

}  // namespace plexus
