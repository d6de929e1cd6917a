// Stochastic block model generator (generate_sbm): invariants, determinism, and the accuracy a
// 2-layer GCN reaches on it (the point of the generator: accuracy tests that mean something).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"

using plexus::GraphData;
using plexus::index_t;
using plexus::SbmOptions;

namespace {

SbmOptions small(std::uint64_t seed = 5) {
  SbmOptions o;
  o.nodes = 3000;
  o.classes = 5;
  o.avg_degree = 10;
  o.homophily = 0.7;
  o.features = 16;
  o.feature_signal = 0.2;
  o.seed = seed;
  return o;
}

struct ThreadCount {
  int saved = omp_get_max_threads();
  ~ThreadCount() { omp_set_num_threads(saved); }
};

double train_test_accuracy(const GraphData& g) {
  auto be = plexus::make_cpu_backend();
  auto grid = plexus::ProcessGrid::single();
  plexus::TrainConfig cfg;
  cfg.epochs = 100;
  cfg.seed = 1;
  return plexus::train_gnn(g, cfg, *be, *grid).test_acc;
}

}  // namespace

TEST(Sbm, Invariants) {
  const SbmOptions o = small();
  const GraphData g = plexus::generate_sbm(o);
  ASSERT_EQ(g.num_nodes, o.nodes);
  EXPECT_EQ(g.num_features, o.features);
  EXPECT_EQ(g.num_classes, o.classes);
  EXPECT_FALSE(g.directed);
  index_t same = 0;
  for (index_t i = 0; i < g.num_nodes; ++i) {
    for (index_t e = g.indptr[i]; e < g.indptr[i + 1]; ++e) {
      const index_t j = g.indices[e];
      EXPECT_NE(j, i) << "self-loop";
      if (e > g.indptr[i]) {
        EXPECT_LT(g.indices[e - 1], j) << "row " << i << " not sorted/deduplicated";
      }
      const auto b = g.indices.begin() + g.indptr[j], end = g.indices.begin() + g.indptr[j + 1];
      EXPECT_TRUE(std::binary_search(b, end, i)) << "missing reverse of " << i << "->" << j;
      same += g.labels[i] == g.labels[j];
    }
  }
  const double mean_degree = static_cast<double>(g.num_edges()) / static_cast<double>(g.num_nodes);
  EXPECT_GT(mean_degree, 0.9 * o.avg_degree);
  EXPECT_LT(mean_degree, 1.05 * o.avg_degree);
  const double h = static_cast<double>(same) / static_cast<double>(g.num_edges());
  EXPECT_NEAR(h, o.homophily, 0.03);
  // Splits partition the nodes, ~60/20/20; every class occurs.
  index_t tr = 0, va = 0, te = 0;
  std::vector<index_t> per_class(static_cast<std::size_t>(o.classes), 0);
  for (index_t i = 0; i < g.num_nodes; ++i) {
    EXPECT_EQ(g.train_mask[i] + g.val_mask[i] + g.test_mask[i], 1);
    tr += g.train_mask[i];
    va += g.val_mask[i];
    te += g.test_mask[i];
    ++per_class[static_cast<std::size_t>(g.labels[i])];
  }
  EXPECT_NEAR(static_cast<double>(tr) / g.num_nodes, 0.6, 0.04);
  EXPECT_NEAR(static_cast<double>(va) / g.num_nodes, 0.2, 0.04);
  EXPECT_NEAR(static_cast<double>(te) / g.num_nodes, 0.2, 0.04);
  for (const index_t c : per_class) EXPECT_GT(c, g.num_nodes / o.classes / 2);
}

TEST(Sbm, DeterministicAcrossThreadCounts) {
  ThreadCount restore;
  omp_set_num_threads(1);
  const GraphData a = plexus::generate_sbm(small(9));
  omp_set_num_threads(3);
  const GraphData b = plexus::generate_sbm(small(9));
  EXPECT_EQ(a.indptr, b.indptr);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.train_mask, b.train_mask);
  EXPECT_EQ(a.test_mask, b.test_mask);
  const GraphData c = plexus::generate_sbm(small(10));
  EXPECT_NE(a.indices, c.indices);
}

// Communities finer than the classes: with every edge inside its community (homophily 1) the
// graph falls apart into at least one component a community, each of one class, and the labels
// are still the `classes` classes, evenly filled; communities = classes is the default graph.
TEST(Sbm, CommunitiesFinerThanClasses) {
  SbmOptions o = small();
  o.homophily = 1.0;
  o.classes = 3;
  o.communities = 30;
  const GraphData g = plexus::generate_sbm(o);
  EXPECT_EQ(g.num_classes, 3);
  std::vector<index_t> root(static_cast<std::size_t>(g.num_nodes));
  for (index_t i = 0; i < g.num_nodes; ++i) root[static_cast<std::size_t>(i)] = i;
  const auto find = [&root](index_t i) {
    while (root[static_cast<std::size_t>(i)] != i) i = root[static_cast<std::size_t>(i)] = root[static_cast<std::size_t>(root[static_cast<std::size_t>(i)])];
    return i;
  };
  std::vector<index_t> per_class(3, 0);
  for (index_t i = 0; i < g.num_nodes; ++i) {
    ++per_class[static_cast<std::size_t>(g.labels[i])];
    for (index_t e = g.indptr[i]; e < g.indptr[i + 1]; ++e) {
      const index_t j = g.indices[e];
      EXPECT_EQ(g.labels[i], g.labels[j]);
      root[static_cast<std::size_t>(find(i))] = find(j);
    }
  }
  index_t components = 0;
  for (index_t i = 0; i < g.num_nodes; ++i) components += find(i) == i;
  EXPECT_GE(components, 30);
  for (const index_t c : per_class) EXPECT_GT(c, g.num_nodes / 3 / 2);
  // One community a class: the default graph.
  o.communities = 0;
  const GraphData d = plexus::generate_sbm(o);
  o.communities = 3;
  const GraphData same = plexus::generate_sbm(o);
  EXPECT_EQ(d.indices, same.indices);
  EXPECT_EQ(d.labels, same.labels);
  EXPECT_NE(d.indices, g.indices);
}

TEST(Sbm, BadOptions) {
  SbmOptions o = small();
  o.homophily = 1.5;
  EXPECT_THROW(plexus::generate_sbm(o), plexus::InputError);
  o = small();
  o.nodes = 0;
  EXPECT_THROW(plexus::generate_sbm(o), plexus::InputError);
  o = small();
  o.train_fraction = 0.9;
  o.val_fraction = 0.2;
  EXPECT_THROW(plexus::generate_sbm(o), plexus::InputError);
  o = small();
  o.communities = o.classes - 1;  // a class without a community
  EXPECT_THROW(plexus::generate_sbm(o), plexus::InputError);
  o.communities = static_cast<std::int32_t>(o.nodes) + 1;
  EXPECT_THROW(plexus::generate_sbm(o), plexus::InputError);
}

// Fractions that leave a split without a node (an option's edge, or too few nodes for a small
// fraction) are refused naming the option that sizes that split; every generated graph can be
// trained and evaluated on.
TEST(Sbm, RefusesAGraphWithAnEmptySplit) {
  const auto where = [](SbmOptions o) {
    try {
      plexus::generate_sbm(o);
    } catch (const plexus::InputError& e) {
      return e.where() + ": " + e.what();
    }
    return std::string("no error");
  };
  SbmOptions o = small();
  o.train_fraction = 1e-9;  // above 0, but no node of 3000 falls below it
  EXPECT_EQ(where(o).rfind("SbmOptions.train_fraction: the training split of the 3000 nodes generated is empty", 0), 0u)
      << where(o);
  o = small();
  o.val_fraction = 0;
  EXPECT_EQ(where(o).rfind("SbmOptions.val_fraction: the validation split", 0), 0u) << where(o);
  o = small();
  o.train_fraction = 0.5;
  o.val_fraction = 0.5;  // the test split gets 1 - train - val = 0
  EXPECT_EQ(where(o).rfind("SbmOptions.train_fraction: the test split", 0), 0u) << where(o);
  o = small();
  o.nodes = 6;
  o.classes = 2;
  o.val_fraction = 0.01;
  EXPECT_EQ(where(o).rfind("SbmOptions.val_fraction: the validation split of the 6 nodes", 0), 0u) << where(o);
  o = small();
  EXPECT_EQ(where(o), "no error");
}

// A 2-layer GCN (hidden 16, 100 epochs, Adam lr 0.01, dropout 0.5) on 3000 nodes, 5 classes,
// mean degree 10, 16 features with signal 0.2. Measured test accuracy with homophily 0.7:
// 0.880 (graph seed 5, training seed 1; the CLI with training seed 42: 0.893, and 0.892 on
// graph seed 6); the threshold 0.84 leaves 4 points of margin. With homophily
// 0.2 (= 1/classes: edges carry no class information) the same model reaches only 0.33-0.45,
// so the accuracy above comes from aggregating neighbours, not from the features alone.
TEST(Sbm, GcnLearnsToKnownAccuracy) {
  const double acc = train_test_accuracy(plexus::generate_sbm(small()));
  RecordProperty("test_acc", std::to_string(acc));
  std::printf("SBM GCN test accuracy (homophily 0.7): %.4f\n", acc);
  EXPECT_GE(acc, 0.84);
  SbmOptions random_edges = small();
  random_edges.homophily = 0.2;
  const double base = train_test_accuracy(plexus::generate_sbm(random_edges));
  std::printf("SBM GCN test accuracy (homophily 0.2): %.4f\n", base);
  EXPECT_LT(base, 0.6);
}
