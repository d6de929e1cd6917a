// Ranks as threads of one process (src/comm/in_process_communicator.hpp): the collectives move
// what MPI's move and count the same bytes, on 1 to 4 ranks; a rank that fails ends the others
// instead of leaving them waiting.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "host_collectives_checks.hpp"
#include "plexus/comm.hpp"

namespace plexus {
namespace {

TEST(InProcessRanks, HostCollectivesMoveAndCountAsUnderMpi) {
  for (int p = 1; p <= 4; ++p) {
    run_in_process(p, [&](Communicator& c) {
      EXPECT_EQ(c.size(), p);
      EXPECT_EQ(c.mpi_comm(), MPI_COMM_NULL);
      test::expect_host_collectives(c);
    });
  }
}

// Float sums, all-gathers and reduce-scatters of uneven counts: values and the ring bytes.
TEST(InProcessRanks, TensorCollectivesMoveAndCountAsUnderMpi) {
  for (int p = 1; p <= 4; ++p) {
    run_in_process(p, [&](Communicator& c) {
      const int r = c.rank();
      std::vector<float> v{static_cast<float>(r + 1), static_cast<float>(-r)};
      c.all_reduce(v.data(), v.size(), ReduceOp::Sum);
      EXPECT_EQ(v, (std::vector<float>{static_cast<float>(p * (p + 1) / 2), static_cast<float>(-p * (p - 1) / 2)}));
      EXPECT_DOUBLE_EQ(c.stats().bytes, 2.0 * (p - 1) / p * 8.0);
      std::vector<std::size_t> counts;
      std::size_t total = 0;
      for (int q = 0; q < p; ++q) total += counts.emplace_back(static_cast<std::size_t>(q % 3));
      std::vector<float> own(counts[static_cast<std::size_t>(r)], static_cast<float>(r)), all(total, -1.0f);
      c.reset_stats();
      c.all_gather(own.data(), all.data(), counts);
      std::vector<float> want;
      for (int q = 0; q < p; ++q) want.insert(want.end(), counts[static_cast<std::size_t>(q)], static_cast<float>(q));
      EXPECT_EQ(all, want);
      EXPECT_DOUBLE_EQ(c.stats().bytes, static_cast<double>((total - own.size()) * sizeof(float)));
      std::vector<float> mine(own.size(), 0.0f);
      c.reduce_scatter(want.data(), mine.data(), counts);
      EXPECT_EQ(mine, std::vector<float>(own.size(), static_cast<float>(r * p)));
    });
  }
}

TEST(InProcessRanks, AFailingRankEndsTheOthersAndItsErrorIsRethrown) {
  std::atomic<int> abandoned{0};
  try {
    run_in_process(3, [&](Communicator& c) {
      std::int64_t v = 1;
      c.all_reduce(&v, 1, ReduceOp::Sum);  // all reach the first collective
      if (c.rank() == 1) throw std::runtime_error("rank 1 fails");
      try {
        c.all_reduce(&v, 1, ReduceOp::Sum);  // would wait for rank 1 for ever
      } catch (...) {
        ++abandoned;
        throw;
      }
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "rank 1 fails");
  }
  EXPECT_EQ(abandoned.load(), 2);
}

}  // namespace
}  // namespace plexus
