// Communicator over an MPI communicator (host buffers), with traffic accounting.
//
// Bytes are counted as the data a rank must receive under bandwidth-optimal (ring)
// algorithms, so that measurement and the analytic model (docs/communication.md) agree:
//   all-reduce      2·(p-1)/p · n·sizeof(T)
//   all-gather      (total - own) · sizeof(T)
//   reduce-scatter  (total - own) · sizeof(T)
// with sizeof(T) = 2 for bfloat16: the wire format is the 16-bit storage itself. The host
// collectives (all-to-all, gathers and broadcasts of bytes, scans) count what reaches this rank
// from the others (comm/byte_accounting.hpp, shared with the communicators of the dry runs).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <numeric>
#include <stdexcept>

#include "comm/byte_accounting.hpp"
#include "comm/grid_groups.hpp"
#include "comm/nccl_schedule.hpp"
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

// An all-gather's send buffer: MPI_IN_PLACE where it already sits at this rank's place `at` of
// the receive buffer (MPI forbids the two to overlap otherwise).
const void* send_or_in_place(const void* send, const void* at) {
  return send != nullptr && send == at ? MPI_IN_PLACE : send;
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

// Byte counts as MPI takes them: in units of the largest size that divides every count (so that
// every count and displacement is a whole number of units and fits an int for anything up to
// 2^31 records), as a contiguous type of that many bytes. Each rank may pick another unit: a
// message matches by its bytes, whatever units its two ends count it in.
class ByteLayout {
 public:
  explicit ByteLayout(const std::vector<std::size_t>& counts) {
    std::size_t unit = 0;
    for (const std::size_t c : counts) unit = std::gcd(unit, c);
    if (unit == 0 || unit > static_cast<std::size_t>(INT_MAX)) unit = 1;
    to_int_count(std::accumulate(counts.begin(), counts.end(), std::size_t{0}) / unit);
    for (int at = 0; const std::size_t c : counts) {
      counts_.push_back(static_cast<int>(c / unit));
      displs_.push_back(at);
      at += counts_.back();
    }
    check(MPI_Type_contiguous(static_cast<int>(unit), MPI_BYTE, &type_), "MPI_Type_contiguous");
    check(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  ~ByteLayout() { MPI_Type_free(&type_); }
  ByteLayout(const ByteLayout&) = delete;
  ByteLayout& operator=(const ByteLayout&) = delete;
  MPI_Datatype type() const { return type_; }
  const int* counts() const { return counts_.data(); }
  const int* displs() const { return displs_.data(); }
  int count(int rank) const { return counts_.at(static_cast<std::size_t>(rank)); }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  std::vector<int> counts_, displs_;
};

// MPI has no bfloat16 type: the values travel as their 16-bit patterns (MPI_UINT16_T) and are
// summed by this operation, which adds each pair in float and rounds back to bf16. That is
// one rounding per combine, as the interface promises (the order of the combines is MPI's).
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const bf16*>(in);
  auto* b = static_cast<bf16*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}
// Created on first use, which is after MPI_Init (every communicator is made from an initialised
// MPI), and shared by all communicators. It is never freed: one handle, released with
// everything else by MPI_Finalize, after which no collective can run.
MPI_Op bf16_sum_op() {
  static const MPI_Op op = [] {
    MPI_Op o = MPI_OP_NULL;
    check(MPI_Op_create(&bf16_sum, /*commute=*/1, &o), "MPI_Op_create (bf16 sum)");
    return o;
  }();
  return op;
}

// Per element type: its MPI datatype and the sum the reductions use.
template <class T>
struct MpiElement;
template <>
struct MpiElement<float> {
  static MPI_Datatype type() { return MPI_FLOAT; }
  static MPI_Op sum() { return MPI_SUM; }
};
template <>
struct MpiElement<double> {
  static MPI_Datatype type() { return MPI_DOUBLE; }
  static MPI_Op sum() { return MPI_SUM; }
};
template <>
struct MpiElement<std::int32_t> {
  static MPI_Datatype type() { return MPI_INT32_T; }
};
template <>
struct MpiElement<std::int64_t> {
  static MPI_Datatype type() { return MPI_INT64_T; }
  static MPI_Op sum() { return MPI_SUM; }
};
template <>
struct MpiElement<bf16> {
  static_assert(sizeof(bf16) == 2, "bf16 travels as MPI_UINT16_T");
  static MPI_Datatype type() { return MPI_UINT16_T; }
  static MPI_Op sum() { return bf16_sum_op(); }
};

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
  MPI_Comm mpi_comm() const override { return size_ > 1 ? comm_ : MPI_COMM_NULL; }

  void all_reduce(float* buf, std::size_t n, ReduceOp op) override { reduce(buf, n, op); }
  void all_reduce(double* buf, std::size_t n, ReduceOp op) override { reduce(buf, n, op); }
  void all_reduce(std::int64_t* buf, std::size_t n, ReduceOp op) override { reduce(buf, n, op); }
  void exclusive_scan(std::int64_t* buf, std::size_t n) override {
    Timer t(stats_, scan_rank_bytes(n, sizeof(std::int64_t), rank_));
    if (n == 0) return;
    std::vector<std::int64_t> below(n, 0);
    check(MPI_Exscan(buf, below.data(), to_int_count(n), MPI_INT64_T, MPI_SUM, comm_), "exclusive scan");
    if (rank_ == 0) std::fill(below.begin(), below.end(), 0);  // MPI_Exscan leaves rank 0's undefined
    std::copy(below.begin(), below.end(), buf);
  }
  void all_gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts) override {
    Timer t(stats_, all_gather_rank_bytes(counts, rank_));
    const ByteLayout l(counts);
    const std::size_t at = std::accumulate(counts.begin(), counts.begin() + rank_, std::size_t{0});
    const void* in = send_or_in_place(send, static_cast<const char*>(recv) + at);
    check(MPI_Allgatherv(in, l.count(rank_), l.type(), recv, l.counts(), l.displs(), l.type(), comm_),
          "all-gather (bytes)");
  }
  void gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts, int root) override {
    Timer t(stats_, gather_rank_bytes(counts, rank_, root));
    const ByteLayout l(counts);
    check(MPI_Gatherv(send, l.count(rank_), l.type(), recv, l.counts(), l.displs(), l.type(), root, comm_),
          "gather (bytes)");
  }
  void broadcast_bytes(void* buf, std::size_t n, int root) override {
    Timer t(stats_, size_ > 1 ? broadcast_rank_bytes(n, rank_, root) : 0.0);
    constexpr std::size_t kPiece = std::size_t{1} << 30;  // MPI counts are ints
    for (std::size_t at = 0; at < n; at += kPiece)
      check(MPI_Bcast(static_cast<char*>(buf) + at, static_cast<int>(std::min(kPiece, n - at)), MPI_BYTE, root, comm_),
            "broadcast");
  }
  void all_to_all_bytes(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                        const std::vector<std::size_t>& recv_counts) override {
    Timer t(stats_, all_to_all_rank_bytes(recv_counts, rank_));
    const ByteLayout out(send_counts), in(recv_counts);
    check(MPI_Alltoallv(send, out.counts(), out.displs(), out.type(), recv, in.counts(), in.displs(), in.type(), comm_),
          "all-to-all");
  }
  void all_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    gather(send, recv, counts);
  }
  void all_gather(const std::int32_t* send, std::int32_t* recv, const std::vector<std::size_t>& counts) override {
    gather(send, recv, counts);
  }
  void reduce_scatter(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    Timer t(stats_, others_bytes(counts, sizeof(float)));
    const CountLayout l = count_layout(counts, false);
    check(MPI_Reduce_scatter(send, recv, l.counts.data(), MPI_FLOAT, MPI_SUM, comm_), "reduce-scatter");
  }
  std::unique_ptr<Request> iall_reduce(float* buf, std::size_t n) override { return start_all_reduce(buf, n); }
  std::unique_ptr<Request> ireduce_scatter(const float* send, float* recv,
                                           const std::vector<std::size_t>& counts) override {
    return start_reduce_scatter(send, recv, counts);
  }
  std::unique_ptr<Request> iall_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    return start_all_gather(send, recv, counts);
  }
  std::unique_ptr<Request> iall_reduce(bf16* buf, std::size_t n) override { return start_all_reduce(buf, n); }
  std::unique_ptr<Request> ireduce_scatter(const bf16* send, bf16* recv,
                                           const std::vector<std::size_t>& counts) override {
    return start_reduce_scatter(send, recv, counts);
  }
  std::unique_ptr<Request> iall_gather(const bf16* send, bf16* recv,
                                       const std::vector<std::size_t>& counts) override {
    return start_all_gather(send, recv, counts);
  }
  void all_reduce_bf16(bf16* buf, std::size_t n) override {
    Timer t(stats_, all_reduce_bytes(n * sizeof(bf16)));
    if (size_ == 1) return;
    // Block r of the n elements, [n·r/p, n·(r+1)/p), is summed by rank r.
    std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      const std::size_t begin = n * static_cast<std::size_t>(r) / static_cast<std::size_t>(size_);
      const std::size_t end = n * static_cast<std::size_t>(r + 1) / static_cast<std::size_t>(size_);
      displs[static_cast<std::size_t>(r)] = to_int_count(begin);
      counts[static_cast<std::size_t>(r)] = to_int_count(end - begin);
    }
    const int mine = counts[static_cast<std::size_t>(rank_)];
    std::vector<bf16> parts(static_cast<std::size_t>(mine) * static_cast<std::size_t>(size_));
    std::vector<int> part_counts(static_cast<std::size_t>(size_), mine), part_displs(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) part_displs[static_cast<std::size_t>(r)] = r * mine;
    check(MPI_Alltoallv(buf, counts.data(), displs.data(), MPI_UINT16_T, parts.data(), part_counts.data(),
                        part_displs.data(), MPI_UINT16_T, comm_),
          "all-reduce (bf16: all-to-all)");
    bf16* own = buf + displs[static_cast<std::size_t>(rank_)];
    for (int i = 0; i < mine; ++i) {
      float sum = 0.0f;  // in rank order: the same sum on every run
      for (int r = 0; r < size_; ++r) sum += bf16_to_float(parts[static_cast<std::size_t>(r * mine + i)]);
      own[i] = float_to_bf16(sum);
    }
    check(MPI_Allgatherv(MPI_IN_PLACE, mine, MPI_UINT16_T, buf, counts.data(), displs.data(), MPI_UINT16_T, comm_),
          "all-reduce (bf16: all-gather)");
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
  // What a ring all-reduce of `bytes` moves to this rank.
  double all_reduce_bytes(std::size_t bytes) const { return ring_all_reduce_bytes(size_, bytes, 1); }
  // What an all-gather or reduce-scatter moves to this rank: all but its part.
  double others_bytes(const std::vector<std::size_t>& counts, std::size_t element_bytes) const {
    return uneven_rank_bytes(Transport::Mpi, counts, rank_, element_bytes);
  }
  template <class T>
  void reduce(T* buf, std::size_t n, ReduceOp op) {
    Timer t(stats_, all_reduce_bytes(n * sizeof(T)));
    const MPI_Op mpi_op = op == ReduceOp::Sum ? MpiElement<T>::sum() : op == ReduceOp::Max ? MPI_MAX : MPI_MIN;
    if (size_ > 1) check(MPI_Allreduce(MPI_IN_PLACE, buf, to_int_count(n), MpiElement<T>::type(), mpi_op, comm_), "all-reduce");
  }
  // All-gather, counts[r] elements from rank r.
  template <class T>
  void gather(const T* send, T* recv, const std::vector<std::size_t>& counts) {
    Timer t(stats_, others_bytes(counts, sizeof(T)));
    const CountLayout l = count_layout(counts, true);
    const MPI_Datatype type = MpiElement<T>::type();
    const void* in = send_or_in_place(send, recv + l.displs[rank_]);
    check(MPI_Allgatherv(in, l.counts[rank_], type, recv, l.counts.data(), l.displs.data(), type, comm_),
          "all-gather");
  }
  // The non-blocking collectives (sum), for float and bf16.
  template <class T>
  std::unique_ptr<Request> start_all_reduce(T* buf, std::size_t n) {
    auto r = std::make_unique<MpiRequest>(stats_);
    Timer t(stats_, all_reduce_bytes(n * sizeof(T)));
    check(MPI_Iallreduce(MPI_IN_PLACE, buf, to_int_count(n), MpiElement<T>::type(), MpiElement<T>::sum(), comm_,
                         &r->req),
          "all-reduce");
    return r;
  }
  template <class T>
  std::unique_ptr<Request> start_reduce_scatter(const T* send, T* recv, const std::vector<std::size_t>& counts) {
    auto r = std::make_unique<MpiRequest>(stats_);
    Timer t(stats_, others_bytes(counts, sizeof(T)));
    r->layout = count_layout(counts, false);
    check(MPI_Ireduce_scatter(send, recv, r->layout.counts.data(), MpiElement<T>::type(), MpiElement<T>::sum(), comm_,
                              &r->req),
          "reduce-scatter");
    return r;
  }
  template <class T>
  std::unique_ptr<Request> start_all_gather(const T* send, T* recv, const std::vector<std::size_t>& counts) {
    auto r = std::make_unique<MpiRequest>(stats_);
    Timer t(stats_, others_bytes(counts, sizeof(T)));
    r->layout = count_layout(counts, true);
    const CountLayout& l = r->layout;
    const void* in = send_or_in_place(send, recv + l.displs[rank_]);
    const MPI_Datatype type = MpiElement<T>::type();
    check(MPI_Iallgatherv(in, l.counts[rank_], type, recv, l.counts.data(), l.displs.data(), type, comm_, &r->req),
          "all-gather");
    return r;
  }

  MPI_Comm comm_;
  int size_ = 1, rank_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw InputError("make_mpi_communicator", "MPI is not initialised, or already finalised");
  if (comm == MPI_COMM_NULL) throw std::invalid_argument("make_mpi_communicator: MPI_COMM_NULL");
  MPI_Comm own = MPI_COMM_NULL;
  check(MPI_Comm_dup(comm, &own), "MPI_Comm_dup");
  return std::make_unique<MpiCommunicator>(own);
}

std::unique_ptr<ProcessGrid> ProcessGrid::from_mpi(GridShape shape, int dp, MPI_Comm comm) {
  int world_size = 1, rank = 0;
  // Any other MPI call before MPI_Init (or after MPI_Finalize) aborts inside the MPI library;
  // these two may be called at any time.
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized) throw InputError("ProcessGrid::from_mpi", "MPI is not initialised (call MPI_Init first)");
  if (finalized) throw InputError("ProcessGrid::from_mpi", "MPI is already finalised (MPI_Finalize was called)");
  if (comm == MPI_COMM_NULL) throw std::invalid_argument("ProcessGrid::from_mpi: MPI_COMM_NULL");
  MPI_Comm_size(comm, &world_size);
  MPI_Comm_rank(comm, &rank);
  const int ranks = grid_ranks(shape, dp);
  if (ranks != world_size)
    throw InputError("GridShape", (dp > 1 ? std::to_string(dp) + " replicas of " : std::string()) + shape.str() +
                                   " have " + std::to_string(ranks) + " ranks but " +
                                   std::to_string(world_size) + " were started");
  // Each axis communicator joins the ranks that share the other three coordinates; the
  // replica's, those that share d (comm/grid_groups.hpp).
  const std::array<GridGroup, 6> g = grid_groups(shape, rank);
  MPI_Comm world, cx, cy, cz, cd, replica;
  MPI_Comm_dup(comm, &world);
  MPI_Comm_split(world, g[0].colour, g[0].place, &cx);
  MPI_Comm_split(world, g[1].colour, g[1].place, &cy);
  MPI_Comm_split(world, g[2].colour, g[2].place, &cz);
  MPI_Comm_split(world, g[3].colour, g[3].place, &cd);
  MPI_Comm_split(world, g[4].colour, g[4].place, &replica);
  auto grid = std::make_unique<ProcessGrid>(
      shape, dp, rank,
      std::array<std::unique_ptr<Communicator>, 4>{
          std::make_unique<MpiCommunicator>(cx), std::make_unique<MpiCommunicator>(cy),
          std::make_unique<MpiCommunicator>(cz), std::make_unique<MpiCommunicator>(cd)},
      std::make_unique<MpiCommunicator>(replica), std::make_unique<MpiCommunicator>(world), world);
  grid->set_one_node(node_placement(world).local_ranks == world_size);  // the same on every rank
  return grid;
}

}  // namespace plexus

namespace plexus {

ProcessGrid::NodePlacement ProcessGrid::node_placement(MPI_Comm comm) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return {};
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  NodePlacement p;
  MPI_Comm_rank(node, &p.local_rank);
  MPI_Comm_size(node, &p.local_ranks);
  MPI_Comm_free(&node);
  return p;
}

std::unique_ptr<ProcessGrid> ProcessGrid::create(GridShape shape, int dp) {
  const int ranks = grid_ranks(shape, dp);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return from_mpi(shape, dp);
  if (ranks != 1)
    throw InputError("GridShape", shape.str() + (dp > 1 ? " times ProcessGrid::create(dp) " + std::to_string(dp) : std::string()) +
                                   " needs " + std::to_string(ranks) + " ranks: start plexus with mpirun -np " +
                                   std::to_string(ranks));
  return single();
}

}  // namespace plexus
