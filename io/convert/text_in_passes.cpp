// read_edge_list and read_matrix_market in passes (plexus/convert.hpp): the converters on P
// ranks (text_on_ranks.cpp) done by one process, a range of bytes at a time, the edges and ids
// moving between passes through scratch files (src/comm/spill_buckets.hpp) instead of between
// ranks. Pass k parses the lines starting in its 1/K of the bytes; the ids that occur are
// relabelled by a sort in buckets of id ranges (bucket j's sorted distinct ids are rows
// [first_row_j, first_row_j+1)); every edge and its reverse go to the bucket owning their row,
// which builds its rows as the one-process converter does (graph_build.hpp). Memory: a pass's
// share of the edges (about 32 bytes each, twice when symmetrized) and of the ids.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string_view>
#include <optional>
#include <string>
#include <vector>

#include "io/convert/graph_build.hpp"
#include "io/convert/matrix_market.hpp"
#include "io/convert/text_ranges.hpp"
#include "io/convert/text_reader.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/prepare_distributed.hpp"
#include "src/comm/rank_exchange.hpp"
#include "src/comm/spill_buckets.hpp"

namespace plexus {

namespace {

using build::Edge;
using comm::SpillBuckets;
using text::LineRange;

std::uint64_t file_size_of(const std::string& path) {
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError(path, "cannot read the size of the file (a regular file is needed to convert in passes)");
  return size;
}

// The K ranges of bytes [data_begin, size), numbered: the newlines before each counted pass by pass.
std::vector<LineRange> pass_ranges(const std::string& path, std::uint64_t data_begin, std::int64_t lines_before,
                                   int parts) {
  const std::uint64_t size = file_size_of(path);
  std::vector<LineRange> ranges;
  std::int64_t newlines = 0;
  for (int k = 0; k < parts; ++k) {
    LineRange r = text::byte_range(size, data_begin, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(parts));
    const bool starts_mid_line = r.begin > 0 && text::count_newlines(path, r.begin - 1, r.begin) == 0;
    r.first_line = 1 + lines_before + newlines + (starts_mid_line ? 1 : 0);
    newlines += text::count_newlines(path, r.begin, r.end);
    ranges.push_back(r);
  }
  return ranges;
}

// Every edge of `edges`, and with `symmetrize` its reverse (same order and weight), to the
// bucket owner(row) names.
template <class Owner>
void spill_edges(SpillBuckets& to, const std::vector<Edge>& edges, bool symmetrize, Owner&& owner, index_t round) {
  to.add(static_cast<index_t>(edges.size()), round, [&](index_t i0, index_t i1, auto&& emit) {
    for (index_t i = i0; i < i1; ++i) {
      const Edge& e = edges[static_cast<std::size_t>(i)];
      emit(owner(e.u), &e);
      if (symmetrize) {
        const Edge back{e.v, e.u, e.order, e.w};
        emit(owner(e.v), &back);
      }
    }
  });
}

template <class T>
std::vector<T> read_bucket(const SpillBuckets& from, int j) {
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(from.count(j)));
  from.read(j, [&](const char* items, index_t count) {
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(count));
    std::memcpy(static_cast<void*>(out.data() + at), items, static_cast<std::size_t>(count) * sizeof(T));
  });
  return out;
}

// Output bucket j's rows [starts[j], starts[j+1]) from the edges spilled to it.
GraphSlice rows_of_bucket(const SpillBuckets& rows_edges, const std::vector<index_t>& starts, int j, bool weighted) {
  GraphSlice s;
  s.rows = Range{starts[static_cast<std::size_t>(j)], starts[static_cast<std::size_t>(j) + 1]};
  std::vector<Edge> mine = read_bucket<Edge>(rows_edges, j);
  build::csr_rows_from_edges(s.rows.begin, s.rows.size(), mine, weighted, s.indptr, s.indices, s.values);
  return s;
}

// Every bucket's rows, finished and handed to the sink in row order with their place in the
// whole CSR: its entries are counted first (a file's datasets are made at their full size),
// then each bucket's rows are built again and handed over.
void emit_rows(const SpillBuckets& rows_edges, const std::vector<index_t>& starts, index_t n, bool directed,
               bool weighted, const EdgeListOptions& opt, const std::function<std::vector<std::int64_t>(int)>& node_ids,
               const GraphRowsSink& sink) {
  const int parts = static_cast<int>(starts.size()) - 1;
  index_t total = 0;
  for (int j = 0; j < parts; ++j) total += static_cast<index_t>(rows_of_bucket(rows_edges, starts, j, weighted).indices.size());
  index_t before = 0;
  for (int j = 0; j < parts; ++j) {
    if (starts[static_cast<std::size_t>(j)] == starts[static_cast<std::size_t>(j) + 1]) continue;  // no rows
    GraphSlice s = rows_of_bucket(rows_edges, starts, j, weighted);
    s.node_ids = node_ids(j);
    text::finish_slice(s, n, directed, weighted, opt);
    const auto held = static_cast<index_t>(s.indices.size());
    sink(std::move(s), before, total);
    before += held;
  }
}


void check_passes(int passes, const std::string& scratch_dir) {
  if (passes < 1) throw InputError("passes", "must be at least 1");
  if (scratch_dir.empty()) throw InputError("read_edge_list_in_passes(scratch_dir)", "a scratch directory is needed to convert in passes");
}

constexpr double kRoundBytes = 3 * 12.0 * (1 << 20);  // spilled runs in memory

}  // namespace

double convert_memory_bytes(std::uint64_t lines, index_t num_nodes, index_t feature_width, bool symmetrize, int passes) {
  const double l = static_cast<double>(lines);
  const double nodes = num_nodes > 0 ? static_cast<double>(num_nodes) : 2 * l;
  const double per_pass = (symmetrize ? 96.0 : 64.0) * l + (4.0 * static_cast<double>(feature_width) + 40.0) * nodes;
  return per_pass / std::max(1, passes) + kRoundBytes;
}

std::uint64_t text_graph_lines(const std::string& path) {
  if (text::is_gzip_file(path))
    throw InputError(path, "a gzip file cannot be split into passes: decompress it, or convert without read_edge_list_in_passes(scratch_dir)");
  return static_cast<std::uint64_t>(
      std::max<std::int64_t>(1, text::count_newlines(path, 0, std::numeric_limits<std::uint64_t>::max())));
}

int convert_passes_for_budget(std::uint64_t lines, index_t num_nodes, index_t feature_width, bool symmetrize,
                              std::uint64_t budget) {
  const double variable = convert_memory_bytes(lines, num_nodes, feature_width, symmetrize, 1) - kRoundBytes;
  const double room = static_cast<double>(budget) - kRoundBytes;
  if (room <= 0 || variable / room > 1e6)
    throw InputError("convert_passes_for_budget(budget)", "too small to convert in passes: every pass holds about 36 MiB of spilled "
                                          "runs plus its share of the edges");
  return static_cast<int>(std::max(1.0, std::ceil(variable / room)));
}

void read_edge_list_in_passes(const std::string& path, const EdgeListOptions& opt, int passes,
                              const std::string& scratch_dir, const GraphRowsSink& sink) {
  if (opt.node_ids != nullptr) throw InputError("EdgeListOptions.node_ids", "a node file is read whole: convert with EdgeListOptions.node_ids without passes");
  if (opt.edge_features != 0)
    throw InputError("EdgeListOptions.edge_features", "edge features are read on one process for now: convert without passes");
  if (opt.base != 0 && opt.base != 1) throw InputError("EdgeListOptions.base", "must be 0 or 1, got " + std::to_string(opt.base));
  if (opt.num_nodes < 0) throw InputError("EdgeListOptions.num_nodes", "must be >= 0, got " + std::to_string(opt.num_nodes));
  if (opt.classes < 1) throw InputError("EdgeListOptions.classes", "must be at least 1, got " + std::to_string(opt.classes));
  check_passes(passes, scratch_dir);
  const index_t round = exchange_round_entries();
  const int k_passes = passes;
  const std::vector<LineRange> ranges = pass_ranges(path, 0, 0, k_passes);
  const bool dense = opt.num_nodes > 0;

  // 1. Parse each range: the columns agree with the file's first edge line; relabelling takes
  // evenly spaced samples of each range's distinct ids and keeps the edges as read.
  SpillBuckets raw(scratch_dir, sizeof(Edge), 1);
  std::vector<index_t> samples;
  std::size_t columns = 0;
  index_t edges_total = 0;
  for (int k = 0; k < k_passes; ++k) {
    text::ParsedLines lines = text::parse_edge_lines(path, opt, ranges[static_cast<std::size_t>(k)]);
    if (lines.columns != 0 && columns == 0) columns = lines.columns;
    if (lines.columns != 0 && lines.columns != columns)
      throw InputError(path + ":" + std::to_string(lines.first_edge_line),
                       "expected " + std::to_string(columns) + " columns like the first edge line, got " +
                           std::to_string(lines.columns));
    edges_total += static_cast<index_t>(lines.edges.size());
    if (!dense) {
      std::vector<index_t> ids;
      ids.reserve(lines.edges.size() * 2);
      for (const Edge& e : lines.edges) ids.push_back(e.u), ids.push_back(e.v);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      constexpr std::size_t kSamples = 64;
      for (std::size_t s = 0; s < kSamples && !ids.empty(); ++s) samples.push_back(ids[s * ids.size() / kSamples]);
    }
    raw.add(static_cast<index_t>(lines.edges.size()), round, [&](index_t i0, index_t i1, auto&& emit) {
      for (index_t i = i0; i < i1; ++i) emit(0, &lines.edges[static_cast<std::size_t>(i)]);
    });
  }
  if (edges_total == 0) throw InputError(path, "no edges");
  const bool weighted = columns == 3;
  // The raw edges a run at a time (each run a pass's round): the only way back to them.
  const auto for_raw_runs = [&](auto&& visit) {
    raw.read(0, [&](const char* items, index_t count) {
      std::vector<Edge> run(static_cast<std::size_t>(count));
      std::memcpy(static_cast<void*>(run.data()), items, static_cast<std::size_t>(count) * sizeof(Edge));
      visit(run);
    });
  };
  const auto drop_self_loops = [](std::vector<Edge>& e) { std::erase_if(e, [](const Edge& x) { return x.u == x.v; }); };

  if (dense) {  // rows block_range(n, K, j); the ids are the rows (plus --base)
    const index_t n = opt.num_nodes;
    std::vector<index_t> starts(static_cast<std::size_t>(k_passes) + 1);
    for (int j = 0; j <= k_passes; ++j) starts[static_cast<std::size_t>(j)] = n * j / k_passes;
    SpillBuckets rows_edges(scratch_dir, sizeof(Edge), k_passes);
    const comm::RowOwners row_owner(starts);
    for_raw_runs([&](std::vector<Edge>& run) {
      drop_self_loops(run);
      spill_edges(rows_edges, run, opt.symmetrize, row_owner, round);
    });
    emit_rows(rows_edges, starts, n, !opt.symmetrize, weighted, opt, [&](int j) {
      std::vector<std::int64_t> ids;
      if (opt.base != 0)
        for (index_t r = starts[static_cast<std::size_t>(j)]; r < starts[static_cast<std::size_t>(j) + 1]; ++r)
          ids.push_back(r + opt.base);
      return ids;
    }, sink);
    return;
  }

  // 2. Relabel: bucket j holds the ids in [split[j-1], split[j]); its sorted distinct ids are
  // rows first_row[j] .. first_row[j+1] - 1.
  std::sort(samples.begin(), samples.end());
  std::vector<index_t> split;
  for (int k = 1; k < k_passes; ++k)
    split.push_back(samples[static_cast<std::size_t>(k) * samples.size() / static_cast<std::size_t>(k_passes)]);
  samples = {};
  const auto bucket_of = [&](index_t id) {
    return static_cast<int>(std::upper_bound(split.begin(), split.end(), id) - split.begin());
  };
  SpillBuckets ids(scratch_dir, sizeof(index_t), k_passes), by_u(scratch_dir, sizeof(Edge), k_passes);
  for_raw_runs([&](std::vector<Edge>& run) {
    ids.add(2 * static_cast<index_t>(run.size()), round, [&](index_t i0, index_t i1, auto&& emit) {
      for (index_t i = i0; i < i1; ++i) {
        const Edge& e = run[static_cast<std::size_t>(i / 2)];
        const index_t id = i % 2 == 0 ? e.u : e.v;
        emit(bucket_of(id), &id);
      }
    });
    spill_edges(by_u, run, false, bucket_of, round);
  });
  SpillBuckets distinct(scratch_dir, sizeof(index_t), k_passes);  // bucket j's sorted distinct ids
  std::vector<index_t> first_row(static_cast<std::size_t>(k_passes) + 1, 0);
  for (int j = 0; j < k_passes; ++j) {
    std::vector<index_t> mine = read_bucket<index_t>(ids, j);
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    first_row[static_cast<std::size_t>(j) + 1] = first_row[static_cast<std::size_t>(j)] + static_cast<index_t>(mine.size());
    distinct.add(static_cast<index_t>(mine.size()), round, [&](index_t i0, index_t i1, auto&& emit) {
      for (index_t i = i0; i < i1; ++i) emit(j, &mine[static_cast<std::size_t>(i)]);
    });
  }
  const index_t n = first_row.back();
  if (n > opt.max_nodes) throw InputError(path, std::to_string(n) + " distinct node ids exceed the node limit");
  const auto label = [&](const std::vector<index_t>& mine, int j, index_t id) {
    return first_row[static_cast<std::size_t>(j)] + (std::lower_bound(mine.begin(), mine.end(), id) - mine.begin());
  };
  // 3. Each edge's u relabelled in u's bucket, then its v in v's; self-loops dropped; every
  // edge and its reverse to the bucket owning its row.
  SpillBuckets by_v(scratch_dir, sizeof(Edge), k_passes);
  for (int j = 0; j < k_passes; ++j) {
    const std::vector<index_t> mine = read_bucket<index_t>(distinct, j);
    std::vector<Edge> edges = read_bucket<Edge>(by_u, j);
    for (Edge& e : edges) e.u = label(mine, j, e.u);
    by_v.add(static_cast<index_t>(edges.size()), round, [&](index_t i0, index_t i1, auto&& emit) {
      for (index_t i = i0; i < i1; ++i) emit(bucket_of(edges[static_cast<std::size_t>(i)].v), &edges[static_cast<std::size_t>(i)]);
    });
  }
  const comm::RowOwners row_owner(first_row);
  SpillBuckets rows_edges(scratch_dir, sizeof(Edge), k_passes);
  for (int j = 0; j < k_passes; ++j) {
    const std::vector<index_t> mine = read_bucket<index_t>(distinct, j);
    std::vector<Edge> edges = read_bucket<Edge>(by_v, j);
    for (Edge& e : edges) e.v = label(mine, j, e.v);
    drop_self_loops(edges);
    spill_edges(rows_edges, edges, opt.symmetrize, row_owner, round);
  }
  // 4. Each bucket's rows, with their original ids.
  emit_rows(rows_edges, first_row, n, !opt.symmetrize, weighted, opt, [&](int j) {
    const std::vector<index_t> mine = read_bucket<index_t>(distinct, j);
    std::vector<std::int64_t> node_ids(mine.begin(), mine.end());
    for (std::int64_t& id : node_ids) id += opt.base;
    return node_ids;
  }, sink);
}

void read_matrix_market_in_passes(const std::string& path, const EdgeListOptions& opt, int passes,
                                  const std::string& scratch_dir, const GraphRowsSink& sink) {
  if (opt.classes < 1) throw InputError("EdgeListOptions.classes", "must be at least 1, got " + std::to_string(opt.classes));
  check_passes(passes, scratch_dir);
  const index_t round = exchange_round_entries();
  mtx::Header h;
  std::uint64_t data_begin = 0;
  std::int64_t lines_before = 0;
  {
    text::TextReader in(path);
    h = mtx::read_header(in, opt);
    data_begin = in.offset();
    lines_before = in.line_number();
  }
  const index_t n = h.rows;
  const int k_passes = passes;
  std::vector<index_t> starts(static_cast<std::size_t>(k_passes) + 1);
  for (int j = 0; j <= k_passes; ++j) starts[static_cast<std::size_t>(j)] = n * j / k_passes;
  const bool symmetrize = h.symmetric || opt.symmetrize;
  SpillBuckets rows_edges(scratch_dir, sizeof(Edge), k_passes);
  const comm::RowOwners row_owner(starts);
  index_t seen = 0;
  std::int64_t last_line = lines_before;
  for (const LineRange& r : pass_ranges(path, data_begin, lines_before, k_passes)) {
    text::TextReader in(path, r.begin, r.end, r.first_line);
    std::vector<Edge> edges;
    std::vector<std::string_view> f;
    std::string_view line;
    while (in.next(line)) {
      if (text::is_comment_or_blank(line)) continue;
      // As many entries as the size line announced: the first one past them names its line.
      if (seen == h.nnz)
        throw InputError(path + ":" + std::to_string(in.line_number()),
                         "more entries than the " + std::to_string(h.nnz) + " announced in the size line");
      Edge e = mtx::parse_entry(in, line, h, f);
      e.order = in.line_number();
      edges.push_back(e);
      ++seen;
    }
    last_line = std::max(last_line, in.line_number());
    std::erase_if(edges, [](const Edge& e) { return e.u == e.v; });
    spill_edges(rows_edges, edges, symmetrize, row_owner, round);
  }
  if (seen < h.nnz)
    throw InputError(path + ":" + std::to_string(last_line),
                     "expected " + std::to_string(h.nnz) + " entries, found " + std::to_string(seen));
  emit_rows(rows_edges, starts, n, !symmetrize, h.weighted, opt, [](int) { return std::vector<std::int64_t>{}; }, sink);
}

}  // namespace plexus
