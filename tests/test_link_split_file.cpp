// A format v1 file's own link split (docs/format-v1.md, "Link splits"; io/format_v1/link_split.cpp):
// written beside a graph of the training links, read back exactly, checked against the graph
// (validate_link_split), and trained on as the same split drawn in memory.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "link_graphs.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/io.hpp"
#include "plexus/link_split.hpp"
#include "input_errors.hpp"
#include "scratch_dir.hpp"

namespace plexus {
namespace {

GraphData planted(index_t nodes, std::uint64_t seed) { return generate_sbm(test::link_sbm(nodes, seed)); }

using test::input_error_message;

bool same(const NodePairList& a, const NodePairList& b) { return a.u == b.u && a.v == b.v; }

TEST(LinkSplitFile, WrittenAndReadBackExactly) {
  testing::ScratchDir dir;
  GraphData g = planted(60, 3);
  const LinkSplit s = random_link_split(g, 0.1, 0.2, 7);
  ASSERT_GT(s.val_pos.size(), 0u);
  const std::string path = dir.file("split.h5"), plain = dir.file("plain.h5");
  write_graph_h5(g, NodeNames{}, s, path);
  write_graph_h5(g, plain);
  EXPECT_TRUE(read_graph_info_h5(path).link_split);
  EXPECT_FALSE(read_graph_info_h5(plain).link_split);
  EXPECT_FALSE(read_link_split_h5(plain).has_value());
  const std::optional<LinkSplit> back = read_link_split_h5(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(same(back->val_pos, s.val_pos) && same(back->val_neg, s.val_neg) && same(back->test_pos, s.test_pos) &&
              same(back->test_neg, s.test_neg));
  const GraphData read = read_graph_h5(path);  // the graph: the training links only
  EXPECT_EQ(read.indices, g.indices);
}

TEST(LinkSplitFile, ASplitThatContradictsTheGraphIsRefused) {
  GraphData g = planted(60, 4);
  const LinkSplit s = random_link_split(g, 0.1, 0.1, 2);
  EXPECT_EQ(input_error_message([&] { validate_link_split(g, s, "f.h5"); }), "");
  const auto refused = [&](auto change, const std::string& says) {
    LinkSplit bad = s;
    change(bad);
    const std::string m = input_error_message([&] { validate_link_split(g, bad, "f.h5"); });
    EXPECT_NE(m.find(says), std::string::npos) << m;
    testing::ScratchDir dir;  // nothing is written either (no file, no temporary)
    EXPECT_NE(input_error_message([&] { write_graph_h5(g, NodeNames{}, bad, dir.file("x.h5")); }).find(says), std::string::npos);
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  };
  const std::int64_t u = 0, v = g.indices[static_cast<std::size_t>(g.indptr[0])];  // an edge of the graph
  refused([&](LinkSplit& b) { b.val_pos.u[0] = u, b.val_pos.v[0] = v; }, "/links/val_pos: pair 1 (0, " + std::to_string(v) + ") is an edge of /graph: message passing");
  refused([&](LinkSplit& b) { b.test_pos.u[0] = v, b.test_pos.v[0] = u; }, "/links/test_pos: pair 1");  // the other direction
  refused([&](LinkSplit& b) { b.test_neg.u[1] = u, b.test_neg.v[1] = v; }, "/links/test_neg: pair 2 (0, " + std::to_string(v) + ") is an edge of /graph: a negative");
  refused([&](LinkSplit& b) { b.val_neg.u[0] = b.test_pos.v[0], b.val_neg.v[0] = b.test_pos.u[0]; }, "/links/val_neg: pair 1");
  refused([&](LinkSplit& b) { b.val_neg.v[0] = 60; }, "names a node outside [0, 60)");
  refused([&](LinkSplit& b) { b.val_pos.u[0] = -1; }, "names a node outside [0, 60)");
  refused([&](LinkSplit& b) { b.test_neg.v.pop_back(); }, "/links/test_neg:");
}

// The link task on a file's split trains exactly as on the same split drawn in memory (the
// split of the configuration's seed): the same losses and ROC-AUCs, bit for bit.
TEST(LinkSplitFile, TrainsAsTheSameSplitDrawnInMemory) {
  const GraphData g = planted(80, 5);
  TrainConfig c;
  c.task = GnnTask::Link;
  c.hidden = 12;
  c.link.embedding_width = 6;
  c.epochs = 6;
  c.dropout = 0.2f;
  c.seed = 11;
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer drawn(g, c, *be, *grid);
  GnnTrainingData d;
  d.order.in_memory = true;
  d.whole = g;
  d.held_out = random_link_split(d.whole, c.link.val, c.link.test, c.seed);
  GnnTrainer given(std::move(d), c, *be, *grid);
  for (int e = 0; e < c.epochs; ++e) {
    const EpochMetrics a = drawn.epoch(), b = given.epoch();
    EXPECT_EQ(a.loss, b.loss) << e;
    EXPECT_EQ(a.val_auc, b.val_auc) << e;
    EXPECT_EQ(a.test_auc, b.test_auc) << e;
  }
  // A split that leaks a held-out link into the graph is refused by the trainer too.
  GnnTrainingData leak;
  leak.order.in_memory = true;
  leak.whole = g;
  leak.held_out = random_link_split(leak.whole, c.link.val, c.link.test, c.seed);
  leak.whole = g;  // the held-out links back in the graph
  EXPECT_THROW(GnnTrainer(std::move(leak), c, *be, *grid), InputError);
}

}  // namespace
}  // namespace plexus
