// read_edge_list_in_passes and read_matrix_market_in_passes (plexus/convert.hpp) against the
// one-process converters, in memory: random edge lists (skewed 12-digit ids, duplicates with
// other weights, self-loops, comments, lines the passes' byte ranges cut) and MatrixMarket files
// in 1 to 13 passes with runs of a few items; the runs must tile the rows in order and together
// equal read_edge_list's (read_matrix_market's) CSR, features and ids, with the right offsets.
// Also: the pass count of a budget, and that nothing is left in the scratch directory. And the
// converters on ranks (read_edge_list_on_ranks, read_matrix_market_on_ranks) without MPI, on one
// rank (the self communicator) and on 2 to 4 ranks as threads (run_in_process): the ranks'
// slices in rank order are the same runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "plexus/comm.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/prepare_distributed.hpp"

namespace plexus {
namespace {

namespace fs = std::filesystem;

struct Dir {
  fs::path path = fs::temp_directory_path() / ("plexus-convert-passes-" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path / "scratch"); }
  ~Dir() { fs::remove_all(path); }
  std::string scratch() const { return (path / "scratch").string(); }
};

std::string edge_list(const fs::path& p, bool weighted, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<long long> ids;
  for (int k = 0; k < 150; ++k) ids.push_back(500000000000LL + static_cast<long long>(rng() % 1000000007));
  std::ofstream f(p);
  f << "# comment\n\n";
  for (int e = 0; e < 900; ++e) {
    const long long u = ids[static_cast<std::size_t>(150 * std::pow(static_cast<double>(rng() % 1000) / 1000.0, 3))];
    const long long v = ids[rng() % 150];
    f << u << (e % 3 ? ' ' : '\t') << v;
    if (weighted) f << ' ' << 0.5 + static_cast<double>(rng() % 100) / 10.0;
    f << '\n';
    if (e % 50 == 0) f << u << ' ' << u << (weighted ? " 1.5" : "") << "\n% note\n";
    if (e % 41 == 0) f << u << ',' << v << (weighted ? ",9.25" : "") << '\n';
  }
  return p.string();
}

// A general real MatrixMarket file of n × n with `entries` random entries (duplicates and
// self-loops among them) and a comment line.
// `field` real, integer or pattern; `symmetry` general or symmetric (then one triangle is stored,
// the lower or, with `upper`, the upper: the reader mirrors it).
fs::path random_mtx(const fs::path& p, int n, int entries, unsigned seed, const std::string& field = "real",
                    const std::string& symmetry = "general", bool upper = false) {
  std::mt19937 rng(seed);
  std::ofstream f(p);
  f << "%%MatrixMarket matrix coordinate " << field << ' ' << symmetry << "\n% c\n" << n << ' ' << n << ' ' << entries
    << '\n';
  const auto id = [&] { return 1 + rng() % static_cast<unsigned>(n); };
  for (int e = 0; e < entries; ++e) {
    unsigned i = id(), j = id();
    if (symmetry == "symmetric" && (upper ? i > j : i < j)) std::swap(i, j);
    f << i << ' ' << j;
    if (field == "real") f << ' ' << (rng() % 100) / 7.0;
    if (field == "integer") f << ' ' << 1 + rng() % 9;
    f << '\n';
  }
  return p;
}

// Collects the runs in order and checks their offsets.
struct Runs {
  GraphSlice whole;  // concatenated
  std::vector<std::int64_t> ids;
  index_t next_row = 0, next_edge = 0, total = -1;
  void add(GraphSlice&& s, index_t before, index_t all) {
    EXPECT_EQ(s.rows.begin, next_row);
    EXPECT_EQ(before, next_edge);
    if (total >= 0) {
      EXPECT_EQ(all, total);
    }
    total = all;
    EXPECT_EQ(static_cast<index_t>(s.indptr.size()), s.rows.size() + 1);
    if (whole.indptr.empty()) whole.indptr.push_back(0);
    for (std::size_t i = 1; i < s.indptr.size(); ++i) whole.indptr.push_back(before + s.indptr[i]);
    whole.indices.insert(whole.indices.end(), s.indices.begin(), s.indices.end());
    whole.values.insert(whole.values.end(), s.values.begin(), s.values.end());
    whole.features.insert(whole.features.end(), s.features.begin(), s.features.end());
    ids.insert(ids.end(), s.node_ids.begin(), s.node_ids.end());
    whole.num_nodes = s.num_nodes;
    whole.num_features = s.num_features;
    whole.directed = s.directed;
    next_row = s.rows.end;
    next_edge = before + static_cast<index_t>(s.indices.size());
  }
};

void expect_same(const GraphData& g, const std::vector<std::int64_t>& ids, const Runs& r) {
  EXPECT_EQ(r.next_row, g.num_nodes);
  EXPECT_EQ(r.total, g.num_edges());
  EXPECT_EQ(r.whole.num_nodes, g.num_nodes);
  EXPECT_EQ(r.whole.directed, g.directed);
  EXPECT_EQ(r.whole.indptr, g.indptr);
  EXPECT_EQ(r.whole.indices, g.indices);
  EXPECT_EQ(r.whole.values, g.values);
  EXPECT_EQ(r.whole.num_features, g.num_features);
  EXPECT_EQ(r.whole.features, g.features);
  EXPECT_EQ(r.ids, ids);
}

void check_edge_list(const std::string& path, const EdgeListOptions& opt, int passes, const Dir& dir) {
  SCOPED_TRACE(std::to_string(passes) + " passes");
  std::vector<std::int64_t> ids;
  const GraphData g = read_edge_list(path, opt, ids);
  Runs r;
  read_edge_list_in_passes(path, opt, passes, dir.scratch(),
                           [&](GraphSlice&& s, index_t before, index_t all) { r.add(std::move(s), before, all); });
  expect_same(g, ids, r);
  EXPECT_TRUE(fs::is_empty(dir.scratch()));
}

TEST(ConvertInPasses, EdgeListRelabelledEqualsOneProcess) {
  const Dir dir;
  const std::string path = edge_list(dir.path / "w.txt", true, 1);
  for (int k : {1, 2, 3, 7, 13}) check_edge_list(path, EdgeListOptions{}, k, dir);
}

TEST(ConvertInPasses, EdgeListDirectedRandomFeaturesInRunsOfThree) {
  const Dir dir;
  const std::string path = edge_list(dir.path / "u.txt", false, 2);
  setenv("PLEXUS_PREPARE_ROUND", "3", 1);
  EdgeListOptions opt;
  opt.symmetrize = false;
  opt.features = SyntheticFeatures::kRandom;
  opt.feature_width = 3;
  check_edge_list(path, opt, 4, dir);
  unsetenv("PLEXUS_PREPARE_ROUND");
}

TEST(ConvertInPasses, EdgeListDenseIdsFromOne) {
  const Dir dir;
  const fs::path p = dir.path / "d.txt";
  {
    std::mt19937 rng(3);
    std::ofstream f(p);
    for (int e = 0; e < 700; ++e) f << 1 + rng() % 120 << ' ' << 1 + rng() % 120 << "\r\n";
  }
  EdgeListOptions opt;
  opt.num_nodes = 125;  // five isolated nodes past the ids
  opt.base = 1;
  for (int k : {2, 5}) check_edge_list(p.string(), opt, k, dir);
}

TEST(ConvertInPasses, MatrixMarketEqualsOneProcess) {
  const Dir dir;
  const fs::path p = random_mtx(dir.path / "m.mtx", 90, 500, 4);
  const GraphData g = read_matrix_market(p.string());
  for (int k : {1, 3, 6}) {
    Runs r;
    read_matrix_market_in_passes(p.string(), EdgeListOptions{}, k, dir.scratch(),
                                 [&](GraphSlice&& s, index_t before, index_t all) { r.add(std::move(s), before, all); });
    expect_same(g, {}, r);
  }
  EXPECT_TRUE(fs::is_empty(dir.scratch()));
}

// Every rank's slice of `read` on p ranks as threads, in rank order, as runs.
template <class Read>
Runs on_threads(int p, Read&& read) {
  std::vector<GraphSlice> slices(static_cast<std::size_t>(p));
  run_in_process(p, [&](Communicator& c) { slices[static_cast<std::size_t>(c.rank())] = read(c); });
  index_t total = 0;
  for (const GraphSlice& s : slices) total += static_cast<index_t>(s.indices.size());
  Runs r;
  for (GraphSlice& s : slices) r.add(std::move(s), r.next_edge, total);
  return r;
}

TEST(ConvertOnRanksInProcess, EdgeListEqualsOneProcessOnOneRankAndOnThreads) {
  const Dir dir;
  const std::string path = edge_list(dir.path / "r.txt", true, 6);
  std::vector<std::int64_t> ids;
  const GraphData g = read_edge_list(path, EdgeListOptions{}, ids);
  {
    const std::unique_ptr<Communicator> self = make_self_communicator();
    Runs r;
    GraphSlice s = read_edge_list_on_ranks(path, EdgeListOptions{}, *self);
    const auto edges = static_cast<index_t>(s.indices.size());
    r.add(std::move(s), 0, edges);
    expect_same(g, ids, r);
  }
  for (int p = 2; p <= 4; ++p) {
    SCOPED_TRACE(std::to_string(p) + " ranks");
    expect_same(g, ids, on_threads(p, [&](Communicator& c) { return read_edge_list_on_ranks(path, EdgeListOptions{}, c); }));
  }
}

TEST(ConvertOnRanksInProcess, MatrixMarketEqualsOneProcessOnThreads) {
  const Dir dir;
  const fs::path p = random_mtx(dir.path / "t.mtx", 70, 300, 7);
  const GraphData g = read_matrix_market(p.string());
  for (int k = 1; k <= 3; ++k)
    expect_same(g, {}, on_threads(k, [&](Communicator& c) {
                  return read_matrix_market_on_ranks(p.string(), EdgeListOptions{}, c);
                }));
}

// Every text converter and every option that changes what it builds, on 1 to 4 ranks (threads)
// and in 1, 2 and 5 passes, against the one-process reader: a symmetric MatrixMarket file read
// on ranks once lost its mirrored entries (caught only by a command-line test).
struct Variant {
  std::string name;
  EdgeListOptions opt;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (const bool symmetrize : {true, false})
    for (const bool random_features : {false, true}) {
      Variant x;
      x.name = std::string(symmetrize ? "symmetrized" : "as stored") + (random_features ? ", random features" : "");
      x.opt.symmetrize = symmetrize;
      if (random_features) {
        x.opt.features = SyntheticFeatures::kRandom;
        x.opt.feature_width = 3;
        x.opt.seed = 9;
      }
      v.push_back(x);
    }
  return v;
}

TEST(ConvertEveryVariant, MatrixMarketOnRanksAndInPassesEqualsOneProcess) {
  const Dir dir;
  int files = 0;
  for (const std::string field : {"real", "integer", "pattern"})
    for (const std::string symmetry : {"general", "symmetric"})
      for (const bool upper : {false, true}) {
        if (symmetry == "general" && upper) continue;
        ++files;
        const fs::path p = random_mtx(dir.path / ("v" + std::to_string(files) + ".mtx"), 40, 160, 11 + files, field,
                                      symmetry, upper);
        for (const Variant& v : variants()) {
          SCOPED_TRACE(field + " " + symmetry + (upper ? " (upper)" : "") + ", " + v.name);
          const GraphData g = read_matrix_market(p.string(), v.opt);
          for (int k = 1; k <= 4; ++k) {
            SCOPED_TRACE(std::to_string(k) + " ranks");
            expect_same(g, {}, on_threads(k, [&](Communicator& c) { return read_matrix_market_on_ranks(p.string(), v.opt, c); }));
          }
          for (int passes : {1, 2, 5}) {
            SCOPED_TRACE(std::to_string(passes) + " passes");
            Runs r;
            read_matrix_market_in_passes(p.string(), v.opt, passes, dir.scratch(),
                                         [&](GraphSlice&& s, index_t before, index_t all) { r.add(std::move(s), before, all); });
            expect_same(g, {}, r);
          }
        }
      }
  EXPECT_TRUE(fs::is_empty(dir.scratch()));
}

TEST(ConvertEveryVariant, EdgeListOnRanksAndInPassesEqualsOneProcess) {
  const Dir dir;
  for (const bool weighted : {true, false}) {
    const std::string path = edge_list(dir.path / (weighted ? "w.txt" : "u.txt"), weighted, weighted ? 21 : 22);
    for (const Variant& v : variants()) {
      SCOPED_TRACE(std::string(weighted ? "weighted, " : "unweighted, ") + v.name);
      std::vector<std::int64_t> ids;
      const GraphData g = read_edge_list(path, v.opt, ids);
      for (int k = 1; k <= 4; ++k) {
        SCOPED_TRACE(std::to_string(k) + " ranks");
        expect_same(g, ids, on_threads(k, [&](Communicator& c) { return read_edge_list_on_ranks(path, v.opt, c); }));
      }
      for (int passes : {1, 2, 5}) check_edge_list(path, v.opt, passes, dir);
    }
  }
  // Dense ids from 1 with isolated nodes past the largest.
  const fs::path p = dir.path / "d.txt";
  {
    std::mt19937 rng(5);
    std::ofstream f(p);
    for (int e = 0; e < 300; ++e) f << 1 + rng() % 60 << ' ' << 1 + rng() % 60 << '\n';
  }
  EdgeListOptions dense;
  dense.num_nodes = 64;
  dense.base = 1;
  for (const bool symmetrize : {true, false}) {
    dense.symmetrize = symmetrize;
    std::vector<std::int64_t> ids;
    const GraphData g = read_edge_list(p.string(), dense, ids);
    for (int k = 1; k <= 4; ++k)
      expect_same(g, ids, on_threads(k, [&](Communicator& c) { return read_edge_list_on_ranks(p.string(), dense, c); }));
  }
}

TEST(ConvertInPasses, BadLineNamesItsLineAndLeavesNothing) {
  const Dir dir;
  const std::string path = edge_list(dir.path / "b.txt", true, 5);
  { std::ofstream(path, std::ios::app) << "7 x 1.0\n"; }
  std::ifstream in(path);
  const auto lines = std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
  int runs = 0;
  try {
    read_edge_list_in_passes(path, EdgeListOptions{}, 4, dir.scratch(), [&](GraphSlice&&, index_t, index_t) { ++runs; });
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path + ":" + std::to_string(lines));
  }
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(fs::is_empty(dir.scratch()));
}

TEST(ConvertInPasses, PassesForBudget) {
  const std::uint64_t lines = 100'000'000;
  for (int k : {1, 2, 9}) {
    const double need = convert_memory_bytes(lines, 0, 16, true, k);
    EXPECT_EQ(convert_passes_for_budget(lines, 0, 16, true, static_cast<std::uint64_t>(need) + 1), k);
  }
  EXPECT_LT(convert_memory_bytes(lines, 0, 16, false, 1), convert_memory_bytes(lines, 0, 16, true, 1));
  EXPECT_THROW(convert_passes_for_budget(lines, 0, 16, true, 1 << 20), InputError);
}

}  // namespace
}  // namespace plexus
