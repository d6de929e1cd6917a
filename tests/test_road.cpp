// Road-like graph generator (generate_road): a lattice's links only (neighbours one apart or one
// row apart in the node order), symmetric, mean degree near the option's, districts as labels,
// deterministic whatever the thread count, refused options; and the SBM's features unchanged by
// their move to io/generate/class_features (a fixed feature of a fixed seed).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"

namespace plexus {
namespace {

RoadOptions small(std::uint64_t seed = 3) {
  RoadOptions o;
  o.nodes = 2000;  // 45 wide, the last row short
  o.classes = 6;
  o.avg_degree = 2.6;
  o.features = 10;
  o.seed = seed;
  return o;
}

TEST(Road, ALatticeWithStreetsMissing) {
  const RoadOptions o = small();
  const GraphData g = generate_road(o);
  const index_t w = 45;
  ASSERT_EQ(g.num_nodes, o.nodes);
  EXPECT_EQ(g.num_features, o.features);
  EXPECT_EQ(g.num_classes, o.classes);
  for (index_t i = 0; i < g.num_nodes; ++i) {
    EXPECT_LE(g.indptr[i + 1] - g.indptr[i], 4);
    for (index_t e = g.indptr[i]; e < g.indptr[i + 1]; ++e) {
      const index_t j = g.indices[e], gap = std::abs(i - j);
      EXPECT_TRUE((gap == 1 && i / w == j / w) || gap == w) << i << " - " << j;
      const auto b = g.indices.begin() + g.indptr[j], end = g.indices.begin() + g.indptr[j + 1];
      EXPECT_TRUE(std::binary_search(b, end, i)) << "missing reverse of " << i << "->" << j;
    }
  }
  const double mean_degree = static_cast<double>(g.num_edges()) / static_cast<double>(g.num_nodes);
  EXPECT_NEAR(mean_degree, o.avg_degree, 0.15);
  std::vector<index_t> per_class(static_cast<std::size_t>(o.classes), 0);
  index_t same = 0;
  for (index_t i = 0; i < g.num_nodes; ++i) {
    ASSERT_GE(g.labels[i], 0);
    ASSERT_LT(g.labels[i], o.classes);
    ++per_class[static_cast<std::size_t>(g.labels[i])];
    EXPECT_EQ(g.train_mask[i] + g.val_mask[i] + g.test_mask[i], 1);
    for (index_t e = g.indptr[i]; e < g.indptr[i + 1]; ++e) same += g.labels[i] == g.labels[g.indices[e]];
  }
  for (const index_t c : per_class) EXPECT_GT(c, g.num_nodes / o.classes / 2);
  // Districts are regions: most streets stay inside one.
  EXPECT_GT(static_cast<double>(same) / static_cast<double>(g.num_edges()), 0.85);
}

TEST(Road, DeterministicAcrossThreadCountsAndSeeded) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const GraphData a = generate_road(small(9));
  omp_set_num_threads(3);
  const GraphData b = generate_road(small(9));
  omp_set_num_threads(saved);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.train_mask, b.train_mask);
  EXPECT_NE(a.indices, generate_road(small(10)).indices);
}

TEST(Road, RefusesBadOptions) {
  for (const auto& change : std::vector<void (*)(RoadOptions&)>{
           [](RoadOptions& o) { o.nodes = 0; }, [](RoadOptions& o) { o.avg_degree = 4.5; },
           [](RoadOptions& o) { o.classes = 0; }, [](RoadOptions& o) { o.features = 0; },
           [](RoadOptions& o) { o.val_fraction = 0.5; }}) {
    RoadOptions o = small();
    change(o);
    EXPECT_THROW(generate_road(o), InputError);
  }
}

// The SBM's features since before they moved (the first values of seed 5's graph).
TEST(Road, SbmFeaturesAreUnchangedByTheSharedGenerator) {
  SbmOptions o;
  o.nodes = 3000;
  o.classes = 3;
  o.features = 6;
  o.seed = 5;
  const GraphData g = generate_sbm(o);
  ASSERT_EQ(g.features.size(), 18000u);
  EXPECT_EQ(g.num_classes, 3);
  // (recorded from the generator before class_centroid_features existed: its whole file was
  // equal, dataset by dataset)
  std::uint32_t bits = 0;
  std::memcpy(&bits, &g.features[0], sizeof bits);
  EXPECT_EQ(bits, 0xbf2ac9aeu);
}

}  // namespace
}  // namespace plexus
