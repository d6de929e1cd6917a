#pragma once
// What the link task asks of a decoder on the 3D grid (dot_link_decoder_3d.hpp,
// mlp_link_decoder_3d.hpp): the scores of a block of node pairs (PairBlock: the pairs of this
// rank's (R, Q) block, dot_link_decoder_3d.hpp) from the encoder's last output Z, and dZ from
// their gradients. Both decoders lay the pairs out alike, so one selection serves either.
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

struct PairBlock;

class LinkDecoder3D {
 public:
  virtual ~LinkDecoder3D() = default;
  // The block's scores, whole (every rank of F the same), into `scores` (pairs() floats on the
  // backend). Collective. Keeps what backward() needs.
  virtual void forward(const Matrix& z, const PairBlock& pairs, float* scores) = 0;
  // dZ from dL/ds of the block's pairs (`grad`; every rank of F the same), written over `dz`,
  // whole on every replica; a decoder with parameters writes their gradients too. Collective.
  // After the forward() of the same pairs.
  virtual void backward(const Matrix& z, const PairBlock& pairs, const float* grad, Matrix& dz) = 0;
  // The axis Z's features are split over: the block's ranks along it hold the same scores.
  virtual Axis feature_axis() const = 0;
};

}  // namespace plexus
