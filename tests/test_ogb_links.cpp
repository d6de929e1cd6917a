// OGB's link-property layout (read_ogb_links) and torch.save files (read_torch_save), against
// the fixtures tests/fixtures/make_ogbl_fixtures.py wrote with torch itself: both containers,
// both split shapes (collab's shared negatives, citation2's own), and the inputs refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "io/convert/torch_file.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/link_split.hpp"
#include "input_errors.hpp"
#include "scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using plexus::InputError;
using plexus::NodePairList;
using TempDir = plexus::testing::ScratchDir;
using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::string fixture(const std::string& name) { return std::string(PLEXUS_TEST_DIR) + "/fixtures/" + name; }

Pairs pairs(const NodePairList& p) {
  Pairs out;
  for (std::size_t k = 0; k < p.size(); ++k) out.emplace_back(p.u[k], p.v[k]);
  return out;
}

using plexus::test::expect_input_error;
const auto expect_error = expect_input_error;

// ogbl_tiny copied to a scratch folder with split/time/<part>.pt replaced by ogbl_bad/<bad>.pt.
std::string with_split_file(const TempDir& t, const std::string& part, const std::string& bad) {
  const fs::path dst = t.path() / "ogbl";
  fs::copy(fixture("ogbl_tiny"), dst, fs::copy_options::recursive);
  fs::copy_file(fixture("ogbl_bad/" + bad + ".pt"), dst / "split/time" / (part + ".pt"),
                fs::copy_options::overwrite_existing);
  return dst.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST(OgbLinks, CollabShapedSplitInTorchsZipContainer) {
  const plexus::OgbLinkData d = plexus::read_ogb_links(fixture("ogbl_tiny"));
  const plexus::GraphData& g = d.graph;
  ASSERT_EQ(g.num_nodes, 10);
  EXPECT_FALSE(g.directed);
  EXPECT_EQ(g.num_edges(), 22);  // raw/edge.csv.gz's 11 links, both ways
  ASSERT_EQ(g.num_features, 3);
  EXPECT_FLOAT_EQ(g.features[3 * 9 + 2], 0.92f);
  const plexus::LinkSplit& s = d.held_out;
  EXPECT_TRUE(s.as_published);
  EXPECT_EQ(s.negatives_per_link, 0);
  // Smaller node first; (4, 5) is also a training link, as collab's repeat collaborations are.
  EXPECT_EQ(pairs(s.val_pos), (Pairs{{1, 3}, {2, 6}, {4, 5}}));
  EXPECT_EQ(pairs(s.val_neg), (Pairs{{0, 7}, {3, 8}, {1, 6}, {2, 9}}));
  EXPECT_EQ(pairs(s.test_pos), (Pairs{{2, 4}, {6, 8}}));
  EXPECT_EQ(pairs(s.test_neg), (Pairs{{1, 8}, {0, 3}, {7, 9}}));
  // The node-property reader names the other one.
  expect_error([&] { plexus::read_ogb(fixture("ogbl_tiny")); }, fixture("ogbl_tiny") + "/split/time",
               "holds a link split");
  EXPECT_TRUE(plexus::ogb_has_link_split(fixture("ogbl_tiny")));
  EXPECT_FALSE(plexus::ogb_has_link_split(fixture("ogb_tiny")));
}

TEST(OgbLinks, Citation2ShapedSplitInTorchsLegacyContainer) {
  const plexus::OgbLinkData d = plexus::read_ogb_links(fixture("ogbl_citation_tiny"));
  EXPECT_EQ(d.graph.num_nodes, 6);
  const plexus::LinkSplit& s = d.held_out;
  EXPECT_TRUE(s.as_published);
  EXPECT_EQ(s.negatives_per_link, 3);
  EXPECT_EQ(pairs(s.val_pos), (Pairs{{0, 4}}));
  EXPECT_EQ(pairs(s.val_neg), (Pairs{{4, 5}, {1, 4}, {3, 4}}));  // (4, w) for w in [5, 1, 3]
  EXPECT_EQ(pairs(s.test_pos), (Pairs{{0, 5}, {3, 4}}));
  EXPECT_EQ(pairs(s.test_neg), (Pairs{{1, 5}, {2, 5}, {4, 5}, {0, 3}, {3, 5}, {2, 3}}));

  plexus::OgbOptions directed;
  directed.symmetrize = false;
  const plexus::OgbLinkData e = plexus::read_ogb_links(fixture("ogbl_citation_tiny"), directed);
  EXPECT_TRUE(e.graph.directed);
  EXPECT_EQ(pairs(e.held_out.test_pos), (Pairs{{5, 0}, {3, 4}}));  // as given
  EXPECT_EQ(pairs(e.held_out.val_neg), (Pairs{{4, 5}, {4, 1}, {4, 3}}));
}

TEST(OgbLinks, TheSplitsFlagsSurviveTheFile) {
  TempDir t;
  const plexus::OgbLinkData d = plexus::read_ogb_links(fixture("ogbl_citation_tiny"));
  const std::string path = (t.path() / "c.h5").string();
  plexus::write_graph_h5(d.graph, plexus::NodeNames{}, d.held_out, path);
  const std::optional<plexus::LinkSplit> s = plexus::read_link_split_h5(path);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->as_published);
  EXPECT_EQ(s->negatives_per_link, 3);
  EXPECT_EQ(pairs(s->test_neg), pairs(d.held_out.test_neg));
}

TEST(OgbLinks, PublishedSplitsMayOverlapTheGraphOursMayNot) {
  const plexus::OgbLinkData d = plexus::read_ogb_links(fixture("ogbl_tiny"));
  plexus::LinkSplit s = d.held_out;
  plexus::validate_link_split(d.graph, s, "g");  // (4, 5) held out and a training link: as published
  s.as_published = false;
  expect_error([&] { plexus::validate_link_split(d.graph, s, "g"); }, "g",
               "/links/val_pos: pair 3 (4, 5) is an edge of /graph");
  // Node ranges are checked either way.
  s = d.held_out;
  s.test_neg.v[1] = 10;
  expect_error([&] { plexus::validate_link_split(d.graph, s, "g"); }, "g", "/links/test_neg: pair 2 (0, 10) names a node outside [0, 10)");
  // K negatives a link means K for each.
  s = plexus::read_ogb_links(fixture("ogbl_citation_tiny")).held_out;
  s.test_neg.u.pop_back();
  s.test_neg.v.pop_back();
  const plexus::GraphData& g = plexus::read_ogb_links(fixture("ogbl_citation_tiny")).graph;
  expect_error([&] { plexus::validate_link_split(g, s, "g"); }, "g",
               "/links/test_neg: 5 negatives for 2 links, negatives_per_link 3 needs 6");
}

TEST(OgbLinks, BadSplitFiles) {
  const std::string time = "/split/time/";
  const struct {
    const char* part;
    const char* bad;
    const char* what;
  } cases[] = {
      {"train", "train_not_an_edge", "training link 2 (2, 7) is not an edge of raw/edge.csv.gz"},
      {"valid", "node_out_of_range", "'edge_neg' entry 1: node 10 out of range [0, 10)"},
      {"valid", "edge_wrong_shape", "'edge' has shape [1, 3], expected [M, 2]"},
      {"valid", "no_negatives", "has 'edge' but no 'edge_neg'"},
      {"test", "no_links", "has neither 'edge' nor 'source_node'/'target_node'"},
      {"valid", "not_a_dict", "expected a dict of numpy arrays"},
      {"valid", "torch_tensors", "torch._utils._rebuild_tensor_v2"},
      {"valid", "negatives_rows_differ", "'target_node_neg' has shape [1, 3], expected [2, K]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.bad);
    TempDir t;
    const std::string dir = with_split_file(t, c.part, c.bad);
    const std::string file = dir + time + c.part + ".pt";
    const std::string where = std::string(c.bad) == "torch_tensors" ? file + ":data.pkl" : file;
    expect_error([&] { plexus::read_ogb_links(dir); }, where, c.what);
  }
  {  // float arrays are not node ids
    TempDir t;
    const std::string dir = with_split_file(t, "valid", "float_edges");
    expect_error([&] { plexus::read_ogb_links(dir); }, dir + time + "valid.pt: 'edge'", "float");
  }
  {  // citation2's own negatives in one file, shared ones in the other
    TempDir t;
    const std::string dir = with_split_file(t, "valid", "negatives_per_link_3");
    expect_error([&] { plexus::read_ogb_links(dir); }, dir + "/split/time",
                 "valid.pt has 3 negatives a link, test.pt 0");
  }
  {  // a legacy file of tensors
    TempDir t;
    const std::string dir = with_split_file(t, "test", "torch_tensors_legacy");
    expect_error([&] { plexus::read_ogb_links(dir); }, dir + time + "test.pt", "rebuild_tensor");
  }
  {  // a missing split file
    TempDir t;
    const fs::path dst = t.path() / "ogbl";
    fs::copy(fixture("ogbl_tiny"), dst, fs::copy_options::recursive);
    fs::remove(dst / "split/time/test.pt");
    const std::string dir = dst.string();
    expect_error([&] { plexus::read_ogb_links(dir); }, dir + time + "test.pt", "no such file");
  }
}

// Protocol 2 writes an array's bytes as latin1 text (_codecs.encode): every byte value comes back.
TEST(TorchFile, EveryByteValueOfAnArraySurvivesBothContainers) {
  for (const char* name : {"every_byte", "every_byte_legacy"}) {
    SCOPED_TRACE(name);
    const plexus::pickle::Document doc = plexus::read_torch_save(fixture(std::string("ogbl_bad/") + name + ".pt"));
    const auto bytes = plexus::pickle::to_int_array(doc.root()->get("bytes"), name);
    ASSERT_EQ(bytes.data.size(), 256u);
    for (std::size_t k = 0; k < 256; ++k) EXPECT_EQ(bytes.data[k], static_cast<std::int64_t>(k));
    const auto ids = plexus::pickle::to_int_array(doc.root()->get("ids"), name);
    EXPECT_EQ(ids.data, (std::vector<std::int64_t>{200, 1000, 70000, (std::int64_t{1} << 40) + 3}));
  }
}

TEST(TorchFile, DamagedContainersAreRefused) {
  TempDir t;
  const std::string zip = slurp(fixture("ogbl_tiny/split/time/valid.pt"));
  const std::string legacy = slurp(fixture("ogbl_citation_tiny/split/time/valid.pt"));
  const auto write = [&](const std::string& name, const std::string& bytes) {
    const std::string p = (t.path() / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  };
  // Both read whole.
  EXPECT_EQ(plexus::read_torch_save(write("z.pt", zip)).root()->kind, plexus::pickle::Kind::Dict);
  EXPECT_EQ(plexus::read_torch_save(write("l.pt", legacy)).root()->kind, plexus::pickle::Kind::Dict);
  // A byte of data.pkl changed: its CRC-32 no longer matches.
  std::string flipped = zip;
  const std::size_t at = flipped.find("edge_neg");
  ASSERT_NE(at, std::string::npos);
  flipped[at] = 'E';
  const std::string f = write("flipped.pt", flipped);
  expect_error([&] { plexus::read_torch_save(f); }, f, "fails its CRC-32 check");
  // Cut short: the directory is gone.
  const std::string c = write("cut.pt", zip.substr(0, zip.size() / 2));
  expect_error([&] { plexus::read_torch_save(c); }, c, "zip archive without its end-of-directory record");
  // The legacy stream cut inside the object, or with bytes after it.
  const std::string lc = write("lcut.pt", legacy.substr(0, legacy.size() - 20));
  EXPECT_THROW(plexus::read_torch_save(lc), InputError);
  const std::string lx = write("lextra.pt", legacy + "xyz");
  expect_error([&] { plexus::read_torch_save(lx); }, lx, "3 bytes after the last pickle");
  // Neither container.
  const std::string n = write("n.pt", "hello, not a torch file");
  expect_error([&] { plexus::read_torch_save(n); }, n, "not a torch.save file");
  const std::string e = write("e.pt", "");
  expect_error([&] { plexus::read_torch_save(e); }, e, "not a torch.save file");
}
