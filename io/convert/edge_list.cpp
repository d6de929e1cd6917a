// Text graph converters: SNAP-style edge lists (read_edge_list, whose nodes are the ids that
// occur, 0..--num-nodes, or those of a node file) and MatrixMarket coordinate files
// (read_matrix_market). Both read through TextReader (plain or gzip), report errors as
// "<file>:<line>: <what>", build the CSR with build::csr_from_edges and validate the result.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/convert/graph_build.hpp"
#include "io/convert/matrix_market.hpp"
#include "io/convert/text_reader.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"

namespace plexus {
namespace {

using text::TextReader;

void check_common(const EdgeListOptions& opt) {
  if (opt.base != 0 && opt.base != 1) throw InputError("EdgeListOptions.base", "must be 0 or 1, got " + std::to_string(opt.base));
  if (opt.num_nodes < 0) throw InputError("EdgeListOptions.num_nodes", "must be >= 0, got " + std::to_string(opt.num_nodes));
  if (opt.num_nodes > opt.max_nodes)
    throw InputError("EdgeListOptions.num_nodes", std::to_string(opt.num_nodes) + " exceeds the limit of " +
                                        std::to_string(opt.max_nodes) + " nodes");
  if (opt.classes < 1) throw InputError("EdgeListOptions.classes", "must be at least 1, got " + std::to_string(opt.classes));
  if (opt.features == SyntheticFeatures::kRandom && opt.feature_width < 1)
    throw InputError("EdgeListOptions.feature_width", "must be at least 1, got " + std::to_string(opt.feature_width));
  if (opt.edge_features < 0 || opt.edge_features > 4096)
    throw InputError("EdgeListOptions.edge_features", "must be between 0 and 4096, got " + std::to_string(opt.edge_features));
}

void finish(GraphData& g, const EdgeListOptions& opt, const std::string& path) {
  build::synthetic_features(g, opt.features, opt.feature_width, opt.seed);
  build::unlabelled(g, opt.classes);
  validate(g, path);
}

// Columns of the synthetic features (the size checks count them).
index_t feature_width(const EdgeListOptions& opt) {
  return opt.features == SyntheticFeatures::kRandom ? opt.feature_width : 1;
}

// The stored entries' feature rows, each its line's (`orders`: the line of every entry, CSR order).
void take_edge_features(GraphData& g, index_t width, const std::vector<float>& by_line, const std::vector<index_t>& orders) {
  if (width <= 0) return;
  const auto w = static_cast<std::size_t>(width);
  g.num_edge_features = width;
  g.edge_features.resize(orders.size() * w);
  for (std::size_t k = 0; k < orders.size(); ++k)
    std::copy_n(by_line.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(orders[k]) * w), w,
                g.edge_features.begin() + static_cast<std::ptrdiff_t>(k * w));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One edge line "u v [w]" (with a split column: "u v [w] split"): the fields checked, the
// weight parsed (`columns` is set by the first edge line, the split column not counted).
// Comments and blank lines are the caller's.
struct EdgeLine {
  std::int64_t ids[2];
  float w;
  int split;  // 0 train, 1 validation, 2 test (0 without a split column)
};
EdgeLine parse_edge_line(const TextReader& in, std::string_view line, std::vector<std::string_view>& f,
                         std::size_t& columns, bool split_column, index_t feature_cols = 0,
                         std::vector<float>* features = nullptr) {
  text::split_fields(line, f);
  EdgeLine e{};
  if (feature_cols > 0) {  // "u v [w] f1 .. fN [split]": the features taken off first
    const auto n = static_cast<std::size_t>(feature_cols);
    const std::size_t tail = split_column ? 1 : 0;
    if (f.size() < 2 + n + tail || f.size() > 3 + n + tail)
      in.fail("expected " + std::to_string(2 + n + tail) + " or " + std::to_string(3 + n + tail) + " columns (u v [weight] " +
              std::to_string(n) + " edge features" + (split_column ? " split" : "") + "), got " + std::to_string(f.size()));
    const std::size_t first = f.size() - tail - n;
    for (std::size_t k = first; k < first + n; ++k) features->push_back(text::parse_float(in, f[k], "edge feature"));
    f.erase(f.begin() + static_cast<std::ptrdiff_t>(first), f.begin() + static_cast<std::ptrdiff_t>(first + n));
  }
  if (split_column) {
    if (f.size() < 3 || f.size() > 4)
      in.fail("expected 3 or 4 columns (u v [weight] split), got " + std::to_string(f.size()));
    const std::string tag = lower(f.back());
    if (tag == "train") e.split = 0;
    else if (tag == "val" || tag == "valid") e.split = 1;
    else if (tag == "test") e.split = 2;
    else in.fail("expected a split (train, val, valid or test) in the last column, got " + text::printable(f.back()));
    f.pop_back();
  } else if (f.size() < 2 || f.size() > 3) {
    in.fail("expected 2 or 3 columns (u v [weight]), got " + std::to_string(f.size()));
  }
  if (columns == 0) columns = f.size();
  if (f.size() != columns)
    in.fail("expected " + std::to_string(columns + split_column) + " columns like the first edge line, got " +
            std::to_string(f.size() + split_column));
  for (int k = 0; k < 2; ++k) e.ids[k] = text::parse_id(in, f[static_cast<std::size_t>(k)], "node id");
  e.w = columns == 3 ? text::parse_float(in, f[2], "edge weight") : 1.0f;
  return e;
}

// Each edge's split (EdgeLine::split), by its index, while reading; then the held-out edges
// listed in EdgeListOptions::held_out_* once the edges have their final node indices.
struct SplitTags {
  std::vector<std::uint8_t> of_edge;
  void note(const EdgeListOptions& opt, const EdgeLine& e) {
    if (opt.held_out_val) of_edge.push_back(static_cast<std::uint8_t>(e.split));
  }
  // A link in two splits (a line of each, either way round when symmetrized) is refused.
  void list(const EdgeListOptions& opt, const std::vector<build::Edge>& edges, const std::string& path) const {
    if (!opt.held_out_val) return;
    *opt.held_out_val = {};
    if (opt.held_out_test) *opt.held_out_test = {};
    std::map<std::pair<index_t, index_t>, int> split_of;
    for (const build::Edge& e : edges) {
      const int s = of_edge[static_cast<std::size_t>(e.order)];
      const std::pair<index_t, index_t> key =
          opt.symmetrize && e.v < e.u ? std::pair<index_t, index_t>{e.v, e.u} : std::pair<index_t, index_t>{e.u, e.v};
      const auto [it, fresh] = split_of.emplace(key, s);
      if (!fresh && it->second != s)
        throw InputError(path, "edge " + std::to_string(e.order + 1) + " (" + std::to_string(key.first) + ", " +
                                   std::to_string(key.second) + " as nodes) is in two splits (" + kSplitNames[it->second] +
                                   " and " + kSplitNames[s] + ")");
      NodePairList* into = s == 1 ? opt.held_out_val : s == 2 ? opt.held_out_test : nullptr;
      if (!into || !fresh) continue;
      into->u.push_back(e.u);
      into->v.push_back(e.v);
    }
  }
  static constexpr const char* kSplitNames[] = {"train", "val", "test"};
};

// The edges between the nodes a node file names (opt.node_ids): node k is the k-th id there.
GraphData read_edges_of_named_nodes(const std::string& path, const EdgeListOptions& opt,
                                    std::vector<std::int64_t>& original_ids) {
  const std::vector<std::int64_t>& names = *opt.node_ids;
  const auto n = static_cast<index_t>(names.size());
  std::unordered_map<std::int64_t, index_t> node_of;
  node_of.reserve(names.size());
  for (std::size_t k = 0; k < names.size(); ++k) node_of.emplace(names[k], static_cast<index_t>(k));
  TextReader in(path);
  std::vector<build::Edge> edges;
  SplitTags tags;
  std::vector<float> line_features;  // EdgeListOptions::edge_features per edge line
  std::vector<std::string_view> f;
  std::string_view line;
  std::size_t columns = 0;
  while (in.next(line)) {
    if (text::is_comment_or_blank(line)) continue;
    const EdgeLine e = parse_edge_line(in, line, f, columns, opt.held_out_val != nullptr, opt.edge_features, &line_features);
    tags.note(opt, e);
    index_t ends[2];
    for (int k = 0; k < 2; ++k) {
      const auto it = node_of.find(e.ids[k]);
      if (it == node_of.end())
        in.fail("node id " + std::to_string(e.ids[k]) + " is not in the node file " + opt.node_ids_from);
      ends[k] = it->second;
    }
    edges.push_back({ends[0], ends[1], static_cast<index_t>(edges.size()), e.w});
  }
  if (edges.empty()) throw InputError(path, "no edges");
  build::require_graph_memory(path, std::to_string(n) + " nodes, " + std::to_string(edges.size()) + " edges", n,
                              static_cast<std::int64_t>(edges.size()), opt.symmetrize, columns == 3, feature_width(opt));
  tags.list(opt, edges, path);
  GraphData g;
  std::vector<index_t> orders;
  build::csr_from_edges(g, n, edges, opt.symmetrize, columns == 3, &orders);
  take_edge_features(g, opt.edge_features, line_features, orders);
  finish(g, opt, path);
  original_ids = names;
  return g;
}

}  // namespace

GraphData read_edge_list(const std::string& path, const EdgeListOptions& opt) {
  std::vector<std::int64_t> original_ids;
  return read_edge_list(path, opt, original_ids);
}

GraphData read_edge_list(const std::string& path, const EdgeListOptions& opt, std::vector<std::int64_t>& original_ids) {
  check_common(opt);
  original_ids.clear();
  if (opt.node_ids != nullptr) return read_edges_of_named_nodes(path, opt, original_ids);
  const bool dense = opt.num_nodes > 0;
  if (dense)
    build::require_graph_memory("EdgeListOptions.num_nodes", std::to_string(opt.num_nodes) + " nodes", opt.num_nodes, 0,
                                opt.symmetrize, false, feature_width(opt));
  TextReader in(path);
  std::vector<build::Edge> edges;
  SplitTags tags;
  std::vector<float> line_features;  // EdgeListOptions::edge_features per edge line
  std::vector<std::string_view> f;
  std::string_view line;
  std::size_t columns = 0;  // of the first edge line: 2 (unweighted) or 3 (weighted)
  while (in.next(line)) {
    if (text::is_comment_or_blank(line)) continue;
    const EdgeLine e = parse_edge_line(in, line, f, columns, opt.held_out_val != nullptr, opt.edge_features, &line_features);
    tags.note(opt, e);
    index_t ids[2];
    for (int k = 0; k < 2; ++k) {
      const std::int64_t id = e.ids[k];
      if (id < opt.base) in.fail("node id " + std::to_string(id) + " is below the first id " + std::to_string(opt.base));
      ids[k] = id - opt.base;
      if (dense && ids[k] >= opt.num_nodes)
        in.fail("node id " + std::to_string(id) + " out of range: EdgeListOptions.num_nodes " + std::to_string(opt.num_nodes) +
                " allows ids " + std::to_string(opt.base) + ".." + std::to_string(opt.num_nodes - 1 + opt.base));
    }
    edges.push_back({ids[0], ids[1], static_cast<index_t>(edges.size()), e.w});
  }
  if (edges.empty()) throw InputError(path, "no edges");

  index_t n = opt.num_nodes;
  if (!dense) {
    // Relabel the ids that occur, in increasing id order.
    std::vector<index_t> ids;
    ids.reserve(edges.size() * 2);
    for (const auto& e : edges) {
      ids.push_back(e.u);
      ids.push_back(e.v);
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    n = static_cast<index_t>(ids.size());
    if (n > opt.max_nodes) throw InputError(path, std::to_string(n) + " distinct node ids exceed the node limit");
    const auto rank = [&](index_t id) {
      return static_cast<index_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
    };
    for (auto& e : edges) {
      e.u = rank(e.u);
      e.v = rank(e.v);
    }
    original_ids.assign(ids.begin(), ids.end());
  } else if (opt.base != 0) {
    original_ids.resize(static_cast<std::size_t>(n));
    for (index_t k = 0; k < n; ++k) original_ids[static_cast<std::size_t>(k)] = k;
  }
  for (std::int64_t& id : original_ids) id += opt.base;
  build::require_graph_memory(path, std::to_string(n) + " nodes, " + std::to_string(edges.size()) + " edges", n,
                              static_cast<std::int64_t>(edges.size()), opt.symmetrize, columns == 3,
                              feature_width(opt));
  tags.list(opt, edges, path);
  GraphData g;
  std::vector<index_t> orders;
  build::csr_from_edges(g, n, edges, opt.symmetrize, columns == 3, &orders);
  take_edge_features(g, opt.edge_features, line_features, orders);
  finish(g, opt, path);
  return g;
}

namespace mtx {

Header read_header(TextReader& in, const EdgeListOptions& opt) {
  const std::string& path = in.path();
  std::string_view line;
  std::vector<std::string_view> f;
  if (!in.next(line)) throw InputError(path, "empty file, expected a %%MatrixMarket header");
  text::split_fields(line, f);
  if (f.size() != 5 || lower(f[0]) != "%%matrixmarket")
    in.fail("expected the header '%%MatrixMarket matrix coordinate <field> <symmetry>'");
  const std::string object = lower(f[1]), format = lower(f[2]), field = lower(f[3]), symmetry = lower(f[4]);
  if (object != "matrix") in.fail("unsupported object " + text::printable(f[1]) + ", expected 'matrix'");
  if (format != "coordinate")
    in.fail("unsupported format " + text::printable(f[2]) + ", expected 'coordinate' (sparse)");
  if (field != "real" && field != "double" && field != "integer" && field != "pattern")
    in.fail("unsupported field " + text::printable(f[3]) + ", expected real, integer or pattern");
  if (symmetry != "general" && symmetry != "symmetric")
    in.fail("unsupported symmetry " + text::printable(f[4]) + ", expected general or symmetric");
  Header h;
  h.weighted = field != "pattern";
  h.integer = field == "integer";
  // A symmetric file stores one triangle; either triangle is accepted and mirrored.
  h.symmetric = symmetry == "symmetric";

  // Size line (after comments).
  bool have_size = false;
  while (in.next(line)) {
    if (text::is_comment_or_blank(line)) continue;
    have_size = true;
    break;
  }
  if (!have_size) throw InputError(path, "missing the size line 'rows columns entries'");
  text::split_fields(line, f);
  if (f.size() != 3) in.fail("expected the size line 'rows columns entries', got " + std::to_string(f.size()) + " fields");
  const std::int64_t rows = text::parse_id(in, f[0], "row count");
  const std::int64_t cols = text::parse_id(in, f[1], "column count");
  h.nnz = text::parse_id(in, f[2], "entry count");
  if (rows != cols)
    in.fail("matrix is " + std::to_string(rows) + " x " + std::to_string(cols) + ", expected a square adjacency matrix");
  if (rows < 1) in.fail("empty matrix (0 rows)");
  if (rows > opt.max_nodes)
    in.fail(std::to_string(rows) + " rows exceed the limit of " + std::to_string(opt.max_nodes) + " nodes");
  h.rows = rows;
  return h;
}

build::Edge parse_entry(const TextReader& in, std::string_view line, const Header& h,
                        std::vector<std::string_view>& f) {
  const std::size_t want = h.weighted ? 3 : 2;
  text::split_fields(line, f);
  if (f.size() != want)
    in.fail("expected " + std::to_string(want) + " columns (row column" + (h.weighted ? " value" : "") + "), got " +
            std::to_string(f.size()));
  index_t ij[2];
  for (int k = 0; k < 2; ++k) {
    const std::int64_t id = text::parse_id(in, f[static_cast<std::size_t>(k)], k == 0 ? "row index" : "column index");
    if (id < 1 || id > h.rows)
      in.fail(std::string(k == 0 ? "row" : "column") + " index " + std::to_string(id) + " out of range [1, " +
              std::to_string(h.rows) + "]");
    ij[k] = id - 1;
  }
  // An `integer` file's values are whole numbers: "2.5" there is a corrupt file, not a weight.
  const float w = !h.weighted  ? 1.0f
                  : h.integer ? static_cast<float>(text::parse_int(in, f[2], "value (field integer)"))
                              : text::parse_float(in, f[2], "value");
  return {ij[0], ij[1], 0, w};
}

}  // namespace mtx

GraphData read_matrix_market(const std::string& path, const EdgeListOptions& opt) {
  check_common(opt);
  TextReader in(path);
  const mtx::Header h = mtx::read_header(in, opt);
  const std::int64_t rows = h.rows, nnz = h.nnz;
  const bool weighted = h.weighted, symmetric = h.symmetric;
  std::string_view line;
  std::vector<std::string_view> f;
  // The size line decides what the build allocates: check it before reading the entries.
  build::require_graph_memory(path, std::to_string(rows) + " rows and " + std::to_string(nnz) + " entries declared",
                              rows, nnz, symmetric || opt.symmetrize, weighted, feature_width(opt));

  std::vector<build::Edge> edges;
  edges.reserve(static_cast<std::size_t>(std::min<std::int64_t>(nnz, std::int64_t{1} << 20)));
  std::int64_t seen = 0;
  while (in.next(line)) {
    if (text::is_comment_or_blank(line)) continue;
    if (seen == nnz) in.fail("more entries than the " + std::to_string(nnz) + " announced in the size line");
    build::Edge e = mtx::parse_entry(in, line, h, f);
    e.order = seen;
    edges.push_back(e);
    ++seen;
  }
  if (seen != nnz)
    throw InputError(in.where(), "expected " + std::to_string(nnz) + " entries, found " + std::to_string(seen));
  GraphData g;
  build::csr_from_edges(g, rows, edges, symmetric || opt.symmetrize, weighted);
  finish(g, opt, path);
  return g;
}

}  // namespace plexus
