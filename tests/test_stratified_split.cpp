// What `--split TRAIN,VAL,TEST` (stratified_split, include/plexus/convert.hpp) does with every
// node, for several fraction sets — summing to 1 and to less (the leftover nodes are in no
// split: held-out nodes must not leak into the reported test accuracy) — and classes of uneven
// sizes, down to one node:
//  - every node is in at most one split, an unlabelled one in none, whatever the masks held;
//  - class c's n_c nodes give round(n_c·train) train nodes, round(n_c·(train + val)) train and
//    val nodes, round(n_c·(train + val + test)) nodes in some split; the rest in none;
//  - which nodes is random (the seed's Philox order), not the first ones of the class.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "plexus/convert.hpp"
#include "plexus/graph.hpp"

namespace plexus {
namespace {

// Classes of `sizes` nodes plus `unlabelled` nodes, in a shuffled node order, every mask set
// to 1 (the split must overwrite what was there).
GraphData labelled_graph(const std::vector<int>& sizes, int unlabelled) {
  std::vector<std::int32_t> labels(static_cast<std::size_t>(unlabelled), -1);
  for (std::size_t c = 0; c < sizes.size(); ++c)
    labels.insert(labels.end(), static_cast<std::size_t>(sizes[c]), static_cast<std::int32_t>(c));
  std::mt19937 rng(3);
  std::shuffle(labels.begin(), labels.end(), rng);
  GraphData g;
  g.num_nodes = static_cast<index_t>(labels.size());
  g.num_classes = static_cast<std::int32_t>(sizes.size());
  g.labels = labels;
  g.train_mask.assign(labels.size(), 1);
  g.val_mask = g.test_mask = g.train_mask;
  return g;
}

std::int64_t rounded(double x) { return std::llround(x); }  // half away from zero, as documented

TEST(StratifiedSplit, EveryNodeInAtMostOneSplitWithTheDocumentedCountsAndTheLeftoverInNone) {
  const std::vector<int> sizes{1, 2, 3, 7, 10, 33, 101};
  const char* fraction_sets[] = {"0.6,0.2,0.2", "0.5,0.2,0.1", "0.3,0.3,0.3", "1,0,0",  "0.05,0.05,0.05",
                                 "0.8,0,0.1",   "0.25,0.5,0.25", "0.1,0.1,0", "0.5,0,0", "0.34,0.33,0.33"};
  for (const char* text : fraction_sets) {
    SCOPED_TRACE(std::string("--split ") + text);
    const SplitFractions f = parse_split_fractions(text);
    GraphData g = labelled_graph(sizes, 17);
    stratified_split(g, f, 5);
    // Per class: nodes in train, val, test and none.
    std::vector<std::array<std::int64_t, 4>> got(sizes.size(), std::array<std::int64_t, 4>{});
    for (std::size_t i = 0; i < g.labels.size(); ++i) {
      const int in = g.train_mask[i] + g.val_mask[i] + g.test_mask[i];
      ASSERT_LE(in, 1) << "node " << i << " is in " << in << " splits";
      if (g.labels[i] < 0) {
        EXPECT_EQ(in, 0) << "unlabelled node " << i << " is in a split";
        continue;
      }
      const int split = g.train_mask[i] ? 0 : g.val_mask[i] ? 1 : g.test_mask[i] ? 2 : 3;
      ++got[static_cast<std::size_t>(g.labels[i])][static_cast<std::size_t>(split)];
    }
    for (std::size_t c = 0; c < sizes.size(); ++c) {
      SCOPED_TRACE("class " + std::to_string(c) + " of " + std::to_string(sizes[c]) + " nodes");
      const double n = sizes[c];
      const std::int64_t train_end = rounded(n * f.train), val_end = rounded(n * (f.train + f.val)),
                         test_end = rounded(n * (f.train + f.val + f.test));
      EXPECT_EQ(got[c][0], train_end);
      EXPECT_EQ(got[c][1], val_end - train_end);
      EXPECT_EQ(got[c][2], test_end - val_end);
      EXPECT_EQ(got[c][3], sizes[c] - test_end) << "left over";
    }
  }
}

// The leftover of a sum below 1 is a random part of each class, and a seed's split is the same
// every time: the nodes in no split differ between seeds, not the counts.
TEST(StratifiedSplit, TheLeftoverIsARandomPartOfEachClassFixedBySeed) {
  const SplitFractions f = parse_split_fractions("0.5,0.2,0.1");
  GraphData a = labelled_graph({200, 120}, 0), b = a, again = a;
  stratified_split(a, f, 1);
  stratified_split(b, f, 2);
  stratified_split(again, f, 1);
  EXPECT_EQ(a.train_mask, again.train_mask);
  EXPECT_EQ(a.val_mask, again.val_mask);
  EXPECT_EQ(a.test_mask, again.test_mask);
  const auto none = [](const GraphData& g) {
    std::vector<int> v;
    for (std::size_t i = 0; i < g.labels.size(); ++i)
      v.push_back(!g.train_mask[i] && !g.val_mask[i] && !g.test_mask[i]);
    return v;
  };
  const std::vector<int> none_a = none(a), none_b = none(b);
  EXPECT_NE(none_a, none_b);
  int left_a = 0, left_b = 0;
  for (std::size_t i = 0; i < none_a.size(); ++i) {
    left_a += none_a[i];
    left_b += none_b[i];
  }
  EXPECT_EQ(left_a, 40 + 24);  // 20 % of each class
  EXPECT_EQ(left_b, left_a);
}

}  // namespace
}  // namespace plexus
