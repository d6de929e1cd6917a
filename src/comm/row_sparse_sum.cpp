// The row-sparse sum and its dense form (src/comm/row_sparse_sum.hpp).
#include "comm/row_sparse_sum.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>

#include "comm/quantised_rows.hpp"
#include "core/parallel_work.hpp"
#include "plexus/shard.hpp"

namespace plexus {
namespace {

std::size_t as_size(index_t n) { return static_cast<std::size_t>(n); }

// to[0, n) = +0 + x[0, n): a sum's first term (−0 becomes +0, as a sum from +0 makes it). `to`
// may be x itself.
void first_term(float* to, const float* x, index_t n) {
#pragma omp simd
  for (index_t j = 0; j < n; ++j) to[j] = 0.0f + x[j];
}


// Elements of each rank's rows block_range(rows, p, q) of a block `cols` wide.
std::vector<std::size_t> row_blocks(index_t rows, int p, index_t cols) {
  std::vector<std::size_t> out;
  for (int q = 0; q < p; ++q) out.push_back(as_size(block_range(rows, p, q).size() * cols));
  return out;
}

}  // namespace

std::uint64_t checked_held_total(const HeldRowCounts& held, int p, index_t rows, const char* who) {
  const std::string at = std::string(who) + ": ";
  if (held.per_rank.size() != static_cast<std::size_t>(p)) throw std::invalid_argument(at + "held rows of another group");
  std::uint64_t total = 0;
  for (const index_t c : held.per_rank) {
    if (c < 0 || c > held.any) throw std::invalid_argument(at + "a rank holds more rows than the group");
    total += static_cast<std::uint64_t>(c);
  }
  if (held.any > rows || total < static_cast<std::uint64_t>(held.any))
    throw std::invalid_argument(at + "held rows that do not fit the block");
  return total;
}

RowSparseSum::RowSparseSum(Communicator& comm, index_t rows) : comm_(&comm), rows_(rows) {
  dense_group_rows_ = rows_group_rows_ = dense_rows(rows, comm.size());
}

RowSparseSum::RowSparseSum(Communicator& comm, index_t rows, const std::vector<std::uint8_t>& maybe_nonzero,
                           RowsRule rule)
    : RowSparseSum(comm, rows) {
  if (maybe_nonzero.size() != as_size(rows)) throw std::invalid_argument("RowSparseSum: a mask of another length");
  const int p = comm.size();
  if (p == 1) return;  // nothing moves
  const std::uint64_t copies = build(all_gather_row_masks(comm, maybe_nonzero));
  if (rows_form_pays(rule, dense_group_rows_, rows_group_rows_, copies)) {
    form_ = Form::Rows;
    return;
  }
  // The dense form keeps no lists.
  *this = RowSparseSum(comm, rows);
}

RowSparseSum::RowSparseSum(Communicator& comm, index_t rows, const HeldRowCounts& held, RowsRule rule)
    : RowSparseSum(comm, rows) {
  const int p = comm.size(), me = comm.rank();
  const auto ranks = static_cast<std::size_t>(p);
  const std::uint64_t total = checked_held_total(held, p, rows, "RowSparseSum");
  if (p == 1) return;
  const auto any = static_cast<std::uint64_t>(held.any);
  rows_group_rows_ = rows_form_rows(total, any, p);
  if (!rows_form_pays(rule, dense_group_rows_, rows_group_rows_, rows_form_copies(total, any, p))) {
    rows_group_rows_ = dense_group_rows_;
    return;
  }
  form_ = Form::Rows;
  modelled_ = true;
  if (p == 2) {  // sum_pair: each rank's held rows to the other, exactly
    pair_sent_ = as_size(held.per_rank[static_cast<std::size_t>(me)]);
    pair_received_ = as_size(held.per_rank[static_cast<std::size_t>(1 - me)]);
  }
  // Owned rows: each rank its dense share of the held rows where it holds as many, the rest to
  // the first ranks holding more.
  std::vector<std::size_t> owned(ranks);
  std::uint64_t left = any;
  for (int q = 0; q < p; ++q) {
    const auto c = static_cast<std::uint64_t>(held.per_rank[static_cast<std::size_t>(q)]);
    owned[static_cast<std::size_t>(q)] = std::min<std::uint64_t>(c, as_size(block_range(held.any, p, q).size()));
    left -= owned[static_cast<std::size_t>(q)];
  }
  for (int q = 0; q < p && left > 0; ++q) {
    const auto c = static_cast<std::uint64_t>(held.per_rank[static_cast<std::size_t>(q)]);
    const std::uint64_t more = std::min<std::uint64_t>(left, c - owned[static_cast<std::size_t>(q)]);
    owned[static_cast<std::size_t>(q)] += more;
    left -= more;
  }
  owned_counts_ = owned;
  owned_ = owned[static_cast<std::size_t>(me)];
  // The holders' copies (all but the owners'), received in proportion to the rows owned, and
  // each rank's spread evenly over the others.
  const std::uint64_t copies = total - any;
  const std::uint64_t before = std::accumulate(owned.begin(), owned.begin() + me, std::uint64_t{0}),
                      upto = before + owned_;
  const auto received = any == 0 ? std::size_t{0} : static_cast<std::size_t>(copies * upto / any - copies * before / any);
  const std::size_t sent = as_size(held.per_rank[static_cast<std::size_t>(me)]) - owned_;
  send_counts_.assign(ranks, 0);
  recv_counts_.assign(ranks, 0);
  for (int k = 0; k + 1 < p; ++k) {
    const int other = k < me ? k : k + 1;
    send_counts_[static_cast<std::size_t>(other)] = as_size(block_range(static_cast<index_t>(sent), p - 1, k).size());
    recv_counts_[static_cast<std::size_t>(other)] = as_size(block_range(static_cast<index_t>(received), p - 1, k).size());
  }
}

std::uint64_t RowSparseSum::build(const RowMasks& masks) {
  const int p = comm_->size(), me = comm_->rank();
  const auto ranks = static_cast<std::size_t>(p);
  if (p == 2) {  // sum_pair's lists (the two phases' below serve the quantised sums)
    index_t sent = 0, got = 0;
    for (index_t r = 0; r < rows_; ++r) {
      if (masks.set(me, r)) append_row(mine_runs_, r, sent++);
      else append_row(not_mine_runs_, r, r);
      if (masks.set(1 - me, r)) append_row(other_runs_, r, got++);
    }
    pair_sent_ = as_size(sent);
    pair_received_ = as_size(got);
  }
  std::vector<std::vector<index_t>> send_to(ranks), recv_from(ranks), owned_by(ranks);
  std::vector<int> holders;
  std::uint64_t held = 0, any = 0;
  int home = 0;
  Range home_rows = block_range(rows_, p, 0);
  for (index_t r = 0; r < rows_; ++r) {
    while (r >= home_rows.end) home_rows = block_range(rows_, p, ++home);
    holders.clear();
    for (int s = 0; s < p; ++s)
      if (masks.set(s, r)) holders.push_back(s);
    if (holders.empty()) {
      append_row(zero_runs_, r, r);
      continue;
    }
    // The dense owner when it holds the row; else one of the holders, spread by the row.
    const bool home_holds = std::find(holders.begin(), holders.end(), home) != holders.end();
    const int owner = home_holds ? home : holders[static_cast<std::size_t>(r) % holders.size()];
    owned_by[static_cast<std::size_t>(owner)].push_back(r);
    held += holders.size();
    ++any;
    for (const int s : holders) {
      if (s == owner) continue;
      if (s == me) send_to[static_cast<std::size_t>(owner)].push_back(r);
      if (owner == me) recv_from[static_cast<std::size_t>(s)].push_back(r);
    }
  }
  rows_group_rows_ = rows_form_rows(held, any, p);
  const std::vector<index_t>& owned = owned_by[static_cast<std::size_t>(me)];
  owned_ = owned.size();
  for (std::size_t k = 0; k < owned.size(); ++k) {
    append_row(owned_runs_, owned[k], static_cast<index_t>(k));
    if (masks.set(me, owned[k])) append_row(own_runs_, owned[k], static_cast<index_t>(k));
  }
  index_t sent = 0, gathered = 0;
  for (std::size_t s = 0; s < ranks; ++s) {
    send_counts_.push_back(send_to[s].size());
    for (const index_t r : send_to[s]) append_row(send_runs_, r, sent++);
    recv_counts_.push_back(recv_from[s].size());
    // Both lists ascend: each received row's slot by a merge walk over the owned rows.
    std::vector<Run>& from = recv_runs_.emplace_back();
    std::size_t slot = 0;
    index_t at = 0;
    for (const index_t r : recv_from[s]) {
      while (owned[slot] != r) ++slot;
      append_row(from, static_cast<index_t>(slot), at++);
    }
    owned_counts_.push_back(owned_by[s].size());
    for (const index_t r : owned_by[s]) append_row(gathered_runs_, r, gathered++);
  }
  return rows_form_copies(held, any, p);
}

void RowSparseSum::sum(float* c, index_t cols, Wire wire) const {
  if (comm_->size() == 1 || rows_ == 0 || cols == 0) return;
  if (modelled_ && c != nullptr) throw std::logic_error("RowSparseSum: a dry run's sum (held row counts) given data");
  const int bits = wire_bits(wire);
  if (bits == 16) throw std::logic_error("RowSparseSum: a bf16 sum (all_reduce_in_bf16's)");
  if (bits < 16)
    return quantised_form(cols, wire) == Form::Dense ? sum_dense_quantised(c, cols, bits)
                                                     : sum_rows_quantised(c, cols, bits);
  if (comm_->size() == 2) return sum_pair(c, cols);  // one exchange
  if (form_ == Form::Dense) return sum_dense(c, cols);
  sum_rows(c, cols);
}

std::vector<std::size_t> RowSparseSum::dense_quantised_blocks(index_t cols, int bits) const {
  const int p = comm_->size();
  const index_t g = quantised_scale_rows(cols);
  std::vector<std::size_t> blocks;
  for (int q = 0; q < p; ++q) blocks.push_back(quantised_bytes(block_range(rows_, p, q).size(), cols, bits, g));
  return blocks;
}

std::uint64_t RowSparseSum::dense_quantised_bytes(index_t cols, int bits) const {
  const std::vector<std::size_t> blocks = dense_quantised_blocks(cols, bits);
  // Each block to every other rank, twice.
  return 2 * static_cast<std::uint64_t>(comm_->size() - 1) *
         std::accumulate(blocks.begin(), blocks.end(), std::uint64_t{0});
}

RowSparseSum::Form RowSparseSum::quantised_form(index_t cols, Wire wire) const {
  const int bits = wire_bits(wire);
  if (form_ == Form::Dense || bits >= 16) return form_;
  return rows_group_rows_ * quantised_bytes(1, cols, bits, 1) < dense_quantised_bytes(cols, bits) ? Form::Rows
                                                                                                   : Form::Dense;
}

void RowSparseSum::sum_pair(float* c, index_t cols) const {
  const int me = comm_->rank();
  const std::size_t w = as_size(cols), row_bytes = w * sizeof(float);
  const bool data = c != nullptr, dense = form_ == Form::Dense;
  // The dense form sends the whole block as it is; the rows form packs the rows this rank holds.
  const std::size_t sent = dense ? as_size(rows_) : pair_sent_, received = dense ? as_size(rows_) : pair_received_;
  const Scratch<float> out = scratch<float>(data && !dense ? sent * w : 0), in = scratch<float>(data ? received * w : 0);
  std::vector<std::size_t> send_bytes(2, 0), recv_bytes(2, 0);
  send_bytes[static_cast<std::size_t>(1 - me)] = sent * row_bytes;
  recv_bytes[static_cast<std::size_t>(1 - me)] = received * row_bytes;
  if (data && !dense)
    for (const Run& run : mine_runs_)
      std::memcpy(out.get() + as_size(run.at) * w, c + as_size(run.row) * w, as_size(run.len) * row_bytes);
  comm_->all_to_all_bytes(dense ? c : out.get(), send_bytes, in.get(), recv_bytes);
  if (!data) return;
  // Every row is (+0 + rank 0's) + rank 1's, the operands in that order on both ranks. This
  // rank's rows first become +0 + its own (+0 where it holds none: a −0 there, or any value, is
  // not a term); then the other's are added, on its side of the order. x + (+0 + y) equals
  // x + y for every x but −0, which neither side's first term can be.
  const auto combine = [me](float* __restrict mine, const float* __restrict theirs, index_t n) {
    if (me == 0) {
#pragma omp simd
      for (index_t j = 0; j < n; ++j) mine[j] = mine[j] + theirs[j];
    } else {
#pragma omp simd
      for (index_t j = 0; j < n; ++j) mine[j] = (0.0f + theirs[j]) + mine[j];
    }
  };
  if (dense) {
    const index_t n = rows_ * cols;
#pragma omp parallel for schedule(static) if (worth_a_team(n))
    for (index_t at = 0; at < n; at += 4096) {
      const index_t len = std::min<index_t>(4096, n - at);
      first_term(c + at, c + at, len);
      combine(c + at, in.get() + as_size(at), len);
    }
    return;
  }
  for (const Run& run : mine_runs_) first_term(c + as_size(run.row) * w, c + as_size(run.row) * w, run.len * cols);
  for (const Run& run : not_mine_runs_) std::fill_n(c + as_size(run.row) * w, as_size(run.len) * w, 0.0f);
  for (const Run& run : other_runs_) combine(c + as_size(run.row) * w, in.get() + as_size(run.at) * w, run.len * cols);
}

void RowSparseSum::sum_dense(float* c, index_t cols) const {
  const int p = comm_->size(), me = comm_->rank();
  const Range mine = block_range(rows_, p, me);
  const std::size_t row_bytes = as_size(cols) * sizeof(float);
  const std::vector<std::size_t> send = scaled_counts(row_blocks(rows_, p, 1), row_bytes),
                                 recv(static_cast<std::size_t>(p), as_size(mine.size()) * row_bytes);
  const bool data = c != nullptr;
  const std::size_t slab = as_size(mine.size() * cols);
  const Scratch<float> parts = scratch<float>(data ? slab * static_cast<std::size_t>(p) : 0);
  comm_->all_to_all_bytes(c, send, data ? parts.get() : nullptr, recv);
  // The sums go to this rank's rows of c (parts holds their copy) and are gathered from there in
  // place: no accumulator to zero, no copy in.
  float* const acc = data ? c + mine.begin * cols : nullptr;
  if (data) {
    // parts holds every rank's rows of this block, in rank order (its own among them).
    const index_t n = mine.size() * cols;
#pragma omp parallel for schedule(static) if (worth_a_team(n * p))
    for (index_t at = 0; at < n; at += 4096) {
      const index_t len = std::min<index_t>(4096, n - at);
      first_term(acc + at, parts.get() + as_size(at), len);
      for (int s = 1; s < p; ++s) add_row(acc + at, parts.get() + static_cast<std::size_t>(s) * slab + as_size(at), len);
    }
  }
  comm_->all_gather(acc, c, row_blocks(rows_, p, cols));
}

void RowSparseSum::sum_rows(float* c, index_t cols) const {
  const int p = comm_->size(), me = comm_->rank();
  const std::size_t w = as_size(cols);
  const bool data = c != nullptr;
  const Scratch<float> in = exchange_rows(*comm_, c, cols, send_runs_, send_counts_, recv_counts_);
  // The owned rows' sums, rank by rank: this rank's own rows at its place in the order. They are
  // summed at this rank's place in the all-gather's buffer, which gathers them in place.
  std::size_t gathered_rows = 0, before = 0;
  for (std::size_t s = 0; s < owned_counts_.size(); ++s) {
    if (static_cast<int>(s) < me) before += owned_counts_[s];
    gathered_rows += owned_counts_[s];
  }
  const Scratch<float> gathered = scratch<float>(data ? gathered_rows * w : 0);
  float* const acc = data ? gathered.get() + before * w : nullptr;
  if (data) {
    std::fill_n(acc, owned_ * w, 0.0f);
    const float* from = in.get();  // source s's rows
    for (int s = 0; s < p; ++s) {
      if (s == me) {
        for (const Run& run : own_runs_)
          add_row(acc + as_size(run.at) * w, c + as_size(run.row) * w, run.len * cols);
        continue;
      }
      for (const Run& run : recv_runs_[static_cast<std::size_t>(s)])
        add_row(acc + as_size(run.row) * w, from + as_size(run.at) * w, run.len * cols);
      from += recv_counts_[static_cast<std::size_t>(s)] * w;
    }
  }
  comm_->all_gather(acc, data ? gathered.get() : nullptr, scaled_counts(owned_counts_, w));
  if (!data) return;
  for (const Run& run : gathered_runs_)
    std::memcpy(c + as_size(run.row) * w, gathered.get() + as_size(run.at) * w, as_size(run.len) * w * sizeof(float));
  for (const Run& run : zero_runs_) std::fill_n(c + as_size(run.row) * w, as_size(run.len) * w, 0.0f);
}

// The sums' stream of draws (quantised_rows.hpp): every rank's rows are drawn as its rank, the
// owners' sums as this one.
constexpr std::uint64_t kSumStream = 0xFFFFFFFFull;

void RowSparseSum::sum_dense_quantised(float* c, index_t cols, int bits) const {
  const int p = comm_->size(), me = comm_->rank();
  const auto ranks = static_cast<std::size_t>(p);
  // Each owner's rows travel as a block of groups from its first row, each rank's alike: the
  // sender's share and the owner's sums of a block scaled group by group.
  const index_t g = quantised_scale_rows(cols);
  const std::vector<std::size_t> blocks = dense_quantised_blocks(cols, bits);
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (const std::size_t b : blocks) {
    offsets.push_back(total);
    total += b;
  }
  const Range mine = block_range(rows_, p, me);
  const std::size_t own = blocks[static_cast<std::size_t>(me)], w = as_size(cols);
  const std::vector<std::size_t> recv(ranks, own);
  const bool data = c != nullptr;
  const Scratch<std::uint8_t> packed = scratch<std::uint8_t>(data ? total : 0),
                              parts = scratch<std::uint8_t>(data ? own * ranks : 0),
                              gathered = scratch<std::uint8_t>(data ? total : 0);
  // The owner's rounded sums at its place in the all-gather's buffer (gathered in place).
  std::uint8_t* const sums = data ? gathered.get() + offsets[static_cast<std::size_t>(me)] : nullptr;
  if (data)
    for (int q = 0; q < p; ++q) {
      const Range r = block_range(rows_, p, q);
      quantise_rows(c + r.begin * cols, r.size(), cols, bits, g, static_cast<std::uint64_t>(me), r.begin,
                    packed.get() + offsets[static_cast<std::size_t>(q)]);
    }
  comm_->all_to_all_bytes(packed.get(), blocks, parts.get(), recv);
  if (data) {
    const Scratch<float> acc = scratch<float>(as_size(mine.size()) * w);
    std::fill_n(acc.get(), as_size(mine.size()) * w, 0.0f);
    for (std::size_t s = 0; s < ranks; ++s)  // rank by rank: each row's sum in rank order
      add_dequantised_rows(parts.get() + s * own, mine.size(), cols, bits, g, acc.get());
    quantise_rows(acc.get(), mine.size(), cols, bits, g, kSumStream, mine.begin, sums);
  }
  comm_->all_gather_bytes(sums, gathered.get(), blocks);
  if (data)
    for (int q = 0; q < p; ++q) {
      const Range r = block_range(rows_, p, q);
      dequantise_rows(gathered.get() + offsets[static_cast<std::size_t>(q)], r.size(), cols, bits, g,
                      c + r.begin * cols);
    }
}

void RowSparseSum::sum_rows_quantised(float* c, index_t cols, int bits) const {
  const int p = comm_->size(), me = comm_->rank();
  const std::size_t rb = quantised_bytes(1, cols, bits, 1), w = as_size(cols);
  const bool data = c != nullptr;
  std::size_t sent = 0, received = 0, gathered_rows = 0;
  for (const std::size_t n : send_counts_) sent += n;
  for (const std::size_t n : recv_counts_) received += n;
  for (const std::size_t n : owned_counts_) gathered_rows += n;
  std::vector<std::uint8_t> out(data ? sent * rb : 0), in(data ? received * rb : 0), sums(data ? owned_ * rb : 0),
      gathered(data ? gathered_rows * rb : 0);
  if (data)
    for (const Run& run : send_runs_)
      quantise_rows(c + as_size(run.row) * w, run.len, cols, bits, 1, static_cast<std::uint64_t>(me), run.row,
                    out.data() + as_size(run.at) * rb);
  comm_->all_to_all_bytes(data ? out.data() : nullptr, scaled_counts(send_counts_, rb), data ? in.data() : nullptr,
                          scaled_counts(recv_counts_, rb));
  if (data) {
    std::vector<float> acc(owned_ * w, 0.0f);
    const std::uint8_t* from = in.data();  // source s's rows
    for (int s = 0; s < p; ++s) {
      if (s == me) {  // this rank's own rows, rounded as if sent
        index_t longest = 0;
        for (const Run& run : own_runs_) longest = std::max(longest, run.len);
        std::vector<std::uint8_t> mine(as_size(longest) * rb);
        for (const Run& run : own_runs_) {
          quantise_rows(c + as_size(run.row) * w, run.len, cols, bits, 1, static_cast<std::uint64_t>(me), run.row,
                        mine.data());
          add_dequantised_rows(mine.data(), run.len, cols, bits, 1, acc.data() + as_size(run.at) * w);
        }
        continue;
      }
      for (const Run& run : recv_runs_[static_cast<std::size_t>(s)])
        add_dequantised_rows(from + as_size(run.at) * rb, run.len, cols, bits, 1, acc.data() + as_size(run.row) * w);
      from += recv_counts_[static_cast<std::size_t>(s)] * rb;
    }
    for (const Run& run : owned_runs_)
      quantise_rows(acc.data() + as_size(run.at) * w, run.len, cols, bits, 1, kSumStream, run.row,
                    sums.data() + as_size(run.at) * rb);
  }
  comm_->all_gather_bytes(data ? sums.data() : nullptr, data ? gathered.data() : nullptr, scaled_counts(owned_counts_, rb));
  if (!data) return;
  for (const Run& run : gathered_runs_)
    dequantise_rows(gathered.data() + as_size(run.at) * rb, run.len, cols, bits, 1, c + as_size(run.row) * w);
  for (const Run& run : zero_runs_) std::fill_n(c + as_size(run.row) * w, as_size(run.len) * w, 0.0f);
}

}  // namespace plexus
