#pragma once
// What the link task asks of a decoder on the 3D grid (dot_link_decoder_3d.hpp,
// mlp_link_decoder_3d.hpp): the scores of the node pairs this rank keeps (PairBlock: its piece
// of its (R, Q) block, pair_block.hpp) from the encoder's last output Z, and dZ from their
// gradients. Both decoders lay the pairs out alike, so one selection serves either. A decoder
// must score a pair as its reverse (s(u, v) = s(v, u)): the layout picks the way round each
// pair is scored (PairLayout::orient) to keep the blocks even.
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

struct PairBlock;

class LinkDecoder3D {
 public:
  virtual ~LinkDecoder3D() = default;
  // The scores of this rank's pairs, whole, into `scores` (pairs() floats on the backend): each
  // pair is scored on one rank only. Collective. Keeps what backward() needs.
  virtual void forward(const Matrix& z, const PairBlock& pairs, float* scores) = 0;
  // dZ from dL/ds of this rank's pairs (`grad`, pairs() floats), written over `dz`, whole on
  // every replica; a decoder with parameters writes their gradients (summed over the grid)
  // too. Collective. After the forward() of the same pairs.
  virtual void backward(const Matrix& z, const PairBlock& pairs, const float* grad, Matrix& dz) = 0;
};

}  // namespace plexus
