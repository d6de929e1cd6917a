#pragma once
// Collectives over the ranks of one MPI communicator for the steps that move a graph's rows
// between ranks (private; used by partition/prepare_distributed.cpp and io/convert): sums, scans,
// all-gathers, one agreed failure, and an all-to-all of fixed-size items in bounded rounds.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/tensor.hpp"

namespace plexus::comm {

struct Ranks {
  MPI_Comm comm;
  int rank = 0, size = 1;
  explicit Ranks(MPI_Comm c) : comm(c) {
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
  }
  index_t sum(index_t v) const {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_SUM, comm);
    return v;
  }
  index_t max(index_t v) const {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_MAX, comm);
    return v;
  }
  index_t exscan(index_t v) const {  // the sum over the ranks below this one
    index_t below = 0;
    MPI_Exscan(&v, &below, 1, MPI_INT64_T, MPI_SUM, comm);
    return rank == 0 ? 0 : below;
  }
  // Every rank's value, in rank order.
  std::vector<index_t> all(index_t v) const {
    std::vector<index_t> out(static_cast<std::size_t>(size));
    MPI_Allgather(&v, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, comm);
    return out;
  }
  // The concatenation of every rank's `part` (rank order), `total` values in all.
  template <class T>
  std::vector<T> all_gather(const std::vector<T>& part, index_t total) const {
    static_assert(std::is_trivially_copyable_v<T>);
    const std::vector<index_t> counts64 = all(static_cast<index_t>(part.size()));
    std::vector<int> counts(counts64.size()), displs(counts64.size());
    index_t at = 0;
    for (std::size_t p = 0; p < counts64.size(); ++p) {
      counts[p] = static_cast<int>(counts64[p]);
      displs[p] = static_cast<int>(at);
      at += counts64[p];
    }
    if (at != total) throw std::logic_error("all_gather: the parts do not add up");
    MPI_Datatype type;
    MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &type);
    MPI_Type_commit(&type);
    std::vector<T> out(static_cast<std::size_t>(total));
    MPI_Allgatherv(part.data(), counts[rank], type, out.data(), counts.data(), displs.data(), type, comm);
    MPI_Type_free(&type);
    return out;
  }

  // Throws InputError(where, ...) on every rank when some rank's `why` is not empty: the first
  // failing rank's own message there, "rank K failed on its slice of the graph" on the others.
  void agree(const std::string& why, const std::string& where) const {
    int mine = why.empty() ? size : rank, first = size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size) return;
    if (first == rank) throw InputError(where, why);
    throw InputError(where, "rank " + std::to_string(first) + " failed on its slice of the graph");
  }
};

// Items of `bytes` bytes each, sent to the ranks `dest` names and received in rank order,
// in rounds of at most `round` items per sender. produce(i0, i1, emit) emits the items of local
// positions [i0, i1) through emit(dest rank, const void* item), the same items in the same order
// each time it is called (twice a round: to count, then to copy); receive(const char* items,
// count) gets each round's arrivals.
template <class Produce, class Receive>
void exchange_in_rounds(const Ranks& ranks, index_t local_items, std::size_t bytes, index_t round, Produce&& produce,
                        Receive&& receive) {
  const index_t rounds = ranks.max((local_items + round - 1) / round);
  MPI_Datatype type;
  MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &type);
  MPI_Type_commit(&type);
  const auto p = static_cast<std::size_t>(ranks.size);
  std::vector<int> send_counts(p), recv_counts(p), send_displs(p), recv_displs(p);
  std::vector<char> send, recv;
  std::vector<int> cursor(p);
  for (index_t k = 0; k < rounds; ++k) {
    const index_t i0 = std::min(local_items, k * round), i1 = std::min(local_items, i0 + round);
    // Two passes over the round's items: count them by destination, then copy each into its
    // place (no staging copy: the send buffer is the only one of this size).
    std::fill(send_counts.begin(), send_counts.end(), 0);
    produce(i0, i1, [&](int dest, const void*) { ++send_counts[static_cast<std::size_t>(dest)]; });
    for (std::size_t q = 1; q < p; ++q) send_displs[q] = send_displs[q - 1] + send_counts[q - 1];
    send.resize(static_cast<std::size_t>(send_displs[p - 1] + send_counts[p - 1]) * bytes);
    std::copy(send_displs.begin(), send_displs.end(), cursor.begin());
    produce(i0, i1, [&](int dest, const void* item) {
      std::memcpy(send.data() + static_cast<std::size_t>(cursor[static_cast<std::size_t>(dest)]++) * bytes, item, bytes);
    });
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, ranks.comm);
    for (std::size_t q = 1; q < p; ++q) recv_displs[q] = recv_displs[q - 1] + recv_counts[q - 1];
    const std::size_t arrivals = static_cast<std::size_t>(recv_displs[p - 1]) + static_cast<std::size_t>(recv_counts[p - 1]);
    recv.resize(arrivals * bytes);
    MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), type, recv.data(), recv_counts.data(),
                  recv_displs.data(), type, ranks.comm);
    if (arrivals > 0) receive(recv.data(), static_cast<index_t>(arrivals));  // (no null pointers to memcpy)
  }
  MPI_Type_free(&type);
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
