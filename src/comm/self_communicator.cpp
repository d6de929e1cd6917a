// The single-rank communicator: collectives over a group of one are identities. Its copies
// (a gather's or a reduce-scatter's one part) go through the backend when a buffer is on its
// device: a host memmove of a device pointer faults (a one-rank CUDA run found it).
#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "plexus/backend.hpp"
#include "plexus/comm.hpp"

namespace plexus {
namespace {

class SelfCommunicator final : public Communicator {
 public:
  SelfCommunicator(Backend* device, std::function<bool(const void*)> on_device)
      : device_(device), on_device_(std::move(on_device)) {
    if (device_ && !on_device_) on_device_ = [d = device_](const void* p) { return d->is_device_pointer(p); };
  }
  int size() const override { return 1; }
  int rank() const override { return 0; }
  void all_reduce(float*, std::size_t, ReduceOp) override { ++stats_.calls; }
  void all_reduce(double*, std::size_t, ReduceOp) override { ++stats_.calls; }
  void all_reduce(std::int64_t*, std::size_t, ReduceOp) override { ++stats_.calls; }
  void exclusive_scan(std::int64_t* buf, std::size_t n) override {  // nothing below rank 0
    ++stats_.calls;
    std::fill(buf, buf + n, 0);
  }
  void all_gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts) override {
    copy(static_cast<const char*>(send), static_cast<char*>(recv), counts);
  }
  void gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts, int) override {
    copy(static_cast<const char*>(send), static_cast<char*>(recv), counts);
  }
  void broadcast_bytes(void*, std::size_t, int) override { ++stats_.calls; }
  void all_to_all_bytes(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                        const std::vector<std::size_t>&) override {
    copy(static_cast<const char*>(send), static_cast<char*>(recv), send_counts);
  }
  void all_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    copy(send, recv, counts);
  }
  void all_gather(const std::int32_t* send, std::int32_t* recv, const std::vector<std::size_t>& counts) override {
    copy(send, recv, counts);
  }
  void reduce_scatter(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    copy(send, recv, counts);
  }
  std::unique_ptr<Request> iall_reduce(float*, std::size_t) override { return reduced(); }
  std::unique_ptr<Request> ireduce_scatter(const float* send, float* recv,
                                           const std::vector<std::size_t>& counts) override {
    return copied(send, recv, counts);
  }
  std::unique_ptr<Request> iall_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) override {
    return copied(send, recv, counts);
  }
  std::unique_ptr<Request> iall_reduce(bf16*, std::size_t) override { return reduced(); }
  std::unique_ptr<Request> ireduce_scatter(const bf16* send, bf16* recv,
                                           const std::vector<std::size_t>& counts) override {
    return copied(send, recv, counts);
  }
  std::unique_ptr<Request> iall_gather(const bf16* send, bf16* recv,
                                       const std::vector<std::size_t>& counts) override {
    return copied(send, recv, counts);
  }

 private:
  template <class T>
  void copy(const T* send, T* recv, const std::vector<std::size_t>& counts) {
    ++stats_.calls;
    if (send == recv || counts.at(0) == 0) return;
    const std::size_t bytes = counts[0] * sizeof(T);
    const bool from = device_ && on_device_(send), to = device_ && on_device_(recv);
    if (from && to) device_->copy_on_device(recv, send, bytes);
    else if (from) device_->copy_to_host(recv, send, bytes);
    else if (to) device_->copy_from_host(recv, send, bytes);
    else std::memmove(recv, send, bytes);
  }
  // A non-blocking collective over one rank: done when it starts.
  std::unique_ptr<Request> reduced() {
    ++stats_.calls;
    return completed();
  }
  template <class T>
  std::unique_ptr<Request> copied(const T* send, T* recv, const std::vector<std::size_t>& counts) {
    copy(send, recv, counts);
    return completed();
  }

  Backend* device_;
  std::function<bool(const void*)> on_device_;
};

}  // namespace

std::unique_ptr<Communicator> make_self_communicator(Backend* device, std::function<bool(const void*)> on_device) {
  return std::make_unique<SelfCommunicator>(device, std::move(on_device));
}

}  // namespace plexus
