// The row-sparse gather (src/comm/row_sparse_gather.hpp).
#include "comm/row_sparse_gather.hpp"

#include <cstring>
#include <memory>
#include <stdexcept>

#include "plexus/shard.hpp"

namespace plexus {
namespace {

std::size_t as_size(index_t n) { return static_cast<std::size_t>(n); }


}  // namespace

RowSparseGather::RowSparseGather(Communicator& comm, index_t rows) : comm_(&comm), rows_(rows) {
  if (rows < 0) throw std::invalid_argument("RowSparseGather: a negative number of rows");
  dense_group_rows_ = rows_group_rows_ = static_cast<std::uint64_t>(comm.size() - 1) * static_cast<std::uint64_t>(rows);
}

RowSparseGather::RowSparseGather(Communicator& comm, index_t rows, const std::vector<std::uint8_t>& reads,
                                 RowsRule rule)
    : RowSparseGather(comm, rows) {
  if (reads.size() != as_size(rows)) throw std::invalid_argument("RowSparseGather: a mask of another length");
  const int p = comm.size();
  if (p == 1) return;  // nothing moves
  build(all_gather_row_masks(comm, reads));
  if (rows_pay(rule)) {
    form_ = Form::Rows;
    return;
  }
  *this = RowSparseGather(comm, rows);  // the dense form keeps no lists
}

RowSparseGather::RowSparseGather(Communicator& comm, index_t rows, const std::vector<index_t>& reads, RowsRule rule)
    : RowSparseGather(comm, rows) {
  const int p = comm.size(), me = comm.rank();
  const auto ranks = static_cast<std::size_t>(p);
  if (reads.size() != ranks * ranks) throw std::invalid_argument("RowSparseGather: read counts of another group");
  std::uint64_t received = 0;
  for (std::size_t r = 0; r < ranks; ++r)
    for (std::size_t q = 0; q < ranks; ++q) {
      const index_t n = reads[r * ranks + q];
      if (n < 0 || n > block_range(rows, p, static_cast<int>(q)).size())
        throw std::invalid_argument("RowSparseGather: a rank reads more rows of a part than it holds");
      if (r != q) received += static_cast<std::uint64_t>(n);
    }
  if (p == 1) return;
  rows_group_rows_ = received;
  if (!rows_pay(rule)) {
    rows_group_rows_ = dense_group_rows_;
    return;
  }
  form_ = Form::Rows;
  modelled_ = true;
  const auto m = static_cast<std::size_t>(me);
  send_counts_.assign(ranks, 0);
  recv_counts_.assign(ranks, 0);
  for (std::size_t q = 0; q < ranks; ++q) {
    if (q == m) continue;
    send_counts_[q] = as_size(reads[q * ranks + m]);
    recv_counts_[q] = as_size(reads[m * ranks + q]);
  }
}

void RowSparseGather::build(const RowMasks& masks) {
  const int p = comm_->size(), me = comm_->rank();
  const auto ranks = static_cast<std::size_t>(p);
  send_counts_.assign(ranks, 0);
  recv_counts_.assign(ranks, 0);
  std::uint64_t received = 0;
  index_t sent = 0, got = 0;
  // Part by part, reader by reader: this rank's receipts packed by source and its sends by
  // reader, each in rank order and row order.
  for (int q = 0; q < p; ++q) {
    const Range part = block_range(rows_, p, q);
    for (int s = 0; s < p; ++s) {
      if (s == q) continue;
      for (index_t r = part.begin; r < part.end; ++r) {
        if (!masks.set(s, r)) continue;
        ++received;
        if (s == me) ++recv_counts_[static_cast<std::size_t>(q)], append_row(recv_runs_, r, got++);
        if (q == me) ++send_counts_[static_cast<std::size_t>(s)], append_row(send_runs_, r, sent++);
      }
    }
  }
  rows_group_rows_ = received;
}

void RowSparseGather::gather(const void* own, void* whole, std::size_t row_bytes) const {
  if (form_ != Form::Rows) throw std::logic_error("RowSparseGather: the dense form is the caller's all-gather");
  const bool data = whole != nullptr;
  if (modelled_ && data) throw std::logic_error("RowSparseGather: a dry run's gather (read counts) given data");
  const int p = comm_->size(), me = comm_->rank();
  std::size_t sent = 0, received = 0;
  for (const std::size_t n : send_counts_) sent += n;
  for (const std::size_t n : recv_counts_) received += n;
  const Range mine = block_range(rows_, p, me);
  auto* out_whole = static_cast<unsigned char*>(whole);
  const auto* in_own = static_cast<const unsigned char*>(own);
  const Scratch<unsigned char> out = scratch<unsigned char>(data ? sent * row_bytes : 0),
                               in = scratch<unsigned char>(data ? received * row_bytes : 0);
  if (data) {
    for (const Run& run : send_runs_)
      std::memcpy(out.get() + as_size(run.at) * row_bytes, in_own + as_size(run.row - mine.begin) * row_bytes,
                  as_size(run.len) * row_bytes);
    if (mine.size() > 0)
      std::memcpy(out_whole + as_size(mine.begin) * row_bytes, in_own, as_size(mine.size()) * row_bytes);
  }
  comm_->all_to_all_bytes(data ? out.get() : nullptr, scaled_counts(send_counts_, row_bytes),
                          data ? in.get() : nullptr, scaled_counts(recv_counts_, row_bytes));
  if (!data) return;
  for (const Run& run : recv_runs_)
    std::memcpy(out_whole + as_size(run.row) * row_bytes, in.get() + as_size(run.at) * row_bytes,
                as_size(run.len) * row_bytes);
}

}  // namespace plexus
