#pragma once
// The MLP link decoder on the 3D grid (OGB's baseline LinkPredictor): the score of a pair (u, v)
// is an MLP of the elementwise product of its two embeddings,
//   h_0 = z_u ⊙ z_v,  h_l = ReLU(h_{l−1}·W_l + b_l) for l < L,  s = h_{L−1}·W_L + b_L  (one wide),
// W_1 [D × H], W_l [H × H], W_L [H × 1] (L = 1: W_1 is [D × 1]).
//
// Layout. The pairs are laid out as the dot decoder's (dot_link_decoder_3d.hpp): the pairs of
// an (R, Q) block go round its F line a chunk at a time (pair_block.hpp), each rank of the line
// computing a chunk's products over its F columns, from Z's rows of its R block and of its Q
// block (gathered over R). The product h_0 of a pair is local to those columns, so W_1 is split
// by rows over F (each rank of F holds its columns' rows), replicated over R and Q; h_0·W_1 is a
// partial sum over F, summed into the rank that keeps the pair. The layers after it are small
// (H wide) and run on that rank alone, for its own pairs: every pair's activations live on one
// rank (1/P of them), the weights on every rank. A parameter's gradient is its pieces' sum: W_1's
// rows over the R and Q lines (each rank of F holds its rows' part of every pair of its block),
// the rest over the whole grid.
//
// Collectives, in order (a forward/backward pair each):
//   forward   Zq = Z[Q block, F cols]        all-gather       over R   (|Q block| × |F cols|)
//             a chunk's node ids             all-gather (int32) over F (2 × chunk, from its owner)
//             h_0·W_1 (or s, L = 1)          reduce-scatter   over F   (chunk × H, to its owner)
//   backward  a chunk's node ids, dL/d(h_0·W_1)  all-gather   over F   (chunk × H, from its owner)
//             dW_1, db_1 .. dW_L, db_L       all-reduce(sum)  over R and Q (W_1), the grid (the rest)
//             dZq back to its owners         reduce-scatter   over R   (|Q block| × |F cols|)
//             dZ, whole on every replica     all-reduce(sum)  over Q   (|R rows| × |F cols|)
// The backward recomputes each chunk's products rather than keep them for all of the block's
// pairs (|F cols| floats a pair).
//
// Initial values: PyTorch's nn.Linear's (uniform in ±1/√fan_in, weights and biases): element
// (r, c) of layer l's weight is (2u − 1)/√fan_in in double, rounded to float, u =
// counter_uniform(DropoutKey{seed, 2l, kMlpDecoderInitStream}, r, c) (its bias: 2l + 1, row 0),
// each element keyed by its place in the whole tensor (docs/link-prediction.md, "Random streams"), so
// every grid starts from the same decoder.
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/link_decoder_3d.hpp"
#include "pmm/pair_layout.hpp"
#include "pmm/param_slot.hpp"

namespace plexus {

inline constexpr std::uint32_t kMlpDecoderInitStream = 0x11E9;

class MlpLinkDecoder3D : public LinkDecoder3D {
 public:
  // `last`: the encoder's last layer (its output is what is scored), over `num_nodes` nodes;
  // `layers` (≥ 1) linear layers, hidden ones `hidden` wide; `inference`: no gradients kept.
  MlpLinkDecoder3D(Backend& be, ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes, int layers,
                   index_t hidden, std::uint64_t seed, bool inference);

  void forward(const Matrix& z, const PairBlock& pairs, float* scores) override;
  void backward(const Matrix& z, const PairBlock& pairs, const float* grad, Matrix& dz) override;

  // "decoder0/weight", "decoder0/bias", ...: this rank's blocks of the whole tensors, for the optimizer,
  // checkpoints and model files. Not decayed (OGB's baselines decay nothing).
  std::vector<LayerParam> parameters();

 private:
  Backend& be_;
  ProcessGrid& grid_;
  PairLayout at_;
  index_t hidden_;
  bool inference_;
  std::vector<ParamSlot> w_, b_;     // per layer
  Matrix zq_;                        // Z's rows of the Q block (this rank's feature columns)
  std::vector<Matrix> h_;            // h_1 .. h_{L−1} after ReLU, [own pairs × H]
  // Ones of Z's block and of the Q block's shape: edge_dots of them with Zq (with Z) gives each
  // pair's z_v[j] (z_u[j]). Filled once, not every backward pass.
  Matrix ones_r_, ones_q_;
};

}  // namespace plexus
