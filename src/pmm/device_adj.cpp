// Â blocks on the backend, whole or sharded over the layer's i axis (src/pmm/device_adj.hpp).
#include "pmm/device_adj.hpp"
#include "core/shard_layout.hpp"

#include <stdexcept>

namespace plexus {

void AdjWorkspace::reserve(index_t nnz) {
  const auto n = static_cast<std::size_t>(nnz);
  if (n <= indices_.size()) return;
  indices_ = Buffer<col_t>();  // free before allocating the larger one
  values_ = Buffer<float>();
  indices_ = Buffer<col_t>(*be_, n);
  values_ = Buffer<float>(*be_, n);
}

DeviceAdj::DeviceAdj(Backend& be, const AdjBlockRange& block, HostCsr&& a, HostCsr&& a_t, int agg_chunks,
                     Communicator* axis, AdjWorkspace* ws, index_t max_dense_cols)
    : sharded_(block.sharded), agg_chunks_(std::max(agg_chunks, 1)), max_dense_cols_(max_dense_cols), axis_(axis),
      ws_(ws) {
  if (!sharded_) {
    setup_replicated(be, a_, std::move(a));
    setup_replicated(be, a_t_, std::move(a_t));
    return;
  }
  if (axis_ == nullptr || ws_ == nullptr) throw std::logic_error("DeviceAdj: a sharded block needs its axis and a workspace");
  setup_sharded(be, a_, std::move(a), block.rows.size());
  setup_sharded(be, a_t_, std::move(a_t), block.cols.size());
}

namespace {
__extension__ using Wide = unsigned __int128;
// Entries before row r of `nnz` entries spread evenly over `rows` rows.
index_t even_entries_before(index_t nnz, index_t rows, index_t r) {
  return rows == 0 ? 0 : static_cast<index_t>(static_cast<Wide>(nnz) * static_cast<Wide>(r) / static_cast<Wide>(rows));
}
}  // namespace

DeviceAdj::DeviceAdj(Backend& be, const AdjBlockRange& block, index_t nnz, int agg_chunks, Communicator* axis,
                     AdjWorkspace* ws, index_t max_dense_cols)
    : sharded_(block.sharded), agg_chunks_(std::max(agg_chunks, 1)), max_dense_cols_(max_dense_cols), axis_(axis),
      ws_(ws) {
  if (be.computes()) throw std::logic_error("DeviceAdj: a block without entries is for a backend that does not compute");
  const index_t rows = block.rows.size(), cols = block.cols.size();
  if (!sharded_) {
    setup_replicated(be, a_, rows, cols, nnz);
    setup_replicated(be, a_t_, cols, rows, nnz);
    return;
  }
  if (axis_ == nullptr || ws_ == nullptr) throw std::logic_error("DeviceAdj: a sharded block needs its axis and a workspace");
  setup_sharded(be, a_, rows, cols, nnz);
  setup_sharded(be, a_t_, cols, rows, nnz);
}

void DeviceAdj::setup_replicated(Backend& be, Side& s, index_t rows, index_t cols, index_t nnz) {
  s.rows = rows;
  s.cols = cols;
  s.nnz = nnz;
  if (agg_chunks_ == 1) {
    s.stored = CsrMatrix(be, rows, cols, nnz);
  } else {
    for (int k = 0; k < agg_chunks_; ++k) {
      const Range r = block_range(rows, agg_chunks_, k);
      s.chunk_mats.emplace_back(be, r.size(), cols,
                                even_entries_before(nnz, rows, r.end) - even_entries_before(nnz, rows, r.begin));
    }
  }
  prepare(be, s, view(s));
}

void DeviceAdj::setup_sharded(Backend& be, Side& s, index_t whole_rows, index_t cols, index_t nnz) {
  Communicator& comm = *axis_;
  s.rows = whole_rows;
  s.cols = cols;
  {  // the row lengths' all-gather, as setup_sharded(part) issues it
    MemoryScope scope(be, MemoryKind::Workspace, "adjacency row lengths");
    Buffer<std::int32_t> len_dev(be, static_cast<std::size_t>(block_range(whole_rows, comm.size(), comm.rank()).size()));
    Buffer<std::int32_t> all_dev(be, static_cast<std::size_t>(whole_rows));
    comm.all_gather(len_dev.data(), all_dev.data(), block_counts(whole_rows, comm.size(), 1));
  }
  keep_sharded(be, s, [&](index_t r) { return even_entries_before(nnz, whole_rows, r); }, nullptr, nullptr);
}

void DeviceAdj::setup_replicated(Backend& be, Side& s, HostCsr&& h) {
  s.rows = h.rows;
  s.cols = h.cols;
  s.nnz = h.nnz();
  keep_held_rows(be, s, h.indptr.data(), h.rows);
  if (agg_chunks_ == 1) {
    s.stored = CsrMatrix(be, h);
  } else {
    // Row blocks, one CSR each (a block keeps every column).
    for (int k = 0; k < agg_chunks_; ++k)
      s.chunk_mats.emplace_back(be, extract_block(h, block_range(h.rows, agg_chunks_, k), Range{0, h.cols}));
  }
  h = HostCsr{};
  prepare(be, s, view(s));
}

void DeviceAdj::setup_sharded(Backend& be, Side& s, HostCsr&& part, index_t whole_rows) {
  Communicator& comm = *axis_;
  const int parts = comm.size();
  if (part.rows != block_range(whole_rows, parts, comm.rank()).size())
    throw std::logic_error("DeviceAdj: this rank's part does not have its share of the rows");
  s.rows = whole_rows;
  s.cols = part.cols;
  // Every part's row lengths, then the whole block's row pointers (the parts are its row
  // blocks in axis order). Gathered in the backend's memory: the axis's communicator may be a
  // device one (NCCL), which takes no host buffers.
  std::vector<std::int32_t> len(static_cast<std::size_t>(part.rows));
  for (index_t r = 0; r < part.rows; ++r) len[r] = static_cast<std::int32_t>(part.indptr[r + 1] - part.indptr[r]);
  std::vector<std::int32_t> all;
  {
    MemoryScope scope(be, MemoryKind::Workspace, "adjacency row lengths");
    Buffer<std::int32_t> len_dev(be, len), all_dev(be, static_cast<std::size_t>(whole_rows));
    comm.all_gather(len_dev.data(), all_dev.data(), block_counts(whole_rows, parts, 1));
    all = all_dev.to_host();
  }
  std::vector<index_t> indptr(static_cast<std::size_t>(whole_rows) + 1, 0);
  for (index_t r = 0; r < whole_rows; ++r) indptr[r + 1] = indptr[r] + all[r];
  all = {};
  keep_held_rows(be, s, indptr.data(), whole_rows);
  keep_sharded(be, s, [&](index_t r) { return indptr[static_cast<std::size_t>(r)]; }, &indptr, &part);
}

void DeviceAdj::keep_sharded(Backend& be, Side& s, const EntriesBefore& before, const std::vector<index_t>* indptr,
                             HostCsr* part) {
  const index_t whole_rows = s.rows;
  const int parts = axis_->size();
  s.nnz = before(whole_rows);
  for (int m = 0; m < parts; ++m) {
    const Range rows = block_range(whole_rows, parts, m);
    s.counts.push_back(static_cast<std::size_t>(before(rows.end) - before(rows.begin)));
  }
  if (agg_chunks_ == 1) {
    s.indptr = indptr ? Buffer<index_t>(be, *indptr) : Buffer<index_t>(be, static_cast<std::size_t>(whole_rows) + 1);
  } else {  // only the chunks' row pointers are used, as an unsharded block keeps only its chunks
    for (int k = 0; k < agg_chunks_; ++k) {
      const Range rows = block_range(whole_rows, agg_chunks_, k);
      const index_t first = before(rows.begin);
      s.chunk_rows.push_back(rows);
      s.chunk_first.push_back(first);
      if (!indptr) {
        s.chunk_indptr.emplace_back(be, static_cast<std::size_t>(rows.size()) + 1);
        continue;
      }
      std::vector<index_t> ip(indptr->begin() + rows.begin, indptr->begin() + rows.end + 1);
      for (index_t& x : ip) x -= first;
      s.chunk_indptr.emplace_back(be, ip);
    }
  }
  const auto own = static_cast<std::size_t>(s.counts[static_cast<std::size_t>(axis_->rank())]);
  if (part) {
    // Values are always gathered, so every part carries them (a pattern block: all ones).
    if (part->values.empty()) part->values.assign(static_cast<std::size_t>(part->nnz()), 1.0f);
    s.own_indices = Buffer<col_t>(be, part->indices);
    s.own_values = Buffer<float>(be, part->values);
    *part = HostCsr{};
  } else {
    s.own_indices = Buffer<col_t>(be, own);
    s.own_values = Buffer<float>(be, own);
  }
  ws_->reserve(s.nnz);
  // Prepared once, on the row pointers kept here: the gathered entries are read per call. (The
  // workspace may still grow for a later block; the plans do not keep its pointers.)
  prepare(be, s, view(s));
}

void DeviceAdj::prepare(Backend& be, Side& s, const AdjOperand& op) {
  if (op.chunks.empty()) {
    s.plan = be.prepare_spmm(op.whole, max_dense_cols_);
    return;
  }
  for (const CsrView& c : op.chunks) s.chunk_plans.push_back(be.prepare_spmm(c, max_dense_cols_));
}

void DeviceAdj::keep_held_rows(const Backend& be, Side& s, const index_t* indptr, index_t rows) {
  if (be.device() != Device::CPU || !be.computes()) return;
  s.held_rows.resize(static_cast<std::size_t>(rows));
  for (index_t r = 0; r < rows; ++r) s.held_rows[static_cast<std::size_t>(r)] = indptr[r + 1] > indptr[r] ? 1 : 0;
  s.rows_known = true;
}

namespace {
thread_local SumForms* t_sum_forms = nullptr;
}  // namespace

SumFormsCount::SumFormsCount(SumForms* counter) : previous_(t_sum_forms) { t_sum_forms = counter; }
SumFormsCount::~SumFormsCount() { t_sum_forms = previous_; }

namespace {
// Counts a sum or gather planned over a group of p ranks in the active SumFormsCount, if any:
// `unknown` where the rows form was allowed and its rows not known, else its form.
void count_form(int p, bool unknown, bool rows_form) {
  if (t_sum_forms && p > 1) ++(unknown ? t_sum_forms->unknown : rows_form ? t_sum_forms->rows : t_sum_forms->dense);
}
}  // namespace

void DeviceAdj::plan_sums(Communicator& rows_sum, Communicator& cols_sum, RowsRule rule) {
  plan_side_sums(a_, rows_sum, rule, false);
  plan_side_sums(a_t_, cols_sum, rule, true);
}

void DeviceAdj::plan_side_sums(Side& s, Communicator& comm, RowsRule rule, bool transpose) {
  // Every rank of `comm` holds a block of the same rows and the same chunking, and knows its
  // rows alike (all real, or all a dry run's): all gather the masks, or none does. A dry run
  // plans from the counts its model gives (no collective), as the masks would decide.
  // Where the rows form is allowed: from the masks, else from the model's counts; null when the
  // rows are not known (then dense, counted as such).
  const auto from_rows = [&](Range r) -> std::unique_ptr<RowSparseSum> {
    if (s.rows_known) {
      const std::vector<std::uint8_t> held(s.held_rows.begin() + r.begin, s.held_rows.begin() + r.end);
      return std::make_unique<RowSparseSum>(comm, r.size(), held, rule);
    }
    if (held_model_)
      if (const std::optional<HeldRowCounts> held = held_model_(transpose, comm, r))
        return std::make_unique<RowSparseSum>(comm, r.size(), *held, rule);
    return nullptr;
  };
  const auto make = [&](Range r) {
    const bool allow_rows = rule != RowsRule::Never;
    std::unique_ptr<RowSparseSum> sum = allow_rows ? from_rows(r) : nullptr;
    const bool unknown = allow_rows && !sum;
    if (!sum) sum = std::make_unique<RowSparseSum>(comm, r.size());
    count_form(comm.size(), unknown, sum->form() == RowSparseSum::Form::Rows);
    return sum;
  };
  PlannedSums& planned = planned_over(s, comm);  // (its scatter, if planned, stays)
  planned.whole = nullptr;
  planned.chunks.clear();
  if (agg_chunks_ == 1) {
    planned.whole = make(Range{0, s.rows});
  } else {
    for (int k = 0; k < agg_chunks_; ++k) planned.chunks.push_back(make(block_range(s.rows, agg_chunks_, k)));
  }
}

PlannedSums& DeviceAdj::planned_over(Side& s, const Communicator& comm) {
  for (PlannedSums& p : s.sums)
    if (p.comm == &comm) return p;
  s.sums.push_back(PlannedSums{&comm, nullptr, {}, nullptr});
  return s.sums.back();
}

void DeviceAdj::plan_scatter(Communicator& rows_sum, RowsRule rule) {
  Side& s = a_;
  const int p = rows_sum.size();
  std::unique_ptr<RowSparseScatter> scatter;
  const bool allow_rows = rule != RowsRule::Never;
  if (allow_rows && s.rows_known) {
    scatter = std::make_unique<RowSparseScatter>(rows_sum, s.rows, s.held_rows, rule);
  } else if (allow_rows && held_model_) {
    // A dry run: each owner's block's held rows, rank by rank, where the table cuts them all.
    std::vector<HeldRowCounts> held;
    for (int q = 0; q < p; ++q) {
      std::optional<HeldRowCounts> h = held_model_(false, rows_sum, block_range(s.rows, p, q));
      if (!h) break;
      held.push_back(std::move(*h));
    }
    if (static_cast<int>(held.size()) == p) scatter = std::make_unique<RowSparseScatter>(rows_sum, s.rows, held, rule);
  }
  const bool unknown = allow_rows && !scatter;
  if (!scatter) scatter = std::make_unique<RowSparseScatter>(rows_sum, s.rows);
  count_form(p, unknown, scatter->form() == RowSparseScatter::Form::Rows);
  planned_over(s, rows_sum).scatter = std::move(scatter);
}

std::unique_ptr<RowSparseGather> DeviceAdj::plan_operand_gather(Communicator& group, RowsRule rule) {
  const index_t rows = a_t_.rows;  // the block's columns: the rows of H its product reads
  const int p = group.size();
  std::unique_ptr<RowSparseGather> gather;
  const bool allow_rows = rule != RowsRule::Never;
  if (allow_rows && p > 1) {
    if (a_t_.rows_known) {
      gather = std::make_unique<RowSparseGather>(group, rows, a_t_.held_rows, rule);
    } else if (held_model_) {
      // Rank s reads the rows of part q that its block's transpose holds in column block s. The
      // p × p counts are allocated once the table is known to cut the parts: a plan asks this
      // of every rank of groups of thousands, which the table does not cut.
      const auto ranks = static_cast<std::size_t>(p);
      std::vector<index_t> reads;
      for (int q = 0; q < p; ++q) {
        const std::optional<HeldRowCounts> held = held_model_(true, group, block_range(rows, p, q));
        if (!held) {
          reads.clear();
          break;
        }
        if (reads.empty()) reads.assign(ranks * ranks, 0);
        for (std::size_t s = 0; s < ranks; ++s) reads[s * ranks + static_cast<std::size_t>(q)] = held->per_rank[s];
      }
      if (!reads.empty()) gather = std::make_unique<RowSparseGather>(group, rows, reads, rule);
    }
  }
  const bool unknown = allow_rows && p > 1 && !gather;
  if (!gather) gather = std::make_unique<RowSparseGather>(group, rows);
  count_form(p, unknown, gather->form() == RowSparseGather::Form::Rows);
  return gather;
}

const PlannedSums* AdjOperand::sums_over(const Communicator& comm) const {
  if (sums == nullptr) return nullptr;
  for (const PlannedSums& p : *sums)
    if (p.comm == &comm) return &p;
  return nullptr;
}

AdjOperand DeviceAdj::view(Side& s) {
  AdjOperand op;
  if (!sharded_) {
    op.whole = s.stored.view();
    for (const CsrMatrix& m : s.chunk_mats) op.chunks.push_back(m.view());
  } else {
    op.whole = {s.rows, s.cols, s.nnz, s.indptr.data(), ws_->indices(), ws_->values()};
    for (std::size_t k = 0; k < s.chunk_rows.size(); ++k) {
      const index_t first = s.chunk_first[k];
      const index_t end = k + 1 < s.chunk_first.size() ? s.chunk_first[k + 1] : s.nnz;
      op.chunks.push_back({s.chunk_rows[k].size(), s.cols, end - first, s.chunk_indptr[k].data(),
                           ws_->indices() + first, ws_->values() + first});
    }
  }
  op.whole_plan = s.plan.get();
  for (const auto& p : s.chunk_plans) op.chunk_plans.push_back(p.get());
  op.sums = &s.sums;
  return op;
}

AdjOperand DeviceAdj::gather(Side& s) {
  axis_->all_gather(s.own_indices.data(), ws_->indices(), s.counts);
  axis_->all_gather(s.own_values.data(), ws_->values(), s.counts);
  return view(s);
}

AdjOperand DeviceAdj::operand(bool transpose) {
  Side& s = transpose ? a_t_ : a_;
  return sharded_ ? gather(s) : view(s);
}

}  // namespace plexus
