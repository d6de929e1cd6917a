#pragma once
// Steps the prepares that hold a graph in slices take alike (private to partition/): the prepare
// on P ranks (a slice a rank) and the prepare in passes (a slice a pass). Written once here, so
// both draw the same orders and fill the same fields.
#include <numeric>
#include <vector>

#include "plexus/balance.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/prepare.hpp"
#include "plexus/prepare_distributed.hpp"
#include "src/core/array_census.hpp"

namespace plexus::detail {

// The orders P (row) and P2 (col) of `n` nodes, as make_order draws them: permute weighs each
// node by its row's nnz in Â (`row_nnz`, every node's; ignored by balance none, may be empty).
inline NodeOrder slice_orders(const PrepareOptions& opt, index_t n, const std::vector<index_t>& row_nnz) {
  NodeOrder order;
  order.kind = opt.balance;
  if (opt.balance == Balance::kPermute) {
    order.row = stratified_permutation(row_nnz, opt.seed, 0);
    order.col = stratified_permutation(row_nnz, opt.seed, 1);
  } else {
    order.row.resize(static_cast<std::size_t>(n));
    std::iota(order.row.begin(), order.row.end(), index_t{0});
    order.col = order.row;
  }
  return order;
}

// A slice's fields that come from the options and the whole graph, before its rows are filled.
inline PreparedSlice slice_header(const PrepareOptions& opt, index_t n, index_t features, std::int32_t classes,
                                  bool directed, bool weighted, bool two_orders) {
  PreparedSlice p;
  p.num_nodes = n;
  p.num_features = features;
  p.num_classes = classes;
  p.directed = directed;
  p.balance = opt.balance;
  p.seed = opt.seed;
  p.metis_parts = opt.metis_parts;
  p.features_bf16 = opt.features_bf16;
  p.two_orders = two_orders;
  p.weighted = weighted;
  return p;
}

// The node at each position of the slice's rows, in P and in P2 (node_id_p, node_id_p2).
inline void fill_node_positions(PreparedSlice& p, const std::vector<index_t>& pr, const std::vector<index_t>& pc) {
  const Range r = p.rows;
  p.node_id_p.assign(static_cast<std::size_t>(r.size()), 0);
  p.node_id_p2.assign(static_cast<std::size_t>(r.size()), 0);
  for (index_t v = 0; v < static_cast<index_t>(pr.size()); ++v) {
    if (r.begin <= pr[v] && pr[v] < r.end) p.node_id_p[pr[v] - r.begin] = v;
    if (r.begin <= pc[v] && pc[v] < r.end) p.node_id_p2[pc[v] - r.begin] = v;
  }
}

// The slice's rows of Â1 and Â2 counted by tile of `cuts` (the two the same with one order):
// their entries (`tiles`) and the rows that hold them (`held`), to be summed over the slices.
inline void count_slice_blocks(const PreparedSlice& p, const std::vector<index_t>& cuts,
                               std::array<std::vector<index_t>, 2>& tiles, std::array<std::vector<index_t>, 2>& held) {
  for (int o = 0; o < 2; ++o) {
    const CsrSlice<col_t>& a = o == 1 && p.two_orders ? p.a2 : p.a1;
    std::vector<index_t> local(a.indptr.size());
    const ArrayWatch watched(local);
    for (std::size_t i = 0; i < local.size(); ++i) local[i] = a.indptr[i] - a.begin();
    const auto k = static_cast<std::size_t>(o);
    tiles[k] = count_tiles_of_rows(cuts, p.rows.begin, p.rows.size(), local.data(), a.indices.data());
    held[k] = count_held_of_rows(cuts, p.rows.begin, p.rows.size(), local.data(), a.indices.data());
  }
}

}  // namespace plexus::detail
