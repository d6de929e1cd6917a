// Node orderings that balance the nnz of the 3D layout's Â blocks (include/plexus/balance.hpp,
// docs/balancing.md).
#include "plexus/balance.hpp"

#include <metis.h>
#include <omp.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <numeric>

#include "plexus/error.hpp"
#include "plexus/rng.hpp"
#include "plexus/shard.hpp"
#include "src/comm/row_sparse_sum.hpp"
#include "src/core/parallel_work.hpp"

namespace plexus {

namespace {
__extension__ typedef unsigned __int128 u128;
}  // namespace

Balance parse_balance(const std::string& text) {
  std::string expected;
  const std::size_t n = std::size(kAllBalances);
  for (std::size_t k = 0; k < n; ++k) {
    if (text == balance_name(kAllBalances[k])) return kAllBalances[k];
    expected += std::string(k == 0 ? "" : k + 1 == n ? " or " : ", ") + balance_name(kAllBalances[k]);
  }
  throw InputError("Balance", "expected " + expected + ", got '" + text + "'");
}

const char* balance_name(Balance b) {
  switch (b) {
    case Balance::kNone: return "none";
    case Balance::kPermute: return "permute";
    case Balance::kMetis: return "metis";
    case Balance::kLocality: return "locality";
  }
  return "?";
}

std::vector<index_t> random_permutation(index_t n, std::uint64_t seed, std::uint32_t stream) {
  std::vector<index_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), index_t{0});
  const auto k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (index_t i = n - 1; i > 0; --i) {
    // 64 random bits for step i; j uniform in [0, i] by a 128-bit multiply (bias < 2^-40).
    const Philox4x32 r = philox4x32_10(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32), stream,
                                       0x62616c61u /* "bala" */, k0, k1);
    const std::uint64_t x = (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1];
    const auto j = static_cast<index_t>((static_cast<u128>(x) * static_cast<std::uint64_t>(i + 1)) >> 64);
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

std::vector<index_t> inverse_permutation(const std::vector<index_t>& new_id) {
  std::vector<index_t> old(new_id.size());
  for (std::size_t v = 0; v < new_id.size(); ++v) old[static_cast<std::size_t>(new_id[v])] = static_cast<index_t>(v);
  return old;
}

std::vector<index_t> stratified_permutation(const std::vector<index_t>& weight, std::uint64_t seed,
                                           std::uint32_t stream) {
  const auto n = static_cast<index_t>(weight.size());
  const auto k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  const auto bits = [&](index_t i, std::uint32_t what) {
    const Philox4x32 r = philox4x32_10(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32), stream, what,
                                       k0, k1);
    return (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1];
  };
  // Nodes by weight, heaviest first, ties in random order.
  std::vector<std::pair<std::uint64_t, index_t>> by_weight(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static) if(worth_a_team(n))
  for (index_t v = 0; v < n; ++v) by_weight[v] = {bits(v, 0x74696521u /* "tie!" */), v};
  std::sort(by_weight.begin(), by_weight.end(), [&](const auto& a, const auto& b) {
    const index_t wa = weight[a.second], wb = weight[b.second];
    return wa != wb ? wa > wb : a < b;
  });
  // The i-th heaviest node goes to the rank of frac(offset + i·φ) among all n such points
  // (64-bit fixed point; φ·2^64 is odd, so the points are distinct). The Kronecker sequence
  // has discrepancy O(log n / n): any run of positions holds its share of every prefix of the
  // weight order, so contiguous blocks of any size get even weight sums.
  constexpr std::uint64_t kPhi64 = 0x9E3779B97F4A7C15ull;
  const std::uint64_t offset = bits(n, 0x6f666673u /* "offs" */);
  std::vector<std::pair<std::uint64_t, index_t>> points(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static) if(worth_a_team(n))
  for (index_t i = 0; i < n; ++i) points[i] = {offset + static_cast<std::uint64_t>(i) * kPhi64, i};
  std::sort(points.begin(), points.end());
  std::vector<index_t> new_id(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static) if(worth_a_team(n))
  for (index_t pos = 0; pos < n; ++pos) new_id[by_weight[points[pos].second].second] = pos;
  return new_id;
}

namespace {

std::vector<index_t> identity(index_t n) {
  std::vector<index_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), index_t{0});
  return p;
}

// The symmetrized graph without self-loops or duplicate edges, in METIS's 32-bit CSR.
void metis_graph(const GraphData& g, std::vector<idx_t>& xadj, std::vector<idx_t>& adjncy) {
  const index_t n = g.num_nodes;
  if (g.num_edges() * 2 > static_cast<index_t>(std::numeric_limits<idx_t>::max()))
    throw InputError("Balance", "metis: too many edges for METIS's 32-bit indices");
  std::vector<index_t> deg(static_cast<std::size_t>(n) + 1, 0);
  for (index_t u = 0; u < n; ++u)
    for (index_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k) {
      const index_t v = g.indices[k];
      if (v == u) continue;
      ++deg[u + 1];
      if (g.directed) ++deg[v + 1];
    }
  for (index_t u = 0; u < n; ++u) deg[u + 1] += deg[u];
  std::vector<idx_t> adj(static_cast<std::size_t>(deg[n]));
  std::vector<index_t> fill(deg.begin(), deg.end() - 1);
  for (index_t u = 0; u < n; ++u)
    for (index_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k) {
      const index_t v = g.indices[k];
      if (v == u) continue;
      adj[fill[u]++] = static_cast<idx_t>(v);
      if (g.directed) adj[fill[v]++] = static_cast<idx_t>(u);
    }
  // Sort and deduplicate each row (a stored undirected graph has both directions already;
  // a directed one may have both u->v and v->u).
  xadj.assign(static_cast<std::size_t>(n) + 1, 0);
  adjncy.clear();
  adjncy.reserve(adj.size());
  for (index_t u = 0; u < n; ++u) {
    auto first = adj.begin() + deg[u], last = adj.begin() + deg[u + 1];
    std::sort(first, last);
    last = std::unique(first, last);
    adjncy.insert(adjncy.end(), first, last);
    xadj[u + 1] = static_cast<idx_t>(adjncy.size());
  }
}

// Each node's METIS part of `parts` (0 .. parts - 1); empty where parts <= 1 or n <= parts
// (nothing to cut: the identity order).
std::vector<idx_t> metis_parts_of(const GraphData& g, int parts) {
  const index_t n = g.num_nodes;
  if (parts <= 1 || n <= parts) return {};
  if (n > static_cast<index_t>(std::numeric_limits<idx_t>::max()))
    throw InputError("Balance", "metis: too many nodes for METIS's 32-bit indices");
  std::vector<idx_t> xadj, adjncy;
  metis_graph(g, xadj, adjncy);
  // Two balance constraints per vertex: 1 (parts of equal node counts, so that numbering
  // part by part lines parts up with the equal-count blocks of block_range) and the row's
  // nnz in Â, degree + the self-loop (so that the row blocks hold equal nnz). With the nnz
  // weight alone, hub-heavy parts have few nodes and the equal-count blocks straddle parts.
  std::vector<idx_t> vwgt(2 * static_cast<std::size_t>(n));
  for (index_t u = 0; u < n; ++u) {
    vwgt[2 * u] = 1;
    vwgt[2 * u + 1] = xadj[u + 1] - xadj[u] + 1;
  }
  idx_t nvtxs = static_cast<idx_t>(n), ncon = 2, nparts = parts, objval = 0;
  std::vector<idx_t> part(static_cast<std::size_t>(n), 0);
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1;  // reproducible
  const int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr, nullptr,
                                     &nparts, nullptr, nullptr, options, &objval, part.data());
  if (rc != METIS_OK) throw InputError("Balance", "metis: METIS_PartGraphKway failed (code " + std::to_string(rc) + ")");
  return part;
}

// New ids numbering the nodes part by part, the parts in the order `sequence` lists them (a
// permutation of 0 .. parts - 1), keeping the nodes' relative order inside a part.
std::vector<index_t> number_by_parts(const std::vector<idx_t>& part, const std::vector<int>& sequence) {
  const std::size_t parts = sequence.size();
  std::vector<index_t> size(parts, 0), start(parts, 0);
  for (const idx_t p : part) ++size[static_cast<std::size_t>(p)];
  index_t at = 0;
  for (const int p : sequence) {
    start[static_cast<std::size_t>(p)] = at;
    at += size[static_cast<std::size_t>(p)];
  }
  std::vector<index_t> order(part.size());
  for (std::size_t u = 0; u < part.size(); ++u) order[u] = start[static_cast<std::size_t>(part[u])]++;
  return order;
}

}  // namespace

NodeOrder make_order(const GraphData& g, Balance kind, std::uint64_t seed, int parts, int col_parts) {
  NodeOrder o;
  o.kind = kind;
  switch (kind) {
    case Balance::kNone:
      o.row = identity(g.num_nodes);
      o.col = o.row;
      break;
    case Balance::kPermute: {
      // The nnz of a node's row and column in Â: its stored degree + the self-loop.
      std::vector<index_t> w(static_cast<std::size_t>(g.num_nodes));
      for (index_t u = 0; u < g.num_nodes; ++u) w[u] = g.indptr[u + 1] - g.indptr[u] + 1;
      o.row = stratified_permutation(w, seed, 0);
      o.col = stratified_permutation(w, seed, 1);
      break;
    }
    case Balance::kMetis:
    case Balance::kLocality: {
      const std::vector<idx_t> part = metis_parts_of(g, parts);
      if (part.empty()) {
        o.row = identity(g.num_nodes);
        o.col = o.row;
        break;
      }
      std::vector<int> sequence(static_cast<std::size_t>(parts));
      std::iota(sequence.begin(), sequence.end(), 0);
      o.row = number_by_parts(part, sequence);
      const int go = kind == Balance::kLocality ? col_parts : 1;
      if (go <= 1 || go >= parts || parts % go != 0) {  // one part a block: rows and columns alike
        o.col = o.row;
        break;
      }
      // Column-major: column block j takes parts j, go + j, 2·go + j, ... (one in each row block).
      const int gd = parts / go;
      for (int j = 0, at = 0; j < go; ++j)
        for (int i = 0; i < gd; ++i) sequence[static_cast<std::size_t>(at++)] = i * go + j;
      o.col = number_by_parts(part, sequence);
      break;
    }
  }
  return o;
}

bool cuts_metis_parts(Balance kind) { return kind == Balance::kMetis || kind == Balance::kLocality; }

OrderParts order_parts(Balance kind, GridShape grid) {
  switch (kind) {
    case Balance::kMetis: return {std::lcm(std::lcm(grid.x, grid.y), grid.z), 1};
    case Balance::kLocality: return {grid.z * grid.x, grid.x};  // layer 0: rows over Z, columns over X
    default: return {};
  }
}

double LayerBlockNnz::held_fraction() const {
  double held = 0;
  for (const index_t h : held_rows) held += static_cast<double>(h);
  // Every node is a row of one block in each column block: G_o · n block rows in all.
  return nodes == 0 ? 0.0 : held / (static_cast<double>(col_parts) * static_cast<double>(nodes));
}

namespace {

// The rows and columns of each block of Â = A + I holding an entry (rb, cb: each node's block as
// a row and as a column), and the rows its two sums move in each form (LayerBlockNnz).
void count_held(const GraphData& g, const std::vector<std::int32_t>& rb, const std::vector<std::int32_t>& cb,
                const std::vector<std::int32_t>& cpart, int gd, int go, LayerBlockNnz& r) {
  const index_t n = g.num_nodes;
  const std::size_t nb = static_cast<std::size_t>(gd) * go;
  r.nodes = n;
  r.held_rows.assign(nb, 0);
  r.held_cols.assign(nb, 0);
  // A column's entries are its in-neighbours' rows: the stored lists on an undirected graph
  // (both directions stored), a transpose on a directed one (by hand: csr_transpose's HostCsr
  // holds 32-bit block-local columns, a whole graph's ids are 64-bit).
  std::vector<index_t> t_ptr, t_idx;
  const std::vector<index_t>* in_ptr = &g.indptr;
  const std::vector<index_t>* in_idx = &g.indices;
  if (g.directed) {
    t_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
    for (const index_t v : g.indices) ++t_ptr[static_cast<std::size_t>(v) + 1];
    for (index_t v = 0; v < n; ++v) t_ptr[v + 1] += t_ptr[v];
    t_idx.resize(g.indices.size());
    std::vector<index_t> at(t_ptr.begin(), t_ptr.end() - 1);
    for (index_t u = 0; u < n; ++u)
      for (index_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k) t_idx[static_cast<std::size_t>(at[g.indices[k]]++)] = u;
    in_ptr = &t_ptr;
    in_idx = &t_idx;
  }
  // Node u's row (resp. column) holds an entry in each distinct column (row) block of itself and
  // its out- (in-) neighbours.
  // Block (i, j) of each entry, as the row block of node u and the column block of node v (the
  // held columns' pass swaps the roles): counted once per node and block.
  std::vector<index_t> gathered(static_cast<std::size_t>(go), 0);  // per column block
  const auto pass = [&](const std::vector<index_t>& ptr, const std::vector<index_t>& idx, bool columns,
                        std::vector<index_t>& out) {
    const std::vector<std::int32_t>& mine = columns ? cb : rb;
    const std::vector<std::int32_t>& other = columns ? rb : cb;
    std::vector<index_t> seen(static_cast<std::size_t>(columns ? gd : go), -1);
    for (index_t u = 0; u < n; ++u) {
      const auto mark = [&](index_t v) {
        const std::int32_t b = other[static_cast<std::size_t>(v)];
        if (seen[static_cast<std::size_t>(b)] == u) return;
        seen[static_cast<std::size_t>(b)] = u;
        const std::int32_t a = mine[static_cast<std::size_t>(u)];
        ++out[columns ? static_cast<std::size_t>(b) * go + a : static_cast<std::size_t>(a) * go + b];
        // Column u lies in part cpart[u] of its block's gather: block b's rank receives it unless
        // that part is its own.
        if (columns && b != cpart[static_cast<std::size_t>(u)]) ++gathered[static_cast<std::size_t>(a)];
      };
      mark(u);  // the self-loop of Â
      for (index_t k = ptr[u]; k < ptr[u + 1]; ++k) mark(idx[static_cast<std::size_t>(k)]);
    }
  };
  pass(g.indptr, g.indices, false, r.held_rows);
  pass(*in_ptr, *in_idx, true, r.held_cols);
  // Each group's rows in either form (RowSparseSum's counts; every row of a group is held by some
  // block: Â's self-loops); rows (auto's across nodes) the fewer.
  const auto sums = [](index_t rows, int p, index_t held, double& dense, double& automatic) {
    if (p == 1) return;
    const auto d = static_cast<double>(RowSparseSum::dense_rows(rows, p));
    dense += d;
    automatic += std::min(d, static_cast<double>(RowSparseSum::rows_form_rows(static_cast<std::uint64_t>(held),
                                                                               static_cast<std::uint64_t>(rows), p)));
  };
  for (int i = 0; i < gd; ++i) {
    index_t held = 0;
    for (int j = 0; j < go; ++j) held += r.held_rows[static_cast<std::size_t>(i) * go + j];
    sums(block_range(n, gd, i).size(), go, held, r.forward_dense, r.forward_auto);
  }
  for (int j = 0; j < go; ++j) {
    index_t held = 0;
    for (int i = 0; i < gd; ++i) held += r.held_cols[static_cast<std::size_t>(i) * go + j];
    sums(block_range(n, go, j).size(), gd, held, r.backward_dense, r.backward_auto);
    if (gd > 1) {  // the gather over d of column block j (RowSparseGather's counts)
      const double dense = static_cast<double>(gd - 1) * static_cast<double>(block_range(n, go, j).size());
      r.gather_dense += dense;
      r.gather_auto += std::min(dense, static_cast<double>(gathered[static_cast<std::size_t>(j)]));
    }
  }
}

}  // namespace

std::vector<LayerBlockNnz> block_nnz_imbalance(const GraphData& g, const NodeOrder& order, GridShape grid,
                                               int layers, const std::vector<bool>& transform_first) {
  const index_t n = g.num_nodes;
  if (static_cast<index_t>(order.row.size()) != n || static_cast<index_t>(order.col.size()) != n)
    throw std::invalid_argument("block_nnz_imbalance: order does not match the graph");
  std::vector<LayerBlockNnz> out;
  const std::vector<LayerRoles> all_roles = layer_roles(layers, transform_first);
  for (int l = 0; l < layers; ++l) {
    const LayerRoles roles = all_roles[static_cast<std::size_t>(l)];
    const int gd = grid.dim(roles.d), go = grid.dim(roles.o);
    // The layout repeats when the axis sizes and the parity of the order repeat.
    bool reused = false;
    for (const LayerBlockNnz& prev : out)
      if (prev.row_parts == gd && prev.col_parts == go && (order.row == order.col || prev.layer % 2 == l % 2)) {
        out.push_back(prev);
        out.back().layer = l;
        reused = true;
        break;
      }
    if (reused) continue;
    const std::vector<index_t>& rnew = order.rows_for_layer(l);
    const std::vector<index_t>& cnew = order.cols_for_layer(l);
    // Block of each node as a row and as a column, then one pass over the edges.
    // (and the part of its column block, split over G_d, its column lies in: the input's gather).
    std::vector<std::int32_t> rb(static_cast<std::size_t>(n)), cb(static_cast<std::size_t>(n)),
        cpart(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static) if(worth_a_team(n))
    for (index_t v = 0; v < n; ++v) {
      rb[v] = block_of(n, gd, rnew[v]);
      cb[v] = block_of(n, go, cnew[v]);
      const Range cols = block_range(n, go, cb[v]);
      cpart[v] = block_of(cols.size(), gd, cnew[v] - cols.begin);
    }
    const std::size_t nb = static_cast<std::size_t>(gd) * go;
    std::vector<index_t> counts(nb, 0);
#pragma omp parallel if(worth_a_team(n + static_cast<index_t>(g.indices.size())))
    {
      std::vector<index_t> local(nb, 0);
#pragma omp for schedule(dynamic, 4096) nowait
      for (index_t u = 0; u < n; ++u) {
        const std::size_t row = static_cast<std::size_t>(rb[u]) * go;
        ++local[row + cb[u]];  // the self-loop of Â
        for (index_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k) {
          const index_t v = g.indices[k];
          if (v != u) ++local[row + cb[v]];
        }
      }
#pragma omp critical
      for (std::size_t b = 0; b < nb; ++b) counts[b] += local[b];
    }
    LayerBlockNnz r;
    r.layer = l;
    r.row_parts = gd;
    r.col_parts = go;
    count_held(g, rb, cb, cpart, gd, go, r);
    r.total = std::accumulate(counts.begin(), counts.end(), index_t{0});
    r.max = *std::max_element(counts.begin(), counts.end());
    r.min = *std::min_element(counts.begin(), counts.end());
    r.mean = static_cast<double>(r.total) / static_cast<double>(nb);
    r.counts = std::move(counts);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace plexus
