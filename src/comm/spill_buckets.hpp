#pragma once
// Items of fixed size sorted into buckets through a scratch file (private: the prepare and the
// converters in passes): the all-to-all of the work on P ranks, done in time instead of across
// ranks. Pass k adds its
// items — each to the bucket of the pass that will take it — and pass j later reads its bucket
// back. The producer is the one an exchange between ranks takes (src/comm/rank_exchange.hpp):
// produce(i0, i1, emit) emits the items of positions [i0, i1) through emit(bucket, item), the
// same items in the same order each time it is called (twice a round: to count, then to copy).
// Each round of at most `round` items is held in memory once, sorted by bucket, and appended to
// the file as a run; reading a bucket reads its segment of every run, in run order (so a
// bucket's items arrive in the order they were added).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "io/files/scratch_file.hpp"
#include "plexus/tensor.hpp"

namespace plexus::io {

class SpillBuckets {
 public:
  SpillBuckets(const std::string& dir, std::size_t item_bytes, int buckets)
      : file_(dir), bytes_(item_bytes), buckets_(buckets), counts_(static_cast<std::size_t>(buckets), 0) {}

  template <class Produce>
  void add(index_t items, index_t round, Produce&& produce) {
    const auto b = static_cast<std::size_t>(buckets_);
    std::vector<index_t> at(b + 1), cursor(b);
    std::vector<char> run;
    for (index_t i0 = 0; i0 < items; i0 += round) {
      const index_t i1 = std::min(items, i0 + round);
      std::fill(at.begin(), at.end(), 0);
      produce(i0, i1, [&](int dest, const void*) { ++at[static_cast<std::size_t>(dest) + 1]; });
      for (std::size_t q = 0; q < b; ++q) at[q + 1] += at[q];
      run.resize(static_cast<std::size_t>(at[b]) * bytes_);
      std::copy(at.begin(), at.end() - 1, cursor.begin());
      produce(i0, i1, [&](int dest, const void* item) {
        std::memcpy(run.data() + static_cast<std::size_t>(cursor[static_cast<std::size_t>(dest)]++) * bytes_, item,
                    bytes_);
      });
      Run r;
      r.offset = file_.append(run.data(), run.size());
      r.starts = at;
      for (std::size_t q = 0; q < b; ++q) counts_[q] += at[q + 1] - at[q];
      runs_.push_back(std::move(r));
    }
  }

  // receive(const char* items, index_t count) for each run's segment of bucket `j` (none empty).
  template <class Receive>
  void read(int j, Receive&& receive) const {
    std::vector<char> buf;
    for (const Run& r : runs_) {
      const index_t count = r.starts[static_cast<std::size_t>(j) + 1] - r.starts[static_cast<std::size_t>(j)];
      if (count == 0) continue;
      buf.resize(static_cast<std::size_t>(count) * bytes_);
      file_.read(r.offset + static_cast<std::uint64_t>(r.starts[static_cast<std::size_t>(j)]) * bytes_, buf.data(),
                 buf.size());
      receive(static_cast<const char*>(buf.data()), count);
    }
  }

  index_t count(int j) const { return counts_[static_cast<std::size_t>(j)]; }

 private:
  struct Run {
    std::uint64_t offset = 0;     // in the file
    std::vector<index_t> starts;  // buckets + 1: bucket q's items are [starts[q], starts[q + 1])
  };
  io::ScratchFile file_;
  std::size_t bytes_;
  int buckets_;
  std::vector<index_t> counts_;
  std::vector<Run> runs_;
};

}  // namespace plexus::io
