#pragma once
// A communicator that moves no data and records what a collective would cost: the bytes this
// rank would receive, with the byte accounting of the real transport (MpiCommunicator's, or
// the NCCL communicator's padded or grouped schedule: src/comm/nccl_schedule.hpp), and the
// ring steps of each call (the latency terms of the cost model).
//
// With a shape-only backend (kernels/shape/) it lets the real model code run one step at a
// rank's coordinates without the other ranks: plans, byte counts and memory estimates are
// derived from the code that trains (src/plan/), not from a copy of its schedule.
//
// No element is read or written: buffers may be address space that a shape-only backend
// never backs with memory. Reductions leave their buffers as they were.
#include <memory>
#include <vector>

#include "plexus/comm.hpp"
#include "comm/transport.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

class RecordingCommunicator final : public Communicator {
 public:
  RecordingCommunicator(int size, int rank, Transport transport) : size_(size), rank_(rank), transport_(transport) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }

  void all_reduce(float*, std::size_t n, ReduceOp) override { reduce(n, sizeof(float)); }
  void all_reduce(double*, std::size_t n, ReduceOp) override { reduce(n, sizeof(double)); }
  void all_reduce(std::int64_t*, std::size_t n, ReduceOp) override { reduce(n, sizeof(std::int64_t)); }
  // The host collectives count MpiCommunicator's bytes (comm/byte_accounting.hpp) whatever the
  // transport: they run on the host communicator under NCCL too.
  void exclusive_scan(std::int64_t*, std::size_t n) override;
  void all_gather_bytes(const void*, void*, const std::vector<std::size_t>& counts) override;
  void gather_bytes(const void*, void*, const std::vector<std::size_t>& counts, int root) override;
  void broadcast_bytes(void*, std::size_t n, int root) override;
  void all_to_all_bytes(const void*, const std::vector<std::size_t>&, void*,
                        const std::vector<std::size_t>& recv_counts) override;
  void all_gather(const float*, float*, const std::vector<std::size_t>& counts) override {
    uneven(counts, sizeof(float));
  }
  void all_gather(const std::int32_t*, std::int32_t*, const std::vector<std::size_t>& counts) override {
    uneven(counts, sizeof(std::int32_t));
  }
  void reduce_scatter(const float*, float*, const std::vector<std::size_t>& counts) override {
    uneven(counts, sizeof(float));
  }
  // Non-blocking calls are recorded when they start and are done at once.
  std::unique_ptr<Request> iall_reduce(float*, std::size_t n) override {
    reduce(n, sizeof(float));
    return completed();
  }
  std::unique_ptr<Request> ireduce_scatter(const float*, float*, const std::vector<std::size_t>& counts) override {
    uneven(counts, sizeof(float));
    return completed();
  }
  std::unique_ptr<Request> iall_gather(const float*, float*, const std::vector<std::size_t>& counts) override {
    uneven(counts, sizeof(float));
    return completed();
  }
  std::unique_ptr<Request> iall_reduce(bf16*, std::size_t n) override {
    reduce(n, sizeof(bf16));
    return completed();
  }
  std::unique_ptr<Request> ireduce_scatter(const bf16*, bf16*, const std::vector<std::size_t>& counts) override {
    uneven(counts, sizeof(bf16));
    return completed();
  }
  std::unique_ptr<Request> iall_gather(const bf16*, bf16*, const std::vector<std::size_t>& counts) override {
    uneven(counts, sizeof(bf16));
    return completed();
  }

  // With the counts' sum known (Communicator::CountsSum): no pass over every rank's count; of
  // the counts only this rank's is read.
  bool reads_every_count() const override { return false; }
  std::unique_ptr<Request> ireduce_scatter(const float*, float*, const std::vector<std::size_t>& counts,
                                           CountsSum sum) override {
    uneven(counts, sizeof(float), &sum);
    return completed();
  }
  std::unique_ptr<Request> iall_gather(const float*, float*, const std::vector<std::size_t>& counts,
                                       CountsSum sum) override {
    uneven(counts, sizeof(float), &sum);
    return completed();
  }
  std::unique_ptr<Request> ireduce_scatter(const bf16*, bf16*, const std::vector<std::size_t>& counts,
                                           CountsSum sum) override {
    uneven(counts, sizeof(bf16), &sum);
    return completed();
  }
  std::unique_ptr<Request> iall_gather(const bf16*, bf16*, const std::vector<std::size_t>& counts,
                                       CountsSum sum) override {
    uneven(counts, sizeof(bf16), &sum);
    return completed();
  }

  void reset_stats() override {
    Communicator::reset_stats();
    ring_steps_ = 0;
  }
  // Ring steps since the last reset: 2(p-1) per all-reduce, p-1 per any other collective,
  // none on a one-rank axis.
  long ring_steps() const { return ring_steps_; }
  // Also appends each call's bytes to `log` (nullptr: stop), in the order they are counted: a
  // plan that assembles a rank's bytes from recorded parts adds the same numbers in the same
  // order, so its sum is the rank's own to the last bit (src/plan/zero_replay.cpp).
  void log_bytes(std::vector<double>* log) { log_ = log; }

 private:
  void reduce(std::size_t n, std::size_t element_bytes);
  void uneven(const std::vector<std::size_t>& counts, std::size_t element_bytes, const CountsSum* sum = nullptr);
  void host_call(double bytes);  // one host collective of `bytes` to this rank
  void count(double bytes) {
    stats_.bytes += bytes;
    if (log_) log_->push_back(bytes);
  }

  int size_, rank_;
  Transport transport_;
  long ring_steps_ = 0;
  std::vector<double>* log_ = nullptr;
};

// A grid of `dp` replicas of `shape` seen from `rank`, every communicator a recording one
// (axes, replica and world). Its axis_stats() are what the rank's collectives would move.
std::unique_ptr<ProcessGrid> make_recording_grid(GridShape shape, int dp, int rank, Transport transport);
// The recording communicator of an axis of a grid from make_recording_grid.
RecordingCommunicator& recording_axis(ProcessGrid& grid, Axis a);

}  // namespace plexus
