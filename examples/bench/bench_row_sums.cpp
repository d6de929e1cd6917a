// bench_row_sums: what the row-sparse collectives cost against the dense ones they replace
// (--sparse-comm, docs/communication.md, "Row-sparse sums" and "Row-sparse gathers"), on the
// ranks of one MPI job: a sum of a block [rows × cols] over all ranks — the communicator's
// all-reduce (what --sparse-comm off takes), RowSparseSum's dense form and its rows form — and
// a gather of the block's parts — the all-gather against RowSparseGather's rows form — where each
// rank holds (reads) a random fraction `--held` of the rows. Seconds per call, the slowest rank's
// best of `--reps`, and the rows each moves over the group.
//
//   mpirun -np P bench_row_sums [--rows R] [--cols C] [--held F] [--reps N] [--seed S]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "comm/row_sparse_gather.hpp"
#include "comm/row_sparse_sum.hpp"
#include "plexus/comm.hpp"
#include "plexus/shard.hpp"

using namespace plexus;

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The slowest rank's time of each rep (the ranks start together), best over the reps.
template <class F>
double best_of(Communicator& comm, int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    f();
    double t = now_s() - t0;
    comm.all_reduce(&t, 1, ReduceOp::Max);
    best = std::min(best, t);
  }
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  index_t rows = 250000, cols = 32;
  double held = 0.3;
  int reps = 5;
  unsigned seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rows") rows = std::atoll(argv[i + 1]);
    else if (a == "--cols") cols = std::atoll(argv[i + 1]);
    else if (a == "--held") held = std::atof(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--seed") seed = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: bench_row_sums [--rows R] [--cols C] [--held F] [--reps N] [--seed S]\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  {
    const auto comm = make_mpi_communicator();
    const int p = comm->size(), me = comm->rank();
    std::mt19937 rng(seed + static_cast<unsigned>(me));
    std::bernoulli_distribution coin(held);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(rows));
    for (auto& m : mask) m = coin(rng) ? 1 : 0;
    const std::size_t n = static_cast<std::size_t>(rows * cols);
    std::vector<float> c(n), work(n);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (std::size_t i = 0; i < n; ++i) c[i] = mask[i / static_cast<std::size_t>(cols)] ? d(rng) : 0.0f;

    const RowSparseSum dense(*comm, rows), sparse(*comm, rows, mask, RowsRule::FewerRows);
    // Whether --sparse-comm auto on one node (RowsRule::Cheaper) takes the rows form.
    const bool auto_sum = RowSparseSum(*comm, rows, mask, RowsRule::Cheaper).form() == RowSparseSum::Form::Rows;
    const double t_mpi = best_of(*comm, reps, [&] {
      work = c;
      comm->all_reduce(work.data(), n, ReduceOp::Sum);
    });
    const double t_dense = best_of(*comm, reps, [&] {
      work = c;
      dense.sum(work.data(), cols);
    });
    const double t_rows = best_of(*comm, reps, [&] {
      work = c;
      sparse.sum(work.data(), cols);
    });
    const double t_copy = best_of(*comm, reps, [&] { work = c; });

    const RowSparseGather gather(*comm, rows, mask, RowsRule::FewerRows);
    const bool auto_gather = RowSparseGather(*comm, rows, mask, RowsRule::Cheaper).form() == RowSparseGather::Form::Rows;
    const Range mine = block_range(rows, p, me);
    std::vector<std::size_t> counts;
    for (int q = 0; q < p; ++q) counts.push_back(static_cast<std::size_t>(block_range(rows, p, q).size() * cols));
    const float* own = c.data() + static_cast<std::size_t>(mine.begin * cols);
    std::vector<float> part(own, own + static_cast<std::size_t>(mine.size() * cols));
    const double t_all_gather = best_of(*comm, reps, [&] { comm->all_gather(part.data(), work.data(), counts); });
    const double t_gather = gather.form() == RowSparseGather::Form::Rows
                                ? best_of(*comm, reps, [&] { gather.gather(part.data(), work.data(), cols * sizeof(float)); })
                                : t_all_gather;
    if (me == 0) {
      std::printf("ranks %d rows %lld cols %lld held %.3f (copy of the block %.4f s, subtracted below)\n", p,
                  static_cast<long long>(rows), static_cast<long long>(cols), held, t_copy);
      std::printf("sum     all-reduce %.4f s  dense form %.4f s  rows form %.4f s (rows: %s, auto: %s; rows %llu of "
                  "dense %llu)\n",
                  t_mpi - t_copy, t_dense - t_copy, t_rows - t_copy,
                  sparse.form() == RowSparseSum::Form::Rows ? "taken" : "not taken", auto_sum ? "taken" : "not taken",
                  static_cast<unsigned long long>(sparse.rows_group_rows()),
                  static_cast<unsigned long long>(sparse.dense_group_rows()));
      std::printf("gather  all-gather %.4f s  rows form %.4f s (rows: %s, auto: %s; rows %llu of dense %llu)\n",
                  t_all_gather, t_gather, gather.form() == RowSparseGather::Form::Rows ? "taken" : "not taken",
                  auto_gather ? "taken" : "not taken",
                  static_cast<unsigned long long>(gather.rows_group_rows()),
                  static_cast<unsigned long long>(gather.dense_group_rows()));
    }
  }
  MPI_Finalize();
  return 0;
}
