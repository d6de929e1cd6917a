#pragma once
// An all-reduce (sum) of row-major blocks [rows × cols] in host memory, over a group of ranks,
// where some of a rank's rows are known to be zero for the whole run: the rows of an Â block
// without entries give rows of Â·H that are zero whatever H holds, so a rank need not send them
// (--sparse-comm, docs/communication.md, "Row-sparse sums").
//
// One schedule in two forms. Both sum every row in rank order, in fp32, starting from +0:
//   dense  rank q owns the rows block_range(rows, P, q); an all-to-all hands each owner its rows
//          from every rank (a reduce-scatter), the owner sums them, and an all-gather returns the
//          sums: (P−1)/P of the rows in each phase, the volume of a ring all-reduce.
//   rows   each rank says which of its rows may be non-zero (once, at set-up). A row held by one
//          rank is owned by it and travels in the all-gather only; a row held by several goes to
//          one of them (its dense owner when that one holds it) and its sum comes back in the
//          all-gather; a row no rank holds is zero everywhere and moves not at all.
// On two ranks both forms take one exchange instead: each rank sends the other its rows (all of
// them, or those it holds) and both sum every row, rank 0's first — the same bytes as the two
// phases, one collective fewer, and the same sums to the bit (both ranks add in rank order).
// +0 + x is x for every x but −0, and an accumulator that starts at +0 never becomes −0: adding a
// row of zeros (of either sign) changes no bit of the sum. So the two forms give the same bits,
// and a sum that skips the rows known to be zero equals the one that adds them.
//
// Which form a sum takes is decided once, from every rank's rows, by the row transfers the group
// would make and the copies the rows form adds (RowsRule, comm/row_lists.hpp; the same decision
// on every rank). Nothing here depends on MPI's reduction order:
// the bits depend on the values and the group's size only.
#include <cstdint>
#include <vector>

#include "comm/row_lists.hpp"
#include "plexus/comm.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

// What a plan knows of a sum's rows (plexus/block_counts.hpp's held rows): how many rows each
// rank of the group holds (in group rank order), and how many any of them holds — not which.
struct HeldRowCounts {
  std::vector<index_t> per_rank;
  index_t any = 0;
};

// The sum of `held`'s per-rank counts, once checked that they can be the held rows of a block of
// `rows` rows over a group of p ranks (else std::invalid_argument, its message naming `who`).
std::uint64_t checked_held_total(const HeldRowCounts& held, int p, index_t rows, const char* who);

// How many sums were planned in each form (counted by a plan's dry run, DeviceAdj's SumFormsCount):
// rows, dense, and `unknown` — dense for want of the held rows where the rows form was allowed
// (a dry run whose table does not cut the sum: its bytes an upper bound).
struct SumForms {
  long long rows = 0, dense = 0, unknown = 0;
  SumForms& operator+=(const SumForms& o) {
    rows += o.rows, dense += o.dense, unknown += o.unknown;
    return *this;
  }
};

class RowSparseSum {
 public:
  enum class Form { Dense, Rows };

  // The dense form over `comm` (no collective: what a dry run or --sparse-comm dense takes).
  RowSparseSum(Communicator& comm, index_t rows);
  // Collective over `comm`: every rank's `maybe_nonzero` (one byte a row, non-zero: the row may
  // hold values; rows bytes) is gathered, bit-packed, and the rows form is taken where `rule`
  // says it pays (rows_form_pays on the group's rows in each form and rows_form_copies).
  RowSparseSum(Communicator& comm, index_t rows, const std::vector<std::uint8_t>& maybe_nonzero, RowsRule rule);
  // A dry run's sum (no collective; sum() then takes c == nullptr only): the form the masks'
  // constructor would take and the rows the group moves in it, both exact — they depend on the
  // counts alone (a held row moves from each holder but its owner, then to every rank but its
  // owner). Which rank owns which rows depends on the rows themselves: modelled here (each rank
  // owns up to its dense share of the held rows, the rest in rank order, and receives the
  // holders' copies in proportion), so a rank's bytes are near, the group's equal, a real run's.
  RowSparseSum(Communicator& comm, index_t rows, const HeldRowCounts& held, RowsRule rule);

  // Rows a group of p ranks receives per sum of `rows` rows in the dense form, and in the rows
  // form when its ranks hold `held` rows in all (each counted once per holder) of which `any`
  // are distinct: a held row moves from each holder but its owner, then to every rank but its
  // owner. The one formula the masks, a plan's counts and `inspect` decide by.
  static std::uint64_t dense_rows(index_t rows, int p) {
    return 2 * static_cast<std::uint64_t>(p - 1) * static_cast<std::uint64_t>(rows);
  }
  static std::uint64_t rows_form_rows(std::uint64_t held, std::uint64_t any, int p) {
    return held - any + any * static_cast<std::uint64_t>(p - 1);
  }
  // Rows the rows form copies in fp32 that the dense form does not (RowsRule::Cheaper): on two
  // ranks (one exchange) each packs the rows it holds; on more the holders pack the rows they
  // send to the owners, and every rank places every summed row from the all-gather's buffer.
  static std::uint64_t rows_form_copies(std::uint64_t held, std::uint64_t any, int p) {
    return p == 2 ? held : held - any + any * static_cast<std::uint64_t>(p);
  }

  Form form() const { return form_; }
  // The form a sum of `cols` columns quantised by `wire` takes: the dense one where form() is,
  // else the one that moves fewer bytes over the group — the rows form's rows carry a scale each,
  // the dense form's share one (sum() below), so at narrow widths the dense form can move fewer
  // bytes with more rows. The same on every rank (it depends on the group's counts only).
  Form quantised_form(index_t cols, Wire wire) const;
  Communicator& comm() const { return *comm_; }
  index_t rows() const { return rows_; }
  // Rows the whole group receives per sum (times cols · 4 bytes: the bytes), in each form.
  std::uint64_t dense_group_rows() const { return dense_group_rows_; }
  std::uint64_t rows_group_rows() const { return rows_group_rows_; }

  // c [rows × cols] (ld = cols) summed over the group in place. c == nullptr on every rank (a
  // dry run on a backend that holds no memory): only the collectives are issued, with their
  // counts. `wire` Int8 or Int4 (--wire): every row a rank sends is quantised
  // (src/comm/quantised_rows.hpp; its own rows too, as if sent), the owner sums the values in
  // fp32 in rank order from +0 and quantises the sum, which every rank then takes (the owner
  // too). The dense form codes each owner's block of rows in groups that share a scale
  // (quantised_scale_rows: a scale byte per 32 values or more), ~cols + 1/⌈32/cols⌉ bytes a row;
  // the rows form, whose rows an owner gathers from here and there, a scale per row: cols + 1
  // (int8), ⌈cols/2⌉ + 1 (int4), for fp32's 4·cols; the sum takes the form that moves fewer
  // bytes (quantised_form). The forms give the same bits from 32 columns on; narrower rows round
  // in the two forms on other steps. On one rank nothing is rounded. (Bf16 is
  // all_reduce_in_bf16's, not here.)
  void sum(float* c, index_t cols, Wire wire = Wire::Fp32) const;

  // (comm/row_lists.hpp; `at` may be a slot of the owned sums.)
  using Run = RowRun;

 private:
  // The rows form's lists and rows_group_rows_ from every rank's masks; returns the rows the
  // rows form copies besides (rows_form_copies), which its choice weighs.
  std::uint64_t build(const RowMasks& masks);
  // The dense quantised sum's block of each owner's rows in bytes (its rows in groups of
  // quantised_scale_rows), and the bytes the group receives per sum.
  std::vector<std::size_t> dense_quantised_blocks(index_t cols, int bits) const;
  std::uint64_t dense_quantised_bytes(index_t cols, int bits) const;
  void sum_dense(float* c, index_t cols) const;
  void sum_rows(float* c, index_t cols) const;
  void sum_pair(float* c, index_t cols) const;
  void sum_dense_quantised(float* c, index_t cols, int bits) const;
  void sum_rows_quantised(float* c, index_t cols, int bits) const;

  Communicator* comm_;
  index_t rows_ = 0;
  Form form_ = Form::Dense;
  bool modelled_ = false;  // counts without lists (the HeldRowCounts constructor)
  std::uint64_t dense_group_rows_ = 0, rows_group_rows_ = 0;
  // The rows form's lists (empty for the dense one), built once.
  std::vector<Run> send_runs_;                 // rows sent to their owners, packed by owner in rank order
  std::vector<std::size_t> send_counts_;       // rows for each rank
  std::vector<std::size_t> recv_counts_;       // rows from each rank
  std::vector<std::vector<Run>> recv_runs_;    // per source: owned slot (row) of each received row (at)
  std::vector<Run> own_runs_;                  // rows this rank holds and owns: block row, owned slot (at)
  std::size_t owned_ = 0;                      // rows this rank sums
  std::vector<Run> owned_runs_;                // block row of each owned slot (at)
  std::vector<std::size_t> owned_counts_;      // rows each rank owns (the all-gather's parts)
  std::vector<Run> gathered_runs_;             // the all-gather's rows, packed by owner in rank order
  std::vector<Run> zero_runs_;                 // rows no rank holds (at unused)
  // Two ranks' fp32 rows form (sum_pair): the rows this rank holds (at: packed in row order), the
  // other's (at: in the received buffer), the rows this rank does not hold (at unused), and how
  // many rows each rank sends.
  std::vector<Run> mine_runs_, other_runs_, not_mine_runs_;
  std::size_t pair_sent_ = 0, pair_received_ = 0;
};

}  // namespace plexus
