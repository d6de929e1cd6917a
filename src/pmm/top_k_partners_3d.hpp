#pragma once
// The best K partners of every node by the dot-product decoder's score (link prediction's
// recommendations: "likely next counterparties of each account"), on the 3D grid, without ever
// holding an N × N score matrix: the R block's rows against the Q block's rows, a tile of the Q
// block at a time, as a GEMM.
//
// Layout (pmm/pair_layout.hpp): Z [rows of N over R × features over F], replicated over Q; the
// Q block's rows gathered over R. The rank's R block is split over F for the selection: each
// rank of F keeps the best K of its slice of rows.
//
// Collectives, in order:
//   Zq = Z[Q block, F cols]                 all-gather        over R   (|Q block| × |F cols|)
//   per tile of T rows of the Q block:
//     S = Z·Zq[tile]ᵀ, partial over F        reduce-scatter    over F   (|R block| × T; each rank
//                                                                        of F gets its slice's rows)
//   the Q blocks' best K merged             all-gather(bytes) over Q   (slice rows × K partners)
// Memory: the tile's scores, |R block| × T floats, and K partners per row of the slice. Searching
// for a list of nodes (only()), the R block's listed rows stand for the R block throughout: a
// tile's GEMM and scores are theirs alone (copied out of Z once), and every count above shrinks
// with them.
#include <cstdint>
#include <limits>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/pair_layout.hpp"

namespace plexus {

struct Partner {
  std::int64_t node = -1;  // -1: no partner (fewer than K candidates)
  float score = -std::numeric_limits<float>::infinity();
};

// The best K partners of each node of `rows` (ascending): row i's at best[i·k .. i·k + k), best
// first (higher score, then lower node), padded with node -1.
struct TopKRows {
  std::vector<std::int64_t> rows;
  index_t k = 0;
  std::vector<Partner> best;
};

class TopKPartners3D {
 public:
  TopKPartners3D(Backend& be, ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes);

  // Searches for the listed nodes only (global rows: ascending, distinct, in [0, N); every rank
  // the same list) instead of every node: a tile's GEMM then takes the listed rows of the R block
  // alone, so its cost falls with the list. Invalid_argument for a list out of order or range.
  void only(const std::vector<std::int64_t>& nodes);

  // For every node u this rank reports (reported(): the nodes of its slice of the R block, the R
  // block split over F — all of them, or those of the list given to only()) the K nodes v ≠ u with
  // the highest Z[u]·Z[v], leaving out the v in exclude[i] for u = reported()[i] (sorted; empty:
  // none; e.g. u's existing neighbours). Every rank of Q gets the same result. `tile`: rows of the
  // Q block scored at a time (≥ 1). Collective over R, F and Q.
  TopKRows search(const Matrix& z, index_t k, const std::vector<std::vector<std::int64_t>>& exclude, index_t tile);

  const std::vector<std::int64_t>& reported() const { return reported_; }

 private:
  Backend& be_;
  ProcessGrid& grid_;
  PairLayout at_;
  Range slice_;  // the R block's rows this rank of F selects for
  bool listed_ = false;                   // only(): the R block's listed rows, not all of them
  std::vector<std::int64_t> block_rows_;  // listed_: the R block's listed rows (ascending)
  std::vector<std::int64_t> reported_;    // the slice's rows searched for (all, or the listed)
};

}  // namespace plexus
