// StagingCommunicator: a host communicator (MPI) made safe for a device backend's buffers.
//
// MPI without CUDA awareness must never see a device pointer. Every buffer a collective gets is
// asked of the backend (Backend::is_device_pointer): device buffers are copied to host memory,
// the host communicator runs on the copies, and results are copied back (for the non-blocking
// collectives, when the request completes); host buffers (scalars, the loss) pass through
// untouched. This is the fallback for ranks that share a GPU or builds without NCCL
// (docs/cuda.md). Bytes and calls are the host communicator's: what
// crosses the network, not the device copies.
//
// The host copies live in pinned memory (Backend::allocate_host_pinned) taken from a small
// arena the communicator keeps: blocks are borrowed per collective and returned when it
// completes, so the steady state of training (the same collectives every step) allocates
// nothing. Several blocks can be out at once: a non-blocking collective holds its send and
// receive copies until it completes, and callers keep a few in flight (ZeRO's buckets, the
// layers' overlapped gathers).
#include <bit>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/comm.hpp"
#include "src/comm/forwards_host_collectives.hpp"

namespace plexus {
namespace {

// Pinned host blocks, reused: a free list per size class (4 KiB, then four classes per power of
// two, so a block wastes at most a quarter of its size). A block leaves the arena while a staged
// buffer uses it and comes back when that buffer is destroyed. Blocks are freed with the arena;
// their deleter does not need the backend, which may be gone by then.
class PinnedArena {
 public:
  explicit PinnedArena(Backend& be) : be_(be) {}
  // A block of at least `bytes` (> 0): a free one of its size class, else a new one.
  HostPinnedPtr take(std::size_t bytes, std::size_t& capacity) {
    capacity = size_class(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(capacity);
      if (it != free_.end() && !it->second.empty()) {
        HostPinnedPtr b = std::move(it->second.back());
        it->second.pop_back();
        return b;
      }
    }
    return be_.allocate_host_pinned(capacity);
  }
  void give_back(HostPinnedPtr block, std::size_t capacity) noexcept {
    if (!block) return;
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      free_[capacity].push_back(std::move(block));
    } catch (...) {  // no memory for the list: the block is freed instead (its deleter runs)
    }
  }

 private:
  static std::size_t size_class(std::size_t bytes) {
    constexpr std::size_t kMin = 4096;
    if (bytes <= kMin) return kMin;
    const int top = std::bit_width(bytes - 1);               // 2^top >= bytes > 2^(top-1)
    const std::size_t step = std::size_t{1} << (top - 3);    // quarters of 2^(top-1)
    return (bytes + step - 1) / step * step;
  }
  Backend& be_;
  std::mutex mutex_;
  std::map<std::size_t, std::vector<HostPinnedPtr>> free_;
};

// One buffer as the host communicator sees it: the caller's own when on the host, else a host
// copy in a pinned block of the arena (filled from the device when `read`), written back by
// finish().
template <class T>
class Staged {
 public:
  Staged(std::shared_ptr<PinnedArena> arena, Backend& be, bool on_device, const T* p, std::size_t n, bool read)
      : be_(be), device_(on_device), n_(n) {
    if (!device_) {
      host_ptr_ = const_cast<T*>(p);
      return;
    }
    dev_ = const_cast<T*>(p);
    if (n == 0) return;
    arena_ = std::move(arena);
    block_ = arena_->take(n * sizeof(T), capacity_);
    host_ptr_ = static_cast<T*>(block_.get());
    if (read) be_.copy_to_host(host_ptr_, p, n * sizeof(T));
  }
  ~Staged() {
    if (arena_) arena_->give_back(std::move(block_), capacity_);
  }
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;
  T* host() { return host_ptr_; }
  // Copies [offset, offset + n) of the host copy back to the device buffer.
  void finish(std::size_t offset, std::size_t n) {
    if (device_ && n) be_.copy_from_host(dev_ + offset, host_ptr_ + offset, n * sizeof(T));
  }
  void finish() { finish(0, n_); }

 private:
  Backend& be_;
  bool device_;
  std::size_t n_;
  T* dev_ = nullptr;
  T* host_ptr_ = nullptr;
  std::shared_ptr<PinnedArena> arena_;  // kept alive by an outstanding request, too
  HostPinnedPtr block_;
  std::size_t capacity_ = 0;
};

// A host request whose completion copies the received data back to the device.
class StagedRequest final : public Communicator::Request {
 public:
  StagedRequest(std::unique_ptr<Communicator::Request> inner, std::function<void()> finish)
      : inner_(std::move(inner)), finish_(std::move(finish)) {}
  void wait() override {
    if (inner_) inner_->wait();
    done();
  }
  bool test() override {
    if (finished_) return true;
    if (inner_ && !inner_->test()) return false;
    done();
    return true;
  }

 private:
  void done() {
    if (finished_) return;
    finished_ = true;
    finish_();
    finish_ = nullptr;  // the staged buffers' pinned blocks go back to the arena now
  }
  std::unique_ptr<Communicator::Request> inner_;
  std::function<void()> finish_;
  bool finished_ = false;
};

std::size_t total(const std::vector<std::size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), std::size_t{0});
}
std::size_t offset_of(const std::vector<std::size_t>& counts, int rank) {
  return std::accumulate(counts.begin(), counts.begin() + rank, std::size_t{0});
}

class StagingCommunicator final : public ForwardsHostCollectives<StagingCommunicator> {
 public:
  StagingCommunicator(std::unique_ptr<Communicator> host, Backend& be, std::function<bool(const void*)> on_device)
      : host_(std::move(host)), be_(be), on_device_(std::move(on_device)), arena_(std::make_shared<PinnedArena>(be)) {
    if (!on_device_) on_device_ = [&be](const void* p) { return be.is_device_pointer(p); };
  }
  int size() const override { return host_->size(); }
  int rank() const override { return host_->rank(); }
  const CommStats& stats() const override { return host_->stats(); }
  void reset_stats() override { host_->reset_stats(); }

  using ForwardsHostCollectives<StagingCommunicator>::all_reduce;  // (the host one, over int64)
  void all_reduce(float* buf, std::size_t n, ReduceOp op) override { reduce(buf, n, op); }
  void all_reduce(double* buf, std::size_t n, ReduceOp op) override { reduce(buf, n, op); }
  void all_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    wait_on(start_gather(send, recv, counts, [this](auto... a) { host_->all_gather(a...); return nullptr; }));
  }
  void all_gather(const std::int32_t* send, std::int32_t* recv, const std::vector<std::size_t>& counts) override {
    wait_on(start_gather(send, recv, counts, [this](auto... a) { host_->all_gather(a...); return nullptr; }));
  }
  void reduce_scatter(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    wait_on(start_scatter(send, recv, counts, [this](auto... a) { host_->reduce_scatter(a...); return nullptr; }));
  }
  std::unique_ptr<Request> iall_reduce(float* buf, std::size_t n) override { return start_reduce(buf, n); }
  std::unique_ptr<Request> ireduce_scatter(const float* send, float* recv,
                                           const std::vector<std::size_t>& counts) override {
    return start_scatter(send, recv, counts, [this](auto... a) { return host_->ireduce_scatter(a...); });
  }
  std::unique_ptr<Request> iall_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    return start_gather(send, recv, counts, [this](auto... a) { return host_->iall_gather(a...); });
  }
  std::unique_ptr<Request> iall_reduce(bf16* buf, std::size_t n) override { return start_reduce(buf, n); }
  std::unique_ptr<Request> ireduce_scatter(const bf16* send, bf16* recv,
                                           const std::vector<std::size_t>& counts) override {
    return start_scatter(send, recv, counts, [this](auto... a) { return host_->ireduce_scatter(a...); });
  }
  std::unique_ptr<Request> iall_gather(const bf16* send, bf16* recv, const std::vector<std::size_t>& counts) override {
    return start_gather(send, recv, counts, [this](auto... a) { return host_->iall_gather(a...); });
  }
  void all_reduce_bf16(bf16* buf, std::size_t n) override {
    auto b = stage(buf, n, true);
    host_->all_reduce_bf16(b->host(), n);
    b->finish();
  }
  // The host collectives take host memory only: passed through as they are (ForwardsHostCollectives).
  Communicator& host() const { return *host_; }

 private:
  static void wait_on(std::unique_ptr<Request> r) { r->wait(); }
  bool on_device(const void* p) const { return p && on_device_(p); }
  // The buffer p[0, n) as the host communicator sees it (its own, or a host copy).
  template <class T>
  std::shared_ptr<Staged<T>> stage(const T* p, std::size_t n, bool read) {
    return std::make_shared<Staged<T>>(arena_, be_, on_device(p), p, n, read);
  }

  template <class T>
  void reduce(T* buf, std::size_t n, ReduceOp op) {
    auto b = stage(buf, n, true);
    host_->all_reduce(b->host(), n, op);
    b->finish();
  }
  template <class T>
  std::unique_ptr<Request> start_reduce(T* buf, std::size_t n) {
    auto b = stage(buf, n, true);
    return std::make_unique<StagedRequest>(host_->iall_reduce(b->host(), n), [b] { b->finish(); });
  }
  // Start(send, recv, counts) runs the host collective (returning its request, or nullptr when
  // it was blocking).
  template <class T, class Start>
  std::unique_ptr<Request> start_scatter(const T* send, T* recv, const std::vector<std::size_t>& counts,
                                         Start&& start) {
    auto s = stage(send, total(counts), true);
    auto r = stage(recv, counts.at(static_cast<std::size_t>(rank())), false);
    return std::make_unique<StagedRequest>(start(s->host(), r->host(), counts), [s, r] { r->finish(); });
  }
  template <class T, class Start>
  std::unique_ptr<Request> start_gather(const T* send, T* recv, const std::vector<std::size_t>& counts, Start&& start) {
    const std::size_t own = offset_of(counts, rank()), n = counts.at(static_cast<std::size_t>(rank()));
    auto r = stage(recv, total(counts), false);
    if (send == recv + own) {  // in place: this rank's part is read from the staged receive buffer
      if (n && on_device(recv)) be_.copy_to_host(r->host() + own, send, n * sizeof(T));
      return std::make_unique<StagedRequest>(start(r->host() + own, r->host(), counts), [r] { r->finish(); });
    }
    auto s = stage(send, n, true);
    return std::make_unique<StagedRequest>(start(s->host(), r->host(), counts), [s, r] { r->finish(); });
  }

  std::unique_ptr<Communicator> host_;
  Backend& be_;
  std::function<bool(const void*)> on_device_;
  std::shared_ptr<PinnedArena> arena_;
};

}  // namespace

std::unique_ptr<Communicator> make_staging_communicator(std::unique_ptr<Communicator> host, Backend& backend,
                                                        std::function<bool(const void*)> on_device) {
  return std::make_unique<StagingCommunicator>(std::move(host), backend, std::move(on_device));
}

}  // namespace plexus
