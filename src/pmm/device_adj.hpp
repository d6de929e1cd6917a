#pragma once
// One Â block of a layer layout on the backend, with its transpose for the backward SpMM —
// held whole (the Plexus layout: replicated over the layer's i axis) or sharded over i and
// all-gathered into a shared workspace just before each SpMM (TrainConfig::shard_adj).
//
// Collectives (the only ones of a sharded block; docs/communication.md, "Sharded Â"):
//   setup     row lengths of every part         all-gather (int32)   over i
//   operand   column ids and values of a block  all-gather (int32, float) over i
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "comm/row_sparse_gather.hpp"
#include "comm/row_sparse_scatter.hpp"
#include "comm/row_sparse_sum.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/comm.hpp"
#include "plexus/shard.hpp"

namespace plexus {

// Scratch for the column ids and values of one gathered block. A model has one, shared by
// all its sharded blocks: a gathered block is used by one SpMM phase and then dropped, so
// the workspace holds the largest block, not all of them.
class AdjWorkspace {
 public:
  explicit AdjWorkspace(Backend& be) : be_(&be) {}
  // Room for `nnz` entries (grows, never shrinks).
  void reserve(index_t nnz);
  col_t* indices() { return indices_.data(); }
  float* values() { return values_.data(); }

 private:
  Backend* be_;
  Buffer<col_t> indices_;
  Buffer<float> values_;
};

// Counts the sums DeviceAdj::plan_sums (and the gathers plan_operand_gather) plans on this thread (over groups of more than one rank)
// into `counter` (null: none) until the scope ends: a plan's dry run (RankCost::sums).
class SumFormsCount {
 public:
  explicit SumFormsCount(SumForms* counter);
  ~SumFormsCount();
  SumFormsCount(const SumFormsCount&) = delete;
  SumFormsCount& operator=(const SumFormsCount&) = delete;

 private:
  SumForms* previous_;
};

// The sums of a block's products over one communicator, planned once (DeviceAdj::plan_sums): of
// the whole product, or one per row chunk.
struct PlannedSums {
  const Communicator* comm = nullptr;
  std::unique_ptr<RowSparseSum> whole;
  std::vector<std::unique_ptr<RowSparseSum>> chunks;
  // The product's reduce-scatter over `comm`, of the whole (DeviceAdj::plan_scatter), or null.
  std::unique_ptr<RowSparseScatter> scatter;
};

// A block ready to multiply: whole, and its row chunks (empty unless agg_chunks > 1), each with
// its SpMM plan (Backend::prepare_spmm; nullptr where the backend needs none). Only what is
// multiplied is prepared: the whole block without chunks, else the chunks.
struct AdjOperand {
  CsrView whole;
  std::vector<CsrView> chunks;
  const SpmmPlan* whole_plan = nullptr;
  std::vector<const SpmmPlan*> chunk_plans;  // one per chunk
  // The sums planned for the product's rows (DeviceAdj::plan_sums), one entry per communicator
  // (null or none for a communicator: its all-reduce).
  const std::vector<PlannedSums>* sums = nullptr;
  // The entry for `comm`, or null.
  const PlannedSums* sums_over(const Communicator& comm) const;
};

class DeviceAdj {
 public:
  // Takes the host copies and frees each once it is uploaded. For an unsharded block `a` and
  // `a_t` are the whole block and its transpose; for a sharded one (block.sharded) rows
  // block.part_rows of the block and rows block.part_cols of its transpose, and `axis` is the
  // communicator of block.axis (used here to learn the other parts' row lengths).
  // `max_dense_cols`: the widest dense operand an SpMM with this block will take (sizes the
  // SpMM plans' workspace; 0 = unknown, a default is used and wider products still work).
  DeviceAdj(Backend& be, const AdjBlockRange& block, HostCsr&& a, HostCsr&& a_t, int agg_chunks, Communicator* axis,
            AdjWorkspace* ws, index_t max_dense_cols = 0);
  // The same without host arrays, on a backend that does not compute (a plan's dry run): a
  // block of `nnz` weighted entries spread evenly over its rows (and its transpose's over its
  // columns) takes the memory and issues the collectives that such a block would.
  DeviceAdj(Backend& be, const AdjBlockRange& block, index_t nnz, int agg_chunks, Communicator* axis,
            AdjWorkspace* ws, index_t max_dense_cols = 0);

  // The block (transpose = false) or its transpose, whole. A sharded block is all-gathered
  // over its axis into the workspace: the operand is valid until the next operand() call of
  // any sharded block of the model.
  AdjOperand operand(bool transpose);
  int chunks() const { return agg_chunks_; }

  // Plans the sums of this block's products (--sparse-comm dense, rows or auto; collective over
  // both communicators, in this order, where `rule` is not Never): the block's (Â·H) over
  // `rows_sum`, its transpose's (Âᵀ·G) over `cols_sum`, each of the whole or of every row chunk, as
  // comm/row_sparse_sum.hpp sums them. `rule` (comm/row_lists.hpp): where the rows form, moving the
  // rows with entries only, is taken (a dry run's block without a model of its rows: dense).
  // operand() then carries them; spmm_all_reduce uses them only over the communicator they were
  // planned for. Called once per layer that multiplies the block (a rank's layers of different
  // layouts may share a block where their ranges coincide, another rank's not): planning again
  // for a communicator replaces its sums, so that every rank issues the same collectives.
  void plan_sums(Communicator& rows_sum, Communicator& cols_sum, RowsRule rule);
  // Plans the reduce-scatter of the block's product (Â·H, of the whole) over `rows_sum` the same
  // way (comm/row_sparse_scatter.hpp; collective over it where `rule` is not Never): the rs-ag
  // variant's last layer transforming first (spmm_reduce_scatter). Planning the sums again keeps it.
  void plan_scatter(Communicator& rows_sum, RowsRule rule);
  // The gather over `group` of the operand H [cols × width] of this block's product Â·H, stored in
  // parts block_range(cols, p, q) over `group` (whose rank s holds the block of rows
  // block_range(N, p, s)): where `rule` takes it, the rows form reads only the block's columns that
  // hold entries (comm/row_sparse_gather.hpp; collective over `group` where the columns are known,
  // a dry run's from its held-rows model of the transpose), else — or where not known — the dense
  // form. Counted by SumFormsCount like the sums.
  std::unique_ptr<RowSparseGather> plan_operand_gather(Communicator& group, RowsRule rule);
  // A dry run's block holds no rows: what the plan knows of them (src/pmm/held_rows_model.hpp)
  // — the held row counts of the ranks of `group` for rows `rows` (from 0) of the block
  // (transpose false) or of its transpose, or nullopt (that sum planned dense).
  using HeldRowsModel = std::function<std::optional<HeldRowCounts>(bool transpose, const Communicator& group, Range rows)>;
  void model_held_rows(HeldRowsModel model) { held_model_ = std::move(model); }

 private:
  // Â or Âᵀ. Unsharded: `stored` is the matrix (or `chunk_mats` its row chunks). Sharded:
  // `own_indices`/`own_values` are the entries of this rank's rows; the row pointers of the
  // whole (and of its chunks) are kept, 8 bytes a row, and its entries gathered per use.
  struct Side {
    index_t rows = 0, cols = 0, nnz = 0;  // of the whole
    CsrMatrix stored;
    std::vector<CsrMatrix> chunk_mats;
    Buffer<col_t> own_indices;           // sharded
    Buffer<float> own_values;
    std::vector<std::size_t> counts;     // sharded: entries of each part, in axis order
    Buffer<index_t> indptr;              // sharded, agg_chunks == 1: of the whole block
    std::vector<Buffer<index_t>> chunk_indptr;  // sharded, agg_chunks > 1: each chunk's, from 0
    std::vector<Range> chunk_rows;
    std::vector<index_t> chunk_first;    // sharded: first entry of each chunk
    // Which rows of the whole hold entries (1 byte a row), kept from set-up for plan_sums on a
    // CPU backend (the only one whose sums it plans); rows_known: it was.
    std::vector<std::uint8_t> held_rows;
    bool rows_known = false;
    std::vector<PlannedSums> sums;
    // SpMM plans of what is multiplied (the whole, or each chunk), made once here. A plan
    // depends on the row pointers only, which a sharded block keeps for good (indptr,
    // chunk_indptr): its gathered column ids and values, which land in the shared workspace
    // afresh before every use, are read by each call, so one plan per block serves every
    // gather (see SpmmPlan in backend.hpp).
    std::unique_ptr<SpmmPlan> plan;
    std::vector<std::unique_ptr<SpmmPlan>> chunk_plans;
  };
  // Entries before row r of the whole block of a side: its row pointers, or (shape only) an
  // even spread of its entries.
  using EntriesBefore = std::function<index_t(index_t r)>;
  void setup_replicated(Backend& be, Side& s, HostCsr&& h);
  void setup_replicated(Backend& be, Side& s, index_t rows, index_t cols, index_t nnz);
  void setup_sharded(Backend& be, Side& s, HostCsr&& part, index_t whole_rows);
  void setup_sharded(Backend& be, Side& s, index_t whole_rows, index_t cols, index_t nnz);
  // What both sharded setups share: every part's entry count, the kept row pointers, the own
  // entries (uploaded from `part` when given) and the workspace.
  void keep_sharded(Backend& be, Side& s, const EntriesBefore& before, const std::vector<index_t>* indptr,
                    HostCsr* part);
  AdjOperand gather(Side& s);
  // s's operand with its current pointers (sharded: into the workspace, not gathered here).
  AdjOperand view(Side& s);
  // Prepares s's SpMMs, given its operand as gather/operand() returns it.
  void prepare(Backend& be, Side& s, const AdjOperand& op);
  // Keeps which rows of `indptr` (rows + 1 pointers) hold entries, on a CPU backend.
  static void keep_held_rows(const Backend& be, Side& s, const index_t* indptr, index_t rows);
  void plan_side_sums(Side& s, Communicator& comm, RowsRule rule, bool transpose);
  // The side's planned collectives over `comm`: the entry there, else a new empty one.
  static PlannedSums& planned_over(Side& s, const Communicator& comm);

  bool sharded_ = false;
  int agg_chunks_ = 1;
  index_t max_dense_cols_ = 0;
  Communicator* axis_ = nullptr;
  AdjWorkspace* ws_ = nullptr;
  Side a_, a_t_;
  HeldRowsModel held_model_;
};

}  // namespace plexus
