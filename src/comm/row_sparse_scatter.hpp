#pragma once
// A reduce-scatter (sum) of row-major blocks [rows × cols] in host memory over a group of ranks,
// where some of a rank's rows are known to be zero for the whole run (comm/row_sparse_sum.hpp's
// rows of an Â block without entries): rank q receives the sums of its rows
// block_range(rows, P, q). The rs-ag variant's last layer transforming first scatters OUT = Â·Y
// over o this way (src/pmm/gcn_layer_3d.cpp, [3]; --sparse-comm).
//
// One schedule in two forms, both summing every row in rank order, in fp32, from +0:
//   dense  every rank sends each owner its rows of the owner's block (an all-to-all of whole
//          blocks, from where they lie), and the owner sums them: (P−1)/P of the rows a rank.
//   rows   every rank sends each owner only the rows of its block that it holds (packed); the
//          owner sums what it received with its own held rows; a row no rank holds is +0.
// A term of zeros changes no bit of a sum that starts at +0 (row_sparse_sum.hpp), so both forms
// give the same bits. Which one a scatter takes is decided once, from every rank's rows, by the
// rows the group would receive and the rows the rows form packs besides (RowsRule,
// comm/row_lists.hpp: the same decision on every rank, from counts a plan knows too).
#include <cstdint>
#include <vector>

#include "comm/row_lists.hpp"
#include "comm/row_sparse_sum.hpp"  // HeldRowCounts
#include "plexus/comm.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

class RowSparseScatter {
 public:
  enum class Form { Dense, Rows };

  // The dense form over `comm` (no collective: --sparse-comm dense, or a dry run without rows).
  RowSparseScatter(Communicator& comm, index_t rows);
  // Collective over `comm`: every rank's `maybe_nonzero` (one byte a row, non-zero: the row may
  // hold values) is gathered, bit-packed, and the rows form taken where `rule` says it pays.
  RowSparseScatter(Communicator& comm, index_t rows, const std::vector<std::uint8_t>& maybe_nonzero, RowsRule rule);
  // A dry run's scatter (no collective; scatter() then takes nullptrs only): held_by_owner[q] is
  // the rows of owner q's block block_range(rows, P, q) that each rank of the group holds (in
  // group rank order). The form and every rank's rows sent and received are exact: they depend
  // on these counts alone.
  RowSparseScatter(Communicator& comm, index_t rows, const std::vector<HeldRowCounts>& held_by_owner, RowsRule rule);

  // Rows a group of p ranks receives per scatter of `rows` rows in the dense form.
  static std::uint64_t dense_rows(index_t rows, int p) {
    return static_cast<std::uint64_t>(p - 1) * static_cast<std::uint64_t>(rows);
  }

  Form form() const { return form_; }
  index_t rows() const { return rows_; }
  // Rows the whole group receives per scatter (times cols · 4 bytes: the bytes), in each form.
  std::uint64_t dense_group_rows() const { return dense_rows(rows_, comm_->size()); }
  std::uint64_t rows_group_rows() const { return rows_group_rows_; }

  // c [rows × cols] (ld = cols, read only) summed over the group into `out`, this rank's rows
  // block_range(rows, P, rank) [× cols]. c and out nullptr on every rank (a dry run on a backend
  // that holds no memory): only the collective is issued, with its counts. On one rank out = +0 + c.
  void scatter(const float* c, float* out, index_t cols) const;

 private:
  Communicator* comm_;
  index_t rows_ = 0;
  Form form_ = Form::Dense;
  bool modelled_ = false;  // counts without lists (the HeldRowCounts constructor)
  std::uint64_t rows_group_rows_ = 0;
  // The rows form's lists (empty for the dense one), built once.
  std::vector<RowRun> send_runs_;          // held rows, packed by owner in rank order (at: in the packed buffer)
  std::vector<std::size_t> send_counts_;   // rows for each owner
  std::vector<std::size_t> recv_counts_;   // rows from each rank (this rank's own: 0)
  std::vector<std::vector<RowRun>> recv_runs_;  // per source: row of this rank's block (row) of each received row (at)
  std::vector<RowRun> own_runs_;           // rows of this rank's block it holds (row: in the block; at: in c)
};

}  // namespace plexus
