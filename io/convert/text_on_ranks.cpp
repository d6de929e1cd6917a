// read_edge_list and read_matrix_market on P ranks (plexus/convert.hpp): each rank parses the lines that start in its
// 1/P of the file's bytes; the ids that occur are relabelled by a distributed sort (each rank
// owns a run of the sorted distinct ids: those are its rows); every edge and its reverse travel
// to the rank owning their row, which builds its rows as the one-process converter does
// (graph_build.hpp). The result equals read_edge_list's, row for row.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include "io/convert/graph_build.hpp"
#include "io/convert/matrix_market.hpp"
#include "io/convert/text_ranges.hpp"
#include "io/convert/text_reader.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/prepare_distributed.hpp"
#include "src/comm/rank_exchange.hpp"

namespace plexus {

namespace {

using comm::exchange_in_rounds;
using comm::Ranks;
using text::LineRange;
using text::ParsedLines;
using text::TextReader;

// This rank's share of the lines of bytes [data_begin, file size): those starting in its 1/P of
// them, numbered from `lines_before` (the lines before data_begin) and the newlines the ranks
// below counted.
LineRange rank_lines(const std::string& path, const Ranks& ranks, std::uint64_t data_begin, std::int64_t lines_before) {
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError(path, "cannot read the size of the file (a regular file is needed on several ranks)");
  LineRange range = text::byte_range(size, data_begin, static_cast<std::uint64_t>(ranks.rank),
                                     static_cast<std::uint64_t>(ranks.size));
  // The number of the first line starting in the range: the newlines before it, plus one.
  const std::int64_t newlines_before = ranks.exscan(text::count_newlines(path, range.begin, range.end));
  const bool starts_mid_line = range.begin > 0 && text::count_newlines(path, range.begin - 1, range.begin) == 0;
  range.first_line = 1 + lines_before + newlines_before + (starts_mid_line ? 1 : 0);
  return range;
}

// The ranks' first edge lines must agree on the column count (the file's first edge line
// decides): the first rank whose own first line differs names it.
std::size_t agree_on_columns(const std::string& path, const ParsedLines& mine, const Ranks& ranks) {
  const std::vector<index_t> all = ranks.all(static_cast<index_t>(mine.columns));
  std::size_t columns = 0;
  for (const index_t c : all)
    if (c != 0) {
      columns = static_cast<std::size_t>(c);
      break;
    }
  std::string why;
  if (mine.columns != 0 && mine.columns != columns)
    why = "expected " + std::to_string(columns) + " columns like the first edge line, got " + std::to_string(mine.columns);
  ranks.agree(why, path + ":" + std::to_string(mine.first_edge_line));
  return columns;
}

// Relabels the ids that occur to 0..n-1 in increasing order: returns n and this rank's run of
// the sorted distinct ids (its rows), rewriting the edges' ends in place.
index_t relabel(std::vector<build::Edge>& edges, const Ranks& ranks, index_t round, std::vector<std::int64_t>& own_ids,
                index_t& first_row) {
  std::vector<index_t> ids;
  ids.reserve(edges.size() * 2);
  for (const build::Edge& e : edges) {
    ids.push_back(e.u);
    ids.push_back(e.v);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  // Splitters from every rank's evenly spaced samples: rank k owns ids in [split[k-1], split[k]).
  constexpr std::size_t kSamples = 64;
  std::vector<index_t> samples;
  for (std::size_t s = 0; s < kSamples && !ids.empty(); ++s) samples.push_back(ids[s * ids.size() / kSamples]);
  const index_t total_samples = ranks.sum(static_cast<index_t>(samples.size()));
  std::vector<index_t> all = ranks.all_gather(samples, total_samples);
  std::sort(all.begin(), all.end());
  std::vector<index_t> split;
  for (int k = 1; k < ranks.size; ++k)
    split.push_back(all.empty() ? 0 : all[static_cast<std::size_t>(k) * all.size() / static_cast<std::size_t>(ranks.size)]);
  const auto owner = [&](index_t id) { return static_cast<int>(std::upper_bound(split.begin(), split.end(), id) - split.begin()); };
  // Each rank's distinct ids to their owners, with the sender; each owner sorts its run, numbers
  // it from the ids on the ranks below, and answers every sender with (id, new id) pairs.
  struct Ask {
    index_t id;
    std::int64_t from;
  };
  struct Pair {
    index_t id, label;
  };
  std::vector<Ask> asks;
  exchange_in_rounds(
      ranks, static_cast<index_t>(ids.size()), sizeof(Ask), round,
      [&](index_t i0, index_t i1, auto&& emit) {
        for (index_t i = i0; i < i1; ++i) {
          const Ask a{ids[i], ranks.rank};
          emit(owner(ids[i]), &a);
        }
      },
      [&](const char* items, index_t count) {
        const std::size_t at = asks.size();
        asks.resize(at + static_cast<std::size_t>(count));
        std::memcpy(static_cast<void*>(asks.data() + at), items, static_cast<std::size_t>(count) * sizeof(Ask));
      });
  std::vector<index_t> bucket;
  bucket.reserve(asks.size());
  for (const Ask& a : asks) bucket.push_back(a.id);
  std::sort(bucket.begin(), bucket.end());
  bucket.erase(std::unique(bucket.begin(), bucket.end()), bucket.end());
  first_row = ranks.exscan(static_cast<index_t>(bucket.size()));
  const index_t n = ranks.sum(static_cast<index_t>(bucket.size()));
  std::vector<Pair> answers;
  exchange_in_rounds(
      ranks, static_cast<index_t>(asks.size()), sizeof(Pair), round,
      [&](index_t i0, index_t i1, auto&& emit) {
        for (index_t i = i0; i < i1; ++i) {
          const index_t label = first_row + (std::lower_bound(bucket.begin(), bucket.end(), asks[i].id) - bucket.begin());
          const Pair pr{asks[i].id, label};
          emit(static_cast<int>(asks[i].from), &pr);
        }
      },
      [&](const char* items, index_t count) {
        const std::size_t at = answers.size();
        answers.resize(at + static_cast<std::size_t>(count));
        std::memcpy(static_cast<void*>(answers.data() + at), items, static_cast<std::size_t>(count) * sizeof(Pair));
      });
  asks = {};
  std::sort(answers.begin(), answers.end(), [](const Pair& a, const Pair& b) { return a.id < b.id; });
  const auto label_of = [&](index_t id) {
    return std::lower_bound(answers.begin(), answers.end(), id, [](const Pair& a, index_t x) { return a.id < x; })->label;
  };
  for (build::Edge& e : edges) {
    e.u = label_of(e.u);
    e.v = label_of(e.v);
  }
  own_ids.assign(bucket.begin(), bucket.end());
  return n;
}

// Every edge, and with `symmetrize` its reverse (same order and weight), to the rank owner(row)
// names; returns the edges this rank receives. Consumes `edges`.
template <class Owner>
std::vector<build::Edge> move_edges(const Ranks& ranks, std::vector<build::Edge>& edges, bool symmetrize, Owner&& owner,
                                    index_t round) {
  std::vector<build::Edge> got;
  exchange_in_rounds(
      ranks, static_cast<index_t>(edges.size()), sizeof(build::Edge), round,
      [&](index_t i0, index_t i1, auto&& emit) {
        for (index_t i = i0; i < i1; ++i) {
          const build::Edge& e = edges[static_cast<std::size_t>(i)];
          emit(owner(e.u), &e);
          if (symmetrize) {
            const build::Edge back{e.v, e.u, e.order, e.w};
            emit(owner(e.v), &back);
          }
        }
      },
      [&](const char* items, index_t count) {
        const std::size_t at = got.size();
        got.resize(at + static_cast<std::size_t>(count));
        std::memcpy(static_cast<void*>(got.data() + at), items, static_cast<std::size_t>(count) * sizeof(build::Edge));
      });
  edges = {};
  return got;
}

}  // namespace

GraphSlice read_edge_list_on_ranks(const std::string& path, const EdgeListOptions& opt, Communicator& comm) {
  const Ranks ranks(comm);
  if (opt.node_ids != nullptr)
    throw InputError("EdgeListOptions.node_ids", "a node file is read on one rank: convert with EdgeListOptions.node_ids on one rank");
  if (opt.edge_features != 0)
    throw InputError("EdgeListOptions.edge_features", "edge features are read on one process for now: convert on one rank");
  if (opt.base != 0 && opt.base != 1) throw InputError("EdgeListOptions.base", "must be 0 or 1, got " + std::to_string(opt.base));
  if (opt.num_nodes < 0) throw InputError("EdgeListOptions.num_nodes", "must be >= 0, got " + std::to_string(opt.num_nodes));
  if (opt.classes < 1) throw InputError("EdgeListOptions.classes", "must be at least 1, got " + std::to_string(opt.classes));
  const index_t round = exchange_round_entries();
  ParsedLines lines = text::parse_edge_lines(path, opt, rank_lines(path, ranks, 0, 0));
  const std::size_t columns = agree_on_columns(path, lines, ranks);
  if (ranks.sum(static_cast<index_t>(lines.edges.size())) == 0) throw InputError(path, "no edges");
  const bool weighted = columns == 3;

  GraphSlice s;
  index_t n = opt.num_nodes;
  if (n > 0) {
    s.rows = block_range(n, ranks.size, ranks.rank);
    if (opt.base != 0)
      for (index_t k = s.rows.begin; k < s.rows.end; ++k) s.node_ids.push_back(k + opt.base);
  } else {
    index_t first_row = 0;
    n = relabel(lines.edges, ranks, round, s.node_ids, first_row);
    if (n > opt.max_nodes) throw InputError(path, std::to_string(n) + " distinct node ids exceed the node limit");
    s.rows = Range{first_row, first_row + static_cast<index_t>(s.node_ids.size())};
    for (std::int64_t& id : s.node_ids) id += opt.base;
  }
  // Every edge (and, symmetrized, its reverse) to the rank owning its row; self-loops dropped.
  const comm::RowOwners owner(ranks, s.rows.begin, n);
  std::erase_if(lines.edges, [](const build::Edge& e) { return e.u == e.v; });
  std::vector<build::Edge> mine = move_edges(ranks, lines.edges, opt.symmetrize, owner, round);
  build::csr_rows_from_edges(s.rows.begin, s.rows.size(), mine, weighted, s.indptr, s.indices, s.values);
  text::finish_slice(s, n, !opt.symmetrize, weighted, opt);
  return s;
}

GraphSlice read_matrix_market_on_ranks(const std::string& path, const EdgeListOptions& opt, Communicator& comm) {
  const Ranks ranks(comm);
  if (opt.classes < 1) throw InputError("EdgeListOptions.classes", "must be at least 1, got " + std::to_string(opt.classes));
  const index_t round = exchange_round_entries();
  // Rank 0 reads the header and the size line; every rank learns them and where the entries start.
  struct Shared {
    mtx::Header h;
    std::uint64_t data_begin = 0;
    std::int64_t lines_before = 0;
  } shared;
  if (ranks.rank == 0) {
    TextReader in(path);
    shared.h = mtx::read_header(in, opt);
    shared.data_begin = in.offset();
    shared.lines_before = in.line_number();
  }
  static_assert(std::is_trivially_copyable_v<Shared>);
  comm.broadcast_bytes(&shared, sizeof shared, 0);
  const mtx::Header& h = shared.h;
  const LineRange range = rank_lines(path, ranks, shared.data_begin, shared.lines_before);
  TextReader in(path, range.begin, range.end, range.first_line);
  std::vector<build::Edge> edges;
  std::vector<std::string_view> f;
  std::string_view line;
  while (in.next(line)) {
    if (text::is_comment_or_blank(line)) continue;
    build::Edge e = mtx::parse_entry(in, line, h, f);
    e.order = in.line_number();
    edges.push_back(e);
  }
  // As many entries as the size line announced: the first one past them names its line.
  const auto mine = static_cast<index_t>(edges.size());
  const index_t before = ranks.exscan(mine), seen = ranks.sum(mine);
  if (seen > h.nnz) {  // every rank names the line of entry nnz + 1, which one rank holds
    const bool holds = before <= h.nnz && h.nnz < before + mine;
    const index_t line_of_extra = ranks.max(holds ? edges[static_cast<std::size_t>(h.nnz - before)].order : 0);
    throw InputError(path + ":" + std::to_string(line_of_extra),
                     "more entries than the " + std::to_string(h.nnz) + " announced in the size line");
  }
  const index_t last_line = ranks.max(in.line_number());
  if (seen < h.nnz)
    throw InputError(path + ":" + std::to_string(last_line),
                     "expected " + std::to_string(h.nnz) + " entries, found " + std::to_string(seen));

  GraphSlice s;
  const index_t n = h.rows;
  s.rows = block_range(n, ranks.size, ranks.rank);
  const bool symmetrize = h.symmetric || opt.symmetrize;
  std::erase_if(edges, [](const build::Edge& e) { return e.u == e.v; });
  std::vector<build::Edge> rows_edges = move_edges(ranks, edges, symmetrize, [&](index_t row) { return block_of(n, ranks.size, row); }, round);
  build::csr_rows_from_edges(s.rows.begin, s.rows.size(), rows_edges, h.weighted, s.indptr, s.indices, s.values);
  text::finish_slice(s, n, !symmetrize, h.weighted, opt);
  return s;
}

}  // namespace plexus
