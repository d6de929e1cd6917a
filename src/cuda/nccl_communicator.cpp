// NcclCommunicator: the collectives of one grid axis over NCCL, on device buffers.
//
// Ordering without device-wide synchronisation: each collective records an event on the
// backend's compute stream, makes the communication stream wait for it, runs there, and
// records a completion event that the compute stream waits for (blocking calls) or that the
// request waits for (non-blocking ones, so the aggregation's chunked all-reduces overlap the
// next chunk's SpMM for real). Host code that reads a result copies it on the compute stream,
// which is ordered after the completion event.
//
// One communication stream per backend, shared by the communicators of all its axes: NCCL does
// not promise progress when operations of different communicators run concurrently (the GPU may
// order them differently on different ranks and deadlock), so they run on one stream in program
// order, the same on every rank. Communication still overlaps compute (the compute stream runs
// on), not other communication.
//
// Time: a start and a stop event around each call on the communication stream; their elapsed
// times are summed when the statistics are read (stats() waits for the calls in flight).
//
// Uneven counts: src/comm/nccl_schedule.hpp picks padded or grouped per call, identically on
// every rank; bytes are counted with its rank_bytes, which the analytic model uses too.
//
// Part of the CUDA library (plexus::cuda), compiled only when NCCL was found; the CPU library
// reaches it through plexus::make_nccl_communicator once plexus::cuda::enable() ran.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/forwards_host_collectives.hpp"
#include "comm/nccl_schedule.hpp"
#include "cuda/entry_points.hpp"
#include "plexus/backend.hpp"
#include "plexus/comm.hpp"

namespace plexus::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("nccl communicator: ") + what + ": " + cudaGetErrorString(e));
}
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string("nccl communicator: ") + what + ": " + ncclGetErrorString(r));
}

template <class T>
ncclDataType_t nccl_type();
template <>
ncclDataType_t nccl_type<float>() { return ncclFloat32; }
template <>
ncclDataType_t nccl_type<double>() { return ncclFloat64; }
template <>
ncclDataType_t nccl_type<std::int32_t>() { return ncclInt32; }
template <>
ncclDataType_t nccl_type<bf16>() { return ncclBfloat16; }

// The communication stream of one backend (see the top of this file).
class CommStream {
 public:
  explicit CommStream(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~CommStream() { cudaStreamDestroy(stream_); }
  CommStream(const CommStream&) = delete;
  CommStream& operator=(const CommStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

std::shared_ptr<CommStream> comm_stream_of(const Backend& be, int device) {
  static std::mutex m;
  static std::map<const Backend*, std::weak_ptr<CommStream>> streams;
  const std::lock_guard<std::mutex> lock(m);
  std::weak_ptr<CommStream>& w = streams[&be];
  if (auto s = w.lock()) return s;
  auto s = std::make_shared<CommStream>(device);
  w = s;
  return s;
}

// ncclGroupStart .. ncclGroupEnd, closed also when a call in between throws (an open group
// would swallow every later NCCL call of this thread).
class NcclGroup {
 public:
  NcclGroup() { check(ncclGroupStart(), "ncclGroupStart"); }
  ~NcclGroup() {
    if (open_) ncclGroupEnd();
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void end() {
    open_ = false;
    check(ncclGroupEnd(), "ncclGroupEnd");
  }

 private:
  bool open_ = true;
};

// Completion of a non-blocking call: its own event, waited for by the compute stream.
class NcclRequest final : public Communicator::Request {
 public:
  NcclRequest(cudaEvent_t done, cudaStream_t compute) : done_(done), compute_(compute) {}
  ~NcclRequest() override {
    cudaStreamWaitEvent(compute_, done_, 0);  // dropped unwaited: later compute still follows it
    cudaEventDestroy(done_);
  }
  void wait() override { check(cudaStreamWaitEvent(compute_, done_, 0), "cudaStreamWaitEvent"); }
  bool test() override {
    const cudaError_t e = cudaEventQuery(done_);
    if (e == cudaErrorNotReady) return false;
    check(e, "cudaEventQuery");
    return true;
  }

 private:
  cudaEvent_t done_;
  cudaStream_t compute_;
};

class NcclCommunicator final : public ForwardsHostCollectives<NcclCommunicator> {
 public:
  NcclCommunicator(Communicator& host, Backend& device)
      : host_(host), size_(host.size()), rank_(host.rank()), compute_(static_cast<cudaStream_t>(device.native_stream())),
        device_(device.device_ordinal()) {
    if (device_ < 0) throw std::logic_error("NCCL communicator: the backend '" + device.name() + "' is not a CUDA backend");
    check(cudaSetDevice(device_), "cudaSetDevice");
    // Rank 0's unique id reaches every rank over the host communicator (an all-gather in which
    // only rank 0 contributes).
    ncclUniqueId id{};
    static_assert(sizeof(id) % sizeof(std::int32_t) == 0);
    constexpr std::size_t words = sizeof(id) / sizeof(std::int32_t);
    std::vector<std::int32_t> send(words), recv(words);
    if (rank_ == 0) {
      check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      std::memcpy(send.data(), &id, sizeof(id));
    }
    std::vector<std::size_t> counts(static_cast<std::size_t>(size_), 0);
    counts[0] = words;
    host.all_gather(send.data(), recv.data(), counts);
    std::memcpy(&id, recv.data(), sizeof(id));
    check(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
    comm_stream_ = comm_stream_of(device, device_);
    stream_ = comm_stream_->get();
    check(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    for (const Timing& t : pending_) destroy(t);
    for (const Timing& t : spare_) destroy(t);
    if (workspace_) cudaFree(workspace_);
    cudaEventDestroy(ready_);
    ncclCommDestroy(comm_);
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int size() const override { return size_; }
  int rank() const override { return rank_; }

  void all_reduce(float* buf, std::size_t n, ReduceOp op) override { run_all_reduce(true, buf, n, op); }
  void all_reduce(double* buf, std::size_t n, ReduceOp op) override { run_all_reduce(true, buf, n, op); }
  void all_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    run_all_gather(true, send, recv, counts);
  }
  void all_gather(const std::int32_t* send, std::int32_t* recv, const std::vector<std::size_t>& counts) override {
    run_all_gather(true, send, recv, counts);
  }
  void reduce_scatter(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    run_reduce_scatter(true, send, recv, counts);
  }
  std::unique_ptr<Request> iall_reduce(float* buf, std::size_t n) override { return run_all_reduce(false, buf, n, ReduceOp::Sum); }
  std::unique_ptr<Request> ireduce_scatter(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    return run_reduce_scatter(false, send, recv, counts);
  }
  std::unique_ptr<Request> iall_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    return run_all_gather(false, send, recv, counts);
  }
  std::unique_ptr<Request> iall_reduce(bf16* buf, std::size_t n) override { return run_all_reduce(false, buf, n, ReduceOp::Sum); }
  std::unique_ptr<Request> ireduce_scatter(const bf16* send, bf16* recv, const std::vector<std::size_t>& counts) override {
    return run_reduce_scatter(false, send, recv, counts);
  }
  std::unique_ptr<Request> iall_gather(const bf16* send, bf16* recv, const std::vector<std::size_t>& counts) override {
    return run_all_gather(false, send, recv, counts);
  }
  // The host collectives only ever move host data (preparation, conversion, outputs, counts):
  // they run on the host communicator this one was made from (ProcessGrid keeps it as the axis's
  // host_comm, so it outlives this one), and its stats count them (ForwardsHostCollectives).
  Communicator& host() const { return host_; }

  const CommStats& stats() const override {
    resolve_timings(true);
    return timed_stats_;
  }
  void reset_stats() override {
    resolve_timings(true);
    timed_stats_ = {};
  }

 private:
  struct Timing {
    cudaEvent_t start = nullptr, stop = nullptr;
  };

  // ---- one call: ordered after the compute stream, timed, completed by an event ----------
  // Blocking calls make the compute stream wait for the call's stop event (the host does not
  // wait); non-blocking ones return a request with an event of its own.
  template <class Body>
  std::unique_ptr<Request> launch(bool blocking, double bytes, const Body& body) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    if (pending_.size() >= 256) resolve_timings(false);
    check(cudaEventRecord(ready_, compute_), "cudaEventRecord");
    check(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent");
    const Timing t = take_timing();
    check(cudaEventRecord(t.start, stream_), "cudaEventRecord");
    try {
      body();
    } catch (...) {  // keep the events accounted for and later compute ordered after what ran
      cudaEventRecord(t.stop, stream_);
      pending_.push_back(t);
      cudaStreamWaitEvent(compute_, t.stop, 0);
      throw;
    }
    check(cudaEventRecord(t.stop, stream_), "cudaEventRecord");
    pending_.push_back(t);
    timed_stats_.calls += 1;
    timed_stats_.bytes += bytes;
    if (blocking) {
      check(cudaStreamWaitEvent(compute_, t.stop, 0), "cudaStreamWaitEvent");
      return nullptr;
    }
    cudaEvent_t done = nullptr;
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(done, stream_), "cudaEventRecord");
    return std::make_unique<NcclRequest>(done, compute_);
  }

  template <class T>
  std::unique_ptr<Request> run_all_reduce(bool blocking, T* buf, std::size_t n, ReduceOp op) {
    if (n) require_device(buf, "all_reduce");
    return launch(blocking, ring_all_reduce_bytes(size_, n, sizeof(T)), [&] {
      const ncclRedOp_t nccl_op = op == ReduceOp::Sum ? ncclSum : op == ReduceOp::Max ? ncclMax : ncclMin;
      if (n) check(ncclAllReduce(buf, buf, n, nccl_type<T>(), nccl_op, comm_, stream_),
                   "ncclAllReduce");
    });
  }

  // What an all-gather or reduce-scatter of `counts` needs: its schedule, each rank's offset,
  // this rank's count.
  struct UnevenCall {
    UnevenSchedule s;
    std::vector<std::size_t> off;
    std::size_t mine;
  };
  template <class T>
  UnevenCall uneven_call(const std::vector<std::size_t>& counts) const {
    if (counts.size() != static_cast<std::size_t>(size_))
      throw std::logic_error("NCCL communicator: " + std::to_string(counts.size()) + " counts for " +
                             std::to_string(size_) + " ranks");
    UnevenCall c{schedule_uneven(counts, sizeof(T)), std::vector<std::size_t>(counts.size(), 0),
                 counts[static_cast<std::size_t>(rank_)]};
    std::exclusive_scan(counts.begin(), counts.end(), c.off.begin(), std::size_t{0});
    return c;
  }
  // The grouped method: f(r) issues root r's call, for each rank with a part, in one group.
  template <class F>
  static void each_root(const std::vector<std::size_t>& counts, const F& f) {
    NcclGroup group;
    for (std::size_t r = 0; r < counts.size(); ++r)
      if (counts[r]) f(r);
    group.end();
  }

  template <class T>
  std::unique_ptr<Request> run_all_gather(bool blocking, const T* send, T* recv, const std::vector<std::size_t>& counts) {
    const auto [s, off, mine] = uneven_call<T>(counts);
    if (mine) require_device(send, "all_gather");
    if (s.total) require_device(recv, "all_gather");
    return launch(blocking, s.rank_bytes(counts, rank_, sizeof(T)), [&] {
      const ncclDataType_t type = nccl_type<T>();
      if (s.method == UnevenMethod::Native) {
        // In place when send already is this rank's place in recv (NCCL's in-place rule).
        if (s.max_count) check(ncclAllGather(send, recv, s.max_count, type, comm_, stream_), "ncclAllGather");
      } else if (s.method == UnevenMethod::Padded) {
        // This rank's part into its slot of a padded buffer (zero tail), one all-gather in
        // place, then every part to its place in recv.
        T* ws = workspace<T>(s.max_count * counts.size());
        T* slot = ws + static_cast<std::size_t>(rank_) * s.max_count;
        copy(slot, send, mine);
        check(cudaMemsetAsync(slot + mine, 0, (s.max_count - mine) * sizeof(T), stream_), "cudaMemsetAsync");
        check(ncclAllGather(slot, ws, s.max_count, type, comm_, stream_), "ncclAllGather");
        for (std::size_t r = 0; r < counts.size(); ++r) copy(recv + off[r], ws + r * s.max_count, counts[r]);
      } else {
        each_root(counts, [&](std::size_t r) {
          check(ncclBroadcast(static_cast<int>(r) == rank_ ? static_cast<const void*>(send) : recv + off[r],
                              recv + off[r], counts[r], type, static_cast<int>(r), comm_, stream_),
                "ncclBroadcast");
        });
      }
    });
  }

  template <class T>
  std::unique_ptr<Request> run_reduce_scatter(bool blocking, const T* send, T* recv, const std::vector<std::size_t>& counts) {
    const auto [s, off, mine] = uneven_call<T>(counts);
    if (s.total) require_device(send, "reduce_scatter");
    if (mine) require_device(recv, "reduce_scatter");
    return launch(blocking, s.rank_bytes(counts, rank_, sizeof(T)), [&] {
      const ncclDataType_t type = nccl_type<T>();
      if (s.method == UnevenMethod::Native) {
        if (s.max_count) check(ncclReduceScatter(send, recv, s.max_count, type, ncclSum, comm_, stream_), "ncclReduceScatter");
      } else if (s.method == UnevenMethod::Padded) {
        // Every part into its padded slot (zero tails), one reduce-scatter in place, this
        // rank's slot out.
        const std::size_t p = counts.size();
        T* ws = workspace<T>(s.max_count * p);
        check(cudaMemsetAsync(ws, 0, s.max_count * p * sizeof(T), stream_), "cudaMemsetAsync");
        for (std::size_t r = 0; r < p; ++r) copy(ws + r * s.max_count, send + off[r], counts[r]);
        T* slot = ws + static_cast<std::size_t>(rank_) * s.max_count;
        check(ncclReduceScatter(ws, slot, s.max_count, type, ncclSum, comm_, stream_), "ncclReduceScatter");
        copy(recv, slot, mine);
      } else {
        each_root(counts, [&](std::size_t r) {  // recv is written on the root only
          check(ncclReduce(send + off[r], recv, counts[r], type, ncclSum, static_cast<int>(r), comm_, stream_),
                "ncclReduce");
        });
      }
    });
  }

  // ---- helpers ----------------------------------------------------------------------------
  // No host code may hand a host buffer to NCCL: host values take ProcessGrid::host_comm.
  static void require_device(const void* p, const char* what) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) cudaGetLastError();
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
      throw std::logic_error(std::string("NCCL communicator: ") + what +
                             " given a host buffer (host values go through ProcessGrid::host_comm)");
  }
  template <class T>
  void copy(T* dst, const T* src, std::size_t n) {
    if (n && dst != src)
      check(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
  }
  // The padded buffer: grows stream-ordered (the previous one is freed after the calls queued
  // before), so steady-state calls allocate nothing.
  template <class T>
  T* workspace(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes > workspace_bytes_) {
      if (workspace_) check(cudaFreeAsync(workspace_, stream_), "cudaFreeAsync");
      workspace_ = nullptr;
      check(cudaMallocAsync(&workspace_, bytes, stream_), "cudaMallocAsync");
      workspace_bytes_ = bytes;
    }
    return static_cast<T*>(workspace_);
  }
  Timing take_timing() {
    if (!spare_.empty()) {
      const Timing t = spare_.back();
      spare_.pop_back();
      return t;
    }
    Timing t;
    check(cudaEventCreate(&t.start), "cudaEventCreate");
    check(cudaEventCreate(&t.stop), "cudaEventCreate");
    return t;
  }
  static void destroy(const Timing& t) {
    cudaEventDestroy(t.start);
    cudaEventDestroy(t.stop);
  }
  // Adds the elapsed time of the finished calls: of all of them when `wait` (waiting for
  // those in flight), else of those done so far, in order.
  void resolve_timings(bool wait) const {
    std::size_t k = 0;
    for (; k < pending_.size(); ++k) {
      const Timing& t = pending_[k];
      if (wait) {
        check(cudaEventSynchronize(t.stop), "cudaEventSynchronize");
      } else {
        const cudaError_t e = cudaEventQuery(t.stop);
        if (e == cudaErrorNotReady) break;
        check(e, "cudaEventQuery");
      }
      float ms = 0;
      check(cudaEventElapsedTime(&ms, t.start, t.stop), "cudaEventElapsedTime");
      timed_stats_.seconds += ms * 1e-3;
      spare_.push_back(t);
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(k));
  }

  Communicator& host_;  // the host collectives run there
  int size_, rank_;
  cudaStream_t compute_;
  int device_;
  ncclComm_t comm_ = nullptr;
  std::shared_ptr<CommStream> comm_stream_;
  cudaStream_t stream_ = nullptr;  // comm_stream_'s
  cudaEvent_t ready_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  mutable std::vector<Timing> pending_, spare_;
  mutable CommStats timed_stats_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, Backend& device) {
  return std::make_unique<NcclCommunicator>(host, device);
}

}  // namespace plexus::cuda
