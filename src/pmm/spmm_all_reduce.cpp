#include "pmm/spmm_all_reduce.hpp"

#include <memory>
#include <stdexcept>
#include <vector>

#include "plexus/shard.hpp"
#include "pmm/bf16_tensors.hpp"

namespace plexus {

void spmm_all_reduce(Backend& be, Communicator& comm, const AdjOperand& a, ConstMatrixView b, Matrix& c, float beta,
                     bool bf16) {
  if (a.chunks.empty()) {
    be.spmm(a.whole, b, c.view(), beta, a.whole_plan);
    if (bf16)
      all_reduce_in_bf16(be, comm, c.data(), c.size());
    else
      comm.all_reduce(c.data(), c.size(), ReduceOp::Sum);
    return;
  }
  // Chunk k's rows of c are contiguous (row-major, ld == cols): its all-reduce starts as soon
  // as its SpMM is done. Between chunks every outstanding request is tested, because Open MPI
  // advances a non-blocking collective only inside MPI calls.
  std::vector<std::unique_ptr<Communicator::Request>> pending;
  index_t row = 0;
  for (std::size_t k = 0; k < a.chunks.size(); ++k) {
    const CsrView& chunk = a.chunks[k];
    MatrixView rows = rows_of(c.view(), row, row + chunk.rows);
    be.spmm(chunk, b, rows, beta, k < a.chunk_plans.size() ? a.chunk_plans[k] : nullptr);
    if (bf16) {
      all_reduce_in_bf16(be, comm, rows.data, static_cast<std::size_t>(rows.rows * rows.cols));
    } else if (comm.size() > 1) {
      // No synchronize: a device communicator orders the call after the SpMM with an event
      // (NCCL) or reads the chunk with a copy that waits for it (staging), so the host never
      // waits and the next chunk's SpMM overlaps this chunk's all-reduce.
      for (auto& r : pending) r->test();
      pending.push_back(comm.iall_reduce(rows.data, static_cast<std::size_t>(rows.rows * rows.cols)));
    }
    row += chunk.rows;
  }
  for (auto& r : pending) r->wait();
}

void spmm_rows(Backend& be, const AdjOperand& a, ConstMatrixView b, MatrixView c) {
  if (a.chunks.empty()) return be.spmm(a.whole, b, c, 0.0f, a.whole_plan);
  index_t row = 0;
  for (std::size_t k = 0; k < a.chunks.size(); ++k) {
    be.spmm(a.chunks[k], b, rows_of(c, row, row + a.chunks[k].rows), 0.0f,
            k < a.chunk_plans.size() ? a.chunk_plans[k] : nullptr);
    row += a.chunks[k].rows;
  }
}

void all_reduce_to_bf16(Backend& be, Communicator& comm, const AdjOperand& a, Matrix& ws, Bf16Matrix& c16) {
  if (c16.rows() != ws.rows() || c16.cols() != ws.cols() || !ws.contiguous())
    throw std::invalid_argument("all_reduce_to_bf16: the workspace and the bf16 sum differ in shape");
  // Rows [r0, r1) of ws: rounded into c16, summed over comm there, and the sum back in ws.
  const auto reduce = [&](index_t r0, index_t r1) {
    const auto off = static_cast<std::size_t>(r0 * ws.cols()), n = static_cast<std::size_t>((r1 - r0) * ws.cols());
    be.to_bf16(n, ws.data() + off, 0.0f, c16.data() + off);
    if (comm.size() == 1) return;
    comm.all_reduce_bf16(c16.data() + off, n);
    be.from_bf16(n, c16.data() + off, ws.data() + off);
  };
  if (a.chunks.empty()) return reduce(0, ws.rows());
  index_t row = 0;
  for (const CsrView& chunk : a.chunks) {
    reduce(row, row + chunk.rows);
    row += chunk.rows;
  }
}

void spmm_reduce_scatter(Backend& be, Communicator& comm, const AdjOperand& a, ConstMatrixView b, Matrix& c_full,
                         Matrix& c_slice) {
  if (a.chunks.empty()) {
    be.spmm(a.whole, b, c_full.view(), 0.0f, a.whole_plan);
  } else {
    index_t row = 0;
    for (std::size_t k = 0; k < a.chunks.size(); ++k) {
      const CsrView& chunk = a.chunks[k];
      be.spmm(chunk, b, rows_of(c_full.view(), row, row + chunk.rows), 0.0f,
              k < a.chunk_plans.size() ? a.chunk_plans[k] : nullptr);
      row += chunk.rows;
    }
  }
  comm.reduce_scatter(c_full.data(), c_slice.data(), block_counts(c_full.rows(), comm.size(), c_full.cols()));
}

}  // namespace plexus
