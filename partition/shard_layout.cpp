// Cutting a graph into the per-rank blocks of the 3D layout (src/core/shard_layout.hpp; GnnShards: include/plexus/shard.hpp).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "plexus/prepare.hpp"
#include "plexus/shard.hpp"
#include "plexus/sparse.hpp"
#include "src/core/shard_layout.hpp"

namespace plexus {

Range sub_range(Range r, int parts, int idx) {
  const Range b = block_range(r.size(), parts, idx);
  return {r.begin + b.begin, r.begin + b.end};
}

Range unit_range(index_t n, index_t unit, int parts, int idx) {
  const Range units = block_range(n / unit, parts, idx);
  return {units.begin * unit, units.end * unit};
}

std::vector<std::size_t> block_counts(index_t n, int parts, index_t scale) {
  // block_range's sizes, base + 1 then base, without a division per block: a dry run's
  // collective over an axis of 65,536 ranks asks for 65,536 counts.
  std::vector<std::size_t> counts(parts);
  if (parts <= 0) return counts;
  const index_t base = n / parts, extra = n % parts;
  std::fill(counts.begin(), counts.begin() + extra, static_cast<std::size_t>((base + 1) * scale));
  std::fill(counts.begin() + extra, counts.end(), static_cast<std::size_t>(base * scale));
  return counts;
}

std::vector<bool> transform_first_layers(LayerOrder order, const std::vector<index_t>& dims) {
  const int layers = static_cast<int>(dims.size()) - 1;
  std::vector<bool> tf(static_cast<std::size_t>(std::max(layers, 0)), order == LayerOrder::TransformFirst);
  if (order == LayerOrder::Auto)
    for (int l = 0; l < layers; ++l) tf[static_cast<std::size_t>(l)] = dims[l + 1] < dims[l];
  return tf;
}

LayerGeometry layer_geometry_at(GridShape shape, const std::array<int, 3>& coords, int layer, index_t num_nodes,
                                const std::vector<index_t>& dims, const std::vector<bool>& transform_first) {
  const int layers = static_cast<int>(dims.size()) - 1;
  if (layer < 0 || layer >= layers) throw std::invalid_argument("layer_geometry: no layer " + std::to_string(layer));
  LayerGeometry g;
  g.layer = layer;
  g.roles = layer_roles_at(layer, transform_first);
  g.transform_first = layer < static_cast<int>(transform_first.size()) && transform_first[layer];
  g.in_dim = dims[layer];
  g.out_dim = dims[layer + 1];
  const auto at = [&](Axis a) { return coords[static_cast<int>(a)]; };
  const Axis o = g.roles.o, d = g.roles.d;
  g.in_rows = block_range(num_nodes, shape.dim(o), at(o));
  g.in_cols = block_range(g.in_dim, shape.dim(g.in_feat()), at(g.in_feat()));
  g.out_rows = block_range(num_nodes, shape.dim(d), at(d));
  g.out_cols = block_range(g.out_dim, shape.dim(g.out_feat()), at(g.out_feat()));
  // W's rows are split over the Linear3D's row axis: the output rows' axis d aggregating first
  // (Linear3D row = d, in = i, out = o), the input rows' axis o transforming first (row = o,
  // in = d, out = i).
  const Axis w_split = g.transform_first ? o : d;
  g.w_rows = sub_range(g.in_cols, shape.dim(w_split), at(w_split));
  return g;
}

LayerGeometry layer_geometry(const ProcessGrid& grid, int layer, index_t num_nodes, const std::vector<index_t>& dims,
                             const std::vector<bool>& transform_first) {
  return layer_geometry_at(grid.shape(), {grid.coord(Axis::X), grid.coord(Axis::Y), grid.coord(Axis::Z)}, layer,
                           num_nodes, dims, transform_first);
}

std::vector<index_t> gnn_dims(index_t num_features, int layers, index_t hidden, index_t num_classes) {
  std::vector<index_t> dims{num_features};
  for (int l = 0; l + 1 < layers; ++l) dims.push_back(hidden);
  dims.push_back(num_classes);
  return dims;
}

HostCsr extract_block(const HostCsr& a, Range rows, Range cols) {
  // `a` has 32-bit columns, so every column range of it fits in col_t.
  if (cols.end > a.cols || rows.end > a.rows) throw std::invalid_argument("extract_block: range outside the matrix");
  HostCsr b;
  b.rows = rows.size();
  b.cols = cols.size();
  b.indptr.assign(static_cast<std::size_t>(b.rows) + 1, 0);
  const bool weighted = !a.values.empty();
  for (index_t r = rows.begin; r < rows.end; ++r) {
    const col_t* first = a.indices.data() + a.indptr[r];
    const col_t* last = a.indices.data() + a.indptr[r + 1];
    const col_t* lo = std::lower_bound(first, last, static_cast<col_t>(cols.begin));
    const col_t* hi = std::lower_bound(lo, last, static_cast<col_t>(cols.end));
    for (const col_t* p = lo; p != hi; ++p) {
      b.indices.push_back(static_cast<col_t>(*p - cols.begin));
      if (weighted) b.values.push_back(a.values[p - a.indices.data()]);
    }
    b.indptr[r - rows.begin + 1] = static_cast<index_t>(b.indices.size());
  }
  return b;
}

std::size_t GnnShards::host_bytes() const {
  const auto vec = [](const auto& v) { return v.size() * sizeof(v[0]); };
  const auto csr = [&](const HostCsr& a) { return vec(a.indptr) + vec(a.indices) + vec(a.values); };
  std::size_t b = vec(features) + vec(labels) + vec(train) + vec(val) + vec(test) + vec(label_ids) + vec(loss_weights);
  for (const auto& ids : adj_row_ids) b += vec(ids);
  for (const auto& ids : adj_col_ids) b += vec(ids);
  for (const HostCsr& a : adj) b += csr(a);
  for (const HostCsr& a : adj_t) b += csr(a);
  for (const NodePairList* l : {&links.train, &links.val_pos, &links.val_neg, &links.test_pos, &links.test_neg})
    b += vec(l->u) + vec(l->v);
  return b;
}

ShardRanges shard_ranges_at(GridShape shape, const std::array<int, 3>& coords, index_t num_nodes,
                            const std::vector<index_t>& dims, bool two_orders, bool shard_adj,
                            const std::vector<bool>& transform_first) {
  ShardRanges sr;
  shard_ranges_at(shape, coords, num_nodes, dims, two_orders, shard_adj, transform_first, sr);
  return sr;
}

void shard_ranges_at(GridShape shape, const std::array<int, 3>& coords, index_t num_nodes,
                     const std::vector<index_t>& dims, bool two_orders, bool shard_adj,
                     const std::vector<bool>& transform_first, ShardRanges& sr) {
  sr.adj.clear();
  sr.adj_of_layer.clear();
  sr.layouts.clear();
  const int layers = static_cast<int>(dims.size()) - 1;
  sr.transform_first.assign(static_cast<std::size_t>(std::max(layers, 0)), false);
  for (int l = 0; l < layers && l < static_cast<int>(transform_first.size()); ++l)
    sr.transform_first[static_cast<std::size_t>(l)] = transform_first[l];
  const std::vector<LayerRoles> roles = layer_roles(layers, sr.transform_first);
  if (layers < 1) layer_geometry_at(shape, coords, 0, num_nodes, dims, sr.transform_first);  // throws: no layer 0
  sr.geometry.resize(static_cast<std::size_t>(std::max(layers, 0)));
  for (int l = 0; l < layers; ++l)
    sr.geometry[static_cast<std::size_t>(l)] = layer_geometry_at(shape, coords, l, num_nodes, dims, sr.transform_first);
  const auto geometry = [&](int l) -> const LayerGeometry& { return sr.geometry.at(static_cast<std::size_t>(l)); };
  // One Â block per layout (the layer's roles, and with two orders its parity) that some layer
  // uses, shared where the ranges, the matrix and the sharding coincide. The layouts depend on
  // the layers' orders only, not on the coordinates: every rank lists the same ones.
  for (int l = 0; l < layers; ++l) {
    const int which = which_adj(l, two_orders);
    const auto same = std::find_if(sr.layouts.begin(), sr.layouts.end(), [&](int m) {
      return roles[static_cast<std::size_t>(m)] == roles[static_cast<std::size_t>(l)] && which_adj(m, two_orders) == which;
    });
    if (same != sr.layouts.end()) {
      sr.adj_of_layer.push_back(sr.adj_of_layer[static_cast<std::size_t>(*same)]);
      continue;
    }
    sr.layouts.push_back(l);
    const LayerGeometry geo = geometry(l);
    AdjBlockRange b;
    b.rows = geo.out_rows;
    b.cols = geo.in_rows;
    b.which = which;
    b.part_rows = b.rows;
    b.part_cols = b.cols;
    const int parts = shape.dim(geo.roles.i);
    if (shard_adj && parts > 1) {
      const int at = coords[static_cast<int>(geo.roles.i)];
      b.sharded = true;
      b.axis = geo.roles.i;
      b.part_rows = sub_range(b.rows, parts, at);
      b.part_cols = sub_range(b.cols, parts, at);
    }
    const auto k = std::find(sr.adj.begin(), sr.adj.end(), b) - sr.adj.begin();
    if (k == static_cast<std::ptrdiff_t>(sr.adj.size())) sr.adj.push_back(b);
    sr.adj_of_layer.push_back(static_cast<int>(k));
  }
  // Layer-0 input: H_0 block [in_rows × in_cols], stored with its rows split over the axis it
  // is replicated on (d aggregating first, i transforming first) and all-gathered there in the
  // forward pass.
  const LayerGeometry g0 = geometry(0);
  const Axis repl = g0.in_repl();
  sr.feat_rows = sub_range(g0.in_rows, shape.dim(repl), coords[static_cast<int>(repl)]);
  sr.feat_cols = g0.in_cols;
  // Labels and masks: the rows of the last layer's output, in that layer's output order.
  sr.label_rows = geometry(layers - 1).out_rows;
  sr.label_order = output_order(layers, two_orders);
}

ShardRanges shard_ranges(const ProcessGrid& grid, index_t num_nodes, const std::vector<index_t>& dims,
                         bool two_orders, bool shard_adj, const std::vector<bool>& transform_first) {
  return shard_ranges_at(grid.shape(), {grid.coord(Axis::X), grid.coord(Axis::Y), grid.coord(Axis::Z)}, num_nodes,
                         dims, two_orders, shard_adj, transform_first);
}

std::pair<HostCsr, HostCsr> cut_adj_block(const HostCsr& a, const AdjBlockRange& b) {
  HostCsr part = extract_block(a, b.part_rows, b.cols);
  if (!b.sharded) {
    HostCsr t = csr_transpose(part);
    return {std::move(part), std::move(t)};
  }
  // Rows part_cols of the block's transpose = the transpose of the block's columns part_cols.
  return {std::move(part), csr_transpose(extract_block(a, b.rows, b.part_cols))};
}

std::vector<index_t> block_self_columns(Range rows, Range cols, const index_t* row_nodes, const index_t* col_nodes) {
  std::vector<index_t> self(static_cast<std::size_t>(rows.size()), -1);
  if (row_nodes == nullptr || col_nodes == nullptr) {
    for (index_t r = std::max(rows.begin, cols.begin); r < std::min(rows.end, cols.end); ++r)
      self[static_cast<std::size_t>(r - rows.begin)] = r - cols.begin;
    return self;
  }
  // Columns sorted by node: each row's node is found by binary search (node ids are unique).
  std::vector<std::pair<index_t, index_t>> by_node(static_cast<std::size_t>(cols.size()));
  for (index_t c = 0; c < cols.size(); ++c) by_node[static_cast<std::size_t>(c)] = {col_nodes[c], c};
  std::sort(by_node.begin(), by_node.end());
  for (index_t r = 0; r < rows.size(); ++r) {
    const auto it = std::lower_bound(by_node.begin(), by_node.end(), std::pair<index_t, index_t>{row_nodes[r], -1});
    if (it != by_node.end() && it->first == row_nodes[r]) self[static_cast<std::size_t>(r)] = it->second;
  }
  return self;
}

namespace {

// Cuts the shards of `sr` from whole matrices: Â1/Â2, the features (in the input order of
// layer 0) and labels/masks in the order sr.label_order asks for.
struct WholeData {
  const HostCsr* adj[2];
  const GraphData* g;  // features (and, for label order 0, labels and masks)
  const std::vector<std::int32_t>* labels[2];
  const std::vector<std::uint8_t>* train[2];
  const std::vector<std::uint8_t>* val[2];
  const std::vector<std::uint8_t>* test[2];
  const std::vector<index_t>* ids[2];  // original node ids in each order (nullptr: the identity)
};

GnnShards cut_shards(const WholeData& w, const ShardRanges& sr, const std::vector<index_t>& dims) {
  const GraphData& g = *w.g;
  GnnShards s;
  s.num_nodes = g.num_nodes;
  s.num_edges = g.num_edges();
  s.dims = dims;
  for (const AdjBlockRange& b : sr.adj) {
    auto [part, part_t] = cut_adj_block(*w.adj[b.which], b);
    s.adj.push_back(std::move(part));
    s.adj_t.push_back(std::move(part_t));
    // Â1 (which 0) has rows in P order (ids[1]) and columns in P2 order (ids[0]); Â2 the reverse.
    const std::vector<index_t>* row_ids = w.ids[1 - b.which];
    const std::vector<index_t>* col_ids = w.ids[b.which];
    const bool ids = row_ids != nullptr && col_ids != nullptr && row_ids != col_ids;
    s.adj_self_col.push_back(ids ? block_self_columns(b.rows, b.cols, row_ids->data() + b.rows.begin,
                                                      col_ids->data() + b.cols.begin)
                                 : block_self_columns(b.rows, b.cols));
    const auto slice_of = [](const std::vector<index_t>* v, Range r) {
      return v != nullptr && !v->empty() ? std::vector<index_t>(v->begin() + r.begin, v->begin() + r.end)
                                         : std::vector<index_t>{};
    };
    s.adj_row_ids.push_back(slice_of(row_ids, b.rows));
    s.adj_col_ids.push_back(slice_of(col_ids, b.cols));
  }
  s.transform_first = sr.transform_first;
  s.adj_blocks = sr.adj;
  s.adj_of_layer = sr.adj_of_layer;
  s.layouts = sr.layouts;
  s.feat_rows = sr.feat_rows;
  s.feat_cols = sr.feat_cols;
  s.features.resize(static_cast<std::size_t>(s.feat_rows.size() * s.feat_cols.size()));
  for (index_t r = s.feat_rows.begin; r < s.feat_rows.end; ++r)
    std::copy_n(g.features.data() + r * g.num_features + s.feat_cols.begin, s.feat_cols.size(),
                s.features.data() + (r - s.feat_rows.begin) * s.feat_cols.size());
  s.label_rows = sr.label_rows;
  const int o = sr.label_order;
  const auto slice = [&](const auto& v) { return std::vector(v.begin() + s.label_rows.begin, v.begin() + s.label_rows.end); };
  s.labels = slice(*w.labels[o]);
  s.train = slice(*w.train[o]);
  s.val = slice(*w.val[o]);
  s.test = slice(*w.test[o]);
  if (w.ids[o] != nullptr && !w.ids[o]->empty()) s.label_ids = slice(*w.ids[o]);
  const auto count = [](const std::vector<std::uint8_t>& m) { return static_cast<index_t>(std::count(m.begin(), m.end(), 1)); };
  s.split_sizes = {count(g.train_mask), count(g.val_mask), count(g.test_mask)};
  return s;
}

}  // namespace

GnnShards build_shards(const GraphData& g, const HostCsr& a_hat, const ProcessGrid& grid,
                       const std::vector<index_t>& dims, bool shard_adj, const std::vector<bool>& transform_first) {
  const WholeData w{{&a_hat, &a_hat}, &g, {&g.labels, &g.labels}, {&g.train_mask, &g.train_mask},
                    {&g.val_mask, &g.val_mask}, {&g.test_mask, &g.test_mask}, {nullptr, nullptr}};
  return cut_shards(w, shard_ranges(grid, g.num_nodes, dims, false, shard_adj, transform_first), dims);
}

GnnShards build_shards(const PreparedGraph& p, const ProcessGrid& grid, const std::vector<index_t>& dims,
                       bool shard_adj, const std::vector<bool>& transform_first) {
  const GraphData& g = p.graph;
  const bool two = p.two_orders();
  const WholeData w{{&p.a1, two ? &p.a2 : &p.a1},
                    &g,
                    {&g.labels, two ? &p.labels_p : &g.labels},
                    {&g.train_mask, two ? &p.train_p : &g.train_mask},
                    {&g.val_mask, two ? &p.val_p : &g.val_mask},
                    {&g.test_mask, two ? &p.test_p : &g.test_mask},
                    {&p.node_id_p2, two ? &p.node_id_p : &p.node_id_p2}};
  return cut_shards(w, shard_ranges(grid, g.num_nodes, dims, two, shard_adj, transform_first), dims);
}

}  // namespace plexus
