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
// `bf16`: the all-reduces travel as bf16 with an fp32 sum (all_reduce_in_bf16, --precision
// bf16); with row chunks each chunk's is then blocking.
void spmm_all_reduce(Backend& be, Communicator& comm, const AdjOperand& a, ConstMatrixView b, Matrix& c,
                     float beta = 0.0f, bool bf16 = false);

class Bf16Matrix;  // pmm/bf16_tensors.hpp

// --precision bf16, sums kept in bf16, in two steps so that the caller can free b in between:
// spmm_rows: c = a·b (fp32; a's row chunks in turn where it has them), no sum.
void spmm_rows(Backend& be, const AdjOperand& a, ConstMatrixView b, MatrixView c);
// c16 = bf16(ws) summed over `comm` in bf16 with an fp32 accumulation
// (Communicator::all_reduce_bf16, in place in c16: no other wire buffer), each of a's row chunks
// on its own as spmm_all_reduce does. Afterwards ws holds the sum in fp32: c16's values, or on
// one rank the unrounded sum (for a caller that adds a bias, an activation or a dropout mask
// before rounding it into c16 again).
void all_reduce_to_bf16(Backend& be, Communicator& comm, const AdjOperand& a, Matrix& ws, Bf16Matrix& c16);

// c_slice = this rank's block of the rows of a·b summed over `comm` (reduce-scatter by rows,
// block comm.rank() of block_counts), with c_full [a's rows × b's cols] holding this rank's
// partial product first. With row chunks the chunks' SpMMs fill c_full in turn, then one
// reduce-scatter.
void spmm_reduce_scatter(Backend& be, Communicator& comm, const AdjOperand& a, ConstMatrixView b, Matrix& c_full,
                         Matrix& c_slice);

}  // namespace plexus
