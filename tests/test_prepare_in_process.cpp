// prepare_graph_distributed (plexus/prepare_distributed.hpp) without MPI: on one rank (the self
// communicator) and on 2 to 4 ranks run as threads of this process (run_in_process), against
// prepare_graph, every rank's rows value for value (the same checks as mpi_test_prepare under
// mpirun); a bad slice on one rank fails every rank.
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "plexus/prepare.hpp"
#include "plexus/prepare_distributed.hpp"
#include "prepare_fixtures.hpp"

namespace plexus {
namespace {

using test::messy_graph;
using test::slice_of;
using test::slice_rows;

TEST(PrepareOnOneRank, SelfCommunicatorEqualsOneProcess) {
  const GraphData g = messy_graph(41, 3, 180, true, 21);
  for (const Balance b : {Balance::kNone, Balance::kPermute}) {
    PrepareOptions opt;
    opt.balance = b;
    const std::unique_ptr<Communicator> self = make_self_communicator();
    const PreparedSlice got = prepare_graph_distributed(slice_of(g, Range{0, g.num_nodes}, true), opt, *self, 7);
    test::expect_prepared_rows(g, prepare_graph(g, opt), got, Range{0, g.num_nodes}, true);
    EXPECT_EQ(self->stats().bytes, 0.0);
  }
}

TEST(PrepareOnThreads, EveryRankEqualsOneProcess) {
  const GraphData g = messy_graph(57, 2, 260, true, 22);
  for (const bool symmetrize : {true, false}) {
    PrepareOptions opt;
    opt.balance = Balance::kPermute;
    opt.seed = 5;
    opt.symmetrize = symmetrize;
    const PreparedGraph want = prepare_graph(g, opt);
    for (int p = 2; p <= 4; ++p) {
      SCOPED_TRACE(std::to_string(p) + " ranks, symmetrize " + std::to_string(symmetrize));
      run_in_process(p, [&](Communicator& c) {
        const PreparedSlice got =
            prepare_graph_distributed(slice_of(g, slice_rows(g.num_nodes, c.rank(), p), true), opt, c, 3);
        test::expect_prepared_rows(g, want, got, block_range(g.num_nodes, p, c.rank()), true);
      });
    }
  }
}

TEST(PrepareOnThreads, ABadSliceOnOneRankFailsEveryRank) {
  const GraphData g = messy_graph(29, 2, 80, true, 5);
  std::mutex m;
  std::vector<std::string> what(3);
  EXPECT_THROW(run_in_process(3,
                              [&](Communicator& c) {
                                GraphSlice s = slice_of(g, slice_rows(g.num_nodes, c.rank(), 3), false);
                                if (c.rank() == 2) s.indices.back() = 29;  // out of range on the last rank only
                                try {
                                  prepare_graph_distributed(std::move(s), PrepareOptions{}, c);
                                } catch (const InputError& e) {
                                  const std::lock_guard<std::mutex> lock(m);
                                  what[static_cast<std::size_t>(c.rank())] = e.message();
                                  throw;
                                }
                              }),
               InputError);
  EXPECT_NE(what[2].find("GraphSlice."), std::string::npos) << what[2];
  EXPECT_NE(what[0].find("rank 2 failed"), std::string::npos) << what[0];
  EXPECT_NE(what[1].find("rank 2 failed"), std::string::npos) << what[1];
}

// features_bf16 with a feature beyond bfloat16's range on one rank's slice: every rank refuses
// (the rank holding it names node and feature) before anything is exchanged or written; one
// process refuses the same graph with the same words.
TEST(PrepareOnThreads, Bf16FeaturesBeyondItsRangeFailEveryRank) {
  GraphData g = messy_graph(29, 2, 80, true, 5);
  g.features[static_cast<std::size_t>(20 * g.num_features + 1)] = 3.4e38f;
  PrepareOptions opt;
  opt.features_bf16 = true;
  try {
    prepare_graph(g, opt);
    ADD_FAILURE() << "one process: no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("node 20, feature 1: 3.4e+38 is beyond bfloat16's range"), std::string::npos)
        << e.message();
  }
  std::mutex m;
  std::vector<std::string> what(3);
  EXPECT_THROW(run_in_process(3,
                              [&](Communicator& c) {
                                try {
                                  prepare_graph_distributed(slice_of(g, slice_rows(g.num_nodes, c.rank(), 3), false), opt, c);
                                } catch (const InputError& e) {
                                  const std::lock_guard<std::mutex> lock(m);
                                  what[static_cast<std::size_t>(c.rank())] = e.message();
                                  throw;
                                }
                              }),
               InputError);
  int named = 0;
  for (const std::string& w : what) named += w.find("node 20, feature 1: 3.4e+38 is beyond bfloat16's range") != std::string::npos;
  EXPECT_EQ(named, 1);
  for (const std::string& w : what) EXPECT_FALSE(w.empty()) << "a rank did not fail";
}

}  // namespace
}  // namespace plexus
