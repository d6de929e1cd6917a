// Planetoid raw-file reader (read_planetoid), following Kipf & Welling's utils.load_data:
//
//   x, y, tx, ty, allx, ally, graph = pickle.load(...)            # ind.NAME.*
//   test_idx_reorder = parse_index_file("ind.NAME.test.index")
//   test_idx_range = np.sort(test_idx_reorder)
//   if citeseer: tx, ty extended to range(min, max+1) with zero rows  # isolated test nodes
//   features = sp.vstack((allx, tx)); features[test_idx_reorder] = features[test_idx_range]
//   labels = np.vstack((ally, ty));   labels[test_idx_reorder]   = labels[test_idx_range]
//   adj = adjacency(graph); idx_train = range(len(y)); idx_val = range(len(y), len(y)+500)
//   idx_test = test_idx_range
//
// Differences (all documented in io.hpp / the report): the zero-row extension is applied to any
// dataset whose test index has gaps (not only by name); labels are argmax of the one-hot rows
// with all-zero rows -> -1; the adjacency is symmetrized, and duplicate entries and self-loops
// are dropped (GCN adds its own self-loops during normalization).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "io/convert/pickle.hpp"
#include "io/files/safe_files.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/sizes.hpp"

namespace plexus {
namespace {

// Upper bound on num_nodes * num_features for the dense feature matrix (8 GiB of float32):
// a corrupt shape must not make us allocate without bound.
constexpr std::int64_t kMaxDenseFeatures = std::int64_t{1} << 31;
// Kipf's validation split size.
constexpr std::int64_t kNumVal = 500;

std::vector<std::int64_t> read_index_file(const std::string& path) {
  io::require_regular_input(path, "a Planetoid index file");
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open file");
  io::note_input_file(path);
  std::vector<std::int64_t> out;
  std::string line;
  std::int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::string_view s(line);
    while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    if (s.empty()) continue;
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0) {
      throw InputError(path, "line " + std::to_string(lineno) + ": expected a non-negative node index");
    }
    out.push_back(v);
  }
  if (in.bad()) throw InputError(path, "read error");
  if (out.empty()) throw InputError(path, "no test indices");
  return out;
}

// Labels of a one-hot matrix: argmax per row, -1 for all-zero rows.
std::vector<std::int32_t> one_hot_labels(const pickle::Array<std::int64_t>& y) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(y.rows()), -1);
  const std::int64_t c = y.cols();
  for (std::int64_t r = 0; r < y.rows(); ++r) {
    std::int64_t best = -1;
    for (std::int64_t k = 0; k < c; ++k) {
      const std::int64_t v = y.data[static_cast<std::size_t>(r * c + k)];
      if (v != 0 && (best < 0 || v > y.data[static_cast<std::size_t>(r * c + best)])) best = k;
    }
    out[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(best);
  }
  return out;
}

pickle::Array<std::int64_t> read_labels(const std::string& path) {
  const pickle::Document doc = pickle::parse_file(path);
  pickle::Array<std::int64_t> a;
  // One-hot rows are integer in the Planetoid files; accept float ones too.
  try {
    a = pickle::to_int_array(doc.root(), path);
  } catch (const InputError&) {
    pickle::Array<double> f = pickle::to_float_array(doc.root(), path);
    a.shape = f.shape;
    a.data.reserve(f.data.size());
    for (double v : f.data) {
      if (!std::isfinite(v)) throw InputError(path, "label matrix has a non-finite value");
      a.data.push_back(static_cast<std::int64_t>(v != 0.0));
    }
  }
  if (a.shape.size() != 2) throw InputError(path, "label matrix is not 2-D");
  return a;
}

// A source row for the final feature/label matrices: from allx/ally (block 0) or tx/ty
// (block 1), or a zero row (block -1).
struct RowRef {
  int block = -1;
  std::int64_t row = 0;
};

}  // namespace

GraphData read_planetoid(const std::string& dir, const std::string& name, bool normalize_features) {
  const std::string prefix = dir + "/ind." + name + ".";
  const std::string px = prefix + "x", py = prefix + "y", ptx = prefix + "tx", pty = prefix + "ty",
                    pallx = prefix + "allx", pally = prefix + "ally", pgraph = prefix + "graph",
                    pindex = prefix + "test.index";

  const pickle::Csr x = pickle::to_csr(pickle::parse_file(px).root(), px);
  const pickle::Array<std::int64_t> y = read_labels(py);
  const pickle::Csr tx = pickle::to_csr(pickle::parse_file(ptx).root(), ptx);
  const pickle::Array<std::int64_t> ty = read_labels(pty);
  const pickle::Csr allx = pickle::to_csr(pickle::parse_file(pallx).root(), pallx);
  const pickle::Array<std::int64_t> ally = read_labels(pally);
  const auto graph = [&] {
    const pickle::Document doc = pickle::parse_file(pgraph);
    return pickle::to_int_list_dict(doc.root(), pgraph);
  }();
  const std::vector<std::int64_t> test_reorder = read_index_file(pindex);

  // ---- shapes ----
  const std::int64_t F = allx.cols;
  const std::int64_t C = ally.cols();
  if (x.cols != F || tx.cols != F) throw InputError(ptx, "feature matrices x/tx/allx differ in width");
  if (y.cols() != C || ty.cols() != C) throw InputError(pty, "label matrices y/ty/ally differ in width");
  if (C < 1 || C > (std::int64_t{1} << 30)) throw InputError(pally, "bad number of classes " + std::to_string(C));
  if (F < 1) throw InputError(pallx, "feature matrix has no columns");
  if (x.rows != y.rows()) throw InputError(py, "x and y differ in rows");
  if (tx.rows != ty.rows()) throw InputError(pty, "tx and ty differ in rows");
  if (allx.rows != ally.rows()) throw InputError(pally, "allx and ally differ in rows");
  if (static_cast<std::int64_t>(test_reorder.size()) != tx.rows) {
    throw InputError(pindex, std::to_string(test_reorder.size()) + " test indices for " + std::to_string(tx.rows) +
                                 " rows of tx");
  }

  // ---- node count and the citeseer zero-row extension ----
  std::vector<std::int64_t> test_sorted = test_reorder;
  std::sort(test_sorted.begin(), test_sorted.end());
  if (std::adjacent_find(test_sorted.begin(), test_sorted.end()) != test_sorted.end()) {
    throw InputError(pindex, "duplicate test index");
  }
  const std::int64_t tmin = test_sorted.front(), tmax = test_sorted.back();
  const std::int64_t span = tmax - tmin + 1;
  const bool extended = span != tx.rows;  // gaps: isolated test nodes missing from tx/ty (citeseer)
  // The extension must not be larger than the graph itself (bounds memory on corrupt input).
  if (extended && span > static_cast<std::int64_t>(graph.size()) + tx.rows) {
    throw InputError(pindex, "test indices span " + std::to_string(span) + " nodes, more than the graph has");
  }
  const std::int64_t ext_rows = extended ? span : tx.rows;
  const std::int64_t N = allx.rows + ext_rows;
  if (tmax >= N) throw InputError(pindex, "test index " + std::to_string(tmax) + " is out of range (" + std::to_string(N) + " nodes)");
  if (N > kMaxDenseFeatures / F) throw InputError(pallx, "feature matrix is too large to hold densely");
  // The dense features follow from the declared shapes, not from the data: check them first.
  require_memory(graph_host_bytes(N, 0, F, false), pallx, "the dense features",
                 std::to_string(N) + " nodes x " + std::to_string(F) + " feature columns");

  // Stacked rows (vstack(allx, tx_ext)): row r -> source.
  std::vector<RowRef> stacked(static_cast<std::size_t>(N));
  for (std::int64_t r = 0; r < allx.rows; ++r) stacked[static_cast<std::size_t>(r)] = {0, r};
  if (extended) {
    // tx_extended[test_idx_range - min] = tx  (row j of tx lands at sorted[j] - min)
    for (std::int64_t j = 0; j < tx.rows; ++j) {
      stacked[static_cast<std::size_t>(allx.rows + test_sorted[static_cast<std::size_t>(j)] - tmin)] = {1, j};
    }
  } else {
    for (std::int64_t j = 0; j < tx.rows; ++j) stacked[static_cast<std::size_t>(allx.rows + j)] = {1, j};
  }
  // features[test_idx_reorder, :] = features[test_idx_range, :]  (right side read first)
  std::vector<RowRef> final_rows = stacked;
  for (std::size_t j = 0; j < test_reorder.size(); ++j) {
    final_rows[static_cast<std::size_t>(test_reorder[j])] = stacked[static_cast<std::size_t>(test_sorted[j])];
  }

  GraphData g;
  g.num_nodes = N;
  g.num_features = F;
  g.num_classes = static_cast<std::int32_t>(C);
  g.directed = false;

  // ---- features and labels ----
  const std::vector<std::int32_t> lab_all = one_hot_labels(ally), lab_test = one_hot_labels(ty);
  g.features.assign(static_cast<std::size_t>(N * F), 0.0f);
  g.labels.assign(static_cast<std::size_t>(N), -1);
  for (std::int64_t r = 0; r < N; ++r) {
    const RowRef src = final_rows[static_cast<std::size_t>(r)];
    if (src.block < 0) continue;
    const pickle::Csr& m = src.block == 0 ? allx : tx;
    const std::string& mpath = src.block == 0 ? pallx : ptx;
    float* out = g.features.data() + r * F;
    double sum = 0.0;
    for (std::int64_t k = m.indptr[static_cast<std::size_t>(src.row)]; k < m.indptr[static_cast<std::size_t>(src.row) + 1];
         ++k) {
      const double v = m.data[static_cast<std::size_t>(k)];
      if (!std::isfinite(v)) throw InputError(mpath, "non-finite feature value in row " + std::to_string(src.row));
      out[m.indices[static_cast<std::size_t>(k)]] += static_cast<float>(v);  // duplicates sum, as in scipy
      sum += v;
    }
    if (normalize_features && sum != 0.0) {
      // Kipf's preprocess_features: r_inv = 1/rowsum (inf -> 0), features = diag(r_inv) @ features
      const double inv = 1.0 / sum;
      for (std::int64_t c = 0; c < F; ++c) out[c] = static_cast<float>(static_cast<double>(out[c]) * inv);
    }
    g.labels[static_cast<std::size_t>(r)] = (src.block == 0 ? lab_all : lab_test)[static_cast<std::size_t>(src.row)];
  }

  // ---- masks ----
  const std::int64_t ntrain = y.rows();
  if (ntrain + kNumVal > N) throw InputError(py, "too few nodes for the training and validation split");
  g.train_mask.assign(static_cast<std::size_t>(N), 0);
  g.val_mask.assign(static_cast<std::size_t>(N), 0);
  g.test_mask.assign(static_cast<std::size_t>(N), 0);
  for (std::int64_t r = 0; r < ntrain; ++r) g.train_mask[static_cast<std::size_t>(r)] = 1;
  for (std::int64_t r = ntrain; r < ntrain + kNumVal; ++r) g.val_mask[static_cast<std::size_t>(r)] = 1;
  for (std::int64_t t : test_sorted) g.test_mask[static_cast<std::size_t>(t)] = 1;

  // ---- adjacency: symmetric, no duplicates, no self-loops, sorted columns ----
  std::vector<index_t> deg(static_cast<std::size_t>(N) + 1, 0);
  for (const auto& [u, nbrs] : graph) {
    if (u < 0 || u >= N) throw InputError(pgraph, "node " + std::to_string(u) + " is out of range (" + std::to_string(N) + " nodes)");
    for (std::int64_t v : nbrs) {
      if (v < 0 || v >= N) throw InputError(pgraph, "neighbour " + std::to_string(v) + " of node " + std::to_string(u) + " is out of range");
      if (u == v) continue;
      ++deg[static_cast<std::size_t>(u) + 1];
      ++deg[static_cast<std::size_t>(v) + 1];
    }
  }
  for (std::size_t r = 1; r < deg.size(); ++r) deg[r] += deg[r - 1];
  std::vector<index_t> cols(static_cast<std::size_t>(deg.back()));
  {
    std::vector<index_t> cursor(deg.begin(), deg.end() - 1);
    for (const auto& [u, nbrs] : graph) {
      for (std::int64_t v : nbrs) {
        if (u == v) continue;
        cols[static_cast<std::size_t>(cursor[static_cast<std::size_t>(u)]++)] = v;
        cols[static_cast<std::size_t>(cursor[static_cast<std::size_t>(v)]++)] = u;
      }
    }
  }
  g.indptr.assign(static_cast<std::size_t>(N) + 1, 0);
  g.indices.reserve(cols.size());
  for (std::int64_t r = 0; r < N; ++r) {
    auto b = cols.begin() + deg[static_cast<std::size_t>(r)], e = cols.begin() + deg[static_cast<std::size_t>(r) + 1];
    std::sort(b, e);
    e = std::unique(b, e);
    g.indices.insert(g.indices.end(), b, e);
    g.indptr[static_cast<std::size_t>(r) + 1] = static_cast<index_t>(g.indices.size());
  }
  g.indices.shrink_to_fit();

  if (g.num_edges() == 0) throw InputError(pgraph, "graph has no edges");
  validate(g, dir);
  return g;
}

}  // namespace plexus
