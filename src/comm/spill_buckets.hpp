#pragma once
// Items of fixed size sorted into buckets through a scratch file: the exchange of the work done
// in passes by one process (the prepare and the converters in passes), where the work on P ranks
// exchanges them between ranks (comm/rank_exchange.hpp) — the all-to-all done in time instead of
// across ranks. Pass k adds its items, each to the bucket of the pass that will take it, and pass
// j later reads its bucket back. The producer is the one an exchange between ranks takes
// (comm/item_rounds.hpp). Each round of at most `round` items is held in memory once, sorted by
// bucket, and appended to the file as a run; reading a bucket reads its segment of every run that
// has one, in run order (so a bucket's items arrive in the order they were added).
//
// The list of segments grows with runs × buckets (up to one per item when a pass's few items
// scatter over thousands of passes' buckets): kept to `bookkeeping_bytes` by compaction — when
// the list would pass it, the file is rewritten bucket by bucket (each bucket's segments
// copied, in order, into one) and the list shrinks to a segment per bucket. A compaction costs
// a pass over the bytes spilled so far and briefly their space twice on disk; as the list
// must have grown by half its limit since the last one, they stay few (none in a run of
// moderate pass counts), and reading a bucket afterwards is one read, not one per run.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "src/comm/item_rounds.hpp"
#include "src/comm/scratch_file.hpp"
#include "plexus/sizes.hpp"
#include "plexus/tensor.hpp"

namespace plexus::comm {

class SpillBuckets {
 public:
  // Default `bookkeeping_bytes`: 1/32 of the process's memory budget (256 MiB when unknown).
  SpillBuckets(const std::string& dir, std::size_t item_bytes, int buckets, std::size_t bookkeeping_bytes = 0)
      : file_(dir), bytes_(item_bytes), counts_(static_cast<std::size_t>(buckets), 0),
        segments_(static_cast<std::size_t>(buckets)) {
    if (bookkeeping_bytes == 0) {
      const std::uint64_t budget = memory_budget().bytes;
      bookkeeping_bytes = budget > 0 ? static_cast<std::size_t>(budget / 32) : std::size_t{256} << 20;
    }
    // A segment costs up to twice its size in a vector's spare capacity. At least two a bucket:
    // a compaction must free half the limit, or it would come back at once.
    max_segments_ = std::max<std::size_t>(bookkeeping_bytes / (2 * sizeof(Segment)), 2 * counts_.size() + 64);
  }

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
      held_segments_ += groups.size();
      if (held_segments_ > max_segments_) compact();
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
  // Segments listed, and the compactions made so far (tests, the budget's accounting).
  std::size_t segments() const { return held_segments_; }
  int compactions() const { return compactions_; }

 private:
  // Where one run holds items of a bucket: only the runs that hold some are listed, so the
  // bookkeeping grows with the items spilled, not with runs × buckets (k passes × k buckets).
  struct Segment {
    std::uint64_t offset = 0;  // in the file
    index_t count = 0;
  };
  // The file rewritten bucket by bucket, each bucket's segments (in run order) made one.
  void compact() {
    ScratchFile next(file_.dir());
    constexpr std::size_t kCopyBytes = std::size_t{4} << 20;  // a segment is copied in pieces
    std::vector<char> buf;
    held_segments_ = 0;
    for (std::size_t j = 0; j < segments_.size(); ++j) {
      std::vector<Segment>& list = segments_[j];
      if (list.empty()) continue;
      const std::uint64_t at = next.size();
      for (const Segment& seg : list) {
        const std::uint64_t end = seg.offset + static_cast<std::uint64_t>(seg.count) * bytes_;
        for (std::uint64_t o = seg.offset; o < end; o += kCopyBytes) {
          buf.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kCopyBytes, end - o)));
          file_.read(o, buf.data(), buf.size());
          next.append(buf.data(), buf.size());
        }
      }
      list.assign(1, Segment{at, counts_[j]});
      list.shrink_to_fit();
      ++held_segments_;
    }
    file_ = std::move(next);
    ++compactions_;
  }

  ScratchFile file_;
  std::size_t bytes_;
  std::vector<index_t> counts_;
  std::vector<std::vector<Segment>> segments_;  // per bucket, in run order
  std::size_t held_segments_ = 0;
  std::size_t max_segments_ = 0;
  int compactions_ = 0;
};

}  // namespace plexus::comm
