// The row-sparse reduce-scatter and its dense form (src/comm/row_sparse_scatter.hpp).
#include "comm/row_sparse_scatter.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/parallel_work.hpp"
#include "plexus/shard.hpp"

namespace plexus {
namespace {

std::size_t as_size(index_t n) { return static_cast<std::size_t>(n); }

}  // namespace

RowSparseScatter::RowSparseScatter(Communicator& comm, index_t rows) : comm_(&comm), rows_(rows) {
  rows_group_rows_ = dense_rows(rows, comm.size());
}

RowSparseScatter::RowSparseScatter(Communicator& comm, index_t rows, const std::vector<std::uint8_t>& maybe_nonzero,
                                   RowsRule rule)
    : RowSparseScatter(comm, rows) {
  if (maybe_nonzero.size() != as_size(rows)) throw std::invalid_argument("RowSparseScatter: a mask of another length");
  const int p = comm.size(), me = comm.rank();
  if (p == 1) return;  // nothing moves
  const RowMasks masks = all_gather_row_masks(comm, maybe_nonzero);
  const auto ranks = static_cast<std::size_t>(p);
  send_counts_.assign(ranks, 0);
  recv_counts_.assign(ranks, 0);
  recv_runs_.assign(ranks, {});
  std::uint64_t moved = 0;  // rows the group receives: each held row from each holder but its owner
  index_t sent = 0;
  for (int q = 0; q < p; ++q) {
    const Range block = block_range(rows, p, q);
    for (index_t r = block.begin; r < block.end; ++r)
      for (int s = 0; s < p; ++s) {
        if (!masks.set(s, r)) continue;
        if (s != q) ++moved;
        if (s == me && q != me) {
          append_row(send_runs_, r, sent++);
          ++send_counts_[static_cast<std::size_t>(q)];
        }
        if (q == me) {
          const index_t slot = r - block.begin;
          if (s == me) {
            append_row(own_runs_, slot, r);
          } else {
            auto& from = recv_runs_[static_cast<std::size_t>(s)];
            append_row(from, slot, static_cast<index_t>(recv_counts_[static_cast<std::size_t>(s)]++));
          }
        }
      }
  }
  rows_group_rows_ = moved;
  // The rows form packs every row it sends; the dense form sends whole blocks from where they lie.
  if (rows_form_pays(rule, dense_group_rows(), moved, moved)) {
    form_ = Form::Rows;
    return;
  }
  *this = RowSparseScatter(comm, rows);  // the dense form keeps no lists
}

RowSparseScatter::RowSparseScatter(Communicator& comm, index_t rows, const std::vector<HeldRowCounts>& held_by_owner,
                                   RowsRule rule)
    : RowSparseScatter(comm, rows) {
  const int p = comm.size(), me = comm.rank();
  const auto ranks = static_cast<std::size_t>(p);
  if (held_by_owner.size() != ranks) throw std::invalid_argument("RowSparseScatter: held rows of another group");
  std::uint64_t moved = 0;
  for (std::size_t q = 0; q < ranks; ++q) {  // each owner's block: its rows held elsewhere move
    const HeldRowCounts& h = held_by_owner[q];
    const index_t block = block_range(rows, p, static_cast<int>(q)).size();
    moved += checked_held_total(h, p, block, "RowSparseScatter") - static_cast<std::uint64_t>(h.per_rank[q]);
  }
  if (p == 1) return;
  rows_group_rows_ = moved;
  if (!rows_form_pays(rule, dense_group_rows(), moved, moved)) {
    rows_group_rows_ = dense_group_rows();
    return;
  }
  form_ = Form::Rows;
  modelled_ = true;
  send_counts_.assign(ranks, 0);
  recv_counts_.assign(ranks, 0);
  for (std::size_t s = 0; s < ranks; ++s) {
    if (s == static_cast<std::size_t>(me)) continue;
    send_counts_[s] = as_size(held_by_owner[s].per_rank[static_cast<std::size_t>(me)]);
    recv_counts_[s] = as_size(held_by_owner[static_cast<std::size_t>(me)].per_rank[s]);
  }
}

void RowSparseScatter::scatter(const float* c, float* out, index_t cols) const {
  const int p = comm_->size(), me = comm_->rank();
  const Range mine = block_range(rows_, p, me);
  const bool data = c != nullptr;
  if (modelled_ && data) throw std::logic_error("RowSparseScatter: a dry run's scatter (held row counts) given data");
  if (rows_ == 0 || cols == 0) return;
  const std::size_t w = as_size(cols), row_bytes = w * sizeof(float), slab = as_size(mine.size()) * w;
  if (p == 1) {
    if (data) std::memcpy(out, c, slab * sizeof(float));
    return;
  }
  if (form_ == Form::Dense) {
    std::vector<std::size_t> send, recv(static_cast<std::size_t>(p), as_size(mine.size()) * row_bytes);
    for (int q = 0; q < p; ++q) send.push_back(as_size(block_range(rows_, p, q).size()) * row_bytes);
    const Scratch<float> parts = scratch<float>(data ? slab * static_cast<std::size_t>(p) : 0);
    comm_->all_to_all_bytes(c, send, data ? parts.get() : nullptr, recv);
    if (!data) return;
    // parts holds every rank's rows of this block, in rank order (its own among them).
    const auto n = static_cast<index_t>(slab);
#pragma omp parallel for schedule(static) if (worth_a_team(n * p))
    for (index_t at = 0; at < n; at += 4096) {
      const index_t len = std::min<index_t>(4096, n - at);
      std::fill_n(out + at, len, 0.0f);
      for (int s = 0; s < p; ++s) add_row(out + at, parts.get() + static_cast<std::size_t>(s) * slab + as_size(at), len);
    }
    return;
  }
  const Scratch<float> in = exchange_rows(*comm_, c, cols, send_runs_, send_counts_, recv_counts_);
  if (!data) return;
  // The sums from +0, rank by rank: this rank's own held rows at its place in the order.
  std::fill_n(out, slab, 0.0f);
  const float* from = in.get();  // source s's rows
  for (int s = 0; s < p; ++s) {
    if (s == me) {
      for (const RowRun& run : own_runs_) add_row(out + as_size(run.row) * w, c + as_size(run.at) * w, run.len * cols);
      continue;
    }
    for (const RowRun& run : recv_runs_[static_cast<std::size_t>(s)])
      add_row(out + as_size(run.row) * w, from + as_size(run.at) * w, run.len * cols);
    from += recv_counts_[static_cast<std::size_t>(s)] * w;
  }
}

}  // namespace plexus
