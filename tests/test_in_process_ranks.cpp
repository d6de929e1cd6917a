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
#include "plexus/process_grid.hpp"

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

// A grid of threads: each axis's group is the line of ranks that differ only in that axis's
// coordinate (the replica: the ranks of one d; the world: all), ordered by that coordinate, as
// ProcessGrid::from_mpi splits; a sum over an axis sums that line's values alone.
TEST(InProcessRanks, AGridsAxesAreItsLinesOrderedByCoordinate) {
  for (const auto& grid_and_replicas : {std::pair{GridShape{2, 3, 1}, 2}, std::pair{GridShape{1, 2, 2}, 1},
                                         std::pair{GridShape{3, 1, 2}, 1}, std::pair{GridShape{1, 1, 1}, 3}}) {
    const GridShape shape = grid_and_replicas.first;  // (not structured bindings: lambdas read them)
    const int dp = grid_and_replicas.second;
    std::atomic<int> ran{0};
    run_in_process_grid(shape, dp, [&](ProcessGrid& grid) {
      ++ran;
      const std::array<int, 4> c = grid_coords(shape, grid.rank());
      const std::array<int, 4> dims{shape.x, shape.y, shape.z, dp};
      for (int a = 0; a < 4; ++a) {
        Communicator& comm = grid.comm(static_cast<Axis>(a));
        EXPECT_EQ(comm.size(), dims[static_cast<std::size_t>(a)]);
        EXPECT_EQ(comm.rank(), c[static_cast<std::size_t>(a)]);
        // Σ over the line of rank·(the other coordinates' fingerprint): each line sums its own.
        std::int64_t v[2] = {grid.rank(), 1};
        comm.all_reduce(v, 2, ReduceOp::Sum);
        std::int64_t want = 0;
        for (int k = 0; k < dims[static_cast<std::size_t>(a)]; ++k) {
          std::array<int, 4> q = c;
          q[static_cast<std::size_t>(a)] = k;
          want += q[3] * shape.size() + q[2] * shape.x * shape.y + q[0] * shape.y + q[1];
        }
        EXPECT_EQ(v[0], want) << "axis " << a;
        EXPECT_EQ(v[1], dims[static_cast<std::size_t>(a)]);
      }
      EXPECT_EQ(grid.replica().size(), shape.size());
      EXPECT_EQ(grid.replica().rank(), grid.rank() % shape.size());
      EXPECT_EQ(grid.world().size(), dp * shape.size());
      std::int64_t all = 1;
      grid.world().all_reduce(&all, 1, ReduceOp::Sum);
      EXPECT_EQ(all, dp * shape.size());
    });
    EXPECT_EQ(ran.load(), dp * shape.size());
  }
}

TEST(InProcessRanks, AGridRankThatFailsEndsTheOthersWaitingOnAnyAxis) {
  try {
    run_in_process_grid(GridShape{2, 2, 1}, 1, [&](ProcessGrid& grid) {
      if (grid.rank() == 3) throw std::runtime_error("rank 3 fails");
      float v = 1.0f;
      grid.comm(grid.rank() % 2 ? Axis::X : Axis::Y).all_reduce(&v, 1, ReduceOp::Sum);
      grid.world().all_reduce(&v, 1, ReduceOp::Sum);
    });
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 3 fails");  // its own error, not the others' abandonment
  }
}

}  // namespace
}  // namespace plexus
