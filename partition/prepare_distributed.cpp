// prepare_graph_distributed: prepare_graph on P ranks, each holding a slice of the rows
// (include/plexus/prepare_distributed.hpp). The row operations are prepare_graph's own
// (partition/clean_rows.hpp, merge_rows / normalized_block of plexus/sparse.hpp), so every row
// comes out as the one-process prepare makes it; what is added here is moving rows and entries
// between ranks.
#include "plexus/prepare_distributed.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "partition/bf16_features.hpp"
#include "partition/clean_rows.hpp"
#include "partition/edge_rows.hpp"
#include "partition/entry_moves.hpp"
#include "partition/slice_checks.hpp"
#include "partition/slice_parts.hpp"
#include "src/comm/rank_exchange.hpp"
#include "src/core/link_split_problem.hpp"
#include "src/core/array_census.hpp"
#include "plexus/error.hpp"
#include "plexus/progress.hpp"
#include "plexus/sparse.hpp"

namespace plexus {

index_t exchange_round_entries(std::uint64_t budget) {
  const char* env = std::getenv("PLEXUS_PREPARE_ROUND");
  if (env == nullptr) {
    // 12 MB of entries, or a 64th of the budget's worth of 12-byte entries when that is less.
    constexpr index_t kDefault = index_t{1} << 20;
    return budget == 0 ? kDefault : std::clamp<index_t>(static_cast<index_t>(budget / 64 / 12), 256, kDefault);
  }
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(env, &end, 10);
  if (*env == '\0' || *end != '\0' || errno != 0 || v < 1)
    throw InputError("PLEXUS_PREPARE_ROUND", "must be a positive integer (entries per exchange round), got '" +
                                                 std::string(env) + "'");
  return static_cast<index_t>(v);
}

void check_distributed_prepare(const PrepareOptions& opt, int ranks) {
  // (On one rank too: the slices' orders are none and permute only, and a file saying metis must
  // hold METIS's order.)
  if (cuts_metis_parts(opt.balance)) {
    const std::string name = balance_name(opt.balance);
    throw InputError("PrepareOptions.balance", name + " partitions the whole graph in one process: prepare with PrepareOptions.balance " +
                                  name + " in one process (prepare_graph), or use PrepareOptions.balance permute on " +
                                  std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks"));
  }
  if (!opt.clean) throw InputError("PrepareOptions.clean", "the distributed prepare always cleans");
}

namespace {

using comm::Ranks;
using comm::exchange_in_rounds;

constexpr const char* kWhere = "graph";  // what the errors of a slice name (as prepare_graph's do)

using detail::Entry;

// Entries of a CSR slice (rows [row0, row0 + rows), indptr from 0) sent to the owners of their
// new rows: map(u, c, row, col) renumbers entry (u, c), which travels with its weight to rank
// dest_of(row). Each rank gets back the rows [out) of the renumbered CSR, each row sorted by
// column (the columns of a row must be distinct).
template <class Idx, class InIdx, class Map, class Dest>
CsrSlice<Idx> move_entries(const Ranks& ranks, index_t row0, const std::vector<index_t>& indptr,
                           const std::vector<InIdx>& indices, const std::vector<float>& values, bool weighted,
                           Map&& map, Dest&& dest_of, Range out, index_t round) {
  std::vector<Entry> got;
  const ArrayWatch arrivals(got);
  exchange_in_rounds(ranks, static_cast<index_t>(indices.size()), sizeof(Entry), round,
                     detail::entry_producer(row0, indptr, indices, values, weighted, map, dest_of),
                     [&](const char* items, index_t count) { detail::append_entries(got, items, count); });
  detail::LocalCsr<Idx> local = detail::rows_of_entries<Idx>(got, out, weighted);
  CsrSlice<Idx> s;
  s.indices = std::move(local.indices);
  s.values = std::move(local.values);
  const auto held = static_cast<index_t>(s.indices.size());
  const index_t base = ranks.exscan(held);
  s.total = ranks.sum(held);
  s.indptr = std::move(local.indptr);
  for (index_t& x : s.indptr) x += base;
  return s;
}

// Per-node rows (`width` values of T each) of rows [row0, row0 + count) sent to their new
// positions new_id[row0 + u]; returns the rows [out) of the new order.
template <class T>
std::vector<T> move_node_rows(const Ranks& ranks, index_t n, index_t row0, const std::vector<T>& rows, index_t width,
                              const std::vector<index_t>& new_id, Range out, index_t round) {
  std::vector<T> result(static_cast<std::size_t>(out.size() * width));
  const ArrayWatch held(result);
  const auto count = static_cast<index_t>(width > 0 ? rows.size() / static_cast<std::size_t>(width) : 0);
  const auto local = static_cast<index_t>(new_id.empty() ? 0 : count);
  const std::size_t bytes = sizeof(index_t) + static_cast<std::size_t>(width) * sizeof(T);
  const index_t per_round = std::max<index_t>(1, round * static_cast<index_t>(sizeof(Entry)) / static_cast<index_t>(bytes));
  std::vector<char> item(bytes);
  exchange_in_rounds(
      ranks, local, bytes, per_round,
      [&](index_t u0, index_t u1, auto&& emit) {
        for (index_t u = u0; u < u1; ++u) {
          const index_t pos = new_id[static_cast<std::size_t>(row0 + u)];
          std::memcpy(item.data(), &pos, sizeof pos);
          if (width > 0)
            std::memcpy(item.data() + sizeof pos, rows.data() + u * width, static_cast<std::size_t>(width) * sizeof(T));
          emit(block_of(n, ranks.size, pos), item.data());
        }
      },
      [&](const char* items, index_t arrivals) {
        for (index_t i = 0; i < arrivals; ++i) {
          index_t pos = 0;
          std::memcpy(&pos, items + static_cast<std::size_t>(i) * bytes, sizeof pos);
          if (width > 0)
            std::memcpy(result.data() + (pos - out.begin) * width, items + static_cast<std::size_t>(i) * bytes + sizeof pos,
                        static_cast<std::size_t>(width) * sizeof(T));
        }
      });
  return result;
}

// This rank's slice checked as validate() checks a whole graph, in its names.
std::string check_slice(const GraphSlice& s, const std::vector<index_t>& starts, int rank) {
  if (s.rows.begin != starts[static_cast<std::size_t>(rank)] || s.rows.end != starts[static_cast<std::size_t>(rank) + 1])
    return "GraphSlice.rows: the ranks' row ranges do not tile [0, num_nodes) in rank order";
  std::string why = detail::check_slice_edges(s);
  return why.empty() ? detail::check_slice_nodes(s) : why;
}

// The prepare's steps, its large arrays registered with the thread's array census as they come
// and go (src/core/array_census.hpp).
PreparedSlice prepare_rows(GraphSlice in, const PrepareOptions& opt, Communicator& comm, index_t round) {
  const ArrayWatch input(in.indptr, in.indices, in.values, in.edge_features, in.features, in.labels, in.train_mask,
                         in.val_mask, in.test_mask, in.node_weights, in.node_ids);
  const Ranks ranks(comm);
  const index_t n = in.num_nodes;
  check_distributed_prepare(opt, ranks.size);
  if (n > std::numeric_limits<col_t>::max())
    throw InputError(kWhere, "num_nodes: more than 2^31-1 nodes are not supported yet");
  // The ranks agree on the sizes, then each checks its slice.
  {
    const index_t mine[5] = {n, in.num_features, in.num_classes, (in.directed ? 1 : 0) + (in.weighted ? 2 : 0),
                             in.num_edge_features};
    index_t lo[5], hi[5];
    std::copy_n(mine, 5, lo);
    std::copy_n(mine, 5, hi);
    comm.all_reduce(lo, 5, ReduceOp::Min);
    comm.all_reduce(hi, 5, ReduceOp::Max);
    if (!std::equal(lo, lo + 5, hi)) throw InputError(kWhere, "the ranks' slices describe different graphs (sizes or flags differ)");
  }
  // Node weights and ids are optional, but all or none (a rank without rows holds none).
  const bool has_weights = ranks.max(in.node_weights.empty() ? 0 : 1) == 1;
  const bool has_ids = ranks.max(in.node_ids.empty() ? 0 : 1) == 1;
  const comm::RowOwners owner_of_input_row(ranks, in.rows.begin, n);
  std::string why = check_slice(in, owner_of_input_row.starts(), ranks.rank);
  if (why.empty() && in.rows.size() > 0 && has_weights && in.node_weights.empty())
    why = "GraphSlice.node_weights: other ranks' slices have node weights, this one has none";
  if (why.empty() && in.rows.size() > 0 && has_ids && in.node_ids.empty())
    why = "GraphSlice.node_ids: other ranks' slices have node ids, this one has none";
  if (why.empty() && opt.features_bf16) why = detail::bf16_feature_overflow(in.features, in.rows.begin, in.num_features);
  const index_t ef_width = in.num_edge_features;
  if (why.empty()) why = detail::check_slice_edge_features(in);
  // A link split: on every rank or none, checked against the input rows this rank holds (as
  // validate_link_split checks it against the whole graph).
  const bool has_links = ranks.max(in.links ? 1 : 0) == 1;
  if (why.empty() && has_links && !in.links) why = "GraphSlice.links: other ranks' slices have a link split, this one has none";
  if (why.empty() && in.links)
    why = link_split_problem(*in.links, n, in.directed,
                             [&](std::int64_t u, std::int64_t v) { return detail::slice_has_edge(in, u, v); });
  ranks.agree(why, kWhere);
  // The input's entries and rows, kept for the edge feature lookup at the end (step 4).
  std::vector<index_t> ef_indptr, ef_indices;
  std::vector<float> ef_rows = std::move(in.edge_features);
  const ArrayWatch edge_source(ef_indptr, ef_indices, ef_rows);
  if (ef_width > 0) {
    ef_indptr = in.indptr;
    ef_indices = in.indices;
  }
  if (round <= 0) round = exchange_round_entries();
  const Range own = in.rows;
  constexpr std::uint64_t kStages = 6;

  // 1. Clean: dedupe the rows, then merge in the transposed entries (prepare_graph's clean_graph).
  detail::dedupe_rows(own.begin, in.indptr, in.indices, in.values);
  const bool weighted = in.weighted;
  if (opt.symmetrize) {
    CsrSlice<index_t> t = move_entries<index_t>(
        ranks, own.begin, in.indptr, in.indices, in.values, weighted,
        [](index_t u, index_t c, index_t& row, index_t& col) { row = c, col = u; }, owner_of_input_row, own, round);
    const ArrayWatch transposed(t.indptr, t.indices, t.values);
    const index_t base = t.begin();
    for (index_t& x : t.indptr) x -= base;
    detail::merge_union(in.indptr, in.indices, in.values, t.indptr, t.indices, t.values);
    in.directed = false;
  }
  report_progress(1, kStages);

  // 2. Degrees and orders. Â's rows of this slice as gcn_normalize makes them, with every
  // node's 1/sqrt(degree) (merge_rows, inv_sqrt_degrees, normalized_block).
  HostCsr a_hat;
  const ArrayWatch a_hat_held(a_hat.indptr, a_hat.indices, a_hat.values);
  {
    MergedRows m = merge_rows(n, own.begin, own.size(), in.indptr.data(), in.indices.data(),
                              weighted ? in.values.data() : nullptr);
    const ArrayWatch merged(m.indptr, m.entries);
    std::vector<double> part;
    std::string why;
    try {
      part = inv_sqrt_degrees(m);
    } catch (const std::invalid_argument& e) {
      why = std::string("/graph/values: ") + e.what();
    }
    ranks.agree(why, kWhere);
    const ArrayWatch degrees(part);
    const std::vector<double> inv_sqrt_deg = ranks.all_gather(part, n);
    const ArrayWatch all_degrees(inv_sqrt_deg);
    a_hat = normalized_block(m, inv_sqrt_deg, 0, n);
    sample_arrays();
  }
  report_progress(2, kStages);
  std::vector<index_t> w;  // permute's weights: the nnz of each row in Â
  const ArrayWatch weights(w);
  if (opt.balance == Balance::kPermute) {
    w.resize(static_cast<std::size_t>(own.size()));
    for (index_t u = 0; u < own.size(); ++u) w[u] = in.indptr[u + 1] - in.indptr[u] + 1;
    w = ranks.all_gather(w, n);
  }
  const NodeOrder order = detail::slice_orders(opt, n, w);
  const ArrayWatch orders(order.row, order.col);
  w = {};
  const bool two = order.row != order.col;
  report_progress(3, kStages);

  // 3. Every entry and node row to the rank that writes its output row.
  PreparedSlice p = detail::slice_header(opt, n, in.num_features, in.num_classes, in.directed, weighted, two);
  const ArrayWatch output(p.graph.indptr, p.graph.indices, p.graph.values, p.a1.indptr, p.a1.indices, p.a1.values,
                          p.a2.indptr, p.a2.indices, p.a2.values, p.features, p.labels, p.train_mask, p.val_mask,
                          p.test_mask, p.node_weights, p.node_ids, p.labels_p, p.train_p, p.val_p, p.test_p,
                          p.node_id_p, p.node_id_p2, p.block_counts.cuts, p.block_counts.tiles[0],
                          p.block_counts.tiles[1], p.block_counts.prefix[0], p.block_counts.prefix[1],
                          p.block_counts.held[0], p.block_counts.held[1], p.block_counts.held_prefix[0],
                          p.block_counts.held_prefix[1]);
  p.has_node_weights = has_weights;
  p.has_node_ids = has_ids;
  p.class_names = std::move(in.class_names);
  p.rows = block_range(n, ranks.size, ranks.rank);
  const std::vector<index_t>& pr = order.row;
  const std::vector<index_t>& pc = order.col;
  const auto out_owner = [&](index_t row) { return block_of(n, ranks.size, row); };
  const auto renumber = [](const std::vector<index_t>& rows, const std::vector<index_t>& cols) {
    return [&rows, &cols](index_t u, index_t c, index_t& row, index_t& col) { row = rows[u], col = cols[c]; };
  };
  // The cleaned graph first, so its input rows are freed before Â's two orders move.
  p.graph = move_entries<index_t>(ranks, own.begin, in.indptr, in.indices, in.values, weighted, renumber(pc, pc),
                                  out_owner, p.rows, round);
  in.indptr = {};
  in.indices = {};
  in.values = {};
  report_progress(4, kStages);
  p.a1 = move_entries<col_t>(ranks, own.begin, a_hat.indptr, a_hat.indices, a_hat.values, true, renumber(pr, pc),
                             out_owner, p.rows, round);
  if (two)
    p.a2 = move_entries<col_t>(ranks, own.begin, a_hat.indptr, a_hat.indices, a_hat.values, true, renumber(pc, pr),
                               out_owner, p.rows, round);
  a_hat = HostCsr{};
  report_progress(5, kStages);
  p.features = move_node_rows(ranks, n, own.begin, in.features, in.num_features, pc, p.rows, round);
  in.features = {};
  p.labels = move_node_rows(ranks, n, own.begin, in.labels, 1, pc, p.rows, round);
  p.train_mask = move_node_rows(ranks, n, own.begin, in.train_mask, 1, pc, p.rows, round);
  p.val_mask = move_node_rows(ranks, n, own.begin, in.val_mask, 1, pc, p.rows, round);
  p.test_mask = move_node_rows(ranks, n, own.begin, in.test_mask, 1, pc, p.rows, round);
  if (has_weights) p.node_weights = move_node_rows(ranks, n, own.begin, in.node_weights, 1, pc, p.rows, round);
  if (has_ids) p.node_ids = move_node_rows(ranks, n, own.begin, in.node_ids, 1, pc, p.rows, round);
  if (two) {
    p.labels_p = move_node_rows(ranks, n, own.begin, in.labels, 1, pr, p.rows, round);
    p.train_p = move_node_rows(ranks, n, own.begin, in.train_mask, 1, pr, p.rows, round);
    p.val_p = move_node_rows(ranks, n, own.begin, in.val_mask, 1, pr, p.rows, round);
    p.test_p = move_node_rows(ranks, n, own.begin, in.test_mask, 1, pr, p.rows, round);
  }
  detail::fill_node_positions(p, pr, pc);
  sample_arrays();

  // 4. Edge features: each entry of the cleaned graph's output rows takes its input edge's row.
  if (ef_width > 0) {
    const std::vector<index_t> source_of = inverse_permutation(pc);
    const ArrayWatch sources(source_of);
    const detail::EdgeRowIndex index(own.begin, ef_indptr, ef_indices);
    p.edge_features = detail::carry_edge_features_on_ranks(ranks, index, ef_rows, ef_width, p.graph, p.rows, source_of,
                                                           owner_of_input_row, round);
    p.num_edge_features = ef_width;
    sample_arrays();
  }

  // 5. The link split, renumbered with the graph, against the cleaned graph's output rows here
  // (symmetrizing a directed graph can store a held-out link's reverse).
  if (has_links) {
    p.links = renumbered(*in.links, pc);
    in.links.reset();
    const std::string leak = link_split_problem(*p.links, n, p.directed, [&](std::int64_t u, std::int64_t v) {
      if (u < p.rows.begin || u >= p.rows.end) return false;
      const auto b = p.graph.indices.begin() + (p.graph.indptr[u - p.rows.begin] - p.graph.begin()),
                 e = p.graph.indices.begin() + (p.graph.indptr[u - p.rows.begin + 1] - p.graph.begin());
      return std::binary_search(b, e, v);
    });
    ranks.agree(leak, "the prepared graph");
  }

  // The block counts: this rank's rows of each order counted by tile, summed over the ranks.
  AdjBlockCounts& b = p.block_counts;
  b.cuts = block_count_cuts(n);
  detail::count_slice_blocks(p, b.cuts, b.tiles, b.held);
  for (auto& t : b.tiles) comm.all_reduce(t.data(), t.size(), ReduceOp::Sum);
  for (auto& h : b.held) comm.all_reduce(h.data(), h.size(), ReduceOp::Sum);
  b.sum_tiles();
  sample_arrays();
  report_progress(kStages, kStages);
  return p;
}

}  // namespace

PreparedSlice prepare_graph_distributed(GraphSlice in, const PrepareOptions& opt, Communicator& comm, index_t round,
                                        PrepareRankCost* cost) {
  ArrayCensus census;
  const CensusScope counting(census);
  const CommStats before = comm.stats();
  PreparedSlice p = prepare_rows(std::move(in), opt, comm, round);
  if (cost != nullptr) {
    cost->bytes = comm.stats().bytes - before.bytes;
    cost->calls = comm.stats().calls - before.calls;
    cost->peak_array_bytes = census.peak_bytes();
  }
  return p;
}

}  // namespace plexus
