#pragma once
// The aggregation step every GNN layer shares: a sparse product of an Â block (or an operator
// on its pattern) with a dense block, summed over one grid axis.
#include <functional>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/comm.hpp"
#include "pmm/device_adj.hpp"

namespace plexus {

// c = a·b + beta·c, then c summed over `comm` (all-reduce), as `wire` says (Communicator's Wire).
// Where a carries sums planned over `comm` (DeviceAdj::plan_sums, --sparse-comm) and beta is 0,
// they sum (fp32 or quantised; not in bf16). With row chunks (a.chunks, the row blocks of
// a.whole) each chunk's sum is its own: in fp32 without planned sums a non-blocking all-reduce
// that overlaps the next chunk's SpMM. beta scales what c held before (added once: only by this
// rank's share of the sum).
//   Bf16       the sums travel as bf16 with an fp32 sum (all_reduce_in_bf16, --precision bf16):
//              every chunk's product first, then `operand_done` (when given: b is read no more,
//              and a caller may free it before the sums' bf16 wire buffers are taken), then
//              each chunk's sum.
//   Int8/Int4  each chunk's sum quantised (RowSparseSum::sum, --wire; host memory: the CPU
//              backend's), after its SpMM.
void spmm_all_reduce(Backend& be, Communicator& comm, const AdjOperand& a, ConstMatrixView b, Matrix& c,
                     float beta = 0.0f, Wire wire = Wire::Fp32, const std::function<void()>& operand_done = {});

// c (a's product) summed over `comm` in bf16 with an fp32 sum (all_reduce_in_bf16), each of a's
// row chunks on its own, as spmm_all_reduce sums them.
void all_reduce_in_bf16(Backend& be, Communicator& comm, const AdjOperand& a, MatrixView c);

// c = a·b + beta·c (a's row chunks in turn where it has them), no sum.
void spmm_rows(Backend& be, const AdjOperand& a, ConstMatrixView b, MatrixView c, float beta = 0.0f);

// c_slice = this rank's block of the rows of a·b summed over `comm` (reduce-scatter by rows,
// block comm.rank() of block_counts), with c_full [a's rows × b's cols] holding this rank's
// partial product first. With row chunks the chunks' SpMMs fill c_full in turn, then one
// reduce-scatter: the one a planned for `comm` (DeviceAdj::plan_scatter, --sparse-comm), else
// the communicator's.
void spmm_reduce_scatter(Backend& be, Communicator& comm, const AdjOperand& a, ConstMatrixView b, Matrix& c_full,
                         Matrix& c_slice);

}  // namespace plexus
