#pragma once
// Two GraphData equal member by member, each member its own assertion (so a failure names it).
#include <gtest/gtest.h>

#include "plexus/graph.hpp"

namespace plexus::test {

inline void expect_same_graph(const GraphData& a, const GraphData& b) {
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(a.num_features, b.num_features);
  EXPECT_EQ(a.num_classes, b.num_classes);
  EXPECT_EQ(a.directed, b.directed);
  EXPECT_EQ(a.indptr, b.indptr);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.num_edge_features, b.num_edge_features);
  EXPECT_EQ(a.edge_features, b.edge_features);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.node_weights, b.node_weights);
  EXPECT_EQ(a.train_mask, b.train_mask);
  EXPECT_EQ(a.val_mask, b.val_mask);
  EXPECT_EQ(a.test_mask, b.test_mask);
  EXPECT_EQ(a.node_ids, b.node_ids);
}

}  // namespace plexus::test
