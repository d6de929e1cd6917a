#include "pmm/spmm_all_reduce.hpp"

#include <memory>
#include <stdexcept>
#include <vector>

#include "plexus/shard.hpp"
#include "comm/row_sparse_sum.hpp"
#include "pmm/activation_sum_bytes.hpp"
#include "pmm/bf16_tensors.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {
// a's sums planned over `comm` where they serve this product: the product overwrites c (beta ==
// 0), so that the rows without entries are zero, and they cover its chunks.
const PlannedSums* planned_sums(const AdjOperand& a, const Communicator& comm, float beta) {
  if (beta != 0.0f) return nullptr;
  const PlannedSums* p = a.sums_over(comm);
  if (p == nullptr) return nullptr;
  if (a.chunks.empty() ? p->whole == nullptr : p->chunks.size() != a.chunks.size()) return nullptr;
  return p;
}
}  // namespace

void spmm_all_reduce(Backend& be, Communicator& comm, const AdjOperand& a, ConstMatrixView b, Matrix& c, float beta,
                     Wire wire, const std::function<void()>& operand_done) {
  const ActivationSumScope counted(comm);
  if (wire == Wire::Bf16) {
    spmm_rows(be, a, b, c.view(), beta);
    if (operand_done) operand_done();
    all_reduce_in_bf16(be, comm, a, c.view());
    return;
  }
  const PlannedSums* sums = planned_sums(a, comm, beta);
  if (sums != nullptr || wire != Wire::Fp32) {
    // The planned sums (DeviceAdj::plan_sums), or a quantised sum in the dense form: each
    // chunk's, blocking, after its SpMM (host_sum).
    if (a.chunks.empty()) {
      be.spmm(a.whole, b, c.view(), beta, a.whole_plan);
      return host_sum(be, comm, c.data(), c.rows(), c.cols(), wire, sums ? sums->whole.get() : nullptr);
    }
    index_t row = 0;
    for (std::size_t k = 0; k < a.chunks.size(); ++k) {
      const CsrView& chunk = a.chunks[k];
      be.spmm(chunk, b, rows_of(c.view(), row, row + chunk.rows), beta,
              k < a.chunk_plans.size() ? a.chunk_plans[k] : nullptr);
      host_sum(be, comm, c.data() + row * c.cols(), chunk.rows, c.cols(), wire, sums ? sums->chunks[k].get() : nullptr);
      row += chunk.rows;
    }
    return;
  }
  if (a.chunks.empty()) {
    be.spmm(a.whole, b, c.view(), beta, a.whole_plan);
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
    if (comm.size() > 1) {
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

void all_reduce_in_bf16(Backend& be, Communicator& comm, const AdjOperand& a, MatrixView c) {
  const ActivationSumScope counted(comm);
  if (c.ld != c.cols) throw std::invalid_argument("all_reduce_in_bf16: a padded block");
  // Chunk k's rows of c are contiguous (row-major, ld == cols): each summed on its own.
  if (a.chunks.empty()) return all_reduce_in_bf16(be, comm, c.data, static_cast<std::size_t>(c.rows * c.cols));
  index_t row = 0;
  for (const CsrView& chunk : a.chunks) {
    MatrixView rows = rows_of(c, row, row + chunk.rows);
    all_reduce_in_bf16(be, comm, rows.data, static_cast<std::size_t>(rows.rows * rows.cols));
    row += chunk.rows;
  }
}

void spmm_rows(Backend& be, const AdjOperand& a, ConstMatrixView b, MatrixView c, float beta) {
  if (a.chunks.empty()) return be.spmm(a.whole, b, c, beta, a.whole_plan);
  index_t row = 0;
  for (std::size_t k = 0; k < a.chunks.size(); ++k) {
    be.spmm(a.chunks[k], b, rows_of(c, row, row + a.chunks[k].rows), beta,
            k < a.chunk_plans.size() ? a.chunk_plans[k] : nullptr);
    row += a.chunks[k].rows;
  }
}

void spmm_reduce_scatter(Backend& be, Communicator& comm, const AdjOperand& a, ConstMatrixView b, Matrix& c_full,
                         Matrix& c_slice) {
  spmm_rows(be, a, b, c_full.view());
  // The planned scatter (DeviceAdj::plan_scatter: in rank order, of the rows held where that
  // pays), else MPI's reduce-scatter.
  const PlannedSums* planned = a.sums_over(comm);
  if (planned != nullptr && planned->scatter != nullptr) {
    if (planned->scatter->rows() != c_full.rows()) throw std::logic_error("spmm_reduce_scatter: a scatter planned for other rows");
    const bool data = be.computes();  // (a dry run's backend holds no memory)
    return planned->scatter->scatter(data ? c_full.data() : nullptr, data ? c_slice.data() : nullptr, c_full.cols());
  }
  comm.reduce_scatter(c_full.data(), c_slice.data(), block_counts(c_full.rows(), comm.size(), c_full.cols()));
}

}  // namespace plexus
