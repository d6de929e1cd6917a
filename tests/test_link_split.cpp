// A random split of a graph's edges for link prediction (random_link_split,
// include/plexus/convert.hpp), as PyG's RandomLinkSplit: the held-out links leave the graph in
// both directions and nothing else does, each split has as many negatives as links, negatives
// are distinct non-edges, and a seed gives the same split.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "plexus/convert.hpp"
#include "plexus/error.hpp"

namespace plexus {
namespace {

using Link = std::pair<std::int64_t, std::int64_t>;

// The graph's links: (u, v) per stored edge without self-loops, an undirected one as u < v.
std::multiset<Link> links_of(const GraphData& g) {
  std::multiset<Link> out;
  for (index_t u = 0; u < g.num_nodes; ++u)
    for (index_t e = g.indptr[static_cast<std::size_t>(u)]; e < g.indptr[static_cast<std::size_t>(u) + 1]; ++e) {
      const index_t v = g.indices[static_cast<std::size_t>(e)];
      if (u != v) out.insert(g.directed || u < v ? Link{u, v} : Link{v, u});
    }
  return out;
}
std::vector<Link> pairs_of(const NodePairList& p) {
  std::vector<Link> out;
  for (std::size_t k = 0; k < p.size(); ++k) out.emplace_back(p.u[k], p.v[k]);
  return out;
}

GraphData sbm() {
  SbmOptions o;
  o.nodes = 400;
  o.classes = 4;
  o.avg_degree = 8;
  o.features = 3;
  return generate_sbm(o);
}

TEST(LinkSplit, HeldOutLinksLeaveTheGraphBothWaysAndNegativesAreDistinctNonEdges) {
  GraphData g = sbm();
  const std::multiset<Link> before = links_of(g);
  const std::set<Link> distinct(before.begin(), before.end());
  const auto links = static_cast<double>(distinct.size());
  ASSERT_GT(links, 1000);
  const index_t nnz_before = g.num_edges();
  const LinkSplit s = random_link_split(g, 0.05, 0.1, 7);
  EXPECT_EQ(s.val_pos.size(), static_cast<std::size_t>(std::floor(0.05 * links)));
  EXPECT_EQ(s.test_pos.size(), static_cast<std::size_t>(std::floor(0.1 * links)));
  EXPECT_EQ(s.val_neg.size(), s.val_pos.size());
  EXPECT_EQ(s.test_neg.size(), s.test_pos.size());

  std::set<Link> held;
  for (const NodePairList* p : {&s.val_pos, &s.test_pos})
    for (const Link& l : pairs_of(*p)) {
      EXPECT_LT(l.first, l.second);
      EXPECT_TRUE(distinct.count(l)) << l.first << "-" << l.second << " is no edge of the input";
      EXPECT_TRUE(held.insert(l).second) << "held out twice";
    }
  // The graph keeps every other link, both directions of each (the SBM stores both).
  const std::multiset<Link> after = links_of(g);
  std::multiset<Link> want;
  for (const Link& l : before)
    if (!held.count(l)) want.insert(l);
  EXPECT_EQ(after, want);
  EXPECT_EQ(g.num_edges(), nnz_before - 2 * static_cast<index_t>(held.size()));
  EXPECT_EQ(static_cast<index_t>(g.indptr.size()), g.num_nodes + 1);

  std::set<Link> negatives;
  for (const NodePairList* p : {&s.val_neg, &s.test_neg})
    for (const Link& l : pairs_of(*p)) {
      EXPECT_LT(l.first, l.second);
      EXPECT_GE(l.first, 0);
      EXPECT_LT(l.second, g.num_nodes);
      EXPECT_FALSE(distinct.count(l)) << "a negative that is an edge";
      EXPECT_TRUE(negatives.insert(l).second) << "a negative drawn twice";
    }
}

TEST(LinkSplit, ASeedGivesTheSameSplitAndAnotherAnother) {
  GraphData a = sbm(), b = sbm(), c = sbm();
  const LinkSplit sa = random_link_split(a, 0.1, 0.1, 3), sb = random_link_split(b, 0.1, 0.1, 3),
                  sc = random_link_split(c, 0.1, 0.1, 4);
  EXPECT_EQ(sa.test_pos.u, sb.test_pos.u);
  EXPECT_EQ(sa.val_neg.v, sb.val_neg.v);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_NE(pairs_of(sa.test_pos), pairs_of(sc.test_pos));
  EXPECT_NE(pairs_of(sa.val_neg), pairs_of(sc.val_neg));
}

TEST(LinkSplit, DirectedLinksKeepTheirDirection) {
  GraphData g;
  g.num_nodes = 6;
  g.directed = true;
  // 0→1, 1→0, 1→2, 2→3, 3→3 (a self-loop stays), 4→5, 5→0; weighted.
  g.indptr = {0, 1, 3, 4, 5, 6, 7};
  g.indices = {1, 0, 2, 3, 3, 5, 0};
  g.values = {1, 2, 3, 4, 5, 6, 7};
  const LinkSplit s = random_link_split(g, 0.34, 0.34, 1);  // 6 links: 2 and 2 held out
  ASSERT_EQ(s.val_pos.size(), 2u);
  ASSERT_EQ(s.test_pos.size(), 2u);
  EXPECT_EQ(g.num_edges(), 3);
  EXPECT_EQ(g.values.size(), 3u);
  std::set<Link> kept;
  for (index_t u = 0; u < 6; ++u)
    for (index_t e = g.indptr[static_cast<std::size_t>(u)]; e < g.indptr[static_cast<std::size_t>(u) + 1]; ++e)
      kept.insert({u, g.indices[static_cast<std::size_t>(e)]});
  EXPECT_TRUE(kept.count({3, 3}));
  for (const NodePairList* p : {&s.val_pos, &s.test_pos})
    for (const Link& l : pairs_of(*p)) EXPECT_FALSE(kept.count(l));
  for (const NodePairList* p : {&s.val_neg, &s.test_neg})
    for (const Link& l : pairs_of(*p)) {
      EXPECT_NE(l.first, l.second);
      const std::set<Link> input{{0, 1}, {1, 0}, {1, 2}, {2, 3}, {4, 5}, {5, 0}};
      EXPECT_FALSE(input.count(l));
    }
}

TEST(LinkSplit, BadFractionsAndGraphsTooDenseForNegativesAreRefused) {
  GraphData g = sbm();
  EXPECT_THROW(random_link_split(g, -0.1, 0.1, 1), InputError);
  EXPECT_THROW(random_link_split(g, 0.5, 0.5, 1), InputError);
  EXPECT_THROW(random_link_split(g, 0.1, 1.0, 1), InputError);
  // K4: 6 links, no non-edge for the negatives.
  GraphData k4;
  k4.num_nodes = 4;
  k4.indptr = {0, 3, 6, 9, 12};
  k4.indices = {1, 2, 3, 0, 2, 3, 0, 1, 3, 0, 1, 2};
  EXPECT_THROW(random_link_split(k4, 0.2, 0.2, 1), InputError);
}

// Given held-out links (an edge list's split column): exactly those leave the graph, both ways
// when undirected, each written smaller node first, with as many distinct non-edge negatives as
// random_link_split draws; a random split's own links given back give the random split.
TEST(LinkSplit, GivenLinksAreHeldOutAsGiven) {
  const GraphData g = sbm();
  GraphData drawn = g;
  const LinkSplit want = random_link_split(drawn, 0.1, 0.05, 3);
  GraphData given = g;
  NodePairList val = want.val_pos, test = want.test_pos;
  std::swap(val.u[0], val.v[0]);  // the other direction names the same link
  const LinkSplit got = given_link_split(given, val, test, 3);
  EXPECT_EQ(pairs_of(got.val_pos), pairs_of(want.val_pos));
  EXPECT_EQ(pairs_of(got.test_pos), pairs_of(want.test_pos));
  EXPECT_EQ(pairs_of(got.val_neg), pairs_of(want.val_neg));
  EXPECT_EQ(pairs_of(got.test_neg), pairs_of(want.test_neg));
  EXPECT_EQ(given.indptr, drawn.indptr);
  EXPECT_EQ(given.indices, drawn.indices);
  const std::multiset<Link> before = links_of(g), after = links_of(given);
  EXPECT_EQ(before.size() - after.size(), 2 * (want.val_pos.size() + want.test_pos.size()));
}

TEST(LinkSplit, GivenPairsThatAreNoLinkOrTwiceAreRefused) {
  const GraphData g = sbm();
  const Link e{0, g.indices[static_cast<std::size_t>(g.indptr[0])]};  // a link of the graph
  std::int64_t non = 1;  // a node that is no neighbour of node 0
  while (links_of(g).count(Link{0, non}) || links_of(g).count(Link{non, 0})) ++non;
  const auto refused = [&](NodePairList val, NodePairList test, const std::string& says) {
    GraphData copy = g;
    try {
      given_link_split(copy, val, test, 1);
      ADD_FAILURE() << "accepted; wanted " << says;
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find(says), std::string::npos) << err.what();
    }
  };
  refused({{0}, {non}}, {}, "validation link 1 (0, " + std::to_string(non) + ") is not a link");
  refused({}, {{3}, {3}}, "test link 1 (3, 3) is not a link");
  refused({{e.first}, {e.second}}, {{e.second}, {e.first}}, "test link 1");  // twice (the other way round)
  refused({{0}, {400}}, {}, "names a node outside [0, 400)");
}

}  // namespace
}  // namespace plexus
