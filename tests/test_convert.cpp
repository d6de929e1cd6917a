// Converters: edge lists, MatrixMarket, OGB raw layout (fixtures in tests/fixtures/), and their
// error reporting on bad input ("<file>:<line>: <what>").
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "input_errors.hpp"
#include "scratch_dir.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/progress.hpp"

using plexus::EdgeListOptions;
using plexus::GraphData;
using plexus::index_t;
using plexus::InputError;

namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) { return std::string(PLEXUS_TEST_DIR) + "/fixtures/" + name; }

// A scratch folder per process, suite and test (tests/scratch_dir.hpp).
using TempDir = plexus::testing::ScratchDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

using plexus::test::expect_input_error;
const auto expect_error = expect_input_error;

std::vector<index_t> row(const GraphData& g, index_t i) {
  return {g.indices.begin() + g.indptr[i], g.indices.begin() + g.indptr[i + 1]};
}
std::vector<float> row_values(const GraphData& g, index_t i) {
  return {g.values.begin() + g.indptr[i], g.values.begin() + g.indptr[i + 1]};
}

void expect_unlabelled(const GraphData& g) {
  EXPECT_EQ(g.num_classes, 1);
  for (index_t i = 0; i < g.num_nodes; ++i) {
    EXPECT_EQ(g.labels[i], -1);
    EXPECT_EQ(g.train_mask[i] + g.val_mask[i] + g.test_mask[i], 0);
  }
}

}  // namespace

// ---- edge lists ------------------------------------------------------------------------------

TEST(EdgeList, SnapCommentsRelabelSymmetrize) {
  const GraphData g = plexus::read_edge_list(fixture("edges_snap.txt"));
  // ids 10, 20, 30, 40, 50 -> 0..4; the self-loop 40-40 and the duplicate 20-10 are dropped.
  ASSERT_EQ(g.num_nodes, 5);
  EXPECT_FALSE(g.directed);
  EXPECT_EQ(g.indptr, (std::vector<index_t>{0, 3, 5, 8, 9, 10}));
  EXPECT_EQ(row(g, 0), (std::vector<index_t>{1, 2, 3}));
  EXPECT_EQ(row(g, 1), (std::vector<index_t>{0, 2}));
  EXPECT_EQ(row(g, 2), (std::vector<index_t>{0, 1, 4}));
  EXPECT_EQ(row(g, 3), (std::vector<index_t>{0}));
  EXPECT_EQ(row(g, 4), (std::vector<index_t>{2}));
  EXPECT_TRUE(g.values.empty());
  // Default features: one column, log(1 + degree).
  ASSERT_EQ(g.num_features, 1);
  EXPECT_FLOAT_EQ(g.features[0], std::log1p(3.0f));
  EXPECT_FLOAT_EQ(g.features[4], std::log1p(1.0f));
  expect_unlabelled(g);
}

// A long read reports how far it has come (the CLI's bar and ETA): bytes of the file, rising
// to its size.
TEST(EdgeList, ReportsProgressUpToTheFileSize) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 40000; ++i) text += std::to_string(i) + " " + std::to_string(i + 1) + "\n";
  const std::string path = dir.write("big.txt", text);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
  const auto previous =
      plexus::set_progress_reporter([&](std::uint64_t done, std::uint64_t total) { seen.emplace_back(done, total); });
  const GraphData g = plexus::read_edge_list(path);
  plexus::set_progress_reporter(previous);
  EXPECT_EQ(g.num_nodes, 40001);
  ASSERT_GE(seen.size(), 3u) << "a file of several read buffers";
  for (std::size_t k = 0; k < seen.size(); ++k) {
    EXPECT_EQ(seen[k].second, text.size());
    if (k > 0) {
      EXPECT_GE(seen[k].first, seen[k - 1].first);
    }
  }
  EXPECT_LT(seen.front().first, text.size());
  EXPECT_EQ(seen.back().first, text.size());
}

TEST(EdgeList, GzipIsDetectedByMagicNotName) {
  const GraphData plain = plexus::read_edge_list(fixture("edges_snap.txt"));
  for (const char* name : {"edges_snap.txt.gz", "edges_gzip_named.txt"}) {
    const GraphData g = plexus::read_edge_list(fixture(name));
    EXPECT_EQ(g.indptr, plain.indptr) << name;
    EXPECT_EQ(g.indices, plain.indices) << name;
  }
}

TEST(EdgeList, Directed) {
  EdgeListOptions o;
  o.symmetrize = false;
  const GraphData g = plexus::read_edge_list(fixture("edges_snap.txt"), o);
  EXPECT_TRUE(g.directed);
  EXPECT_EQ(row(g, 0), (std::vector<index_t>{1, 3}));
  EXPECT_EQ(row(g, 1), (std::vector<index_t>{0, 2}));
  EXPECT_EQ(row(g, 2), (std::vector<index_t>{0}));
  EXPECT_EQ(row(g, 3), (std::vector<index_t>{}));
  EXPECT_EQ(row(g, 4), (std::vector<index_t>{2}));
}

TEST(EdgeList, WeightsCommaSeparatedFirstDuplicateWins) {
  const GraphData g = plexus::read_edge_list(fixture("edges_weighted.csv"));
  ASSERT_EQ(g.num_nodes, 3);
  EXPECT_EQ(row(g, 0), (std::vector<index_t>{1, 2}));
  EXPECT_EQ(row_values(g, 0), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_EQ(row_values(g, 1), (std::vector<float>{0.5f, 2.0f}));
  EXPECT_EQ(row_values(g, 2), (std::vector<float>{1.5f, 2.0f}));
}

TEST(EdgeList, DenseIdsKeepIsolatedNodes) {
  EdgeListOptions o;
  o.num_nodes = 5;
  o.base = 1;
  const GraphData g = plexus::read_edge_list(fixture("edges_onebased.txt"), o);
  ASSERT_EQ(g.num_nodes, 5);
  EXPECT_EQ(g.indptr, (std::vector<index_t>{0, 1, 3, 4, 4, 4}));
}

TEST(EdgeList, RandomFeaturesAreDeterministic) {
  EdgeListOptions o;
  o.features = plexus::SyntheticFeatures::kRandom;
  o.feature_width = 6;
  o.seed = 3;
  const GraphData a = plexus::read_edge_list(fixture("edges_snap.txt"), o);
  const GraphData b = plexus::read_edge_list(fixture("edges_snap.txt.gz"), o);
  ASSERT_EQ(a.num_features, 6);
  EXPECT_EQ(a.features, b.features);
  for (const float x : a.features) {
    EXPECT_GE(x, 0.0f);
    EXPECT_LT(x, 1.0f);
  }
}

TEST(EdgeList, BadInput) {
  TempDir t;
  const std::string bad = fixture("bad_token.txt");
  expect_error([&] { plexus::read_edge_list(bad); }, bad + ":3", "expected an integer node id, got 'x2'");
  const std::string neg = t.write("neg.txt", "0 1\n# c\n-4 2\n");
  expect_error([&] { plexus::read_edge_list(neg); }, neg + ":3", "negative node id -4");
  const std::string few = t.write("few.txt", "0 1\n1\n");
  expect_error([&] { plexus::read_edge_list(few); }, few + ":2", "expected 2 or 3 columns");
  const std::string many = t.write("many.txt", "0 1 1 1\n");
  expect_error([&] { plexus::read_edge_list(many); }, many + ":1", "expected 2 or 3 columns");
  const std::string mixed = t.write("mixed.txt", "0 1 0.5\n1 2\n");
  expect_error([&] { plexus::read_edge_list(mixed); }, mixed + ":2", "expected 3 columns like the first edge line");
  const std::string nanw = t.write("nanw.txt", "0 1 nan\n");
  expect_error([&] { plexus::read_edge_list(nanw); }, nanw + ":1", "non-finite edge weight");
  const std::string big = t.write("big.txt", "0 1\n1 99999999999999999999999\n");
  expect_error([&] { plexus::read_edge_list(big); }, big + ":2", "node id out of range");
  EdgeListOptions o;
  o.num_nodes = 3;
  const std::string range = t.write("range.txt", "0 1\r\n1 2\r\n2 3\r\n");
  expect_error([&] { plexus::read_edge_list(range, o); }, range + ":3", "node id 3 out of range: EdgeListOptions.num_nodes 3");
  const std::string empty = t.write("empty.txt", "# nothing\n\n");
  expect_error([&] { plexus::read_edge_list(empty); }, empty, "no edges");
  expect_error([&] { plexus::read_edge_list(t.path().string() + "/nope.txt"); }, t.path().string() + "/nope.txt",
               "no such file");
  o.base = 1;
  const std::string zero = t.write("zero.txt", "1 2\n0 2\n");
  expect_error([&] { plexus::read_edge_list(zero, o); }, zero + ":2", "below the first id 1");
}

// A split column (EdgeListOptions::held_out_*): the last column of every edge line, its val
// (or valid) and test lines listed by node index (ids relabelled), each link once; the graph read
// holds every edge; a link in two splits, a tag that is none and a missing column are refused.
TEST(EdgeList, SplitColumn) {
  TempDir t;
  plexus::NodePairList val, test;
  EdgeListOptions o;
  o.held_out_val = &val;
  o.held_out_test = &test;
  const std::string path =
      t.write("split.txt", "# u v split\n10 20 train\n20 30 VAL\n30 40 test\n40 10 valid\n30 20 val\n50 10 train\n");
  std::vector<std::int64_t> ids;
  const GraphData g = plexus::read_edge_list(path, o, ids);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{10, 20, 30, 40, 50}));
  EXPECT_EQ(g.num_edges(), 10);  // every link (20-30 twice: one), both ways
  EXPECT_EQ(val.u, (std::vector<std::int64_t>{1, 3}));  // 20-30 (its second line the same link), 40-10
  EXPECT_EQ(val.v, (std::vector<std::int64_t>{2, 0}));
  EXPECT_EQ(test.u, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(test.v, (std::vector<std::int64_t>{3}));
  const std::string weighted = t.write("w.txt", "1 2 0.5 train\n2 3 1.5 test\n");
  const GraphData w = plexus::read_edge_list(weighted, o);
  EXPECT_EQ(w.values.size(), 4u);
  EXPECT_EQ(test.size(), 1u);
  const std::string twice = t.write("twice.txt", "1 2 train\n2 1 test\n");
  expect_error([&] { plexus::read_edge_list(twice, o); }, twice, "is in two splits (train and test)");
  const std::string tag = t.write("tag.txt", "1 2 train\n2 3 later\n");
  expect_error([&] { plexus::read_edge_list(tag, o); }, tag + ":2", "expected a split (train, val, valid or test)");
  const std::string none = t.write("none.txt", "1 2\n");
  expect_error([&] { plexus::read_edge_list(none, o); }, none + ":1", "expected 3 or 4 columns (u v [weight] split)");
  const std::string mixed = t.write("mixed.txt", "1 2 0.5 train\n2 3 test\n");
  expect_error([&] { plexus::read_edge_list(mixed, o); }, mixed + ":2", "expected 4 columns like the first edge line");
}

TEST(EdgeList, TruncatedAndCorruptGzip) {
  TempDir t;
  const std::string gz = slurp(fixture("edges_snap.txt.gz"));
  ASSERT_GT(gz.size(), 40u);
  const std::string cut = t.write("cut.txt.gz", gz.substr(0, gz.size() - 12));  // no trailer
  try {
    plexus::read_edge_list(cut);
    ADD_FAILURE() << "truncated gzip accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().rfind(cut + ":", 0), 0u) << e.message();
    EXPECT_NE(std::string(e.what()).find("truncated gzip"), std::string::npos) << e.message();
  }
  std::string flipped = gz;
  flipped[gz.size() - 6] ^= 0x55;  // CRC/length trailer mismatch
  const std::string bad = t.write("crc.txt.gz", flipped);
  try {
    plexus::read_edge_list(bad);
    ADD_FAILURE() << "corrupt gzip accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().rfind(bad + ":", 0), 0u) << e.message();
    EXPECT_NE(std::string(e.what()).find("gzip"), std::string::npos) << e.message();
  }
}

// ---- MatrixMarket ----------------------------------------------------------------------------

TEST(MatrixMarket, SymmetricRealExpands) {
  const GraphData g = plexus::read_matrix_market(fixture("graph_symmetric.mtx"));
  ASSERT_EQ(g.num_nodes, 4);
  EXPECT_FALSE(g.directed);
  EXPECT_EQ(row(g, 0), (std::vector<index_t>{1, 3}));
  EXPECT_EQ(row_values(g, 0), (std::vector<float>{1.5f, -0.5f}));
  EXPECT_EQ(row(g, 1), (std::vector<index_t>{0, 2}));
  EXPECT_EQ(row_values(g, 1), (std::vector<float>{1.5f, 2.0f}));
  EXPECT_EQ(row(g, 2), (std::vector<index_t>{1}));  // the diagonal entry (self-loop) is dropped
  EXPECT_EQ(row(g, 3), (std::vector<index_t>{0}));
  expect_unlabelled(g);
}

TEST(MatrixMarket, GeneralPatternDirectedOrSymmetrized) {
  EdgeListOptions o;
  o.symmetrize = false;
  const GraphData d = plexus::read_matrix_market(fixture("graph_general_pattern.mtx"), o);
  EXPECT_TRUE(d.directed);
  EXPECT_EQ(d.indptr, (std::vector<index_t>{0, 1, 2, 3}));
  EXPECT_EQ(d.indices, (std::vector<index_t>{1, 2, 0}));
  EXPECT_TRUE(d.values.empty());
  const GraphData s = plexus::read_matrix_market(fixture("graph_general_pattern.mtx"));
  EXPECT_FALSE(s.directed);
  EXPECT_EQ(s.num_edges(), 6);
}

TEST(MatrixMarket, BadInput) {
  TempDir t;
  const std::string hdr = fixture("bad_header.mtx");
  expect_error([&] { plexus::read_matrix_market(hdr); }, hdr + ":1", "unsupported format 'array'");
  const std::string cnt = fixture("bad_count.mtx");
  expect_error([&] { plexus::read_matrix_market(cnt); }, cnt + ":5", "expected 4 entries, found 3");
  const std::string nohdr = t.write("nohdr.mtx", "3 3 1\n1 2\n");
  expect_error([&] { plexus::read_matrix_market(nohdr); }, nohdr + ":1", "expected the header");
  const std::string extra = t.write("extra.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n2 3\n");
  expect_error([&] { plexus::read_matrix_market(extra); }, extra + ":4", "more entries than the 1 announced");
  const std::string rect = t.write("rect.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 2\n");
  expect_error([&] { plexus::read_matrix_market(rect); }, rect + ":2", "expected a square adjacency matrix");
  const std::string oob = t.write("oob.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1\n0 3 1\n");
  expect_error([&] { plexus::read_matrix_market(oob); }, oob + ":4", "row index 0 out of range [1, 3]");
  const std::string cols = t.write("cols.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2\n");
  expect_error([&] { plexus::read_matrix_market(cols); }, cols + ":3", "expected 3 columns");
  const std::string cplx = t.write("cplx.mtx", "%%MatrixMarket matrix coordinate complex general\n");
  expect_error([&] { plexus::read_matrix_market(cplx); }, cplx + ":1", "unsupported field 'complex'");
  const std::string nosize = t.write("nosize.mtx", "%%MatrixMarket matrix coordinate real general\n% only comments\n");
  expect_error([&] { plexus::read_matrix_market(nosize); }, nosize, "missing the size line");
}

// ---- OGB -------------------------------------------------------------------------------------

namespace {
// A copy of tests/fixtures/ogb_tiny in a scratch directory, with `file` (relative) replaced.
std::string ogb_copy(const TempDir& t, const std::string& file, const std::string& content) {
  const fs::path dst = t.path() / "ogb";
  fs::copy(fixture("ogb_tiny"), dst, fs::copy_options::recursive);
  if (!file.empty()) {
    fs::remove(dst / file);
    t.write("ogb/" + file, content);  // plain text is accepted under a .gz name too
  }
  return dst.string();
}
}  // namespace

TEST(Ogb, TinyDataset) {
  const GraphData g = plexus::read_ogb(fixture("ogb_tiny"));
  ASSERT_EQ(g.num_nodes, 5);
  EXPECT_FALSE(g.directed);
  EXPECT_EQ(row(g, 0), (std::vector<index_t>{1, 3, 4}));
  EXPECT_EQ(row(g, 4), (std::vector<index_t>{0}));
  ASSERT_EQ(g.num_features, 3);
  EXPECT_FLOAT_EQ(g.features[3], -1.0f);
  EXPECT_FLOAT_EQ(g.features[5], 0.2f);
  EXPECT_EQ(g.labels, (std::vector<std::int32_t>{0, 2, 1, -1, 2}));
  EXPECT_EQ(g.num_classes, 3);
  EXPECT_EQ(g.train_mask, (std::vector<std::uint8_t>{1, 1, 0, 0, 0}));
  EXPECT_EQ(g.val_mask, (std::vector<std::uint8_t>{0, 0, 1, 0, 0}));
  EXPECT_EQ(g.test_mask, (std::vector<std::uint8_t>{0, 0, 0, 0, 1}));

  plexus::OgbOptions o;
  o.symmetrize = false;
  o.split = "time";
  const GraphData d = plexus::read_ogb(fixture("ogb_tiny"), o);
  EXPECT_TRUE(d.directed);
  EXPECT_EQ(d.num_edges(), 5);
}

TEST(Ogb, BadInput) {
  {
    TempDir t;
    const std::string dir = ogb_copy(t, "raw/node-feat.csv.gz", "1,2,3\n4,5\n1,1,1\n1,1,1\n1,1,1\n");
    expect_error([&] { plexus::read_ogb(dir); }, dir + "/raw/node-feat.csv.gz:2", "expected 3 feature columns");
  }
  {
    TempDir t;
    const std::string dir = ogb_copy(t, "raw/node-label.csv.gz", "0\n1\n2\n");
    expect_error([&] { plexus::read_ogb(dir); }, dir + "/raw/node-label.csv.gz", "has 3 rows, expected 5");
  }
  {
    TempDir t;
    const std::string dir = ogb_copy(t, "raw/node-label.csv.gz", "0\n1\n2\n1\n1\n0\n");
    expect_error([&] { plexus::read_ogb(dir); }, dir + "/raw/node-label.csv.gz:6", "more than 5 rows");
  }
  {
    TempDir t;
    const std::string dir = ogb_copy(t, "split/time/valid.csv.gz", "2\n5\n");
    expect_error([&] { plexus::read_ogb(dir); }, dir + "/split/time/valid.csv.gz:2", "node id 5 out of range [0, 5)");
  }
  {
    TempDir t;
    const std::string dir = ogb_copy(t, "raw/edge.csv.gz", "0,1\n1,7\n");
    expect_error([&] { plexus::read_ogb(dir); }, dir + "/raw/edge.csv.gz:2", "node id 7 out of range");
  }
  {
    TempDir t;
    const std::string dir = ogb_copy(t, "raw/node-feat.csv.gz", "1,2,3\n4,5,inf\n1,1,1\n1,1,1\n1,1,1\n");
    expect_error([&] { plexus::read_ogb(dir); }, dir + "/raw/node-feat.csv.gz:2", "non-finite feature");
  }
  {
    TempDir t;
    const std::string dir = ogb_copy(t, "", "");
    fs::remove(fs::path(dir) / "raw/edge.csv.gz");
    expect_error([&] { plexus::read_ogb(dir); }, dir + "/raw/edge.csv.gz", "no such file");
  }
  {
    TempDir t;
    const std::string dir = ogb_copy(t, "split/other/train.csv.gz", "0\n");
    expect_error([&] { plexus::read_ogb(dir); }, "OgbOptions.split", "several splits");
  }
}

// ---- node files, .npy features, stratified splits ---------------------------------------------

TEST(NodeFile, RolesByNameQuotedNamesAndIsolatedNodes) {
  TempDir t;
  // Class names (one quoted, holding the delimiter), any-case splits, a node without edges.
  const std::string nodes = t.write("nodes.csv",
                                    "id,f0,label,split,f1\n"
                                    "30, 1.5,\"b, c\",Train,2\n"
                                    "10,-1,a,VALID,0\n"
                                    "\n"
                                    "20,0,,test,1e2\n"
                                    "99,4,a,,5\n");
  const plexus::NodeFile f = plexus::read_node_file(nodes);
  EXPECT_EQ(f.ids, (std::vector<std::int64_t>{30, 10, 20, 99}));
  ASSERT_TRUE(f.has_labels);
  EXPECT_EQ(f.class_names, (std::vector<std::string>{"a", "b, c"}));
  EXPECT_EQ(f.labels, (std::vector<std::int32_t>{1, 0, -1, 0}));
  EXPECT_EQ(f.num_classes, 2);
  ASSERT_TRUE(f.has_split);
  using plexus::SplitOf;
  EXPECT_EQ(f.split, (std::vector<SplitOf>{SplitOf::kTrain, SplitOf::kVal, SplitOf::kTest, SplitOf::kNone}));
  EXPECT_EQ(f.feature_names, (std::vector<std::string>{"f0", "f1"}));
  EXPECT_EQ(f.features, (std::vector<float>{1.5f, 2, -1, 0, 0, 100, 4, 5}));

  const std::string edges = t.write("edges.txt", "10 30\n20 30\n");
  EdgeListOptions o;
  o.node_ids = &f.ids;
  std::vector<std::int64_t> ids;
  GraphData g = plexus::read_edge_list(edges, o, ids);
  plexus::apply_node_file(g, f, 0);
  ASSERT_EQ(g.num_nodes, 4);  // 99 has no edge and is a node
  EXPECT_EQ(ids, f.ids);
  EXPECT_EQ(row(g, 0), (std::vector<index_t>{1, 2}));  // node 0 = id 30
  EXPECT_TRUE(row(g, 3).empty());
  EXPECT_EQ(g.num_classes, 2);
  EXPECT_EQ(g.num_features, 2);
  EXPECT_EQ(g.train_mask, (std::vector<std::uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(g.val_mask, (std::vector<std::uint8_t>{0, 1, 0, 0}));
  EXPECT_EQ(g.test_mask, (std::vector<std::uint8_t>{0, 0, 1, 0}));
  const std::string stray = t.write("stray.txt", "10 30\n# c\n20 31\n");
  expect_error([&] { plexus::read_edge_list(stray, o, ids); }, stray + ":3", "node id 31 is not in the node file");
}

TEST(NodeFile, IntegerLabelsTsvAndColumnOptions) {
  TempDir t;
  const std::string tsv = t.write("n.tsv", "node\tx\tcls\tname\n5\t0.5\t3\tfoo\n6\t1\t-1\tbar\n7\t2\t\tbaz\n");
  plexus::NodeFileOptions opt;
  opt.id_column = "node";
  opt.label_column = "cls";
  opt.pick_features = true;
  opt.feature_columns = {"x"};
  const plexus::NodeFile f = plexus::read_node_file(tsv, opt);
  EXPECT_TRUE(f.class_names.empty());
  EXPECT_EQ(f.labels, (std::vector<std::int32_t>{3, -1, -1}));
  EXPECT_EQ(f.num_classes, 4);  // max + 1
  EXPECT_FALSE(f.has_split);
  EXPECT_EQ(f.features, (std::vector<float>{0.5f, 1, 2}));
  opt.split_column_required = true;
  expect_error([&] { plexus::read_node_file(tsv, opt); }, tsv + ":1", "no column 'split' (NodeFileOptions.split_column)");
}

TEST(NodeFile, BadInput) {
  TempDir t;
  const auto bad = [&](const std::string& name, const std::string& text, int line, const std::string& what) {
    const std::string p = t.write(name, text);
    expect_error([&] { plexus::read_node_file(p); }, p + ":" + std::to_string(line), what);
  };
  bad("dup.csv", "id,label\n1,0\n2,0\n1,1\n", 4, "duplicate node id 1 (first on line 2)");
  bad("ragged.csv", "id,label\n1,0\n2\n", 3, "expected 2 fields like the header, got 1");
  bad("feat.csv", "id,f\n1,x\n", 2, "expected a number (feature 'f'), got 'x'");
  bad("split.csv", "id,split\n1,training\n", 2, "split 'training'");
  bad("noid.csv", "node,label\n1,0\n", 1, "no column 'id' (NodeFileOptions.id_column)");
  bad("twice.csv", "id,a,a\n1,2,3\n", 1, "column 'a' appears twice");
  bad("quote.csv", "id,label\n1,\"a\n", 2, "unterminated quoted field");
  bad("neg.csv", "id,label\n1,0\n2,-2\n", 3, "label -2");
  const std::string empty = t.write("empty.csv", "\n\n");
  expect_error([&] { plexus::read_node_file(empty); }, empty, "empty file");
  const std::string header = t.write("header.csv", "id,label\n");
  expect_error([&] { plexus::read_node_file(header); }, header, "no nodes");
  plexus::NodeFileOptions opt;
  opt.features_from = "x.npy";
  const std::string feats = t.write("feats.csv", "id,label,f0\n1,0,2\n");
  expect_error([&] { plexus::read_node_file(feats, opt); }, feats + ":1", "would be features, and NodeFileOptions.features_from x.npy");
}

namespace {
// A .npy file: version 1 header for `descr` and `shape`, then `body`.
std::string npy(const std::string& descr, const std::string& shape, const std::string& body, bool fortran = false) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string s = "\x93NUMPY";
  s += '\x01';
  s += '\x00';
  s += static_cast<char>(dict.size() & 0xff);
  s += static_cast<char>(dict.size() >> 8);
  return s + dict + body;
}
template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
}  // namespace

TEST(Npy, Float32AndFloat64) {
  TempDir t;
  const std::string f4 = t.write("a.npy", npy("<f4", "(2, 3)", bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6})));
  const plexus::NpyMatrix a = plexus::read_npy_matrix(f4);
  EXPECT_EQ(a.rows, 2);
  EXPECT_EQ(a.cols, 3);
  EXPECT_EQ(a.values, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const std::string f8 = t.write("b.npy", npy("<f8", "(3, 1)", bytes_of(std::vector<double>{0.5, -2, 1e3})));
  EXPECT_EQ(plexus::read_npy_matrix(f8).values, (std::vector<float>{0.5f, -2, 1000}));
}

TEST(Npy, BadInput) {
  TempDir t;
  const std::string six = bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6});
  const auto bad = [&](const std::string& name, const std::string& bytes, const std::string& what) {
    const std::string p = t.write(name, bytes);
    expect_error([&] { plexus::read_npy_matrix(p); }, p, what);
  };
  bad("int.npy", npy("<i8", "(2, 3)", six + six), "dtype '<i8'");
  bad("big.npy", npy(">f4", "(2, 3)", six), "big-endian");
  bad("fortran.npy", npy("<f4", "(2, 3)", six, true), "Fortran order");
  bad("oned.npy", npy("<f4", "(6,)", six), "expected a 2-D array");
  bad("short.npy", npy("<f4", "(3, 3)", six), "(truncated)");
  bad("nan.npy", npy("<f4", "(1, 1)", bytes_of(std::vector<float>{std::nanf("")})), "NaN at [0, 0]");
  bad("magic.npy", "PK\x03\x04 not numpy", "not a .npy file");
  bad("cut.npy", npy("<f4", "(2, 3)", six).substr(0, 40), "corrupt .npy header");
  GraphData g;
  g.num_nodes = 3;
  plexus::NpyMatrix m = plexus::read_npy_matrix(t.write("ok.npy", npy("<f4", "(2, 3)", six)));
  expect_error([&] { plexus::set_features(g, std::move(m), "ok.npy", "row k = node k"); }, "ok.npy",
               "2 rows, expected 3");
}

TEST(StratifiedSplit, KeepsClassProportionsAndIsDeterministic) {
  GraphData g;
  g.num_nodes = 103;
  g.labels.resize(103);
  for (index_t i = 0; i < 103; ++i) g.labels[i] = i < 60 ? 0 : i < 100 ? 1 : -1;  // 60, 40, 3 unlabelled
  g.train_mask.assign(103, 0);
  g.val_mask = g.test_mask = g.train_mask;
  const plexus::SplitFractions f = plexus::parse_split_fractions("0.6, 0.2,0.2");
  plexus::stratified_split(g, f, 1);
  const auto count = [&](const std::vector<std::uint8_t>& m, int c) {
    int n = 0;
    for (index_t i = 0; i < 103; ++i) n += m[i] && g.labels[i] == c;
    return n;
  };
  EXPECT_EQ(count(g.train_mask, 0), 36);
  EXPECT_EQ(count(g.val_mask, 0), 12);
  EXPECT_EQ(count(g.test_mask, 0), 12);
  EXPECT_EQ(count(g.train_mask, 1), 24);
  EXPECT_EQ(count(g.val_mask, 1), 8);
  EXPECT_EQ(count(g.test_mask, 1), 8);
  for (index_t i = 100; i < 103; ++i) EXPECT_EQ(g.train_mask[i] + g.val_mask[i] + g.test_mask[i], 0);
  GraphData same = g, other = g;
  plexus::stratified_split(same, f, 1);
  plexus::stratified_split(other, f, 2);
  EXPECT_EQ(same.train_mask, g.train_mask);
  EXPECT_NE(other.train_mask, g.train_mask);
  expect_error([] { plexus::parse_split_fractions("0.6,0.2"); }, "SplitFractions", "expected three fractions");
  expect_error([] { plexus::parse_split_fractions("0.7,0.2,0.2"); }, "SplitFractions", "add up to more than 1");
  expect_error([] { plexus::parse_split_fractions("0,0.5,0.5"); }, "SplitFractions", "train fraction must be above 0");
}

// A split asked for (fraction above 0) that rounds to no node in every class is refused; a
// split asked to be empty (fraction 0) stays empty (the trainer reports it not evaluated).
TEST(StratifiedSplit, RefusesASplitAskedForThatGetsNoNode) {
  const auto graph = [](index_t n) {
    GraphData g;
    g.num_nodes = n;
    g.labels.resize(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) g.labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % 3);
    g.train_mask.assign(static_cast<std::size_t>(n), 0);
    g.val_mask = g.test_mask = g.train_mask;
    return g;
  };
  GraphData three = graph(3);  // one node a class: 0.6 rounds to 1 train node, 0.8 to 1 as well
  expect_error([&] { plexus::stratified_split(three, plexus::parse_split_fractions("0.6,0.2,0.2"), 1); }, "SplitFractions",
               "the validation split of 3 labelled nodes is empty");
  GraphData tiny_train = graph(30);
  expect_error([&] { plexus::stratified_split(tiny_train, plexus::parse_split_fractions("0.01,0.5,0.49"), 1); },
               "SplitFractions", "the train split of 30 labelled nodes is empty");
  GraphData all_train = graph(3);
  plexus::stratified_split(all_train, plexus::parse_split_fractions("1,0,0"), 1);
  EXPECT_EQ(all_train.train_mask, (std::vector<std::uint8_t>{1, 1, 1}));
  EXPECT_EQ(all_train.val_mask, (std::vector<std::uint8_t>{0, 0, 0}));
}
