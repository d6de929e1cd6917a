#pragma once
// Items of fixed size sorted into buckets through a scratch file: the exchange of the work done
// in passes by one process (the prepare and the converters in passes), where the work on P ranks
// exchanges them between ranks (comm/rank_exchange.hpp) — the all-to-all done in time instead of
// across ranks. Pass k adds its items, each to the bucket of the pass that will take it, and pass
// j later reads its bucket back. The producer is the one an exchange between ranks takes
// (comm/item_rounds.hpp). Each round of at most `round` items is held in memory once, sorted by
// bucket, and appended to the file as a run; reading a bucket reads its segment of every run, in
// run order (so a bucket's items arrive in the order they were added).
#include <string>
#include <vector>

#include "src/comm/item_rounds.hpp"
#include "src/comm/scratch_file.hpp"
#include "plexus/tensor.hpp"

namespace plexus::comm {

class SpillBuckets {
 public:
  SpillBuckets(const std::string& dir, std::size_t item_bytes, int buckets)
      : file_(dir), bytes_(item_bytes), buckets_(buckets), counts_(static_cast<std::size_t>(buckets), 0) {}

  template <class Produce>
  void add(index_t items, index_t round, Produce&& produce) {
    std::vector<char> run;
    for (index_t i0 = 0; i0 < items; i0 += round) {
      Run r;
      sort_round(produce, i0, std::min(items, i0 + round), bytes_, buckets_, run, r.starts);
      r.offset = file_.append(run.data(), run.size());
      for (std::size_t q = 0; q < counts_.size(); ++q) counts_[q] += static_cast<index_t>(r.starts[q + 1] - r.starts[q]);
      runs_.push_back(std::move(r));
    }
  }

  // receive(const char* items, index_t count) for each run's segment of bucket `j` (none empty).
  template <class Receive>
  void read(int j, Receive&& receive) const {
    std::vector<char> buf;
    const auto q = static_cast<std::size_t>(j);
    for (const Run& r : runs_) {
      const std::size_t count = r.starts[q + 1] - r.starts[q];
      if (count == 0) continue;
      buf.resize(count * bytes_);
      file_.read(r.offset + static_cast<std::uint64_t>(r.starts[q]) * bytes_, buf.data(), buf.size());
      receive(static_cast<const char*>(buf.data()), static_cast<index_t>(count));
    }
  }

  index_t count(int j) const { return counts_[static_cast<std::size_t>(j)]; }

 private:
  struct Run {
    std::uint64_t offset = 0;          // in the file
    std::vector<std::size_t> starts;  // buckets + 1: bucket q's items are [starts[q], starts[q + 1])
  };
  ScratchFile file_;
  std::size_t bytes_;
  int buckets_;
  std::vector<index_t> counts_;
  std::vector<Run> runs_;
};

}  // namespace plexus::comm
