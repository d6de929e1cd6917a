#pragma once
// The collectives of the steps that move a graph's rows between ranks (the prepare on ranks,
// the converters on ranks, the collective outputs), as typed calls over any Communicator
// (plexus/comm.hpp): sums, scans, all-gathers, one agreed failure, and an all-to-all of
// fixed-size items in bounded rounds. Over MPI, one process (SelfCommunicator), threads of one
// process (comm/in_process_communicator.hpp) or a recording communicator alike, and counted by
// each as its other collectives are.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "src/comm/item_rounds.hpp"
#include "src/core/array_census.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "plexus/shard.hpp"
#include "plexus/tensor.hpp"

namespace plexus::comm {

// The ranks of a communicator, with the collectives the data-moving steps call.
struct Ranks {
  Communicator& comm;
  int rank = 0, size = 1;
  explicit Ranks(Communicator& c) : comm(c), rank(c.rank()), size(c.size()) {}

  index_t sum(index_t v) const { return reduced(v, ReduceOp::Sum); }
  index_t max(index_t v) const { return reduced(v, ReduceOp::Max); }
  index_t min(index_t v) const { return reduced(v, ReduceOp::Min); }
  index_t exscan(index_t v) const {  // the sum over the ranks below this one
    comm.exclusive_scan(&v, 1);
    return v;
  }
  // Every rank's value, in rank order.
  std::vector<index_t> all(index_t v) const {
    std::vector<index_t> out(static_cast<std::size_t>(size));
    comm.all_gather_bytes(&v, out.data(), std::vector<std::size_t>(static_cast<std::size_t>(size), sizeof v));
    return out;
  }
  // The concatenation of every rank's `part` (rank order), `total` values in all.
  template <class T>
  std::vector<T> all_gather(const std::vector<T>& part, index_t total) const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<std::size_t> bytes;
    index_t at = 0;
    for (const index_t c : all(static_cast<index_t>(part.size()))) {
      bytes.push_back(static_cast<std::size_t>(c) * sizeof(T));
      at += c;
    }
    if (at != total) throw std::logic_error("all_gather: the parts do not add up");
    std::vector<T> out(static_cast<std::size_t>(total));
    const ArrayWatch gathered(out);  // beside `part`
    comm.all_gather_bytes(part.data(), out.data(), bytes);
    return out;
  }
  // What each rank sends this one, from what this one sends each rank (bytes or items alike).
  std::vector<std::size_t> all_to_all_counts(const std::vector<std::size_t>& send_counts) const {
    static_assert(sizeof(std::size_t) == 8);
    std::vector<std::size_t> recv(static_cast<std::size_t>(size));
    const std::vector<std::size_t> eight(static_cast<std::size_t>(size), 8);
    comm.all_to_all_bytes(send_counts.data(), eight, recv.data(), eight);
    return recv;
  }
  // `root`'s string on every rank.
  std::string broadcast(std::string s, int root) const {
    index_t n = static_cast<index_t>(s.size());
    comm.broadcast_bytes(&n, sizeof n, root);
    s.resize(static_cast<std::size_t>(n));
    comm.broadcast_bytes(s.data(), s.size(), root);
    return s;
  }
  // The lowest rank whose `failed` is true, -1 when none.
  int first_failed(bool failed) const {
    const index_t lowest = min(failed ? rank : size);
    return lowest == size ? -1 : static_cast<int>(lowest);
  }
  // Throws InputError(where, ...) on every rank when some rank's `why` is not empty: the first
  // failing rank's own message there, "rank K failed on its slice of the graph" on the others.
  void agree(const std::string& why, const std::string& where) const {
    const int first = first_failed(!why.empty());
    if (first < 0) return;
    if (first == rank) throw InputError(where, why);
    throw InputError(where, "rank " + std::to_string(first) + " failed on its slice of the graph");
  }

 private:
  index_t reduced(index_t v, ReduceOp op) const {
    comm.all_reduce(&v, 1, op);
    return v;
  }
};

// Items of `bytes` bytes each, sent to the ranks `dest` names and received in rank order,
// in rounds of at most `round` items per sender. produce(i0, i1, emit) emits the items of local
// positions [i0, i1) (comm/item_rounds.hpp); receive(const char* items, count) gets each round's
// arrivals. The round's buffers are counted by the thread's array census, sampled once each round
// has been received (src/core/array_census.hpp).
template <class Produce, class Receive>
void exchange_in_rounds(const Ranks& ranks, index_t local_items, std::size_t bytes, index_t round, Produce&& produce,
                        Receive&& receive) {
  const index_t rounds = ranks.max((local_items + round - 1) / round);
  const auto p = static_cast<std::size_t>(ranks.size);
  std::vector<std::size_t> starts, send_counts(p);
  std::vector<char> send, recv;
  const ArrayWatch buffers(send, recv);
  for (index_t k = 0; k < rounds; ++k) {
    const index_t i0 = std::min(local_items, k * round), i1 = std::min(local_items, i0 + round);
    sort_round(produce, i0, i1, bytes, ranks.size, send, starts);
    for (std::size_t q = 0; q < p; ++q) send_counts[q] = (starts[q + 1] - starts[q]) * bytes;
    const std::vector<std::size_t> recv_counts = ranks.all_to_all_counts(send_counts);
    std::size_t arrivals = 0;
    for (const std::size_t c : recv_counts) arrivals += c / bytes;
    recv.resize(arrivals * bytes);
    ranks.comm.all_to_all_bytes(send.data(), send_counts, recv.data(), recv_counts);
    if (arrivals > 0) receive(recv.data(), static_cast<index_t>(arrivals));  // (no null pointers to memcpy)
    sample_arrays();
  }
}

// The rank holding each row when every rank holds one run of rows starting at its `first_row`,
// the runs tiling [0, rows_total) in rank order (empty runs allowed). Collective to build (or
// built from the runs' bounds, for passes in one process).
class RowOwners {
 public:
  RowOwners(const Ranks& ranks, index_t first_row, index_t rows_total) : starts_(ranks.all(first_row)) {
    starts_.push_back(rows_total);
  }
  // The same for runs known in one process (the passes of a prepare or convert in passes):
  // `bounds` holds every run's first row and then the end, runs + 1 values in order.
  explicit RowOwners(std::vector<index_t> bounds) : starts_(std::move(bounds)) {}
  int operator()(index_t row) const {  // the last run starting at or below `row` (skipping empty ones)
    return static_cast<int>(std::upper_bound(starts_.begin(), starts_.end() - 1, row) - starts_.begin()) - 1;
  }
  // Rank k's run is [starts()[k], starts()[k + 1]).
  const std::vector<index_t>& starts() const { return starts_; }
  Range of(int k) const { return Range{starts_[static_cast<std::size_t>(k)], starts_[static_cast<std::size_t>(k) + 1]}; }

 private:
  std::vector<index_t> starts_;
};

}  // namespace plexus::comm
