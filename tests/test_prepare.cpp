// plexus prepare's pieces (plexus/prepare.hpp): cleaning, permuted normalised adjacency,
// the stratified permutation, shards from a prepared graph, and the /prepared HDF5 group.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <cstdlib>

#include "scratch_dir.hpp"
#include "plexus/balance.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "plexus/progress.hpp"
#include "plexus/sparse.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/train.hpp"
#include "core/shard_layout.hpp"

namespace plexus {
namespace {

// (row, col) -> value of a CSR, as a map (small matrices only).
std::map<std::pair<index_t, index_t>, float> entries(const HostCsr& a) {
  std::map<std::pair<index_t, index_t>, float> m;
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) m[{r, a.indices[k]}] = a.values[k];
  return m;
}

bool rows_sorted(const HostCsr& a) {
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t k = a.indptr[r] + 1; k < a.indptr[r + 1]; ++k)
      if (a.indices[k] <= a.indices[k - 1]) return false;
  return true;
}

GraphData small_graph(index_t n, index_t features, std::uint64_t seed) {
  SbmOptions o;
  o.nodes = n;
  o.classes = 3;
  o.avg_degree = 6;
  o.features = features;
  o.seed = seed;
  return generate_sbm(o);
}

TEST(Prepare, CleanDropsLoopsAndDuplicatesAndSymmetrizes) {
  // Directed, weighted: 0->1 (w 2), 0->1 again (w 5, dropped), 0->0 (loop), 1->2 (w 3),
  // 2->1 (w 4), 2->0 (w 7).
  GraphData g;
  g.num_nodes = 3;
  g.num_features = 1;
  g.num_classes = 1;
  g.directed = true;
  g.indptr = {0, 3, 4, 6};
  g.indices = {1, 0, 1, 2, 1, 0};
  g.values = {2, 9, 5, 3, 4, 7};
  g.features = {1, 1, 1};
  g.labels = {0, 0, 0};
  g.train_mask = g.val_mask = g.test_mask = {0, 0, 0};
  const GraphData d = clean_graph(g, false);
  EXPECT_TRUE(d.directed);
  EXPECT_EQ(d.indptr, (std::vector<index_t>{0, 1, 2, 4}));
  EXPECT_EQ(d.indices, (std::vector<index_t>{1, 2, 0, 1}));
  EXPECT_EQ(d.values, (std::vector<float>{2, 3, 7, 4}));
  const GraphData s = clean_graph(g, true);
  EXPECT_FALSE(s.directed);
  // Row 0: 1 (own, 2), 2 (mirror of 2->0, 7); row 1: 0 (mirror, 2), 2 (own, 3);
  // row 2: 0 (own, 7), 1 (own, 4).
  EXPECT_EQ(s.indptr, (std::vector<index_t>{0, 2, 4, 6}));
  EXPECT_EQ(s.indices, (std::vector<index_t>{1, 2, 0, 2, 0, 1}));
  EXPECT_EQ(s.values, (std::vector<float>{2, 7, 2, 3, 7, 4}));
}

TEST(Prepare, PermuteCsrMovesEntries) {
  HostCsr a;
  a.rows = a.cols = 3;
  a.indptr = {0, 2, 3, 4};
  a.indices = {0, 2, 1, 0};
  a.values = {1, 2, 3, 4};
  const std::vector<index_t> rp{2, 0, 1}, cp{1, 2, 0};
  const HostCsr b = permute_csr(a, rp, cp);
  EXPECT_TRUE(rows_sorted(b));
  const auto ea = entries(a), eb = entries(b);
  ASSERT_EQ(ea.size(), eb.size());
  for (const auto& [rc, v] : ea) EXPECT_EQ(eb.at({rp[rc.first], cp[rc.second]}), v);
}

// Â1 = P·Â·P2ᵀ and Â2 = P2·Â·Pᵀ entry by entry, the graph, labels and masks in the right
// orders, node ids the inverses of the orders.
TEST(Prepare, PermutedAdjacencyMatchesDefinition) {
  const GraphData g = small_graph(300, 4, 5);
  const HostCsr a_hat = gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values);
  PrepareOptions o;
  o.balance = Balance::kPermute;
  o.seed = 11;
  const PreparedGraph p = prepare_graph(g, o);
  ASSERT_TRUE(p.two_orders());
  const NodeOrder ord = make_order(clean_graph(g, true), Balance::kPermute, 11, 1);
  const auto e = entries(a_hat), e1 = entries(p.a1), e2 = entries(p.a2);
  ASSERT_EQ(e1.size(), e.size());
  ASSERT_EQ(e2.size(), e.size());
  EXPECT_TRUE(rows_sorted(p.a1));
  EXPECT_TRUE(rows_sorted(p.a2));
  for (const auto& [rc, v] : e) {
    const auto [u, w] = rc;
    EXPECT_EQ(e1.at({ord.row[u], ord.col[w]}), v);  // bit-identical values
    EXPECT_EQ(e2.at({ord.col[u], ord.row[w]}), v);
  }
  for (index_t v = 0; v < g.num_nodes; ++v) {
    EXPECT_EQ(p.node_id_p[ord.row[v]], v);
    EXPECT_EQ(p.node_id_p2[ord.col[v]], v);
    const index_t q2 = ord.col[v], q = ord.row[v];
    EXPECT_EQ(p.graph.labels[q2], g.labels[v]);
    EXPECT_EQ(p.graph.train_mask[q2], g.train_mask[v]);
    EXPECT_EQ(p.labels_p[q], g.labels[v]);
    EXPECT_EQ(p.test_p[q], g.test_mask[v]);
    for (index_t f = 0; f < g.num_features; ++f)
      EXPECT_EQ(p.graph.features[q2 * g.num_features + f], g.features[v * g.num_features + f]);
    // The v1 graph is the input renumbered by P2.
    std::vector<index_t> want, got;
    for (index_t k = g.indptr[v]; k < g.indptr[v + 1]; ++k) want.push_back(ord.col[g.indices[k]]);
    for (index_t k = p.graph.indptr[q2]; k < p.graph.indptr[q2 + 1]; ++k) got.push_back(p.graph.indices[k]);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);
  }
  // One order: no Â2, no P-order labels.
  o.balance = Balance::kNone;
  const PreparedGraph n = prepare_graph(g, o);
  EXPECT_FALSE(n.two_orders());
  EXPECT_EQ(entries(n.a1), e);
  EXPECT_EQ(&n.adj(1), &n.a1);
}

TEST(Prepare, StratifiedPermutationSpreadsHeavyNodesOverAnyBlockCount) {
  // 20 heavy nodes (weight 1000) among 10000 light ones: every contiguous block, for every
  // block count, must get its share of the heavy weight within one heavy node.
  const index_t n = 10020;
  std::vector<index_t> w(static_cast<std::size_t>(n), 1);
  for (index_t v = 0; v < 20; ++v) w[v * 501] = 1000;
  const auto p = stratified_permutation(w, 3, 0);
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(n), 0);
  for (index_t v : p) {
    ASSERT_TRUE(v >= 0 && v < n && !seen[v]);
    seen[v] = 1;
  }
  EXPECT_EQ(p, stratified_permutation(w, 3, 0));
  EXPECT_NE(p, stratified_permutation(w, 3, 1));
  EXPECT_NE(p, stratified_permutation(w, 4, 0));
  for (int parts : {2, 3, 4, 5, 7, 8, 10}) {
    std::vector<double> heavy(static_cast<std::size_t>(parts), 0);
    for (index_t v = 0; v < n; ++v)
      if (w[v] > 1) heavy[block_of(n, parts, p[v])] += 1;
    for (double h : heavy) EXPECT_LE(std::abs(h - 20.0 / parts), 1.0 + 1e-9) << parts << " blocks";
  }
}

TEST(Prepare, StratifiedPermuteBeatsPlainRandomOnRmat) {
  RmatOptions ro;
  ro.scale = 15;
  ro.features = 1;
  ro.classes = 2;
  const GraphData g = generate_rmat(ro);
  for (GridShape grid : {GridShape{2, 2, 2}, GridShape{4, 4, 4}, GridShape{3, 2, 5}}) {
    const auto strat = block_nnz_imbalance(g, make_order(g, Balance::kPermute, 1, 1), grid, 3);
    NodeOrder plain;
    plain.kind = Balance::kPermute;
    plain.row = random_permutation(g.num_nodes, 1, 0);
    plain.col = random_permutation(g.num_nodes, 1, 1);
    const auto rand = block_nnz_imbalance(g, plain, grid, 3);
    double ws = 0, wr = 0;
    for (int l = 0; l < 3; ++l) {
      ws = std::max(ws, strat[l].imbalance());
      wr = std::max(wr, rand[l].imbalance());
    }
    EXPECT_LT(ws, wr) << grid.str();
    RecordProperty("imbalance_" + grid.str(), std::to_string(ws) + " vs plain " + std::to_string(wr));
    EXPECT_LE(ws, 1.06) << grid.str() << " (plain random: " << wr << ")";
  }
}

// Training on the balanced orders computes the same model: without dropout the losses match
// the unbalanced run to float rounding (only the summation order changes), and so do the
// accuracies.
TEST(Prepare, BalancingDoesNotChangeTraining) {
  const GraphData g = small_graph(500, 8, 2);
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  TrainConfig c;
  c.layers = 3;
  c.hidden = 8;
  c.epochs = 15;
  c.dropout = 0;
  const TrainResult base = train_gnn(g, c, *be, *grid);
  for (Balance b : {Balance::kPermute, Balance::kMetis}) {
    c.balance = b;
    const TrainResult r = train_gnn(g, c, *be, *grid);
    ASSERT_EQ(r.epochs.size(), base.epochs.size());
    for (std::size_t e = 0; e < r.epochs.size(); ++e) {
      EXPECT_NEAR(r.epochs[e].loss, base.epochs[e].loss, 1e-5 * base.epochs[e].loss) << balance_name(b) << " " << e;
      EXPECT_NEAR(r.epochs[e].val_acc, base.epochs[e].val_acc, 1e-12);
      EXPECT_NEAR(r.epochs[e].test_acc, base.epochs[e].test_acc, 1e-12);
    }
  }
}

// The policy plexus train and a pipeline share (training_order, read_training_data): a prepared
// file brings its order (--balance may only repeat it), a plain one is read sharded unless a
// balance orders it in memory; a trainer on what was read trains as one on the ordered graph.
TEST(Prepare, TrainingReadsAFileAsPlexusTrainDoes) {
  const plexus::testing::ScratchDir scratch;
  const GraphData g = small_graph(120, 6, 4);
  const std::string plain = scratch.file("plain.h5"), prepared = scratch.file("prepared.h5");
  write_graph_h5(g, plain);
  PrepareOptions o;
  o.balance = Balance::kPermute;
  write_prepared_h5(prepare_graph(g, o), prepared);

  TrainingOrder t = training_order(plain);
  EXPECT_FALSE(t.prepared || t.in_memory);
  EXPECT_EQ(t.balance, Balance::kNone);
  t = training_order(plain, Balance::kPermute);
  EXPECT_TRUE(t.in_memory && !t.prepared);
  EXPECT_EQ(t.balance, Balance::kPermute);
  t = training_order(prepared);
  EXPECT_TRUE(t.prepared && !t.in_memory);
  EXPECT_EQ(t.balance, Balance::kPermute);
  EXPECT_NO_THROW(training_order(prepared, Balance::kPermute));
  try {
    training_order(prepared, Balance::kNone);
    ADD_FAILURE() << "--balance none accepted for a permuted file";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), prepared);
    EXPECT_NE(std::string(e.what()).find("prepared with PrepareOptions.balance permute"), std::string::npos) << e.what();
  }

  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  TrainConfig c;
  c.epochs = 3;
  c.balance = Balance::kPermute;
  const TrainResult want = train_gnn(g, c, *be, *grid);
  c.balance = Balance::kNone;  // (the order comes from the file's policy)
  for (const auto& [path, balance] : {std::pair{plain, std::optional<Balance>(Balance::kPermute)},
                                       std::pair{prepared, std::optional<Balance>()}}) {
    const TrainingOrder order = training_order(path, balance);
    GnnTrainer trainer(read_training_data(path, c, *grid, order), c, *be, *grid);
    const TrainResult got = trainer.run();
    ASSERT_EQ(got.epochs.size(), want.epochs.size()) << path;
    for (std::size_t e = 0; e < got.epochs.size(); ++e)
      EXPECT_NEAR(got.epochs[e].loss, want.epochs[e].loss, 1e-6 * want.epochs[e].loss) << path << " epoch " << e;
  }
  // A file with nothing to train on is named as the file's datasets, in either path.
  GraphData unlabelled = g;
  std::fill(unlabelled.labels.begin(), unlabelled.labels.end(), -1);
  write_graph_h5(unlabelled, plain);
  for (const std::optional<Balance> b : {std::optional<Balance>(), std::optional<Balance>(Balance::kPermute)}) {
    try {
      read_training_data(plain, c, *grid, training_order(plain, b));
      ADD_FAILURE() << "unlabelled file accepted";
    } catch (const InputError& e) {
      EXPECT_NE(e.message().find("/masks/train"), std::string::npos) << e.message();
    }
  }
}

// The file round trip: the shards a rank loads from a prepared file are those cut from the
// prepared graph in memory, for 1 to 4 layers (both parities and the label order).
// Nothing to train on is an input error, not a run at loss 0 (in memory and in any order).
TEST(Prepare, TrainingNeedsALabelledTrainingNode) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  TrainConfig c;
  c.epochs = 1;
  GraphData unlabelled = small_graph(60, 4, 3);
  std::fill(unlabelled.labels.begin(), unlabelled.labels.end(), -1);
  GraphData no_train = small_graph(60, 4, 3);
  std::fill(no_train.train_mask.begin(), no_train.train_mask.end(), 0);
  for (Balance b : {Balance::kNone, Balance::kPermute}) {
    c.balance = b;
    EXPECT_THROW(train_gnn(unlabelled, c, *be, *grid), InputError) << balance_name(b);
    EXPECT_THROW(train_gnn(no_train, c, *be, *grid), InputError) << balance_name(b);
  }
}

// Long steps report how far they have come (the CLI's bars and ETAs): prepare_graph by stage,
// load_shards_h5 by bytes read; both rise monotonically to their total.
TEST(Prepare, PrepareAndLoadReportProgress) {
  const plexus::testing::ScratchDir scratch;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
  const auto previous =
      set_progress_reporter([&](std::uint64_t done, std::uint64_t total) { seen.emplace_back(done, total); });
  const auto rises_to_the_end = [&](std::size_t at_least) {
    ASSERT_GE(seen.size(), at_least);
    for (std::size_t k = 0; k < seen.size(); ++k) {
      EXPECT_EQ(seen[k].second, seen.front().second);
      if (k > 0) {
        EXPECT_GE(seen[k].first, seen[k - 1].first);
      }
    }
    EXPECT_LT(seen.front().first, seen.front().second);
    EXPECT_EQ(seen.back().first, seen.back().second);
  };
  PrepareOptions o;
  o.balance = Balance::kPermute;
  const PreparedGraph p = prepare_graph(small_graph(257, 5, 9), o);
  rises_to_the_end(4);
  seen.clear();
  const std::string path = scratch.file("progress.h5");
  write_prepared_h5(p, path);
  auto grid = ProcessGrid::single();
  load_shards_h5(path, *grid, 2, 6);
  rises_to_the_end(3);  // Â blocks and features
  seen.clear();
  load_shards_h5(std::string(PLEXUS_DATA_DIR) + "/cora.h5", *grid, 2, 16);  // a plain file: degrees too
  rises_to_the_end(3);
  set_progress_reporter(previous);
}

// Rank blocks are read in stripes of at most PLEXUS_READ_EDGES edges (2^20 by default, so
// these graphs fit one) and joined: in stripes of 7 edges, plain and prepared files, whole or
// sharded Â, give the shards of a single read. A bad value is an input error naming it.
TEST(Prepare, ShardsReadInSmallStripesAreTheSame) {
  const plexus::testing::ScratchDir scratch;
  const GraphData g = small_graph(257, 5, 9);
  PrepareOptions o;
  o.balance = Balance::kPermute;
  const std::string plain = scratch.file("plain.h5"), prepared = scratch.file("prepared.h5");
  write_graph_h5(g, plain);
  write_prepared_h5(prepare_graph(g, o), prepared);
  auto grid = ProcessGrid::single();
  for (const std::string& path : {plain, prepared})
    for (int layers = 1; layers <= 3; ++layers)
      for (bool shard_adj : {false, true}) {
        ASSERT_EQ(::unsetenv("PLEXUS_READ_EDGES"), 0);
        const GnnShards one = load_shards_h5(path, *grid, layers, 6, shard_adj);
        ASSERT_EQ(::setenv("PLEXUS_READ_EDGES", "7", 1), 0);
        const GnnShards striped = load_shards_h5(path, *grid, layers, 6, shard_adj);
        ASSERT_EQ(striped.adj.size(), one.adj.size());
        for (std::size_t k = 0; k < one.adj.size(); ++k) {
          EXPECT_EQ(striped.adj[k].indptr, one.adj[k].indptr) << path << " block " << k;
          EXPECT_EQ(striped.adj[k].indices, one.adj[k].indices) << path << " block " << k;
          EXPECT_EQ(striped.adj[k].values, one.adj[k].values) << path << " block " << k;
          EXPECT_EQ(striped.adj_t[k].indptr, one.adj_t[k].indptr) << path << " block " << k;
          EXPECT_EQ(striped.adj_t[k].indices, one.adj_t[k].indices) << path << " block " << k;
        }
        EXPECT_EQ(striped.features, one.features);
        EXPECT_EQ(striped.labels, one.labels);
      }
  for (const char* bad : {"0", "-5", "many", ""}) {
    ASSERT_EQ(::setenv("PLEXUS_READ_EDGES", bad, 1), 0);
    try {
      load_shards_h5(plain, *grid, 2, 6);
      ADD_FAILURE() << "PLEXUS_READ_EDGES='" << bad << "' accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "PLEXUS_READ_EDGES");
      EXPECT_NE(e.message().find("must be a positive integer"), std::string::npos) << e.message();
    }
  }
  ::unsetenv("PLEXUS_READ_EDGES");
}

TEST(Prepare, PreparedFileLoadsTheSameShards) {
  const plexus::testing::ScratchDir scratch;
  const GraphData g = small_graph(257, 5, 9);
  for (Balance b : {Balance::kNone, Balance::kPermute, Balance::kMetis, Balance::kLocality}) {
    PrepareOptions o;
    o.balance = b;
    o.metis_parts = 4;
    o.order_col_parts = 2;  // locality: 2 x 2 blocks, two orders
    const PreparedGraph p = prepare_graph(g, o);
    if (b == Balance::kLocality) {
      EXPECT_TRUE(p.two_orders());
    }
    const std::string path = scratch.file("prepared.h5");
    write_prepared_h5(p, path);
    const PreparedInfo info = read_prepared_info_h5(path, true);
    EXPECT_TRUE(info.prepared);
    EXPECT_EQ(info.balance, b);
    EXPECT_EQ(info.two_orders, p.two_orders());
    EXPECT_EQ(info.node_id_p, p.node_id_p);
    EXPECT_EQ(info.node_id_p2, p.node_id_p2);
    // The v1 part alone is a valid graph: the P2-renumbered one.
    const GraphData v1 = read_graph_h5(path);
    EXPECT_EQ(v1.indices, p.graph.indices);
    EXPECT_EQ(v1.features, p.graph.features);
    auto grid = ProcessGrid::single();
    for (int layers = 1; layers <= 4; ++layers)
    for (LayerOrder order : {LayerOrder::AggregateFirst, LayerOrder::TransformFirst, LayerOrder::Auto}) {
      const auto dims = gnn_dims(g.num_features, layers, 6, g.num_classes);
      const GnnShards mem = build_shards(p, *grid, dims, false, transform_first_layers(order, dims));
      const GnnShards file = load_shards_h5(path, *grid, layers, 6, false, order);
      EXPECT_EQ(file.transform_first, transform_first_layers(order, dims));
      EXPECT_EQ(file.transform_first, mem.transform_first);
      EXPECT_EQ(file.adj_of_layer, mem.adj_of_layer);
      EXPECT_EQ(file.layouts, mem.layouts);
      ASSERT_EQ(file.adj.size(), mem.adj.size());
      for (int l = 0; l < layers; ++l) {
        EXPECT_EQ(file.adj_for_layer(l).indptr, mem.adj_for_layer(l).indptr);
        EXPECT_EQ(file.adj_for_layer(l).indices, mem.adj_for_layer(l).indices);
        EXPECT_EQ(file.adj_for_layer(l).values, mem.adj_for_layer(l).values);
      }
      EXPECT_EQ(file.features, mem.features);
      EXPECT_EQ(file.labels, mem.labels);
      EXPECT_EQ(file.train, mem.train);
      EXPECT_EQ(file.test, mem.test);
      EXPECT_EQ(file.split_sizes, mem.split_sizes);
    }
  }
  // A plain file is not prepared.
  EXPECT_FALSE(read_prepared_info_h5(std::string(PLEXUS_DATA_DIR) + "/cora.h5").prepared);
}

TEST(Prepare, PreparedFileKeepsNodeIdsAndClassNames) {
  const plexus::testing::ScratchDir scratch;
  const GraphData g = small_graph(131, 4, 5);
  NodeNames names;
  for (index_t k = 0; k < g.num_nodes; ++k) names.ids.push_back(5000 - 7 * k);  // not 0..N-1, not sorted
  for (int c = 0; c < g.num_classes; ++c) names.class_names.push_back("class " + std::to_string(c) + " \xC3\xA9");
  const std::string plain = scratch.file("names.h5");
  write_graph_h5(g, names, plain);
  const NodeNames in = read_node_names_h5(plain);
  ASSERT_EQ(in.ids, names.ids);
  ASSERT_EQ(in.class_names, names.class_names);
  for (Balance b : {Balance::kNone, Balance::kPermute, Balance::kMetis, Balance::kLocality}) {
    PrepareOptions o;
    o.balance = b;
    o.metis_parts = b == Balance::kLocality ? 4 : 2;
    o.order_col_parts = 2;
    const PreparedGraph p = prepare_graph(g, o);
    ASSERT_EQ(p.graph.num_nodes, g.num_nodes) << "prepare renumbers nodes, never drops one";
    const std::string path = scratch.file("prepared-names.h5");
    write_prepared_h5(p, in, path);
    // Stored in P2 order, like /labels: row k is input node node_id_p2[k].
    const NodeNames stored = read_node_names_h5(path);
    ASSERT_EQ(stored.ids.size(), names.ids.size());
    for (std::size_t k = 0; k < stored.ids.size(); ++k) {
      EXPECT_EQ(stored.ids[k], names.ids[static_cast<std::size_t>(p.node_id_p2[k])]) << k;
      EXPECT_EQ(p.graph.labels[k], g.labels[static_cast<std::size_t>(p.node_id_p2[k])]) << k;
    }
    EXPECT_EQ(stored.class_names, names.class_names);
    // predict's reader undoes P2: the input's order again, whole or in slices.
    EXPECT_EQ(read_original_node_ids_h5(path, 0, g.num_nodes), names.ids);
    const std::vector<std::int64_t> slice = read_original_node_ids_h5(path, 40, 30);
    EXPECT_EQ(slice, std::vector<std::int64_t>(names.ids.begin() + 40, names.ids.begin() + 70));
    // Prepared again: the input's rows are already in a P2 order, and the ids follow them.
    const PreparedGraph again = prepare_graph(read_graph_h5(path), o);
    const std::string path2 = scratch.file("prepared-again.h5");
    write_prepared_h5(again, stored, path2);
    EXPECT_EQ(read_original_node_ids_h5(path2, 0, g.num_nodes), stored.ids);
    // The old signature (and empty names) store neither.
    write_prepared_h5(p, path);
    EXPECT_TRUE(read_node_names_h5(path).ids.empty());
    EXPECT_TRUE(read_node_names_h5(path).class_names.empty());
    // Names of the wrong length are refused before anything is written.
    NodeNames short_ids = names;
    short_ids.ids.pop_back();
    EXPECT_THROW(write_prepared_h5(p, short_ids, path), InputError);
    NodeNames extra_class = names;
    extra_class.class_names.push_back("extra");
    EXPECT_THROW(write_prepared_h5(p, extra_class, path), InputError);
  }
}

}  // namespace
}  // namespace plexus
