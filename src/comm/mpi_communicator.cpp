// Communicator over an MPI communicator (host buffers), with traffic accounting.
//
// Bytes are counted as the data a rank must receive under bandwidth-optimal (ring)
// algorithms, so that measurement and the analytic model (docs/communication.md) agree:
//   all-reduce      2·(p-1)/p · n·sizeof(T)
//   all-gather      (total - own) · 4
//   reduce-scatter  (total - own) · 4
#include <mpi.h>

#include <chrono>
#include <climits>
#include <numeric>
#include <stdexcept>

#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {
namespace {

int to_int_count(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error("collective of more than 2^31 elements: use a finer grid");
  return static_cast<int>(n);
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI error in ") + what);
}

// The int counts MPI's reduce-scatter takes, and for an all-gather their displacements (the
// running sums, which must fit an int too).
struct CountLayout {
  std::vector<int> counts, displs;
};
CountLayout count_layout(const std::vector<std::size_t>& counts, bool displacements) {
  if (displacements) to_int_count(std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
  CountLayout l;
  for (int off = 0; const std::size_t c : counts) {
    l.counts.push_back(to_int_count(c));
    if (displacements) {
      l.displs.push_back(off);
      off += l.counts.back();
    }
  }
  return l;
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_rank(comm_, &rank_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
  }
  int size() const override { return size_; }
  int rank() const override { return rank_; }

  void all_reduce(float* buf, std::size_t n, ReduceOp op) override {
    Timer t(stats_, 2.0 * (size_ - 1) / size_ * static_cast<double>(n * sizeof(float)));
    if (size_ > 1) check(MPI_Allreduce(MPI_IN_PLACE, buf, to_int_count(n), MPI_FLOAT, mpi_op(op), comm_), "all-reduce");
  }
  void all_reduce(double* buf, std::size_t n, ReduceOp op) override {
    Timer t(stats_, 2.0 * (size_ - 1) / size_ * static_cast<double>(n * sizeof(double)));
    if (size_ > 1) check(MPI_Allreduce(MPI_IN_PLACE, buf, to_int_count(n), MPI_DOUBLE, mpi_op(op), comm_), "all-reduce");
  }
  void all_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    gather(send, recv, counts, MPI_FLOAT);
  }
  void all_gather(const std::int32_t* send, std::int32_t* recv, const std::vector<std::size_t>& counts) override {
    gather(send, recv, counts, MPI_INT32_T);
  }
  void reduce_scatter(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    Timer t(stats_, others_bytes(counts));
    const CountLayout l = count_layout(counts, false);
    check(MPI_Reduce_scatter(send, recv, l.counts.data(), MPI_FLOAT, MPI_SUM, comm_), "reduce-scatter");
  }
  std::unique_ptr<Request> iall_reduce(float* buf, std::size_t n) override {
    auto r = std::make_unique<MpiRequest>(stats_);
    Timer t(stats_, 2.0 * (size_ - 1) / size_ * static_cast<double>(n * sizeof(float)));
    check(MPI_Iallreduce(MPI_IN_PLACE, buf, to_int_count(n), MPI_FLOAT, MPI_SUM, comm_, &r->req), "all-reduce");
    return r;
  }
  std::unique_ptr<Request> ireduce_scatter(const float* send, float* recv,
                                           const std::vector<std::size_t>& counts) override {
    auto r = std::make_unique<MpiRequest>(stats_);
    Timer t(stats_, others_bytes(counts));
    r->layout = count_layout(counts, false);
    check(MPI_Ireduce_scatter(send, recv, r->layout.counts.data(), MPI_FLOAT, MPI_SUM, comm_, &r->req),
          "reduce-scatter");
    return r;
  }
  std::unique_ptr<Request> iall_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    auto r = std::make_unique<MpiRequest>(stats_);
    Timer t(stats_, others_bytes(counts));
    r->layout = count_layout(counts, true);
    const CountLayout& l = r->layout;
    const void* in = send == recv + l.displs[rank_] ? MPI_IN_PLACE : send;
    check(MPI_Iallgatherv(in, l.counts[rank_], MPI_FLOAT, recv, l.counts.data(), l.displs.data(), MPI_FLOAT, comm_,
                          &r->req),
          "all-gather");
    return r;
  }

 private:
  // A pending non-blocking collective; its time inside wait()/test() counts as the axis's time.
  struct MpiRequest final : Request {
    explicit MpiRequest(CommStats& s) : stats(&s) {}
    ~MpiRequest() override {
      if (req != MPI_REQUEST_NULL) MPI_Wait(&req, MPI_STATUS_IGNORE);  // never leave one in flight
    }
    MPI_Request req = MPI_REQUEST_NULL;
    CommStats* stats;
    CountLayout layout;  // must outlive the call
    void wait() override {
      const auto t0 = std::chrono::steady_clock::now();
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      stats->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    bool test() override {
      const auto t0 = std::chrono::steady_clock::now();
      int done = 0;
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      stats->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return done != 0;
    }
  };
  // Counts one call: its bytes now, its time when the scope ends.
  struct Timer {
    CommStats& s;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    Timer(CommStats& stats, double bytes) : s(stats) {
      ++s.calls;
      s.bytes += bytes;
    }
    ~Timer() { s.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  };
  // What an all-gather or reduce-scatter of 4-byte elements moves to this rank: all but its part.
  double others_bytes(const std::vector<std::size_t>& counts) const {
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    return static_cast<double>((total - counts.at(rank_)) * 4);
  }
  // All-gather of 4-byte elements, counts[r] from rank r.
  template <class T>
  void gather(const T* send, T* recv, const std::vector<std::size_t>& counts, MPI_Datatype type) {
    static_assert(sizeof(T) == 4, "counted as 4-byte elements");
    Timer t(stats_, others_bytes(counts));
    const CountLayout l = count_layout(counts, true);
    check(MPI_Allgatherv(send, l.counts[rank_], type, recv, l.counts.data(), l.displs.data(), type, comm_),
          "all-gather");
  }
  static MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::Sum ? MPI_SUM : MPI_MAX; }

  MPI_Comm comm_;
  int size_ = 1, rank_ = 0;
};

}  // namespace

std::unique_ptr<ProcessGrid> ProcessGrid::from_mpi(GridShape shape, int dp) {
  int world_size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (dp < 1) throw InputError("--dp", "must be at least 1");
  if (dp * shape.size() != world_size)
    throw InputError("--grid", (dp > 1 ? std::to_string(dp) + " replicas of " : std::string()) + shape.str() +
                                   " have " + std::to_string(dp * shape.size()) + " ranks but " +
                                   std::to_string(world_size) + " were started");
  const int t = rank % shape.size(), d = rank / shape.size();
  const int x = (t / shape.y) % shape.x, y = t % shape.y, z = t / (shape.x * shape.y);
  // Each axis communicator joins the ranks that share the other three coordinates; the
  // replica's, those that share d; the data-parallel axis's, those that share (x, y, z).
  MPI_Comm cx, cy, cz, cd, replica;
  const int P = shape.size();
  MPI_Comm_split(MPI_COMM_WORLD, d * P + z * shape.y + y, x, &cx);
  MPI_Comm_split(MPI_COMM_WORLD, d * P + z * shape.x + x, y, &cy);
  MPI_Comm_split(MPI_COMM_WORLD, d * P + x * shape.y + y, z, &cz);
  MPI_Comm_split(MPI_COMM_WORLD, t, d, &cd);
  MPI_Comm_split(MPI_COMM_WORLD, d, t, &replica);
  return std::make_unique<ProcessGrid>(
      shape, dp, rank,
      std::array<std::unique_ptr<Communicator>, 4>{
          std::make_unique<MpiCommunicator>(cx), std::make_unique<MpiCommunicator>(cy),
          std::make_unique<MpiCommunicator>(cz), std::make_unique<MpiCommunicator>(cd)},
      std::make_unique<MpiCommunicator>(replica), std::make_unique<MpiCommunicator>(MPI_COMM_WORLD));
}

}  // namespace plexus

namespace plexus {

int ProcessGrid::ranks_on_this_node() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return 1;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

std::unique_ptr<ProcessGrid> ProcessGrid::create(GridShape shape, int dp) {
  if (dp < 1) throw InputError("--dp", "must be at least 1");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return from_mpi(shape, dp);
  if (dp * shape.size() != 1)
    throw InputError("--grid", shape.str() + (dp > 1 ? " times --dp " + std::to_string(dp) : std::string()) +
                                   " needs " + std::to_string(dp * shape.size()) +
                                   " ranks: start plexus with mpirun -np " + std::to_string(dp * shape.size()));
  return single();
}

}  // namespace plexus
