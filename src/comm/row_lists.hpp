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

}  // namespace plexus
