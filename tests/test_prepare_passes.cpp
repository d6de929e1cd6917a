// prepare_graph_in_passes (plexus/prepare_passes.hpp) against prepare_graph, in memory: messy
// random graphs (duplicates, self-loops, one-way edges, weights, isolated nodes, node weights and
// ids) read from a source that cuts them into uneven runs (empty ones too), prepared in 1 to
// more-than-N passes with spilled runs of a few entries; every piece's rows must equal the
// one-process result's rows, dataset for dataset, the pieces must tile the rows in order, and the
// last must carry the block counts. Also: bad rows, options the passes refuse, the budget's
// pass count, and that nothing is left in the scratch directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/link_split.hpp"
#include "plexus/prepare.hpp"
#include "plexus/prepare_passes.hpp"
#include "prepare_fixtures.hpp"

namespace plexus {
namespace {

namespace fs = std::filesystem;
using test::messy_graph;

// A graph in memory, read a run of rows at a time; split() cuts unevenly (squares: the first
// runs small, and run 1 empty when there are 3 or more).
class MemorySource final : public GraphRowSource {
 public:
  MemorySource(const GraphData& g, bool extras) : g_(g), extras_(extras) {}
  GraphSlice header() const override {
    GraphSlice h = test::slice_of(g_, Range{0, 0}, extras_);
    h.indptr.clear();
    h.links = links;
    return h;
  }
  std::optional<LinkSplit> links;  // the graph's split, if any
  bool has_node_weights() const override { return extras_; }
  bool has_node_ids() const override { return extras_; }
  std::vector<index_t> split(int parts) const override {
    const index_t n = g_.num_nodes;
    std::vector<index_t> s(static_cast<std::size_t>(parts) + 1, n);
    s[0] = 0;
    for (int k = 1; k < parts; ++k) s[static_cast<std::size_t>(k)] = std::min(n, n * k * k / (parts * parts));
    if (parts >= 3) s[2] = s[1];
    return s;
  }
  GraphSlice read(Range rows, bool node_data) const override {
    ++reads;
    GraphSlice s = test::slice_of(g_, rows, extras_);
    if (node_data) {
      s.indptr.assign(1, 0), s.indices.clear(), s.values.clear();
    } else {
      s.features.clear(), s.labels.clear(), s.train_mask.clear(), s.val_mask.clear(), s.test_mask.clear();
      s.node_weights.clear(), s.node_ids.clear();
    }
    if (corrupt_row >= rows.begin && corrupt_row < rows.end && !node_data && !s.indices.empty()) s.indices.back() = -1;
    if (drop_edge_features) s.edge_features.clear();
    return s;
  }
  bool drop_edge_features = false;  // runs read without their edge feature rows
  mutable int reads = 0;
  index_t corrupt_row = -1;  // a bad column in the run holding this row

 private:
  const GraphData& g_;
  bool extras_;
};

struct Pieces final : PreparedRowSink {
  std::vector<PreparedSlice> got;
  bool finished = false;
  void write(const PreparedSlice& p) override { got.push_back(p); }
  void finish() override { finished = true; }
};

// A scratch directory of its own, which must be empty again at the end.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("plexus-passes-" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  bool empty() const { return fs::is_empty(dir); }
};

void check_passes(const GraphData& g, const PrepareOptions& opt, bool extras, int passes, index_t round) {
  SCOPED_TRACE("passes " + std::to_string(passes) + ", round " + std::to_string(round));
  const PreparedGraph want = prepare_graph(g, opt);
  const MemorySource in(g, extras);
  const Scratch scratch;
  Pieces out;
  prepare_graph_in_passes(in, opt, PassOptions{passes, scratch.dir.string(), round}, out);
  EXPECT_TRUE(out.finished);
  EXPECT_TRUE(scratch.empty()) << "scratch files left";
  ASSERT_EQ(static_cast<index_t>(out.got.size()), std::min<index_t>(passes, g.num_nodes));
  index_t row = 0;
  for (std::size_t j = 0; j < out.got.size(); ++j) {
    SCOPED_TRACE("piece " + std::to_string(j));
    const PreparedSlice& p = out.got[j];
    ASSERT_EQ(p.rows.begin, row);
    const bool last = j + 1 == out.got.size();
    test::expect_prepared_rows(g, want, p, p.rows, extras, last);
    row = p.rows.end;
  }
  EXPECT_EQ(row, g.num_nodes);
}

// A link split is checked and renumbered as prepare_graph does it, and comes with the first rows;
// one that symmetrizing would make an edge again is refused before any row is written.
TEST(PrepareInPasses, ALinkSplitComesRenumberedWithTheFirstRows) {
  GraphData g = clean_graph(messy_graph(50, 2, 200, true, 14), true);
  const LinkSplit held_out = random_link_split(g, 0.1, 0.2, 6);
  ASSERT_GT(held_out.val_pos.size(), 0u);
  PrepareOptions opt;
  opt.balance = Balance::kPermute;
  const PreparedGraph want = prepare_graph(g, opt, held_out);
  MemorySource in(g, false);
  in.links = held_out;
  const Scratch scratch;
  Pieces out;
  prepare_graph_in_passes(in, opt, PassOptions{4, scratch.dir.string(), 16}, out);
  ASSERT_EQ(out.got.size(), 4u);
  PreparedGraph rows_only = want;
  rows_only.links.reset();
  for (std::size_t j = 0; j < out.got.size(); ++j) {
    SCOPED_TRACE("piece " + std::to_string(j));
    test::expect_prepared_rows(g, j == 0 ? want : rows_only, out.got[j], out.got[j].rows, false, j + 1 == out.got.size());
  }
  // Directed: 0 -> 3 stored and 3 -> 0 held out; symmetrizing stores 3 -> 0 again.
  GraphData d = messy_graph(12, 1, 0, false, 15);
  d.indptr.assign(13, 1);
  d.indptr[0] = 0;
  d.indices = {3};
  LinkSplit leak;
  leak.test_pos.u = {3};
  leak.test_pos.v = {0};
  leak.test_neg.u = {5};
  leak.test_neg.v = {9};
  MemorySource bad(d, false);
  bad.links = leak;
  Pieces none;
  try {
    prepare_graph_in_passes(bad, PrepareOptions{}, PassOptions{3, scratch.dir.string(), 4}, none);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "the prepared graph");
    EXPECT_NE(std::string(e.what()).find("/links/test_pos: pair 1"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(none.got.empty());
  PrepareOptions keep;
  keep.symmetrize = false;
  EXPECT_NO_THROW(prepare_graph_in_passes(bad, keep, PassOptions{3, scratch.dir.string(), 4}, none));
  EXPECT_TRUE(scratch.empty());
}

// Edge features: each output entry's row joined from its input pass (or, for an edge symmetrizing
// stored, its reverse's pass) through the scratch files, as prepare_graph carries them.
TEST(PrepareInPasses, EqualsOneProcessWithEdgeFeatures) {
  PrepareOptions opt;
  opt.balance = Balance::kPermute;
  opt.seed = 7;
  const GraphData g = test::with_entry_rows(messy_graph(41, 2, 180, true, 9), 3);
  for (const int passes : {1, 3, 7}) check_passes(g, opt, true, passes, 5);
  opt.balance = Balance::kNone;
  opt.symmetrize = false;
  check_passes(test::with_entry_rows(messy_graph(23, 1, 70, false, 10), 1), opt, false, 4, 2);
}

// A run whose rows lack edge feature rows is refused, naming the field, and leaves no file.
TEST(PrepareInPasses, EdgeFeatureRowsMissingFromARunAreRefused) {
  const GraphData g = test::with_entry_rows(messy_graph(30, 2, 90, true, 9), 2);
  MemorySource in(g, false);
  in.drop_edge_features = true;
  const Scratch scratch;
  Pieces out;
  try {
    prepare_graph_in_passes(in, PrepareOptions{}, PassOptions{3, scratch.dir.string(), 8}, out);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GraphSlice.edge_features"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(out.got.empty());
  EXPECT_TRUE(scratch.empty());
}

TEST(PrepareInPasses, EqualsOneProcessPermuteSymmetrized) {
  PrepareOptions opt;
  opt.balance = Balance::kPermute;
  opt.seed = 3;
  const GraphData g = messy_graph(61, 5, 300, true, 1);
  for (int k : {1, 2, 3, 7}) check_passes(g, opt, true, k, index_t{1} << 20);
}

TEST(PrepareInPasses, EqualsOneProcessNoneUnweightedInRoundsOfThree) {
  PrepareOptions opt;
  opt.balance = Balance::kNone;
  const GraphData g = messy_graph(47, 3, 200, false, 2);
  for (int k : {2, 5}) check_passes(g, opt, false, k, 3);
}

TEST(PrepareInPasses, EqualsOneProcessDirected) {
  PrepareOptions opt;
  opt.balance = Balance::kPermute;
  opt.symmetrize = false;
  const GraphData g = messy_graph(53, 2, 250, true, 3);
  for (int k : {1, 4}) check_passes(g, opt, true, k, 5);
}

TEST(PrepareInPasses, OneRowAPassAndMorePassesThanRows) {
  PrepareOptions opt;
  opt.balance = Balance::kPermute;
  opt.seed = 11;
  const GraphData g = messy_graph(13, 1, 40, true, 4);
  check_passes(g, opt, false, 13, 1);
  check_passes(g, opt, true, 40, 2);  // clamped to one pass a row
}

TEST(PrepareInPasses, BadRowsThrowAndLeaveNoScratchFiles) {
  const GraphData g = messy_graph(29, 2, 80, true, 5);
  MemorySource in(g, false);
  in.corrupt_row = 27;
  const Scratch scratch;
  Pieces out;
  try {
    prepare_graph_in_passes(in, PrepareOptions{.balance = Balance::kPermute}, PassOptions{3, scratch.dir.string()}, out);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("GraphSlice.indices: node id -1"), std::string::npos) << e.message();
  }
  EXPECT_TRUE(out.got.empty());
  EXPECT_FALSE(out.finished);
  EXPECT_TRUE(scratch.empty());
}

// A feature beyond bfloat16's range with features_bf16 (it would be stored as Inf) is refused
// before any row reaches the sink, naming the first such node (in a later pass than the first)
// and feature; the largest value that rounds to a finite bfloat16 passes.
TEST(PrepareInPasses, Bf16FeaturesBeyondItsRangeAreRefusedBeforeAnyRowIsWritten) {
  GraphData g = messy_graph(29, 2, 80, true, 5);
  const std::size_t width = static_cast<std::size_t>(g.num_features);
  g.features[24 * width + 1] = 3.3895e38f;  // rounds to bfloat16's largest finite: fine
  g.features[25 * width + 1] = 3.4e38f;     // rounds to Inf
  g.features[27 * width + 0] = -3.4e38f;
  PrepareOptions opt{.balance = Balance::kPermute};
  opt.features_bf16 = true;
  const Scratch scratch;
  Pieces out;
  const MemorySource in(g, false);
  try {
    prepare_graph_in_passes(in, opt, PassOptions{3, scratch.dir.string()}, out);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("node 25, feature 1: 3.4e+38 is beyond bfloat16's range"), std::string::npos)
        << e.message();
  }
  EXPECT_TRUE(out.got.empty());
  EXPECT_TRUE(scratch.empty());
  g.features[25 * width + 1] = 1.0f;
  g.features[27 * width + 0] = 1.0f;
  EXPECT_NO_THROW(check_passes(g, opt, false, 3, 5));
}

TEST(PrepareInPasses, RefusesMetisAndAMissingScratchDirectory) {
  const GraphData g = messy_graph(20, 1, 30, false, 6);
  const MemorySource in(g, false);
  Pieces out;
  const Scratch scratch;
  EXPECT_THROW(prepare_graph_in_passes(in, PrepareOptions{.balance = Balance::kMetis}, PassOptions{2, scratch.dir.string()}, out),
               InputError);
  EXPECT_THROW(prepare_graph_in_passes(in, PrepareOptions{.balance = Balance::kLocality}, PassOptions{2, scratch.dir.string()}, out),
               InputError);
  try {
    prepare_graph_in_passes(in, PrepareOptions{}, PassOptions{2, (scratch.dir / "missing").string()}, out);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("scratch directory"), std::string::npos) << e.message();
  }
  EXPECT_THROW(prepare_graph_in_passes(in, PrepareOptions{}, PassOptions{0, scratch.dir.string()}, out), InputError);
  EXPECT_TRUE(out.got.empty());
}

// The pass count is the fewest whose modelled memory fits; the model falls as 1/K to its per-node part.
TEST(PrepareInPasses, PassesForBudget) {
  const index_t n = 1'000'000, e = 20'000'000, f = 128;
  const double one = passes_memory_bytes(n, e, f, true, 1);
  EXPECT_EQ(passes_for_budget(n, e, f, true, static_cast<std::uint64_t>(one) + 1), 1);
  for (int k : {2, 3, 8, 50}) {
    const auto budget = static_cast<std::uint64_t>(passes_memory_bytes(n, e, f, true, k));
    const int got = passes_for_budget(n, e, f, true, budget + 1);
    EXPECT_EQ(got, k) << "budget for " << k << " passes";
    EXPECT_LE(passes_memory_bytes(n, e, f, true, got), static_cast<double>(budget) + 1);
    EXPECT_GT(passes_memory_bytes(n, e, f, true, got - 1), static_cast<double>(budget) + 1);
  }
  // Edge feature rows add to every pass's share: more passes for the same budget, the same rule.
  for (int k : {2, 8}) {
    const auto budget = static_cast<std::uint64_t>(passes_memory_bytes(n, e, f, true, k, 6));
    EXPECT_EQ(passes_for_budget(n, e, f, true, budget + 1, 6), k);
    EXPECT_GT(passes_for_budget(n, e, f, true, budget + 1), 0);
    EXPECT_LT(passes_for_budget(n, e, f, true, budget + 1), k);
  }
  // Symmetrizing doubles the entries: more passes for the same budget.
  const auto mid = static_cast<std::uint64_t>(passes_memory_bytes(n, e, f, true, 4));
  EXPECT_LT(passes_for_budget(n, e, f, false, mid), 4);
  EXPECT_GT(passes_memory_bytes(n, e, f, true, 2), passes_memory_bytes(n, e, f, true, 4));
  // Below the per-node part no pass count fits.
  EXPECT_THROW(passes_for_budget(n, e, f, true, 40 * static_cast<std::uint64_t>(n)), InputError);
}

// The rounds in flight: 2^20 entries, or a 64th of a smaller budget's worth (at least 256).
TEST(PrepareInPasses, RoundsFollowTheBudget) {
  unsetenv("PLEXUS_PREPARE_ROUND");
  EXPECT_EQ(exchange_round_entries(), index_t{1} << 20);
  EXPECT_EQ(exchange_round_entries(std::uint64_t{1} << 30), index_t{1} << 20);
  EXPECT_EQ(exchange_round_entries(std::uint64_t{64} << 20), (index_t{64} << 20) / 64 / 12);
  EXPECT_EQ(exchange_round_entries(1000), 256);
  setenv("PLEXUS_PREPARE_ROUND", "7", 1);
  EXPECT_EQ(exchange_round_entries(std::uint64_t{64} << 20), 7);
  unsetenv("PLEXUS_PREPARE_ROUND");
}

}  // namespace
}  // namespace plexus
