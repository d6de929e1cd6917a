// Node orderings for load balance and the block-nnz imbalance measure (plexus/balance.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "plexus/balance.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/shard.hpp"

namespace plexus {
namespace {

bool is_bijection(const std::vector<index_t>& p, index_t n) {
  if (static_cast<index_t>(p.size()) != n) return false;
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(n), 0);
  for (index_t v : p) {
    if (v < 0 || v >= n || seen[v]) return false;
    seen[v] = 1;
  }
  return true;
}

const GraphData& rmat14() {
  static const GraphData g = [] {
    RmatOptions o;
    o.scale = 14;
    o.edge_factor = 16;
    o.features = 1;
    o.classes = 2;
    o.seed = 3;
    return generate_rmat(o);
  }();
  return g;
}

// `g` renumbered so that node v becomes new_id[v] (CSR only): used to build a skewed input
// order, ids sorted by decreasing degree, as in many crawled or preprocessed datasets.
GraphData relabel(const GraphData& g, const std::vector<index_t>& new_id) {
  GraphData h;
  h.num_nodes = g.num_nodes;
  h.directed = g.directed;
  std::vector<index_t> old_of(static_cast<std::size_t>(g.num_nodes));
  for (index_t v = 0; v < g.num_nodes; ++v) old_of[new_id[v]] = v;
  h.indptr.push_back(0);
  for (index_t r = 0; r < g.num_nodes; ++r) {
    const index_t u = old_of[r];
    for (index_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k) h.indices.push_back(new_id[g.indices[k]]);
    h.indptr.push_back(static_cast<index_t>(h.indices.size()));
  }
  return h;
}

const GraphData& rmat14_by_degree() {
  static const GraphData h = [] {
    const GraphData& g = rmat14();
    std::vector<index_t> by_deg(static_cast<std::size_t>(g.num_nodes));
    std::iota(by_deg.begin(), by_deg.end(), index_t{0});
    std::stable_sort(by_deg.begin(), by_deg.end(), [&](index_t a, index_t b) {
      return g.indptr[a + 1] - g.indptr[a] > g.indptr[b + 1] - g.indptr[b];
    });
    std::vector<index_t> new_id(by_deg.size());
    for (std::size_t r = 0; r < by_deg.size(); ++r) new_id[by_deg[r]] = static_cast<index_t>(r);
    return relabel(g, new_id);
  }();
  return h;
}

double worst(const std::vector<LayerBlockNnz>& layers) {
  double w = 0;
  for (const LayerBlockNnz& l : layers) w = std::max(w, l.imbalance());
  return w;
}

TEST(Balance, BlockOfInvertsBlockRange) {
  for (index_t n : {1, 2, 5, 7, 64, 100, 1001})
    for (int parts : {1, 2, 3, 4, 7, 8, 64})
      for (int b = 0; b < parts; ++b) {
        const Range r = block_range(n, parts, b);
        for (index_t i = r.begin; i < r.end; ++i) ASSERT_EQ(block_of(n, parts, i), b) << n << " " << parts << " " << i;
      }
}

TEST(Balance, PermutationsAreDeterministicBijections) {
  for (index_t n : {1, 2, 3, 10, 1000, 100003}) {
    const auto p = random_permutation(n, 42, 0);
    EXPECT_TRUE(is_bijection(p, n)) << n;
    EXPECT_EQ(p, random_permutation(n, 42, 0));
  }
  const index_t n = 5000;
  EXPECT_NE(random_permutation(n, 42, 0), random_permutation(n, 43, 0));
  EXPECT_NE(random_permutation(n, 42, 0), random_permutation(n, 42, 1));
  // Not close to the identity: few fixed points (expected 1).
  const auto p = random_permutation(n, 7, 0);
  index_t fixed = 0;
  for (index_t v = 0; v < n; ++v) fixed += p[v] == v;
  EXPECT_LT(fixed, 10);

  const GraphData& g = rmat14();
  const NodeOrder o = make_order(g, Balance::kPermute, 9, 8);
  EXPECT_TRUE(is_bijection(o.row, g.num_nodes));
  EXPECT_TRUE(is_bijection(o.col, g.num_nodes));
  EXPECT_NE(o.row, o.col);  // P and P2 independent
  const NodeOrder o2 = make_order(g, Balance::kPermute, 9, 8);
  EXPECT_EQ(o.row, o2.row);
  EXPECT_EQ(o.col, o2.col);
  EXPECT_EQ(&o.rows_for_layer(0), &o.row);
  EXPECT_EQ(&o.rows_for_layer(1), &o.col);
  EXPECT_EQ(&o.cols_for_layer(1), &o.row);
}

TEST(Balance, IdentityImbalanceMatchesHandCount) {
  // 0-1, 0-2, 2-3 (both directions) and a stored self-loop at 3, which Â replaces.
  GraphData g;
  g.num_nodes = 4;
  g.indptr = {0, 2, 3, 5, 7};
  g.indices = {1, 2, 0, 0, 3, 2, 3};
  const NodeOrder id = make_order(g, Balance::kNone, 1, 1);
  EXPECT_EQ(id.row, (std::vector<index_t>{0, 1, 2, 3}));
  // Grid 2x1x2. Layer 0 (o, i, d) = (X, Y, Z): rows over Z (2), cols over X (2).
  // Â = {00 01 02 10 11 20 22 23 32 33}; blocks of {0,1},{2,3}: [[4, 1], [1, 4]].
  // Layer 1 (Z, X, Y): rows over Y (1), cols over Z (2): [[5, 5]].
  const auto r = block_nnz_imbalance(g, id, GridShape{2, 1, 2}, 2);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].row_parts, 2);
  EXPECT_EQ(r[0].col_parts, 2);
  EXPECT_EQ(r[0].counts, (std::vector<index_t>{4, 1, 1, 4}));
  EXPECT_EQ(r[0].total, 10);
  EXPECT_EQ(r[0].max, 4);
  EXPECT_EQ(r[0].min, 1);
  EXPECT_DOUBLE_EQ(r[0].mean, 2.5);
  EXPECT_DOUBLE_EQ(r[0].imbalance(), 1.6);
  EXPECT_EQ(r[1].row_parts, 1);
  EXPECT_EQ(r[1].col_parts, 2);
  EXPECT_EQ(r[1].counts, (std::vector<index_t>{5, 5}));
  EXPECT_DOUBLE_EQ(r[1].imbalance(), 1.0);

  // A hand permutation: rows reversed, columns identity (as permute's P, P2 would be).
  NodeOrder o;
  o.kind = Balance::kPermute;
  o.row = {3, 2, 1, 0};
  o.col = {0, 1, 2, 3};
  const auto p = block_nnz_imbalance(g, o, GridShape{2, 1, 2}, 1);
  // Rows 0,1 -> block 1, rows 2,3 -> block 0: [[1, 4], [4, 1]].
  EXPECT_EQ(p[0].counts, (std::vector<index_t>{1, 4, 4, 1}));
}

// The rows and columns each block holds (what row-sparse sums move) and the rows the sums move
// in each form, by hand on the graph above; a directed graph's columns are its in-neighbours.
TEST(Balance, HeldRowsAndColumnsAndTheSumsRowsMatchHandCounts) {
  GraphData g;
  g.num_nodes = 4;
  g.indptr = {0, 2, 3, 5, 7};
  g.indices = {1, 2, 0, 0, 3, 2, 3};
  // Â = {00 01 02 10 11 20 22 23 32 33}, blocks {0,1} × {2,3} both ways.
  const auto r = block_nnz_imbalance(g, make_order(g, Balance::kNone, 1, 1), GridShape{2, 1, 2}, 2);
  EXPECT_EQ(r[0].held_rows, (std::vector<index_t>{2, 1, 1, 2}));
  EXPECT_EQ(r[0].held_cols, (std::vector<index_t>{2, 1, 1, 2}));
  EXPECT_DOUBLE_EQ(r[0].held_fraction(), 0.75);
  // Each row block of 2 rows over 2 ranks: dense 2·1·2 = 4 rows; rows form 3 held + 2·0.
  EXPECT_DOUBLE_EQ(r[0].forward_dense, 8.0);
  EXPECT_DOUBLE_EQ(r[0].forward_auto, 6.0);
  EXPECT_DOUBLE_EQ(r[0].backward_dense, 8.0);
  EXPECT_DOUBLE_EQ(r[0].backward_auto, 6.0);
  // The input's gather over d (2 ranks) of each column block, one column a part: columns 0 (rows
  // of both row blocks, in part 0: block 1 receives it), 1 (block 0's rows, part 1: received),
  // 2 (both blocks, part 0: block 1) and 3 (block 1's, its own part): 2 of 2, 1 of 2.
  EXPECT_DOUBLE_EQ(r[0].gather_dense, 4.0);
  EXPECT_DOUBLE_EQ(r[0].gather_auto, 3.0);
  // Layer 1: rows over 1 rank (no backward sum), columns over 2: rows 0,1,2 and 0,2,3 held.
  EXPECT_EQ(r[1].held_rows, (std::vector<index_t>{3, 3}));
  EXPECT_DOUBLE_EQ(r[1].forward_dense, 8.0);
  EXPECT_DOUBLE_EQ(r[1].forward_auto, 6.0);
  EXPECT_DOUBLE_EQ(r[1].backward_dense, 0.0);
  EXPECT_DOUBLE_EQ(r[1].backward_auto, 0.0);
  // Directed 0→1, 2→1 on 3 ranks a way: Â = {00 01 11 21 22}; column 1 held by rows 0, 1, 2.
  GraphData d;
  d.num_nodes = 3;
  d.directed = true;
  d.indptr = {0, 1, 1, 2};
  d.indices = {1, 1};
  const auto t = block_nnz_imbalance(d, make_order(d, Balance::kNone, 1, 1), GridShape{3, 1, 3}, 1);
  EXPECT_EQ(t[0].held_rows, (std::vector<index_t>{1, 1, 0, 0, 1, 0, 0, 1, 1}));
  EXPECT_EQ(t[0].held_cols, (std::vector<index_t>{1, 1, 0, 0, 1, 0, 0, 1, 1}));
  // Rows over 3: each row block of 1 row held 2, 1, 2 times: rows form 2 + 1 = 3, 2, 3 of dense 4.
  EXPECT_DOUBLE_EQ(t[0].forward_dense, 12.0);
  EXPECT_DOUBLE_EQ(t[0].forward_auto, 3.0 + 2.0 + 3.0);
  // Columns over 3: column 1 held by 3 rows' blocks: 3 + 1 = 4 (dense's 4), the others 1 + 1.
  EXPECT_DOUBLE_EQ(t[0].backward_auto, 2.0 + 4.0 + 2.0);
  // Each column block's one column lies in part 0 of the gather: column 0 is read by row block 0
  // only (its own part), column 1 by blocks 0, 1, 2 (two receive it), column 2 by block 2.
  EXPECT_DOUBLE_EQ(t[0].gather_dense, 6.0);
  EXPECT_DOUBLE_EQ(t[0].gather_auto, 0.0 + 2.0 + 1.0);
}

TEST(Balance, PermuteBalancesRmat) {
  const GridShape grid{2, 2, 2};
  // generate_rmat scrambles ids (as Graph500), so its own order is already nearly balanced;
  // the same graph with ids sorted by degree is the skewed case permute is for.
  for (const GraphData* g : {&rmat14(), &rmat14_by_degree()}) {
    const auto none = block_nnz_imbalance(*g, make_order(*g, Balance::kNone, 1, 2), grid, 2);
    const auto perm = block_nnz_imbalance(*g, make_order(*g, Balance::kPermute, 1, 2), grid, 2);
    for (int l = 0; l < 2; ++l) {
      EXPECT_EQ(perm[l].total, none[l].total);
      EXPECT_EQ(perm[l].total, g->num_edges() + g->num_nodes);  // R-MAT stores no self-loops
      EXPECT_LE(perm[l].imbalance(), 1.05) << "layer " << l;
    }
    EXPECT_LT(worst(perm), worst(none));
  }
  const GraphData& s = rmat14_by_degree();
  EXPECT_GT(worst(block_nnz_imbalance(s, make_order(s, Balance::kNone, 1, 2), grid, 2)), 2.0);
  // 16 blocks per layer (4x4x4): the hubs weigh more per block; still within 20%.
  EXPECT_LE(worst(block_nnz_imbalance(s, make_order(s, Balance::kPermute, 1, 4), GridShape{4, 4, 4}, 3)), 1.2);
}

TEST(Balance, MetisOrderIsABijectionAndBalancesRows) {
  const GraphData& g = rmat14_by_degree();
  const GridShape grid{2, 2, 2};
  const NodeOrder m = make_order(g, Balance::kMetis, 1, 2);
  EXPECT_TRUE(is_bijection(m.row, g.num_nodes));
  EXPECT_EQ(m.row, m.col);
  EXPECT_EQ(m.row, make_order(g, Balance::kMetis, 1, 2).row);  // METIS seeded: reproducible
  const auto met = block_nnz_imbalance(g, m, grid, 2);
  const auto perm = block_nnz_imbalance(g, make_order(g, Balance::kPermute, 1, 2), grid, 2);
  const auto none = block_nnz_imbalance(g, make_order(g, Balance::kNone, 1, 2), grid, 2);
  EXPECT_EQ(met[0].total, perm[0].total);
  // METIS cuts few edges, so its diagonal blocks are heavier than permute's; but it balances
  // the row blocks (vertex weight = row nnz) and must stay well within 2x of permute and
  // better than the skewed identity.
  EXPECT_LE(worst(met), 2.0 * worst(perm));
  EXPECT_LT(worst(met), worst(none));
  // Row blocks (sum over a row of blocks) within METIS's default 3% tolerance plus the
  // mismatch between part sizes and the equal-count blocks of block_range.
  const auto& c = met[0].counts;
  const double r0 = static_cast<double>(c[0] + c[1]), r1 = static_cast<double>(c[2] + c[3]);
  EXPECT_LE(std::max(r0, r1) / (0.5 * (r0 + r1)), 1.5);
}

// k cliques of `size` nodes, node v in clique v % k (interleaved: the ids carry no locality),
// plus, with `bridges`, an edge from every node of clique c to one of clique c + 1; stored both
// ways, unweighted.
GraphData cliques(int k, int size, bool bridges) {
  const index_t n = static_cast<index_t>(k) * size;
  std::vector<std::vector<index_t>> adj(static_cast<std::size_t>(n));
  const auto node = [&](int c, int i) { return static_cast<index_t>(i) * k + c; };
  for (int c = 0; c < k; ++c)
    for (int i = 0; i < size; ++i) {
      for (int j = 0; j < size; ++j)
        if (j != i) adj[node(c, i)].push_back(node(c, j));
      if (bridges) {
        const index_t u = node(c, i), v = node((c + 1) % k, (i * 7 + 3) % size);
        adj[u].push_back(v);
        adj[v].push_back(u);
      }
    }
  GraphData g;
  g.num_nodes = n;
  g.directed = false;
  g.indptr.push_back(0);
  for (auto& row : adj) {
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    g.indices.insert(g.indices.end(), row.begin(), row.end());
    g.indptr.push_back(static_cast<index_t>(g.indices.size()));
  }
  return g;
}

TEST(Balance, OrderPartsFollowTheGrid) {
  const GridShape grid{4, 1, 3};
  EXPECT_EQ(order_parts(Balance::kMetis, grid).parts, 12);
  EXPECT_EQ(order_parts(Balance::kMetis, grid).col_parts, 1);
  EXPECT_EQ(order_parts(Balance::kLocality, grid).parts, 12);  // layer 0: Z row blocks x X column blocks
  EXPECT_EQ(order_parts(Balance::kLocality, grid).col_parts, 4);
  EXPECT_EQ(order_parts(Balance::kLocality, GridShape{2, 5, 3}).parts, 6);
  EXPECT_EQ(order_parts(Balance::kLocality, GridShape{2, 5, 3}).col_parts, 2);
  EXPECT_EQ(order_parts(Balance::kPermute, grid).parts, 1);
  EXPECT_EQ(order_parts(Balance::kNone, grid).parts, 1);
}

// Locality deals METIS's parts so that block (i, j) of layer 0 holds part i·G_o + j alone: on
// 12 equal cliques cut for 3 row blocks x 4 column blocks, every block holds one clique (nnz
// exactly even), a quarter of its rows and a third of its columns; the next layer (rows over Y,
// columns over Z) touches a third of its rows. metis's one order piles the cliques on fewer
// blocks, permute spreads every clique over all of them.
TEST(Balance, LocalityOrderGivesEachBlockOnePart) {
  const GraphData g = cliques(12, 20, false);
  const GridShape grid{4, 1, 3};
  const OrderParts cut = order_parts(Balance::kLocality, grid);
  const NodeOrder loc = make_order(g, Balance::kLocality, 1, cut.parts, cut.col_parts);
  EXPECT_EQ(loc.kind, Balance::kLocality);
  EXPECT_TRUE(is_bijection(loc.row, g.num_nodes));
  EXPECT_TRUE(is_bijection(loc.col, g.num_nodes));
  EXPECT_NE(loc.row, loc.col);
  EXPECT_EQ(loc.col, make_order(g, Balance::kLocality, 1, cut.parts, cut.col_parts).col);  // reproducible
  // Each clique lands whole in one (row block, column block) pair, and each pair holds one clique.
  std::vector<int> pair_of_clique(12, -1), clique_of_pair(12, -1);
  for (index_t v = 0; v < g.num_nodes; ++v) {
    const int c = static_cast<int>(v % 12);
    const int pair = block_of(g.num_nodes, 3, loc.row[v]) * 4 + block_of(g.num_nodes, 4, loc.col[v]);
    if (pair_of_clique[c] < 0) pair_of_clique[c] = pair;
    EXPECT_EQ(pair_of_clique[c], pair) << "clique " << c << " split";
    if (clique_of_pair[pair] < 0) clique_of_pair[pair] = c;
    EXPECT_EQ(clique_of_pair[pair], c) << "block " << pair << " holds two cliques";
  }
  const auto l = block_nnz_imbalance(g, loc, grid, 2);
  EXPECT_EQ(l[0].row_parts, 3);
  EXPECT_EQ(l[0].col_parts, 4);
  EXPECT_DOUBLE_EQ(l[0].imbalance(), 1.0);
  EXPECT_DOUBLE_EQ(l[0].held_fraction(), 1.0 / 4);
  for (std::size_t b = 0; b < 12; ++b) {
    EXPECT_EQ(l[0].held_rows[b], 20) << b;
    EXPECT_EQ(l[0].held_cols[b], 20) << b;
  }
  EXPECT_DOUBLE_EQ(l[1].held_fraction(), 1.0 / 3);
  // Every row and column held by one block of its group: the sums move half the dense rows (a
  // held row still reaches every rank), the gather brings nothing but the block's own part.
  EXPECT_DOUBLE_EQ(l[0].forward_auto, 0.5 * l[0].forward_dense);
  EXPECT_DOUBLE_EQ(l[0].backward_auto, 0.5 * l[0].backward_dense);
  EXPECT_DOUBLE_EQ(l[0].gather_auto, 0.0);

  const OrderParts mcut = order_parts(Balance::kMetis, grid);
  const auto met = block_nnz_imbalance(g, make_order(g, Balance::kMetis, 1, mcut.parts), grid, 2);
  const auto perm = block_nnz_imbalance(g, make_order(g, Balance::kPermute, 1, 1), grid, 2);
  EXPECT_GE(met[0].imbalance(), 1.5);
  EXPECT_GT(perm[0].held_fraction(), 0.9);
}

// With edges between the cliques the parts are no longer closed: locality keeps the blocks near
// even (metis does not) and moves far fewer rows than permute.
TEST(Balance, LocalityOrderOnBridgedCliques) {
  const GraphData g = cliques(12, 20, true);
  const GridShape grid{4, 1, 3};
  const OrderParts cut = order_parts(Balance::kLocality, grid);
  const auto loc = block_nnz_imbalance(g, make_order(g, Balance::kLocality, 1, cut.parts, cut.col_parts), grid, 3);
  const auto perm = block_nnz_imbalance(g, make_order(g, Balance::kPermute, 1, 1), grid, 3);
  const OrderParts mcut = order_parts(Balance::kMetis, grid);
  const auto met = block_nnz_imbalance(g, make_order(g, Balance::kMetis, 1, mcut.parts), grid, 3);
  // The blocks near even where metis's one order piles the nnz on the diagonal ...
  EXPECT_LE(loc[0].imbalance(), 1.2);
  EXPECT_GE(met[0].imbalance(), 2.0);
  // ... and the rows the sums and the gather move well below permute's.
  double moved_loc = 0, moved_perm = 0;
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(loc[l].total, perm[l].total);
    EXPECT_LE(loc[l].forward_auto + loc[l].backward_auto, perm[l].forward_auto + perm[l].backward_auto) << l;
    moved_loc += loc[l].forward_auto + loc[l].backward_auto + loc[l].gather_auto;
    moved_perm += perm[l].forward_auto + perm[l].backward_auto + perm[l].gather_auto;
  }
  EXPECT_LT(moved_loc, 0.8 * moved_perm);
  EXPECT_LT(loc[0].gather_auto, 0.5 * perm[0].gather_auto);
}

// A grid axis of size 1 leaves one part a block: one order, as metis's.
TEST(Balance, LocalityOrderOnAFlatGridIsOneOrder) {
  const GraphData g = cliques(6, 10, true);
  for (const GridShape grid : {GridShape{6, 2, 1}, GridShape{1, 2, 6}}) {
    const OrderParts cut = order_parts(Balance::kLocality, grid);
    const NodeOrder o = make_order(g, Balance::kLocality, 1, cut.parts, cut.col_parts);
    EXPECT_EQ(o.row, o.col) << grid.str();
    EXPECT_EQ(o.row, make_order(g, Balance::kMetis, 1, 6).row) << grid.str();
  }
  const NodeOrder tiny = make_order(cliques(2, 2, false), Balance::kLocality, 1, 6, 2);  // n <= parts
  EXPECT_EQ(tiny.row, (std::vector<index_t>{0, 1, 2, 3}));
  EXPECT_EQ(tiny.col, tiny.row);
}

TEST(Balance, ParseBalance) {
  EXPECT_EQ(parse_balance("none"), Balance::kNone);
  EXPECT_EQ(parse_balance("permute"), Balance::kPermute);
  EXPECT_EQ(parse_balance("metis"), Balance::kMetis);
  EXPECT_EQ(parse_balance("locality"), Balance::kLocality);
  EXPECT_STREQ(balance_name(Balance::kLocality), "locality");
  EXPECT_THROW(parse_balance("random"), InputError);
  EXPECT_STREQ(balance_name(Balance::kMetis), "metis");
}

}  // namespace
}  // namespace plexus
