#pragma once
// What the row-sparse sum and gather (comm/row_sparse_sum.hpp, row_sparse_gather.hpp) build their
// schedules from: every rank's mask of rows, gathered bit-packed over a group once at set-up (R/8
// bytes a rank), and the runs of consecutive rows their lists are kept as.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "plexus/comm.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

struct RowMasks {
  std::vector<std::uint8_t> packed;  // rank s's mask at s · bytes, bit r of row r
  std::size_t bytes = 0;             // a mask's, ⌈rows / 8⌉
  // Whether rank s's mask sets row r.
  bool set(int s, index_t r) const {
    return (packed[static_cast<std::size_t>(s) * bytes + static_cast<std::size_t>(r >> 3)] >> (r & 7)) & 1u;
  }
};

// Collective over `comm`: every rank's `mask` (one byte a row, non-zero: set; all of one length)
// packed and all-gathered.
RowMasks all_gather_row_masks(Communicator& comm, const std::vector<std::uint8_t>& mask);

// When a row-sparse collective takes its rows form instead of the dense one (--sparse-comm; the
// same decision on every rank, from counts a plan knows too):
//   Never      the dense form (--sparse-comm dense).
//   FewerRows  where it moves fewer rows over the group: the rule where the wire is the cost (ranks
//              on several nodes; --sparse-comm rows, and auto across nodes).
//   Cheaper    where it costs less counting the copies it adds besides: packing the rows it sends
//              and placing the rows it receives, which the dense form, sending and receiving whole
//              blocks in place, does not make. Between ranks of one node a row on the wire is two
//              copies (into shared memory and out), a packing copy one, so the rows form is taken
//              where 2·wire + copies < 2·dense (auto on one node). On 4 and 8 ranks of this 2-core
//              machine the rows form of a sum moving 0.7 of dense's rows took 1.2–1.35× its time
//              (examples/bench/bench_row_sums; docs/communication.md, "Which form").
enum class RowsRule { Never, FewerRows, Cheaper };

// Whether `rule` takes the rows form of a collective whose group receives `dense` rows in the
// dense form, `sparse` in the rows form, which copies `copies` rows besides.
bool rows_form_pays(RowsRule rule, std::uint64_t dense, std::uint64_t sparse, std::uint64_t copies);

// acc[0, n) += x[0, n): the one operation the host sums are made of, taken rank by rank so that
// each row's sum is in rank order (row_sparse_sum.cpp, row_sparse_scatter.cpp).
void add_row(float* __restrict acc, const float* __restrict x, index_t n);

// A run of `len` consecutive rows of a block from `row`, at `at` (in rows) of a packed buffer: the
// schedules copy and add runs, not rows one by one.
struct RowRun {
  index_t row, at, len;
};

// Extends the last run of `runs` by (row, at) where both follow on, else starts a run.
void append_row(std::vector<RowRun>& runs, index_t row, index_t at);

// Each count of rows times `per_row` (bytes or elements a row): a collective's counts.
std::vector<std::size_t> scaled_counts(const std::vector<std::size_t>& rows, std::size_t per_row);

// Scratch memory of the host collectives, reused from call to call: a sum runs every layer of
// every step with the same sizes, and a fresh allocation of tens of MB is fresh pages (mmap),
// each faulted in on first touch — as long as the copies it serves. A block goes back to this
// thread's pool when its Scratch dies, and the next request takes the smallest free block that
// fits. The pool keeps at most kScratchKept free blocks and kScratchKeptBytes in all, the largest
// that fit (a block above the bound is freed at once), so what it holds between calls is at most
// what one call used and never more than the bound: memory the plan's estimate does not count.
struct ScratchReturn {
  std::size_t bytes = 0;
  void operator()(void* p) const noexcept;
};
template <class T>
using Scratch = std::unique_ptr<T[], ScratchReturn>;
inline constexpr std::size_t kScratchKept = 6;
inline constexpr std::size_t kScratchKeptBytes = std::size_t{256} << 20;
void* take_scratch(std::size_t bytes, std::size_t& granted);
// The bytes this thread's pool holds free.
std::size_t scratch_pool_bytes();

// Scratch of n values, not zeroed (every one is written before it is read): no fill on each pass.
template <class T>
Scratch<T> scratch(std::size_t n) {
  std::size_t granted = 0;
  T* p = static_cast<T*>(take_scratch(n * sizeof(T), granted));
  return Scratch<T>(p, ScratchReturn{granted});
}

// The rows forms' one exchange: packs the rows of c [· × cols] that `runs` name (row: in c; at: in
// the packed buffer), sends rank q its send_counts[q] of them and receives recv_counts[q] from
// each, in one all-to-all; returns the received rows, by source in rank order. c nullptr (a dry
// run): only the collective is issued, with its counts, and nothing is returned.
Scratch<float> exchange_rows(Communicator& comm, const float* c, index_t cols, const std::vector<RowRun>& runs,
                             const std::vector<std::size_t>& send_counts, const std::vector<std::size_t>& recv_counts);

}  // namespace plexus
