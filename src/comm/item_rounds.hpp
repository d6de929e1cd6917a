#pragma once
// One round of fixed-size items sorted by destination: the step the exchange between ranks
// (comm/rank_exchange.hpp, destinations are ranks) and the spill between passes
// (comm/spill_buckets.hpp, destinations are passes) share. The producer's contract, the same for
// both: produce(i0, i1, emit) emits the items of local positions [i0, i1) through
// emit(destination, const void* item), the same items in the same order each time it is called.
#include <algorithm>
#include <cstring>
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus::comm {

// The items [i0, i1) into `out`, grouped by destination (each group in emission order), and
// where each destination's group starts in items (`starts`: destinations + 1 values). Two calls of
// the producer: one counts, one copies each item into place, so that the round's buffer is the only
// one of its size.
template <class Produce>
void sort_round(Produce& produce, index_t i0, index_t i1, std::size_t item_bytes, int destinations,
                std::vector<char>& out, std::vector<std::size_t>& starts) {
  const auto d = static_cast<std::size_t>(destinations);
  starts.assign(d + 1, 0);
  produce(i0, i1, [&](int dest, const void*) { ++starts[static_cast<std::size_t>(dest) + 1]; });
  for (std::size_t q = 0; q < d; ++q) starts[q + 1] += starts[q];
  out.resize(starts[d] * item_bytes);
  std::vector<std::size_t> cursor(starts.begin(), starts.end() - 1);
  produce(i0, i1, [&](int dest, const void* item) {
    std::memcpy(out.data() + cursor[static_cast<std::size_t>(dest)]++ * item_bytes, item, item_bytes);
  });
}

// The same grouping for many destinations and few items each round (the spill between passes,
// whose destinations are the passes: up to 100,000 of them): only the destinations that get
// items are listed, in destination order, each with its items [begin, end) in `out`. Its cost
// is that of the round's items (m·log m), never of the destinations (a dense `starts` per round
// over k passes made k rounds cost k², in time and, kept, in memory).
struct DestGroup {
  int dest;
  std::size_t begin, end;
};
template <class Produce>
void sort_round_sparse(Produce& produce, index_t i0, index_t i1, std::size_t item_bytes, std::vector<char>& out,
                       std::vector<DestGroup>& groups) {
  groups.clear();
  std::size_t items = 0;
  {
    std::vector<int> dests;  // (freed before the round's buffer is made)
    produce(i0, i1, [&](int dest, const void*) { dests.push_back(dest); });
    items = dests.size();
    std::sort(dests.begin(), dests.end());
    for (std::size_t i = 0; i < dests.size();) {
      std::size_t j = i;
      while (j < dests.size() && dests[j] == dests[i]) ++j;
      const std::size_t at = groups.empty() ? 0 : groups.back().end;
      groups.push_back({dests[i], at, at + (j - i)});
      i = j;
    }
  }
  out.resize(items * item_bytes);
  std::vector<std::size_t> cursor;
  cursor.reserve(groups.size());
  for (const DestGroup& g : groups) cursor.push_back(g.begin);
  produce(i0, i1, [&](int dest, const void* item) {
    const auto k = static_cast<std::size_t>(
        std::lower_bound(groups.begin(), groups.end(), dest, [](const DestGroup& g, int d) { return g.dest < d; }) -
        groups.begin());
    std::memcpy(out.data() + cursor[k]++ * item_bytes, item, item_bytes);
  });
}

}  // namespace plexus::comm
