// The census of a computation's host arrays (src/core/array_census.hpp): registered vectors
// counted by capacity at every sample while their watch lives, the largest sample kept, nothing
// counted without a current census; and what the distributed prepare's census holds at least.
#include <gtest/gtest.h>

#include <vector>

#include "comm/in_process_communicator.hpp"
#include "plexus/prepare.hpp"
#include "plexus/prepare_distributed.hpp"
#include "prepare_fixtures.hpp"
#include "src/core/array_census.hpp"

namespace plexus {
namespace {

TEST(ArrayCensus, KeepsTheLargestSampleOfTheWatchedArrays) {
  ArrayCensus census;
  const CensusScope scope(census);
  std::vector<double> a(100);
  {
    std::vector<char> b;
    const ArrayWatch watch(a, b);  // samples: 800 bytes
    EXPECT_EQ(census.peak_bytes(), 800u);
    b.reserve(1000);
    EXPECT_EQ(census.peak_bytes(), 800u);  // not sampled yet
    sample_arrays();
    EXPECT_EQ(census.peak_bytes(), 1800u);
    b = {};
    a = std::vector<double>(10);
    sample_arrays();
    EXPECT_EQ(census.peak_bytes(), 1800u);  // the peak stays
  }
  std::vector<int> c(1000);
  sample_arrays();  // `a` is no longer watched, `c` never was
  EXPECT_EQ(census.peak_bytes(), 1800u);
}

TEST(ArrayCensus, CountsNothingWithoutACurrentCensusAndScopesNest) {
  ArrayCensus outer, inner;
  std::vector<float> v(50);
  {
    const ArrayWatch unseen(v);  // no census: nothing registered
    sample_arrays();
  }
  const CensusScope a(outer);
  {
    const CensusScope b(inner);
    const ArrayWatch watch(v);
  }
  EXPECT_EQ(inner.peak_bytes(), 200u);
  EXPECT_EQ(outer.peak_bytes(), 0u);
  const ArrayWatch watch(v);
  EXPECT_EQ(outer.peak_bytes(), 200u);
}

// A rank of the prepare holds at least its input slice and its output rows at once (the output
// while the input's node rows are moved).
TEST(ArrayCensus, APrepareRankHoldsAtLeastItsInputAndOutput) {
  const GraphData g = test::messy_graph(45, 8, 200, true, 9);
  run_in_process(2, [&](Communicator& c) {
    const GraphSlice in = test::slice_of(g, test::slice_rows(g.num_nodes, c.rank(), 2), true);
    const std::uint64_t input_bytes = (in.indptr.size() + in.indices.size() + in.node_ids.size()) * 8 +
                                      (in.values.size() + in.features.size() + in.labels.size() + in.node_weights.size()) * 4;
    PrepareRankCost cost;
    PrepareOptions opt;
    const PreparedSlice out = prepare_graph_distributed(in, opt, c, 0, &cost);
    EXPECT_GE(cost.peak_array_bytes, input_bytes);
    EXPECT_GE(cost.peak_array_bytes, (out.a1.indices.size() + out.graph.indices.size()) * 4);
  });
}

}  // namespace
}  // namespace plexus
