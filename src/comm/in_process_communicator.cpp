// The communicators of ranks run as threads of one process (in_process_communicator.hpp).
//
// Every collective is the same three steps: each rank publishes its buffers in its slot; once all
// have (a barrier), each reads what it needs from the others' slots into its own output; once all
// have read (a second barrier), each may reuse its buffers. An in-place reduction computes into a
// temporary before the second barrier and writes its buffer after it, since the others read that
// buffer until then.
#include "comm/in_process_communicator.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "comm/byte_accounting.hpp"
#include "comm/grid_groups.hpp"
#include "comm/nccl_schedule.hpp"

namespace plexus {
namespace {

// Thrown in the ranks left waiting when another rank's body failed.
struct Abandoned : std::runtime_error {
  Abandoned() : std::runtime_error("another rank of the in-process group failed") {}
};

// What a rank publishes for one collective.
struct Slot {
  const void* send = nullptr;
  void* buf = nullptr;  // in-place collectives
  const std::vector<std::size_t>* send_counts = nullptr;
};

class Group {
 public:
  explicit Group(int ranks) : ranks_(ranks), slots_(static_cast<std::size_t>(ranks)) {}
  int ranks() const { return ranks_; }
  Slot& slot(int rank) { return slots_[static_cast<std::size_t>(rank)]; }

  // Waits for every rank (throws Abandoned once the group is).
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (abandoned_) throw Abandoned();
    const std::uint64_t generation = generation_;
    if (++arrived_ == ranks_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation || abandoned_; });
    if (generation_ == generation) throw Abandoned();
  }
  void abandon() {
    std::lock_guard<std::mutex> lock(mutex_);
    abandoned_ = true;
    cv_.notify_all();
  }

 private:
  int ranks_;
  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool abandoned_ = false;
};

std::size_t offset_of(const std::vector<std::size_t>& counts, int rank) {
  return std::accumulate(counts.begin(), counts.begin() + rank, std::size_t{0});
}

// How each element type combines: float and double as they are, bf16 summed in float and
// rounded at each combine (as the MPI and NCCL sums do), integers exactly.
template <class T>
T combine(T a, T b, ReduceOp op) {
  if (op == ReduceOp::Max) return std::max(a, b);
  if (op == ReduceOp::Min) return std::min(a, b);
  return static_cast<T>(a + b);
}
template <>
bf16 combine(bf16 a, bf16 b, ReduceOp) {
  return float_to_bf16(bf16_to_float(a) + bf16_to_float(b));
}

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(Group& g, int rank) : g_(g), rank_(rank) {}
  int size() const override { return g_.ranks(); }
  int rank() const override { return rank_; }

  void all_reduce(float* buf, std::size_t n, ReduceOp op) override { reduce(buf, n, op); }
  void all_reduce(double* buf, std::size_t n, ReduceOp op) override { reduce(buf, n, op); }
  void all_reduce(std::int64_t* buf, std::size_t n, ReduceOp op) override { reduce(buf, n, op); }
  void all_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    gather_elements(send, recv, counts);
  }
  void all_gather(const std::int32_t* send, std::int32_t* recv, const std::vector<std::size_t>& counts) override {
    gather_elements(send, recv, counts);
  }
  void reduce_scatter(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    scatter_sum(send, recv, counts);
  }
  std::unique_ptr<Request> iall_reduce(float* buf, std::size_t n) override {
    reduce(buf, n, ReduceOp::Sum);
    return completed();
  }
  std::unique_ptr<Request> ireduce_scatter(const float* send, float* recv,
                                           const std::vector<std::size_t>& counts) override {
    scatter_sum(send, recv, counts);
    return completed();
  }
  std::unique_ptr<Request> iall_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    gather_elements(send, recv, counts);
    return completed();
  }
  std::unique_ptr<Request> iall_reduce(bf16* buf, std::size_t n) override {
    reduce(buf, n, ReduceOp::Sum);
    return completed();
  }
  std::unique_ptr<Request> ireduce_scatter(const bf16* send, bf16* recv,
                                           const std::vector<std::size_t>& counts) override {
    scatter_sum(send, recv, counts);
    return completed();
  }
  std::unique_ptr<Request> iall_gather(const bf16* send, bf16* recv, const std::vector<std::size_t>& counts) override {
    gather_elements(send, recv, counts);
    return completed();
  }
  void all_reduce_bf16(bf16* buf, std::size_t n) override {  // summed in float in rank order, rounded once
    count(ring_all_reduce_bytes(size(), n, sizeof(bf16)));
    publish({nullptr, buf, nullptr});
    std::vector<bf16> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int r = 0; r < size(); ++r) sum += bf16_to_float(static_cast<const bf16*>(g_.slot(r).buf)[i]);
      out[i] = float_to_bf16(sum);
    }
    g_.barrier();
    std::copy(out.begin(), out.end(), buf);
  }

  void exclusive_scan(std::int64_t* buf, std::size_t n) override {
    count(scan_rank_bytes(n, sizeof(std::int64_t), rank_));
    publish({nullptr, buf, nullptr});
    std::vector<std::int64_t> below(n, 0);
    for (int r = 0; r < rank_; ++r)
      for (std::size_t i = 0; i < n; ++i) below[i] += static_cast<const std::int64_t*>(g_.slot(r).buf)[i];
    g_.barrier();
    std::copy(below.begin(), below.end(), buf);
  }
  void all_gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts) override {
    count(all_gather_rank_bytes(counts, rank_));
    gather_into(send, recv, counts);
  }
  void gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts, int root) override {
    count(gather_rank_bytes(counts, rank_, root));
    gather_into(send, rank_ == root ? recv : nullptr, counts);
  }
  void broadcast_bytes(void* buf, std::size_t n, int root) override {
    count(broadcast_rank_bytes(n, rank_, root));
    publish({buf, nullptr, nullptr});
    if (rank_ != root && n > 0) std::memcpy(buf, g_.slot(root).send, n);
    g_.barrier();
  }
  void all_to_all_bytes(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                        const std::vector<std::size_t>& recv_counts) override {
    count(all_to_all_rank_bytes(recv_counts, rank_));
    publish({send, nullptr, &send_counts});
    for (int r = 0; r < size(); ++r) {
      const Slot& from = g_.slot(r);
      const std::size_t n = from.send_counts->at(static_cast<std::size_t>(rank_));
      if (n != recv_counts.at(static_cast<std::size_t>(r)))
        throw std::logic_error("all_to_all_bytes: rank " + std::to_string(r) + " sends " + std::to_string(n) +
                               " bytes to rank " + std::to_string(rank_) + ", which expects " +
                               std::to_string(recv_counts[static_cast<std::size_t>(r)]));
      if (n > 0)
        std::memcpy(static_cast<char*>(recv) + offset_of(recv_counts, r),
                    static_cast<const char*>(from.send) + offset_of(*from.send_counts, rank_), n);
    }
    g_.barrier();
  }

 private:
  void count(double bytes) {
    ++stats_.calls;
    stats_.bytes += bytes;
  }
  // Step one of every collective: this rank's slot filled, every rank's visible.
  void publish(const Slot& s) {
    g_.slot(rank_) = s;
    g_.barrier();
  }

  template <class T>
  void reduce(T* buf, std::size_t n, ReduceOp op) {
    count(ring_all_reduce_bytes(size(), n, sizeof(T)));
    publish({nullptr, buf, nullptr});
    std::vector<T> out(static_cast<const T*>(g_.slot(0).buf), static_cast<const T*>(g_.slot(0).buf) + n);
    for (int r = 1; r < size(); ++r)
      for (std::size_t i = 0; i < n; ++i) out[i] = combine(out[i], static_cast<const T*>(g_.slot(r).buf)[i], op);
    g_.barrier();
    std::copy(out.begin(), out.end(), buf);
  }
  // Every rank's `counts[r]` bytes of `send` into recv (null: this rank receives nothing).
  void gather_into(const void* send, void* recv, const std::vector<std::size_t>& counts) {
    publish({send, nullptr, nullptr});
    for (int r = 0; recv != nullptr && r < size(); ++r) {
      const std::size_t n = counts.at(static_cast<std::size_t>(r));
      char* to = static_cast<char*>(recv) + offset_of(counts, r);
      if (n > 0 && to != g_.slot(r).send) std::memmove(to, g_.slot(r).send, n);
    }
    g_.barrier();
  }
  template <class T>
  void gather_elements(const T* send, T* recv, const std::vector<std::size_t>& counts) {
    count(uneven_rank_bytes(Transport::Mpi, counts, rank_, sizeof(T)));
    std::vector<std::size_t> bytes(counts);
    for (std::size_t& b : bytes) b *= sizeof(T);
    gather_into(send, recv, bytes);
  }
  template <class T>
  void scatter_sum(const T* send, T* recv, const std::vector<std::size_t>& counts) {
    count(uneven_rank_bytes(Transport::Mpi, counts, rank_, sizeof(T)));
    publish({send, nullptr, nullptr});
    const std::size_t at = offset_of(counts, rank_), n = counts.at(static_cast<std::size_t>(rank_));
    std::vector<T> out(static_cast<const T*>(g_.slot(0).send) + at, static_cast<const T*>(g_.slot(0).send) + at + n);
    for (int r = 1; r < size(); ++r)
      for (std::size_t i = 0; i < n; ++i)
        out[i] = combine(out[i], static_cast<const T*>(g_.slot(r).send)[at + i], ReduceOp::Sum);
    g_.barrier();
    std::copy(out.begin(), out.end(), recv);
  }

  Group& g_;
  int rank_;
};

}  // namespace

namespace {

// body(rank) on `ranks` threads; an error of one rank abandons every group (so that no other
// rank waits for ever in any of them), and the lowest rank's own error is rethrown at the end.
void run_threads(int ranks, const std::vector<Group*>& groups, const std::function<void(int rank)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  std::vector<bool> own_error(static_cast<std::size_t>(ranks), false);
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        try {
          body(r);
        } catch (const Abandoned&) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
          own_error[static_cast<std::size_t>(r)] = true;
          for (Group* g : groups) g->abandon();
        }
      });
  }  // joined
  for (int r = 0; r < ranks; ++r)
    if (own_error[static_cast<std::size_t>(r)]) std::rethrow_exception(errors[static_cast<std::size_t>(r)]);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

void run_in_process(int ranks, const std::function<void(Communicator& comm)>& body) {
  if (ranks < 1) throw std::invalid_argument("run_in_process: ranks must be at least 1");
  Group group(ranks);
  run_threads(ranks, {&group}, [&](int r) {
    InProcessCommunicator comm(group, r);
    body(comm);
  });
}

void run_in_process_grid(GridShape shape, int dp, const std::function<void(ProcessGrid& grid)>& body) {
  const int ranks = grid_ranks(shape, dp);
  // The groups MPI's splits make (comm/grid_groups.hpp), of threads.
  std::vector<std::unique_ptr<Group>> owned;
  std::map<std::pair<int, int>, Group*> groups;  // (which group, colour) → group
  const std::array<int, 6> sizes{shape.x, shape.y, shape.z, dp, shape.size(), ranks};
  for (int r = 0; r < ranks; ++r) {
    const std::array<GridGroup, 6> mine = grid_groups(shape, r);
    for (std::size_t k = 0; k < mine.size(); ++k) {
      Group*& g = groups[{static_cast<int>(k), mine[k].colour}];
      if (!g) g = owned.emplace_back(std::make_unique<Group>(sizes[k])).get();
    }
  }
  std::vector<Group*> all;
  for (const auto& g : owned) all.push_back(g.get());
  run_threads(ranks, all, [&](int r) {
    const std::array<GridGroup, 6> mine = grid_groups(shape, r);
    const auto comm = [&](int k) {
      const GridGroup& g = mine[static_cast<std::size_t>(k)];
      return std::make_unique<InProcessCommunicator>(*groups.at({k, g.colour}), g.place);
    };
    ProcessGrid grid(shape, dp, r, std::array<std::unique_ptr<Communicator>, 4>{comm(0), comm(1), comm(2), comm(3)},
                     comm(4), comm(5));
    body(grid);
  });
}

}  // namespace plexus
