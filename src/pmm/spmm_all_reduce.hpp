#pragma once
// The aggregation step every GNN layer shares: a sparse product of an Â block (or an operator
// on its pattern) with a dense block, summed over one grid axis.
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/comm.hpp"
#include "pmm/device_adj.hpp"

namespace plexus {

// c = a·b + beta·c, then c summed over `comm` (all-reduce). With row chunks (a.chunks, the row
// blocks of a.whole) each chunk's all-reduce is non-blocking and overlaps the next chunk's
// SpMM. beta scales what c held before (added once: only by this rank's share of the sum).
void spmm_all_reduce(Backend& be, Communicator& comm, const AdjOperand& a, ConstMatrixView b, Matrix& c,
                     float beta = 0.0f);

}  // namespace plexus
