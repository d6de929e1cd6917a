// Graph500 R-MAT generator (generate_rmat).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"

using plexus::index_t;
using plexus::InputError;
using plexus::RmatOptions;

namespace {

RmatOptions small(int scale = 12, std::uint64_t seed = 7) {
  RmatOptions o;
  o.scale = scale;
  o.edge_factor = 16;
  o.features = 10;
  o.classes = 4;
  o.seed = seed;
  return o;
}

void expect_same(const plexus::GraphData& a, const plexus::GraphData& b) {
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(a.indptr, b.indptr);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.train_mask, b.train_mask);
  EXPECT_EQ(a.val_mask, b.val_mask);
  EXPECT_EQ(a.test_mask, b.test_mask);
}

// Restores the OpenMP thread count when a test ends.
struct ThreadCount {
  int saved = omp_get_max_threads();
  ~ThreadCount() { omp_set_num_threads(saved); }
};

}  // namespace

TEST(Rmat, SizesAndInvariants) {
  const RmatOptions o = small();
  const plexus::GraphData g = plexus::generate_rmat(o);
  const index_t N = index_t{1} << o.scale;
  ASSERT_EQ(g.num_nodes, N);
  EXPECT_EQ(g.num_features, 10);
  EXPECT_EQ(g.num_classes, 4);
  EXPECT_FALSE(g.directed);
  ASSERT_EQ(g.indptr.size(), static_cast<std::size_t>(N + 1));
  EXPECT_EQ(g.indptr.front(), 0);
  EXPECT_EQ(g.indptr.back(), g.num_edges());
  EXPECT_TRUE(g.values.empty());
  ASSERT_EQ(g.features.size(), static_cast<std::size_t>(N * 10));
  ASSERT_EQ(g.labels.size(), static_cast<std::size_t>(N));
  // At most 2 directed entries per sample; duplicates and self-loops reduce it, but not by much
  // at this density.
  const index_t samples = o.edge_factor * N;
  EXPECT_LE(g.num_edges(), 2 * samples);
  EXPECT_GT(g.num_edges(), samples);
  EXPECT_EQ(g.num_edges() % 2, 0);

  index_t max_deg = 0, isolated = 0;
  for (index_t r = 0; r < N; ++r) {
    const index_t b = g.indptr[r], e = g.indptr[r + 1];
    ASSERT_LE(b, e);
    max_deg = std::max(max_deg, e - b);
    isolated += (e == b);
    for (index_t k = b; k < e; ++k) {
      const index_t c = g.indices[k];
      ASSERT_GE(c, 0);
      ASSERT_LT(c, N);
      ASSERT_NE(c, r) << "self-loop";
      if (k > b) {
        ASSERT_LT(g.indices[k - 1], c) << "unsorted or duplicate in row " << r;
      }
      ASSERT_TRUE(std::binary_search(g.indices.begin() + g.indptr[c], g.indices.begin() + g.indptr[c + 1], r))
          << "asymmetric " << r << "-" << c;
    }
  }
  // Power-law degrees: the largest degree is far above the mean.
  const double mean = static_cast<double>(g.num_edges()) / static_cast<double>(N);
  EXPECT_GT(static_cast<double>(max_deg), 20.0 * mean) << "max " << max_deg << " mean " << mean;
  EXPECT_GT(isolated, 0);  // R-MAT leaves many low-probability vertices isolated

  // Labels, masks, features.
  std::vector<index_t> hist(4, 0);
  index_t ntrain = 0, nval = 0, ntest = 0;
  for (index_t i = 0; i < N; ++i) {
    ASSERT_GE(g.labels[i], 0);
    ASSERT_LT(g.labels[i], 4);
    ++hist[g.labels[i]];
    ASSERT_EQ(g.train_mask[i] + g.val_mask[i] + g.test_mask[i], 1) << "node " << i;
    ntrain += g.train_mask[i];
    nval += g.val_mask[i];
    ntest += g.test_mask[i];
  }
  for (index_t h : hist) EXPECT_NEAR(static_cast<double>(h) / N, 0.25, 0.03);
  EXPECT_NEAR(static_cast<double>(ntrain) / N, 0.6, 0.03);
  EXPECT_NEAR(static_cast<double>(nval) / N, 0.2, 0.03);
  EXPECT_NEAR(static_cast<double>(ntest) / N, 0.2, 0.03);
  for (float f : g.features) {
    ASSERT_TRUE(std::isfinite(f));
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.5f);
  }
}

TEST(Rmat, FeaturesCarryClassSignal) {
  // Per class, the mean of the class's own shifted dimensions exceeds the other classes' mean.
  const RmatOptions o = small();
  const plexus::GraphData g = plexus::generate_rmat(o);
  const index_t F = g.num_features;
  std::vector<std::vector<double>> mean(4, std::vector<double>(F, 0.0));
  std::vector<double> count(4, 0.0);
  for (index_t i = 0; i < g.num_nodes; ++i) {
    count[g.labels[i]] += 1.0;
    for (index_t j = 0; j < F; ++j) mean[g.labels[i]][j] += g.features[i * F + j];
  }
  for (int c = 0; c < 4; ++c) {
    for (index_t j = 0; j < F; ++j) mean[c][j] /= count[c];
    const double top = *std::max_element(mean[c].begin(), mean[c].end());
    const double bottom = *std::min_element(mean[c].begin(), mean[c].end());
    EXPECT_GT(top - bottom, 0.3) << "class " << c;
  }
}

TEST(Rmat, DeterministicForASeed) {
  const plexus::GraphData a = plexus::generate_rmat(small(11, 3));
  const plexus::GraphData b = plexus::generate_rmat(small(11, 3));
  expect_same(a, b);
  const plexus::GraphData c = plexus::generate_rmat(small(11, 4));
  EXPECT_NE(a.indices, c.indices);
  EXPECT_NE(a.labels, c.labels);
}

TEST(Rmat, IndependentOfThreadCount) {
  const ThreadCount restore;
  omp_set_num_threads(1);
  const plexus::GraphData one = plexus::generate_rmat(small(13, 5));
  omp_set_num_threads(2);
  const plexus::GraphData two = plexus::generate_rmat(small(13, 5));
  omp_set_num_threads(5);
  const plexus::GraphData five = plexus::generate_rmat(small(13, 5));
  expect_same(one, two);
  expect_same(one, five);
}

TEST(Rmat, TinyAndUnevenShapes) {
  RmatOptions o = small(5, 1);
  o.edge_factor = 1;
  o.features = 3;  // not a multiple of 4
  o.classes = 7;   // more classes than features
  const plexus::GraphData g = plexus::generate_rmat(o);
  EXPECT_EQ(g.num_nodes, 32);
  EXPECT_LE(g.num_edges(), 64);
  EXPECT_EQ(g.features.size(), 96u);
  for (std::int32_t l : g.labels) EXPECT_LT(l, 7);
}

// A graph too small for its 60/20/20 split to give every split a node is refused, naming
// --scale (docs/hardening.md: generators refuse graphs nobody can train or evaluate on).
TEST(Rmat, RefusesAGraphWithAnEmptySplit) {
  for (int scale : {1, 2, 3}) {
    try {
      plexus::generate_rmat(small(scale, 1));
      ADD_FAILURE() << "scale " << scale << ": a graph of " << (1 << scale) << " nodes with an empty split was written";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "RmatOptions.scale");
      EXPECT_NE(std::string(e.what()).find("split of the " + std::to_string(1 << scale) + " nodes generated is empty"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Rmat, OptionValidation) {
  const auto where = [](const RmatOptions& o) {
    try {
      plexus::generate_rmat(o);
    } catch (const InputError& e) {
      return e.where();
    }
    return std::string("no error");
  };
  RmatOptions o = small();
  o.scale = 0;
  EXPECT_EQ(where(o), "RmatOptions.scale");
  o.scale = 37;
  EXPECT_EQ(where(o), "RmatOptions.scale");
  o = small();
  o.edge_factor = 0;
  EXPECT_EQ(where(o), "RmatOptions.edge_factor");
  o = small();
  o.features = 0;
  EXPECT_EQ(where(o), "RmatOptions.features");
  o = small();
  o.classes = 1;
  EXPECT_EQ(where(o), "RmatOptions.classes");
  o = small();
  o.a = -0.1;
  EXPECT_EQ(where(o), "RmatOptions.a");
  o = small();
  o.b = std::nan("");
  EXPECT_EQ(where(o), "RmatOptions.b");
  o = small();
  o.a = 0.6;
  o.b = 0.3;
  o.c = 0.3;
  EXPECT_EQ(where(o), "RmatOptions.c");
  o = small();
  o.scale = 36;
  o.edge_factor = 1 << 30;  // 2^66 samples: rejected before allocating anything
  EXPECT_EQ(where(o), "RmatOptions.edge_factor");
  o = small();
  o.scale = 36;
  o.features = index_t{1} << 28;
  EXPECT_EQ(where(o), "RmatOptions.features");
}
