// prepare_graph_distributed (plexus/prepare_distributed.hpp) against prepare_graph on 1 to 4
// (and 8) ranks, in memory: random graphs with duplicate edges, self-loops, one-way edges,
// weights, isolated nodes, node weights and ids, cut into uneven slices (empty ones too); every
// dataset of every rank's output rows must equal the one-process result's rows, value for value,
// for balance none and permute, symmetrized and directed, with exchange rounds of a few entries.
// Bad slices end every rank with an InputError. What each rank moves and holds equals what the
// dry run of the prepare predicts, exactly (acceptance 4 of issue 44).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "plexus/link_split.hpp"
#include "plexus/prepare.hpp"
#include "plexus/prepare_distributed.hpp"
#include "prepare_fixtures.hpp"

namespace plexus {
namespace {

using test::messy_graph;
using test::slice_of;
using test::slice_rows;

// The job's ranks as the library takes them (made at first use, which every rank reaches alike).
Communicator& world() {
  static const std::unique_ptr<Communicator> w = make_mpi_communicator(MPI_COMM_WORLD);
  return *w;
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

void check_case(const GraphData& g, const PrepareOptions& opt, bool with_extras) {
  const int rank = world_rank(), size = world_size();
  const PreparedGraph want = prepare_graph(g, opt);
  const PreparedSlice got = prepare_graph_distributed(slice_of(g, slice_rows(g.num_nodes, rank, size), with_extras), opt,
                                                      world());
  test::expect_prepared_rows(g, want, got, block_range(g.num_nodes, size, rank), with_extras);
}

struct RoundEnv {  // exchange rounds of a few entries, restored after the test
  explicit RoundEnv(const char* v) { setenv("PLEXUS_PREPARE_ROUND", v, 1); }
  ~RoundEnv() { unsetenv("PLEXUS_PREPARE_ROUND"); }
};

TEST(DistributedPrepare, EqualsOneProcessPermuteSymmetrized) {
  PrepareOptions opt;
  opt.balance = Balance::kPermute;
  opt.seed = 3;
  check_case(messy_graph(61, 5, 300, true, 1), opt, true);
}

TEST(DistributedPrepare, EqualsOneProcessNoneUnweighted) {
  PrepareOptions opt;
  opt.balance = Balance::kNone;
  check_case(messy_graph(47, 3, 200, false, 2), opt, false);
}

TEST(DistributedPrepare, EqualsOneProcessDirectedInRoundsOfFive) {
  const RoundEnv env("5");
  PrepareOptions opt;
  opt.balance = Balance::kPermute;
  opt.symmetrize = false;
  check_case(messy_graph(53, 2, 250, true, 3), opt, true);
}

TEST(DistributedPrepare, EqualsOneProcessSymmetrizedInRoundsOfOne) {
  const RoundEnv env("1");
  PrepareOptions opt;
  opt.balance = Balance::kPermute;
  opt.seed = 11;
  check_case(messy_graph(13, 1, 40, true, 4), opt, false);
}

// Edge features: each output entry's row comes from the rank holding its input edge (or its
// reverse's, for an edge symmetrizing stored), as prepare_graph carries them.
TEST(DistributedPrepare, EqualsOneProcessWithEdgeFeatures) {
  const RoundEnv env("3");
  PrepareOptions opt;
  opt.balance = Balance::kPermute;
  opt.seed = 5;
  check_case(test::with_entry_rows(messy_graph(43, 2, 220, true, 6), 3), opt, true);
  opt.balance = Balance::kNone;
  opt.symmetrize = false;
  check_case(test::with_entry_rows(messy_graph(31, 1, 120, false, 7), 1), opt, false);
}

// A link split (whole on every rank) comes out renumbered with the graph, as prepare_graph
// renumbers it; one that cleaning would make an edge again (a directed graph's held-out 3 -> 0
// whose reverse is stored, symmetrized) is refused on every rank.
TEST(DistributedPrepare, EqualsOneProcessWithALinkSplit) {
  const int rank = world_rank(), size = world_size();
  GraphData g = test::with_entry_rows(messy_graph(57, 2, 260, true, 12), 2);
  g = clean_graph(g, true);  // (a split is drawn on a clean graph: random_link_split's input)
  const LinkSplit held_out = random_link_split(g, 0.1, 0.15, 3);
  ASSERT_GT(held_out.test_pos.size(), 0u);
  for (const Balance b : {Balance::kPermute, Balance::kNone}) {
    PrepareOptions opt;
    opt.balance = b;
    const PreparedGraph want = prepare_graph(g, opt, held_out);
    GraphSlice s = slice_of(g, slice_rows(g.num_nodes, rank, size), false);
    s.links = held_out;
    const PreparedSlice got = prepare_graph_distributed(std::move(s), opt, world());
    test::expect_prepared_rows(g, want, got, block_range(g.num_nodes, size, rank), false);
  }
  // Directed: 0 -> 3 stored, 3 -> 0 held out; symmetrizing would store 3 -> 0.
  GraphData d = messy_graph(20, 1, 0, false, 13);  // no edges yet
  d.indptr.assign(static_cast<std::size_t>(d.num_nodes) + 1, 0);
  d.indices = {3};
  for (std::size_t r = 1; r < d.indptr.size(); ++r) d.indptr[r] = 1;
  LinkSplit leak;
  leak.test_pos.u = {3};
  leak.test_pos.v = {0};
  leak.test_neg.u = {5};
  leak.test_neg.v = {9};
  GraphSlice s = slice_of(d, slice_rows(d.num_nodes, rank, size), false);
  s.links = leak;
  try {
    prepare_graph_distributed(std::move(s), PrepareOptions{}, world());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "the prepared graph");
  }
}

// Every rank's edge features must be as wide as the others' and hold a row per entry.
TEST(DistributedPrepare, EdgeFeaturesOfAnotherWidthFailEveryRank) {
  const int rank = world_rank(), size = world_size();
  const GraphData g = test::with_entry_rows(messy_graph(29, 2, 80, true, 8), 2);
  GraphSlice s = slice_of(g, slice_rows(g.num_nodes, rank, size), false);
  if (rank == size - 1) s.edge_features.push_back(1.0f);  // one value too many
  try {
    prepare_graph_distributed(std::move(s), PrepareOptions{}, world());
    FAIL() << "no error";
  } catch (const InputError& e) {
    if (rank == size - 1) {
      EXPECT_NE(std::string(e.what()).find("GraphSlice.edge_features"), std::string::npos) << e.what();
    }
  }
}

TEST(DistributedPrepare, BadSliceFailsOnEveryRank) {
  GraphData g = messy_graph(29, 2, 80, true, 5);
  GraphSlice s = slice_of(g, slice_rows(g.num_nodes, world_rank(), world_size()), false);
  const bool last = world_rank() == world_size() - 1;
  if (last && !s.indices.empty()) s.indices.back() = 29;  // out of range on the last rank only
  if (last && s.indices.empty()) s.labels.assign(s.labels.size() + 1, 0);
  std::string what;
  try {
    prepare_graph_distributed(std::move(s), PrepareOptions{.balance = Balance::kPermute}, world());
  } catch (const InputError& e) {
    what = e.message();
  }
  if (last)
    EXPECT_NE(what.find("GraphSlice."), std::string::npos) << what;
  else
    EXPECT_NE(what.find("rank " + std::to_string(world_size() - 1) + " failed"), std::string::npos) << what;
}

TEST(DistributedPrepare, NodeWeightsOnSomeRanksOnlyFailEveryRank) {
  if (world_size() == 1) GTEST_SKIP() << "needs a rank without the weights the others have";
  GraphData g = messy_graph(31, 2, 60, true, 7);
  const Range rows{31 * world_rank() / world_size(), 31 * (world_rank() + 1) / world_size()};
  GraphSlice s = slice_of(g, rows, true);
  const bool last = world_rank() == world_size() - 1;
  if (last) s.node_weights.clear();
  std::string what;
  try {
    prepare_graph_distributed(std::move(s), PrepareOptions{.balance = Balance::kNone}, world());
  } catch (const InputError& e) {
    what = e.message();
  }
  EXPECT_NE(what.find(last ? "GraphSlice.node_weights: other ranks" : "failed on its slice"), std::string::npos) << what;
}

// Each rank measures what it moved (bytes and calls counted by its communicator) and the peak of
// its arrays (its census); the dry run (predict_distributed_prepare: every rank's prepare in one
// process, as `plexus plan prepare` runs it) must predict each rank's three figures exactly, on
// every rank count of the job (1, 2, 3, 4, 8: uneven slices, one of them empty from 3 ranks on).
TEST(DistributedPrepare, DryRunPredictsEveryRanksBytesAndArraysExactly) {
  const int rank = world_rank(), size = world_size();
  const GraphData plain = messy_graph(61, 5, 300, true, 1);
  const GraphData featured = test::with_entry_rows(plain, 3);  // (their lookup's exchanges and arrays too)
  PrepareOptions permute;
  permute.balance = Balance::kPermute;
  permute.seed = 3;
  PrepareOptions directed_none;
  directed_none.balance = Balance::kNone;
  directed_none.symmetrize = false;
  for (const GraphData* graph : {&plain, &featured})
  for (const PrepareOptions& opt : {permute, directed_none}) {
    const GraphData& g = *graph;
    for (const index_t round : {index_t{0}, index_t{7}}) {
      SCOPED_TRACE(::testing::Message() << "balance " << balance_name(opt.balance) << " round " << round
                                        << " edge features " << g.num_edge_features);
      world().reset_stats();
      PrepareRankCost mine;
      prepare_graph_distributed(slice_of(g, slice_rows(g.num_nodes, rank, size), true), opt, world(), round, &mine);
      std::vector<PrepareRankCost> measured(static_cast<std::size_t>(size));
      MPI_Allgather(&mine, sizeof mine, MPI_BYTE, measured.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
      std::vector<GraphSlice> slices;
      for (int r = 0; r < size; ++r) slices.push_back(slice_of(g, slice_rows(g.num_nodes, r, size), true));
      const std::vector<PrepareRankCost> predicted = predict_distributed_prepare(std::move(slices), opt, round);
      ASSERT_EQ(predicted.size(), measured.size());
      for (std::size_t r = 0; r < measured.size(); ++r) {
        EXPECT_EQ(predicted[r].bytes, measured[r].bytes) << "rank " << r;
        EXPECT_EQ(predicted[r].calls, measured[r].calls) << "rank " << r;
        EXPECT_EQ(predicted[r].peak_array_bytes, measured[r].peak_array_bytes) << "rank " << r;
        EXPECT_GT(measured[r].peak_array_bytes, 0u) << "rank " << r;
        EXPECT_EQ(measured[r].bytes > 0, size > 1) << "rank " << r;
      }
    }
  }
}

TEST(DistributedPrepare, MetisRefusedOnSeveralRanks) {
  if (world_size() == 1) GTEST_SKIP() << "metis runs on one rank";
  GraphData g = messy_graph(20, 1, 30, false, 6);
  for (const Balance b : {Balance::kMetis, Balance::kLocality}) {
    PrepareOptions opt;
    opt.balance = b;
    EXPECT_THROW(prepare_graph_distributed(slice_of(g, slice_rows(20, world_rank(), world_size()), false), opt, world()),
                 InputError) << balance_name(b);
  }
}

}  // namespace
}  // namespace plexus
