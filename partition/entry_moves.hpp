#pragma once
// Moving a CSR's entries to the rows they get in a new order (private to partition/): the two
// halves of a move, shared by the prepare on P ranks (the entries travel by all-to-all,
// src/comm/rank_exchange.hpp) and the prepare in passes (they travel through scratch files,
// src/comm/spill_buckets.hpp). Both take the same producer: produce(e0, e1, emit) emits the
// entries of local positions [e0, e1) through emit(destination, const void* entry).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "plexus/shard.hpp"
#include "plexus/tensor.hpp"
#include "src/core/array_census.hpp"
#include "src/core/parallel_work.hpp"

namespace plexus::detail {

// An entry in flight: 12 bytes (node ids fit 32 bits: prepare refuses 2^31 nodes or more).
struct Entry {
  std::int32_t row, col;
  float value;
};

// The producer of the entries of a CSR run of rows (rows row0 .., indptr from 0):
// map(u, c, row, col) renumbers entry (u, c) (u global), which goes with its weight (1 when
// unweighted) to dest_of(row). The arrays must outlive the producer.
template <class InIdx, class Map, class Dest>
auto entry_producer(index_t row0, const std::vector<index_t>& indptr, const std::vector<InIdx>& indices,
                    const std::vector<float>& values, bool weighted, Map map, Dest dest_of) {
  return [&indptr, &indices, &values, row0, weighted, map, dest_of](index_t e0, index_t e1, auto&& emit) {
    if (e0 == e1) return;
    // The row of entry e0, then walk.
    index_t u = static_cast<index_t>(std::upper_bound(indptr.begin(), indptr.end(), e0) - indptr.begin()) - 1;
    for (index_t e = e0; e < e1; ++e) {
      while (indptr[u + 1] <= e) ++u;
      index_t row = 0, col = 0;
      map(row0 + u, static_cast<index_t>(indices[e]), row, col);
      const Entry x{static_cast<std::int32_t>(row), static_cast<std::int32_t>(col), weighted ? values[e] : 1.0f};
      emit(dest_of(row), &x);
    }
  };
}

// Appends `count` entries (raw bytes, as a move delivers them) to `got`.
inline void append_entries(std::vector<Entry>& got, const char* items, index_t count) {
  const std::size_t at = got.size();
  got.resize(at + static_cast<std::size_t>(count));
  std::memcpy(got.data() + at, items, static_cast<std::size_t>(count) * sizeof(Entry));
}

// The rows [out) of a CSR from its entries (every entry's row in [out), the columns of a row
// distinct): a counting sort by row, then each row by column. `got` is freed on the way, so only
// the arrivals and the output are held (12 + 8 or 12 bytes per entry; counted by the thread's
// array census, `got` by the caller's watch). indptr from 0.
template <class Idx>
struct LocalCsr {
  std::vector<index_t> indptr;
  std::vector<Idx> indices;
  std::vector<float> values;  // empty: unweighted
};

template <class Idx>
LocalCsr<Idx> rows_of_entries(std::vector<Entry>& got, Range out, bool weighted) {
  LocalCsr<Idx> s;
  std::vector<index_t>& ptr = s.indptr;
  ptr.assign(static_cast<std::size_t>(out.size()) + 1, 0);
  for (const Entry& x : got) ++ptr[static_cast<std::size_t>(x.row - out.begin) + 1];
  for (index_t i = 0; i < out.size(); ++i) ptr[i + 1] += ptr[i];
  s.indices.resize(got.size());
  if (weighted) s.values.resize(got.size());
  {
    std::vector<index_t> cursor(ptr.begin(), ptr.end() - 1);
    const ArrayWatch held(s.indptr, s.indices, s.values, cursor);  // with `got`: the peak of a move
    for (const Entry& x : got) {
      const index_t k = cursor[static_cast<std::size_t>(x.row - out.begin)]++;
      s.indices[k] = static_cast<Idx>(x.col);
      if (weighted) s.values[k] = x.value;
    }
  }
  got = {};
#pragma omp parallel if(worth_a_team(out.size() + static_cast<index_t>(s.indices.size())))
  {
    std::vector<std::pair<Idx, float>> row;
#pragma omp for schedule(dynamic, 1024)
    for (index_t i = 0; i < out.size(); ++i) {
      row.clear();
      for (index_t k = ptr[i]; k < ptr[i + 1]; ++k) row.emplace_back(s.indices[k], weighted ? s.values[k] : 1.0f);
      std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (std::size_t j = 0; j < row.size(); ++j) {
        s.indices[ptr[i] + static_cast<index_t>(j)] = row[j].first;
        if (weighted) s.values[ptr[i] + static_cast<index_t>(j)] = row[j].second;
      }
    }
  }
  return s;
}

}  // namespace plexus::detail
