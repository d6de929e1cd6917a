// Edge feature rows carried through a prepare by looking each entry's edge up in the input
// (partition/edge_rows.hpp).
#include "partition/edge_rows.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "src/core/array_census.hpp"
#include "src/core/parallel_work.hpp"

namespace plexus::detail {

EdgeRowIndex::EdgeRowIndex(index_t row0, const std::vector<index_t>& indptr, const std::vector<index_t>& indices)
    : row0_(row0), indptr_(indptr), by_col_(indices.size()) {
  const ArrayWatch held(by_col_);
  const auto n = static_cast<index_t>(indptr.size()) - 1;
#pragma omp parallel for schedule(dynamic, 512) if(worth_a_team(n + static_cast<index_t>(indices.size())))
  for (index_t u = 0; u < n; ++u) {
    for (index_t k = indptr[u]; k < indptr[u + 1]; ++k) by_col_[static_cast<std::size_t>(k)] = {indices[k], k};
    std::stable_sort(by_col_.begin() + indptr[u], by_col_.begin() + indptr[u + 1],
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
}

index_t EdgeRowIndex::find(index_t u, index_t v) const {
  const auto b = by_col_.begin() + indptr_[u - row0_], e = by_col_.begin() + indptr_[u - row0_ + 1];
  const auto it = std::lower_bound(b, e, v, [](const auto& x, index_t c) { return x.first < c; });
  return it != e && it->first == v ? it->second : -1;
}

std::vector<float> carried_edge_features(const EdgeRowIndex& index, const std::vector<float>& in_rows, index_t width,
                                         const GraphData& out, const std::vector<index_t>& source_of) {
  std::vector<float> rows(out.indices.size() * static_cast<std::size_t>(width));
  bool orphan = false;
#pragma omp parallel for schedule(dynamic, 512) if(worth_a_team(out.num_nodes + out.num_edges()))
  for (index_t q = 0; q < out.num_nodes; ++q) {
    const index_t u = source_of[q];
    for (index_t k = out.indptr[q]; k < out.indptr[q + 1]; ++k) {
      const index_t v = source_of[out.indices[k]];
      index_t from = index.find(u, v);
      if (from < 0) from = index.find(v, u);
      if (from < 0) {
        orphan = true;  // (a benign race: every writer stores true)
        continue;
      }
      std::copy_n(in_rows.begin() + from * width, width, rows.begin() + k * width);
    }
  }
  if (orphan) throw std::logic_error("carried_edge_features: an entry that is no edge of the input, either way");
  return rows;
}

namespace {

struct Ask {  // an entry's question to the rank holding input row `a`: your first row of a -> b?
  std::int64_t from_rank, entry, a, b;
};

}  // namespace

std::vector<float> carry_edge_features_on_ranks(const comm::Ranks& ranks, const EdgeRowIndex& index,
                                                const std::vector<float>& in_rows, index_t width,
                                                const CsrSlice<index_t>& out, Range out_rows,
                                                const std::vector<index_t>& source_of,
                                                const comm::RowOwners& input_owner, index_t round) {
  const index_t entries = out.size();
  std::vector<float> rows(static_cast<std::size_t>(entries * width));
  std::vector<char> found(static_cast<std::size_t>(entries), 0);
  const ArrayWatch held(rows, found);
  // Each entry's input edge (u, v): its row's and its column's input nodes.
  std::vector<index_t> row_of(static_cast<std::size_t>(entries));
  for (index_t q = 0; q < out_rows.size(); ++q)
    for (index_t k = out.indptr[q] - out.begin(); k < out.indptr[q + 1] - out.begin(); ++k) row_of[k] = source_of[out_rows.begin + q];
  // An answer: the entry and whether the row follows (then `width` floats).
  const std::size_t answer_bytes = 2 * sizeof(std::int64_t) + static_cast<std::size_t>(width) * sizeof(float);
  const index_t answers_per_round = std::max<index_t>(1, round * static_cast<index_t>(sizeof(Ask)) / static_cast<index_t>(answer_bytes));
  for (const bool reverse : {false, true}) {
    std::vector<index_t> open;  // the entries still without a row
    for (index_t k = 0; k < entries; ++k)
      if (!found[static_cast<std::size_t>(k)]) open.push_back(k);
    const ArrayWatch open_held(open);
    std::vector<Ask> asked;  // what this rank is asked, in arrival order
    const ArrayWatch asked_held(asked);
    comm::exchange_in_rounds(
        ranks, static_cast<index_t>(open.size()), sizeof(Ask), round,
        [&](index_t i0, index_t i1, auto&& emit) {
          for (index_t i = i0; i < i1; ++i) {
            const index_t k = open[static_cast<std::size_t>(i)];
            const index_t u = row_of[k], v = source_of[out.indices[k]];
            const Ask q{ranks.rank, k, reverse ? v : u, reverse ? u : v};
            emit(input_owner(q.a), &q);
          }
        },
        [&](const char* items, index_t count) {
          const std::size_t at = asked.size();
          asked.resize(at + static_cast<std::size_t>(count));
          std::memcpy(asked.data() + at, items, static_cast<std::size_t>(count) * sizeof(Ask));
        });
    std::vector<char> answer(answer_bytes);
    comm::exchange_in_rounds(
        ranks, static_cast<index_t>(asked.size()), answer_bytes, answers_per_round,
        [&](index_t i0, index_t i1, auto&& emit) {
          for (index_t i = i0; i < i1; ++i) {
            const Ask& q = asked[static_cast<std::size_t>(i)];
            const index_t at = index.find(q.a, q.b);
            const std::int64_t head[2] = {q.entry, at >= 0 ? 1 : 0};
            std::memcpy(answer.data(), head, sizeof head);
            if (at >= 0 && width > 0)
              std::memcpy(answer.data() + sizeof head, in_rows.data() + at * width, static_cast<std::size_t>(width) * sizeof(float));
            emit(static_cast<int>(q.from_rank), answer.data());
          }
        },
        [&](const char* items, index_t count) {
          for (index_t i = 0; i < count; ++i) {
            const char* a = items + static_cast<std::size_t>(i) * answer_bytes;
            std::int64_t head[2];
            std::memcpy(head, a, sizeof head);
            if (!head[1]) continue;
            std::memcpy(rows.data() + head[0] * width, a + sizeof head, static_cast<std::size_t>(width) * sizeof(float));
            found[static_cast<std::size_t>(head[0])] = 1;
          }
        });
  }
  const bool orphan = std::find(found.begin(), found.end(), 0) != found.end();
  if (ranks.max(orphan ? 1 : 0) != 0)
    throw std::logic_error("carry_edge_features_on_ranks: an entry that is no edge of the input, either way");
  return rows;
}

}  // namespace plexus::detail
