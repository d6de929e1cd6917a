#pragma once
// An all-gather of a block [rows × width] stored in parts over a group — rank q holds the rows
// block_range(rows, p, q) — where each rank reads only some rows of the whole: an SpMM Â·H reads
// the rows of H that are columns of its Â block holding an entry, known at set-up and fixed for
// the run like the row-sparse sums' rows (--sparse-comm auto, docs/communication.md, "Row-sparse
// gathers").
//
//   dense  every rank receives every other rank's part: the all-gather, (p−1)·rows rows over the
//          group. The caller keeps its own all-gather for it (this class only decides).
//   rows   an all-to-all hands each rank only the rows of the others' parts it reads, and its own
//          part is copied in; the rows it does not read are left as they were (nothing reads them).
// A gathered row is a copy: the rows a rank reads hold the same bits in both forms.
//
// The form is decided once, from every rank's rows, by the rows the group would receive and the
// copies the rows form adds (RowsRule, comm/row_lists.hpp: its sender packs each row it sends and
// its receiver places it); the same decision on every rank.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/row_lists.hpp"
#include "plexus/comm.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

class RowSparseGather {
 public:
  enum class Form { Dense, Rows };

  // The dense form (no collective).
  RowSparseGather(Communicator& comm, index_t rows);
  // Collective over `comm`: every rank's `reads` (one byte a row of the whole, non-zero: this rank
  // reads the row) is gathered bit-packed, and the rows form is taken where `rule` says it pays.
  RowSparseGather(Communicator& comm, index_t rows, const std::vector<std::uint8_t>& reads, RowsRule rule);
  // A dry run's (no collective): `reads` p × p counts, reads[r·p + q] the rows of rank q's part
  // that rank r reads (its own part's included). The form and every rank's bytes are exact: they
  // depend on the counts alone.
  RowSparseGather(Communicator& comm, index_t rows, const std::vector<index_t>& reads, RowsRule rule);

  Form form() const { return form_; }
  index_t rows() const { return rows_; }
  // Rows the whole group receives per gather, in each form.
  std::uint64_t dense_group_rows() const { return dense_group_rows_; }
  std::uint64_t rows_group_rows() const { return rows_group_rows_; }
  // Rows the rows form copies that the dense form does not: each received row packed by its
  // sender and placed by its receiver.
  static std::uint64_t rows_form_copies(std::uint64_t received) { return 2 * received; }

  // The rows form's gather (a std::logic_error in the dense form): `own` this rank's part and
  // `whole` the block, `row_bytes` a row in both. Fills this rank's part of `whole` and the rows it
  // reads of the others'. own == whole == nullptr on every rank (a dry run on a backend that holds
  // no memory): only the collective is issued, with its counts.
  void gather(const void* own, void* whole, std::size_t row_bytes) const;

  using Run = RowRun;  // (comm/row_lists.hpp)

 private:
  void build(const RowMasks& masks);
  // Whether `rule` takes the rows form, once rows_group_rows_ holds its rows.
  bool rows_pay(RowsRule rule) const {
    return rows_form_pays(rule, dense_group_rows_, rows_group_rows_, rows_form_copies(rows_group_rows_));
  }

  Communicator* comm_;
  index_t rows_ = 0;
  Form form_ = Form::Dense;
  bool modelled_ = false;  // counts without lists (the dry run's constructor)
  std::uint64_t dense_group_rows_ = 0, rows_group_rows_ = 0;
  // The rows form's lists, built once.
  std::vector<Run> send_runs_;              // rows of this rank's part others read, packed by reader in rank order
  std::vector<std::size_t> send_counts_;    // rows for each rank
  std::vector<std::size_t> recv_counts_;    // rows from each rank
  std::vector<Run> recv_runs_;              // where each received row goes, packed by source in rank order
};

}  // namespace plexus
