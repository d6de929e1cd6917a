#pragma once
// What the grid-against-one-rank MPI tests share (mpi_test_gnn_models, mpi_test_layer_order):
// a small uneven graph, a run of a GnnTrainer for cfg.epochs epochs (losses, transform-first
// layers, final state and, for GAT, the attention coefficients), and the comparison of two runs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/gnn_trainer.hpp"

namespace plexus::testing {

inline int size_of(MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  return n;
}
inline int rank_in(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
inline int world_size() { return size_of(MPI_COMM_WORLD); }

// 157 nodes, 11 features, 5 classes: every size uneven over every grid axis.
inline GraphData uneven_sbm(std::uint64_t seed) {
  SbmOptions o;
  o.nodes = 157;
  o.classes = 5;
  o.features = 11;
  o.avg_degree = 6;
  o.seed = seed;
  return generate_sbm(o);
}

// Every rank's `send` concatenated in rank order, on every rank.
inline std::vector<double> all_gather(ProcessGrid& grid, const std::vector<double>& send) {
  if (grid.size() == 1) return send;
  int n = static_cast<int>(send.size());
  std::vector<int> counts(static_cast<std::size_t>(grid.size())), displs(counts.size(), 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, grid.mpi_comm());
  for (std::size_t q = 1; q < counts.size(); ++q) displs[q] = displs[q - 1] + counts[q - 1];
  std::vector<double> all(static_cast<std::size_t>(displs.back() + counts.back()));
  MPI_Allgatherv(send.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, grid.mpi_comm());
  return all;
}

// Per GAT layer: (dst, src) → α of every head, from every rank's share.
using AttentionMaps = std::vector<std::map<std::pair<index_t, index_t>, std::vector<float>>>;

struct GridRun {
  std::vector<double> losses;
  std::vector<bool> transform_first;
  ModelState state;
  AttentionMaps attention;
  int attention_duplicates = 0;  // entries reported by more than one rank (or twice by one)
  // Per hidden layer, then the logits: node → its row, from every rank's share.
  std::vector<std::map<index_t, std::vector<float>>> node_outputs;
  int node_duplicates = 0;  // nodes reported by more than one rank
};

// Every rank's rows of a per-node output gathered on every rank (as doubles: id, values...).
inline void gather_rows(ProcessGrid& grid, const NodeRows& mine, GridRun& r) {
  const auto rec = static_cast<std::size_t>(mine.width) + 1;
  std::vector<double> send;
  for (std::size_t k = 0; k < mine.node_ids.size(); ++k) {
    send.push_back(static_cast<double>(mine.node_ids[k]));
    for (std::size_t c = 0; c + 1 < rec; ++c) send.push_back(mine.values[k * (rec - 1) + c]);
  }
  const std::vector<double> all = all_gather(grid, send);
  auto& rows = r.node_outputs.emplace_back();
  for (std::size_t at = 0; at + rec <= all.size(); at += rec)
    if (!rows.emplace(static_cast<index_t>(all[at]), std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(at + 1),
                                                                         all.begin() + static_cast<std::ptrdiff_t>(at + rec)))
             .second)
      ++r.node_duplicates;
}

// Every rank's GnnTrainer::attention() gathered on every rank (as doubles: dst, src, α...).
inline void gather_attention(ProcessGrid& grid, const std::vector<EdgeAttention>& mine, GridRun& r) {
  for (const EdgeAttention& a : mine) {
    const auto heads = static_cast<std::size_t>(a.heads), rec = 2 + heads;
    std::vector<double> send;
    for (std::size_t k = 0; k < a.dst.size(); ++k) {
      send.push_back(static_cast<double>(a.dst[k]));
      send.push_back(static_cast<double>(a.src[k]));
      for (std::size_t h = 0; h < heads; ++h) send.push_back(a.alpha[k * heads + h]);
    }
    const std::vector<double> all = all_gather(grid, send);
    auto& layer = r.attention.emplace_back();
    for (std::size_t at = 0; at + rec <= all.size(); at += rec) {
      const std::pair<index_t, index_t> key{static_cast<index_t>(all[at]), static_cast<index_t>(all[at + 1])};
      const bool fresh = layer.emplace(key, std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(at + 2),
                                                               all.begin() + static_cast<std::ptrdiff_t>(at + rec)))
                             .second;
      if (!fresh) ++r.attention_duplicates;
    }
  }
}

inline GridRun train_run(ProcessGrid& grid, const GraphData& graph, const TrainConfig& cfg) {
  auto be = make_cpu_backend(1);
  GnnTrainer t(graph, cfg, *be, grid);
  GridRun r;
  r.transform_first = t.transform_first();
  for (int e = 0; e < cfg.epochs; ++e) r.losses.push_back(t.epoch().loss);
  r.state = t.state();
  gather_attention(grid, t.attention(), r);
  for (const NodeRows& e : t.embeddings()) gather_rows(grid, e, r);
  const Predictions p = t.predict();
  gather_rows(grid, NodeRows{p.node_ids, p.num_classes, p.logits}, r);
  return r;
}

// Losses within 1e-5 relative per epoch, every parameter within 1e-4 of the largest.
inline void expect_same(const GridRun& got, const GridRun& want, const std::string& what) {
  ASSERT_EQ(got.losses.size(), want.losses.size()) << what;
  for (std::size_t e = 0; e < got.losses.size(); ++e)
    EXPECT_NEAR(got.losses[e], want.losses[e], 1e-5 * std::abs(want.losses[e])) << what << ": epoch " << e + 1;
  ASSERT_EQ(got.state.parameters.size(), want.state.parameters.size()) << what;
  for (std::size_t k = 0; k < got.state.parameters.size(); ++k) {
    const ParameterState& g = got.state.parameters[k];
    const ParameterState& w = want.state.parameters[k];
    EXPECT_EQ(g.name, w.name) << what;
    ASSERT_EQ(g.value.size(), w.value.size()) << what << ": " << w.name;
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < g.value.size(); ++i) {
      err = std::max(err, std::abs(static_cast<double>(g.value[i]) - w.value[i]));
      ref = std::max(ref, std::abs(static_cast<double>(w.value[i])));
    }
    EXPECT_LE(err, 1e-4 * std::max(ref, 1.0)) << what << ": " << w.name;
  }
  // Every node's embeddings and logits, each node reported once.
  EXPECT_EQ(got.node_duplicates, 0) << what;
  ASSERT_EQ(got.node_outputs.size(), want.node_outputs.size()) << what;
  for (std::size_t l = 0; l < want.node_outputs.size(); ++l) {
    ASSERT_EQ(got.node_outputs[l].size(), want.node_outputs[l].size()) << what << ": output " << l << " nodes";
    double err = 0, ref = 0;
    for (const auto& [node, row] : want.node_outputs[l]) {
      const auto it = got.node_outputs[l].find(node);
      ASSERT_NE(it, got.node_outputs[l].end()) << what << ": output " << l << " lacks node " << node;
      ASSERT_EQ(it->second.size(), row.size()) << what;
      for (std::size_t c = 0; c < row.size(); ++c) {
        err = std::max(err, std::abs(static_cast<double>(it->second[c]) - row[c]));
        ref = std::max(ref, std::abs(static_cast<double>(row[c])));
      }
    }
    EXPECT_LE(err, 1e-4 * std::max(ref, 1.0)) << what << ": output " << l << " (embeddings, then logits)";
  }
  // GAT: the same entries, each reported once, the same α.
  EXPECT_EQ(got.attention_duplicates, 0) << what;
  ASSERT_EQ(got.attention.size(), want.attention.size()) << what;
  for (std::size_t l = 0; l < want.attention.size(); ++l) {
    ASSERT_EQ(got.attention[l].size(), want.attention[l].size()) << what << ": layer " << l << " entries";
    double err = 0;
    for (const auto& [key, alpha] : want.attention[l]) {
      const auto it = got.attention[l].find(key);
      ASSERT_NE(it, got.attention[l].end()) << what << ": layer " << l << " lacks " << key.second << " -> " << key.first;
      ASSERT_EQ(it->second.size(), alpha.size()) << what;
      for (std::size_t h = 0; h < alpha.size(); ++h) err = std::max(err, std::abs(static_cast<double>(it->second[h]) - alpha[h]));
    }
    EXPECT_LE(err, 1e-4) << what << ": layer " << l << " attention";
  }
}

// Two runs of one model on one grid (recompute or not, sums in one form or another): the same
// loss every epoch and the same parameters, bit for bit.
inline void expect_same_training(const std::vector<double>& got_losses, const ModelState& got,
                                 const std::vector<double>& want_losses, const ModelState& want, const std::string& what) {
  ASSERT_EQ(got_losses.size(), want_losses.size()) << what;
  for (std::size_t e = 0; e < got_losses.size(); ++e)
    EXPECT_EQ(std::memcmp(&got_losses[e], &want_losses[e], sizeof(double)), 0)
        << what << ": epoch " << e + 1 << " loss " << got_losses[e] << " vs " << want_losses[e];
  ASSERT_EQ(got.parameters.size(), want.parameters.size()) << what;
  for (std::size_t k = 0; k < got.parameters.size(); ++k) {
    ASSERT_EQ(got.parameters[k].value.size(), want.parameters[k].value.size()) << what << ": " << want.parameters[k].name;
    EXPECT_TRUE(got.parameters[k].value == want.parameters[k].value) << what << ": " << want.parameters[k].name;
  }
}

// Every GNN kind with options that exercise its collectives, and both GCN layer orders: what
// the tests comparing two ways of running the same model on every grid loop over
// (mpi_test_recompute, mpi_test_sparse_comm).
struct KindRunCase {
  std::string name;
  GnnSpec model;
  LayerOrder order = LayerOrder::Auto;
};
inline std::vector<KindRunCase> every_kind_case() {
  return {
      {"gcn aggregate-first", GnnSpec("gcn"), LayerOrder::AggregateFirst},
      {"gcn transform-first", GnnSpec("gcn"), LayerOrder::TransformFirst},
      {"sage sum normalize", GnnSpec("sage").set("aggregator", "sum").set("normalize", true)},
      {"gin trained eps", GnnSpec("gin").set("train-eps", true)},
      {"gat", GnnSpec("gat")},
      {"appnp", GnnSpec("appnp").set("steps", 3)},
  };
}
// A case's model in a TrainConfig of 3 layers, hidden 7 (GAT: 2 heads of 4, attention dropout),
// dropout 0.3, lr 0.02, seed 9, for `epochs` epochs.
inline TrainConfig kind_run_config(const KindRunCase& c, int epochs) {
  TrainConfig t;
  t.model = c.model;
  t.layer_order = c.order;
  t.layers = 3;
  t.hidden = 7;
  t.epochs = epochs;
  t.dropout = 0.3f;
  t.lr = 0.02f;
  t.seed = 9;
  if (c.model.kind() == "gat") {
    t.hidden = 8;  // 2 heads of 4 (on 3 ranks of i a head's columns are split)
    t.model.set("heads", 2).set("attn-dropout", 0.2);
  }
  return t;
}

}  // namespace plexus::testing
