#pragma once
// Items of fixed size sorted into buckets through a scratch file: the exchange of the work done
// in passes by one process (the prepare and the converters in passes), where the work on P ranks
// exchanges them between ranks (comm/rank_exchange.hpp) — the all-to-all done in time instead of
// across ranks. Pass k adds its items, each to the bucket of the pass that will take it, and pass
// j later reads its bucket back. The producer is the one an exchange between ranks takes
// (comm/item_rounds.hpp). Each round of at most `round` items is held in memory once, sorted by
// bucket, and appended to the file as a run; reading a bucket reads its segment of every run that
// has one, in run order (so a bucket's items arrive in the order they were added).
#include <cstdint>
#include <string>
#include <vector>

#include "src/comm/item_rounds.hpp"
#include "src/comm/scratch_file.hpp"
#include "plexus/tensor.hpp"

namespace plexus::comm {

class SpillBuckets {
 public:
  SpillBuckets(const std::string& dir, std::size_t item_bytes, int buckets)
      : file_(dir), bytes_(item_bytes), counts_(static_cast<std::size_t>(buckets), 0),
        segments_(static_cast<std::size_t>(buckets)) {}

  template <class Produce>
  void add(index_t items, index_t round, Produce&& produce) {
    std::vector<char> run;
    std::vector<DestGroup> groups;
    for (index_t i0 = 0; i0 < items; i0 += round) {
      sort_round_sparse(produce, i0, std::min(items, i0 + round), bytes_, run, groups);
      const std::uint64_t offset = file_.append(run.data(), run.size());
      for (const DestGroup& g : groups) {
        const auto q = static_cast<std::size_t>(g.dest);
        segments_[q].push_back({offset + static_cast<std::uint64_t>(g.begin) * bytes_, static_cast<index_t>(g.end - g.begin)});
        counts_[q] += static_cast<index_t>(g.end - g.begin);
      }
    }
  }

  // receive(const char* items, index_t count) for each run's segment of bucket `j` (none empty).
  template <class Receive>
  void read(int j, Receive&& receive) const {
    std::vector<char> buf;
    for (const Segment& s : segments_[static_cast<std::size_t>(j)]) {
      buf.resize(static_cast<std::size_t>(s.count) * bytes_);
      file_.read(s.offset, buf.data(), buf.size());
      receive(static_cast<const char*>(buf.data()), s.count);
    }
  }

  index_t count(int j) const { return counts_[static_cast<std::size_t>(j)]; }

 private:
  // Where one run holds items of a bucket: only the runs that hold some are listed, so the
  // bookkeeping grows with the items spilled, not with runs × buckets (k passes × k buckets).
  struct Segment {
    std::uint64_t offset = 0;  // in the file
    index_t count = 0;
  };
  ScratchFile file_;
  std::size_t bytes_;
  std::vector<index_t> counts_;
  std::vector<std::vector<Segment>> segments_;  // per bucket, in run order
};

}  // namespace plexus::comm
