// Every GNN kind under MPI (mpi_test_trainer, on 1 to 4, 6 and 8 ranks): on every grid the
// ranks compute what one rank computes alone, epoch by epoch with dropout on — on an uneven
// graph (157 nodes, 11 features, 5 classes, 3 layers), with one node order and with the double
// permutation (two orders: a node's self-loop is not on the diagonal), whole and sharded Â, one
// and several aggregation chunks — and end with the same parameters; a state saved on one grid
// moves to another.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/error.hpp"
#include "plan/plan.hpp"  // all_grids
#include "plexus/convert.hpp"
#include "plexus/gnn_model.hpp"
#include "plexus/tables.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "link_graphs.hpp"  // with_edge_features
#include "mpi_grid_runs.hpp"
#include "mpi_scratch.hpp"

namespace plexus {
namespace {

using testing::expect_same;
using testing::world_size;
using KindRun = testing::GridRun;

const GraphData& uneven_graph() {
  static const GraphData g = test::with_edge_features(testing::uneven_sbm(11));  // (GINE reads them)
  return g;
}

struct Variant {
  std::string name;
  GnnSpec model;
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v{
      {"sage-mean", GnnSpec("sage")},
      {"sage-sum-normalize", GnnSpec("sage").set("aggregator", "sum").set("normalize", true)},
      {"gin-fixed-eps", GnnSpec("gin").set("gin-eps", 0.1)},
      {"gin-trained-eps", GnnSpec("gin").set("train-eps", true)},
      {"appnp", GnnSpec("appnp").set("steps", 3).set("alpha", 0.2)},
      {"gine-trained-eps", GnnSpec("gine").set("gin-eps", 0.1).set("train-eps", true)},
  };
  return v;
}

TrainConfig config(const Variant& v, Balance balance, bool shard_adj, int chunks,
                   CommVariant comm = CommVariant::Baseline) {
  TrainConfig c;
  c.model = v.model;
  c.layers = 3;
  c.hidden = 7;
  c.epochs = 20;
  c.dropout = 0.3f;
  c.lr = 0.02f;
  c.seed = 5;
  c.balance = balance;
  c.shard_adj = shard_adj;
  c.agg_chunks = chunks;
  c.comm_variant = comm;
  return c;
}

KindRun train_on(ProcessGrid& grid, const TrainConfig& cfg) { return testing::train_run(grid, uneven_graph(), cfg); }

// The losses decrease and the parameters list is the kind's: a run that learns nothing or a
// model that lost a parameter would pass the grid comparison by itself.
void expect_learns(const KindRun& r, const Variant& v) {
  EXPECT_LT(r.losses.back(), 0.9 * r.losses.front()) << v.name;
  std::vector<std::string> names;
  for (const ParameterState& p : r.state.parameters) names.push_back(p.name);
  const std::vector<std::string> per_layer =
      v.model.kind() == "appnp"   ? std::vector<std::string>{"weight", "bias"}
      : v.model.kind() == "sage"  ? std::vector<std::string>{"weight", "root_weight", "bias"}
      : v.model.kind() == "gine"  ? std::vector<std::string>{"weight", "bias", "weight2", "bias2", "eps", "edge_weight", "edge_bias"}
      : v.model.flag("train-eps") ? std::vector<std::string>{"weight", "bias", "weight2", "bias2", "eps"}
                                  : std::vector<std::string>{"weight", "bias", "weight2", "bias2"};
  std::vector<std::string> want;
  for (int l = 0; l < 3; ++l)
    for (const std::string& n : per_layer) want.push_back("layer" + std::to_string(l) + "/" + n);
  EXPECT_EQ(names, want) << v.name;
}

TEST(GnnModels, EveryKindOnEveryGridMatchesOneRank) {
  const int p = world_size();
  for (const Variant& v : variants())
    for (const Balance balance : {Balance::kNone, Balance::kPermute}) {
      auto single = ProcessGrid::single();
      const KindRun want = train_on(*single, config(v, balance, false, 1));
      expect_learns(want, v);
      // One rank's embeddings (2 hidden layers of 7) and logits (5 classes) cover every node,
      // named by the input's ids: with --balance permute a node's row is another's position.
      ASSERT_EQ(want.node_outputs.size(), 3u) << v.name;
      for (std::size_t l = 0; l < 3; ++l) {
        EXPECT_EQ(static_cast<index_t>(want.node_outputs[l].size()), uneven_graph().num_nodes) << v.name;
        EXPECT_EQ(want.node_outputs[l].begin()->second.size(), l < 2 ? 7u : 5u) << v.name;
      }
      if (balance == Balance::kPermute) {
        // Without dropout (whose masks follow the node order) the permuted graph trains the
        // same model: each node's outputs must be the unpermuted run's for that node.
        TrainConfig plain_cfg = config(v, Balance::kNone, false, 1), permuted_cfg = config(v, balance, false, 1);
        plain_cfg.dropout = permuted_cfg.dropout = 0.0f;
        auto one = ProcessGrid::single();
        const KindRun plain = train_on(*one, plain_cfg), permuted = train_on(*one, permuted_cfg);
        double err = 0;
        for (std::size_t l = 0; l < 3; ++l)
          for (const auto& [node, row] : plain.node_outputs[l])
            for (std::size_t c = 0; c < row.size(); ++c)
              err = std::max(err, static_cast<double>(std::abs(row[c] - permuted.node_outputs[l].at(node)[c])));
        EXPECT_LE(err, 1e-3) << v.name << ": a permuted graph's outputs are not its nodes'";
      }
      for (const GridShape& shape : all_grids(p)) {
        auto grid = ProcessGrid::from_mpi(shape);
        const std::string what = v.name + (balance == Balance::kNone ? "" : " permute") + " on " + shape.str();
        expect_same(train_on(*grid, config(v, balance, false, 1)), want, what);
      }
      // Sharded Â and chunked aggregation on the last (most mixed) grid (GINE's blocks are whole:
      // sharded Â is refused).
      auto grid = ProcessGrid::from_mpi(all_grids(p).back());
      if (v.model.reads_edge_features())
        EXPECT_THROW(train_on(*grid, config(v, balance, true, 3)), InputError) << v.name;
      else
        expect_same(train_on(*grid, config(v, balance, true, 3)), want, v.name + " sharded, 3 chunks");
      // rs-ag-reuse: the weights gathered once per update; the last layer stays the baseline's
      // (only the GCN's reduce-scatters), so the loss must not split its rows either. On 1x1xP:
      // the last (third) layer's i axis is Z, so a split there would show.
      auto column = ProcessGrid::from_mpi(GridShape{1, 1, p});
      expect_same(train_on(*column, config(v, balance, false, 1, CommVariant::RsAgReuse)), want, v.name + " rs-ag-reuse");
    }
}

// The sharded reader of a prepared file (two orders): each rank finds its blocks' self-loops
// by original node id (io/format_v1/shards.cpp); training on what it reads equals one rank
// balancing the same graph in memory.
TEST(GnnModels, PreparedFileReadByEveryGridMatchesOneRank) {
  const int p = world_size();
  const std::string path = testing::shared_scratch("prepared.h5");
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    PrepareOptions po;
    po.clean = po.symmetrize = false;  // as train_gnn's in-memory balancing
    po.balance = Balance::kPermute;
    po.seed = 1;
    GraphData g = uneven_graph();  // (the sharded loader reads no edge features yet: read_whole_graph_h5 does)
    g.num_edge_features = 0;
    g.edge_features.clear();
    write_prepared_h5(prepare_graph(std::move(g), po), path);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (const Variant& v : variants()) {
    if (v.model.reads_edge_features()) continue;  // (its file holds none)
    TrainConfig cfg = config(v, Balance::kPermute, false, 1);
    cfg.epochs = 8;
    auto single = ProcessGrid::single();
    const KindRun want = train_on(*single, cfg);
    for (const bool shard_adj : {false, true}) {
      auto grid = ProcessGrid::from_mpi(all_grids(p).back());
      auto be = make_cpu_backend(1);
      GnnTrainer t(load_shards_h5(path, *grid, cfg.layers, cfg.hidden, shard_adj, layer_order_of(cfg)), cfg, *be, *grid);
      for (int e = 0; e < cfg.epochs; ++e)
        EXPECT_NEAR(t.epoch().loss, want.losses[static_cast<std::size_t>(e)], 1e-5 * want.losses[static_cast<std::size_t>(e)])
            << v.name << (shard_adj ? " sharded" : "") << ": epoch " << e + 1;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove(path);
}

// set_state on another grid continues the run as the uninterrupted one does.
TEST(GnnModels, StateMovesAcrossGrids) {
  const int p = world_size();
  for (const Variant& v : variants()) {
    TrainConfig cfg = config(v, Balance::kPermute, false, 1);
    auto single = ProcessGrid::single();
    const KindRun whole = train_on(*single, cfg);
    cfg.epochs = 10;
    auto from = ProcessGrid::from_mpi(all_grids(p).back());
    auto be = make_cpu_backend(1);
    GnnTrainer first(uneven_graph(), cfg, *be, *from);
    for (int e = 0; e < 10; ++e) first.epoch();
    const ModelState half = first.state();
    cfg.epochs = 20;
    auto to = ProcessGrid::from_mpi(all_grids(p).front());
    auto be2 = make_cpu_backend(1);
    GnnTrainer second(uneven_graph(), cfg, *be2, *to);
    second.set_state(half);
    for (int e = 10; e < 20; ++e)
      EXPECT_NEAR(second.epoch().loss, whole.losses[static_cast<std::size_t>(e)], 1e-5 * whole.losses[static_cast<std::size_t>(e)])
          << v.name << ": epoch " << e + 1;
  }
}

// GAT (transform-first layers, attention over each rank's block): every grid equals one rank,
// with feature and attention dropout, in one and two node orders, 2 and 3 layers, one head and
// several (averaged in the last layer), and the state moves to another grid.
TEST(GatModels, EveryGridMatchesOneRank) {
  const int p = world_size();
  struct GatVariant {
    std::string name;
    int layers, heads, out_heads;
    bool edge_features = false;  // PyG's edge_dim: the scores read the graph's edge features
  };
  for (const GatVariant& v : {GatVariant{"gat-3-layers-2-heads-2-averaged", 3, 2, 2},
                              GatVariant{"gat-2-layers-1-head", 2, 1, 1},
                              GatVariant{"gat-2-layers-2-heads-3-averaged-edge-features", 2, 2, 3, true}})
    for (const Balance balance : {Balance::kNone, Balance::kPermute}) {
      const GnnSpec gat = GnnSpec("gat").set("heads", v.heads).set("out-heads", v.out_heads).set("attn-dropout", 0.3)
                              .set("edge-features", v.edge_features);
      TrainConfig cfg = config(Variant{v.name, gat}, balance, false, 1);
      cfg.layers = v.layers;
      cfg.hidden = 8;
      auto single = ProcessGrid::single();
      const KindRun want = train_on(*single, cfg);
      EXPECT_LT(want.losses.back(), 0.9 * want.losses.front()) << v.name;
      std::vector<std::string> names, expected;
      for (const ParameterState& s : want.state.parameters) names.push_back(s.name);
      for (int l = 0; l < v.layers; ++l)
        for (const std::string n : {"weight", "att_src", "att_dst", "bias", "edge_weight", "att_edge"})
          if (v.edge_features || (n != "edge_weight" && n != "att_edge"))
            expected.push_back("layer" + std::to_string(l) + "/" + n);
      EXPECT_EQ(names, expected) << v.name;
      // One rank's attention: every entry of Â (the graph's edges both ways and a self-loop per
      // node), once, each row's α summing to 1 per head.
      const GraphData& g = uneven_graph();
      EXPECT_EQ(want.attention_duplicates, 0) << v.name;
      ASSERT_EQ(want.attention.size(), static_cast<std::size_t>(v.layers)) << v.name;
      for (const auto& layer : want.attention) {
        EXPECT_EQ(static_cast<index_t>(layer.size()), g.num_edges() + g.num_nodes) << v.name;
        std::map<std::pair<index_t, std::size_t>, double> sums;
        for (const auto& [key, alpha] : layer)
          for (std::size_t h = 0; h < alpha.size(); ++h) sums[{key.first, h}] += alpha[h];
        for (const auto& [row, sum] : sums) EXPECT_NEAR(sum, 1.0, 1e-5) << v.name << ": node " << row.first;
        for (index_t i = 0; i < g.num_nodes; ++i) EXPECT_TRUE(layer.contains({i, i})) << v.name << ": self-loop " << i;
      }
      for (const GridShape& shape : all_grids(p)) {
        auto grid = ProcessGrid::from_mpi(shape);
        const std::string what = v.name + (balance == Balance::kNone ? "" : " permute") + " on " + shape.str();
        expect_same(train_on(*grid, cfg), want, what);
      }
      if (balance == Balance::kNone) continue;
      // Half the run on the last grid, the rest on the first from its state.
      TrainConfig half = cfg;
      half.epochs = 10;
      auto from = ProcessGrid::from_mpi(all_grids(p).back());
      auto be = make_cpu_backend(1);
      GnnTrainer first(uneven_graph(), half, *be, *from);
      for (int e = 0; e < 10; ++e) first.epoch();
      const ModelState state = first.state();
      auto to = ProcessGrid::from_mpi(all_grids(p).front());
      auto be2 = make_cpu_backend(1);
      GnnTrainer second(uneven_graph(), cfg, *be2, *to);
      second.set_state(state);
      for (int e = 10; e < cfg.epochs; ++e)
        EXPECT_NEAR(second.epoch().loss, want.losses[static_cast<std::size_t>(e)],
                    1e-5 * want.losses[static_cast<std::size_t>(e)])
            << v.name << " moved across grids: epoch " << e + 1;
    }
}

}  // namespace
}  // namespace plexus

namespace plexus {
namespace {

// The inference object on every grid: a model trained on one rank, applied to a graph with
// ids of its own by every grid, gathers to one table equal to one rank's — on every rank
// (root -1) and on the last rank alone.
TEST(GnnModelInference, EveryGridGathersOneRanksTable) {
  const int p = world_size();
  GraphData g = uneven_graph();
  for (index_t k = 0; k < g.num_nodes; ++k) g.node_ids.push_back(5'000'000'000 - 3 * k);
  for (const std::string kind : {"sage", "gat", "gine"}) {
    GnnSpec spec(kind);
    if (kind == "gat") spec.set("heads", 2);
    TrainConfig cfg = config(Variant{"inference", spec}, Balance::kPermute, false, 1);
    cfg.hidden = 8;
    auto single = ProcessGrid::single();
    auto be = make_cpu_backend(1);
    GnnTrainer trainer(g, cfg, *be, *single);
    for (int e = 0; e < 5; ++e) trainer.epoch();
    GnnModel model(trainer);
    const NodeTable want = gather_table(model.predict(g, *be, *single, {.embeddings = true}), g, *single, -1);
    ASSERT_EQ(want.rows(), static_cast<std::size_t>(g.num_nodes));
    EXPECT_EQ(want.ids, g.node_ids);
    for (const GridShape& shape : all_grids(p)) {
      auto grid = ProcessGrid::from_mpi(shape);
      const std::string what = kind + " on " + shape.str();
      const Inference mine = model.predict(g, *be, *grid, {.embeddings = true});
      const NodeTable everywhere = gather_table(mine, g, *grid, -1);
      const NodeTable at_last = gather_table(mine, g, *grid, p - 1);
      EXPECT_EQ(at_last.rows(), grid->rank() == p - 1 ? want.rows() : 0u) << what;
      for (const NodeTable* t : {&everywhere, &at_last}) {
        if (t->rows() == 0) continue;
        EXPECT_EQ(t->ids, want.ids) << what;
        ASSERT_EQ(t->logits.size(), want.logits.size()) << what;
        for (std::size_t k = 0; k < want.logits.size(); ++k)
          EXPECT_NEAR(t->logits[k], want.logits[k], 1e-4 * (1.0 + std::abs(want.logits[k]))) << what << " logit " << k;
        ASSERT_EQ(t->embeddings.size(), 2u) << what;
        for (std::size_t l = 0; l < 2; ++l)
          for (std::size_t k = 0; k < want.embeddings[l].values.size(); ++k)
            EXPECT_NEAR(t->embeddings[l].values[k], want.embeddings[l].values[k],
                        1e-4 * (1.0 + std::abs(want.embeddings[l].values[k])))
                << what << " layer " << l;
      }
    }
  }
}

}  // namespace
}  // namespace plexus
