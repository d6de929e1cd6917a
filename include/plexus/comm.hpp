#pragma once
// The communicator interface: every collective the engine uses goes through it, so the same
// model code runs on one process (SelfCommunicator), MPI (host buffers) and NCCL (device buffers).
// Each communicator is one axis of the ProcessGrid and counts the bytes it moves.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus {

enum class ReduceOp { Sum, Max };

// Traffic counters of one communicator. `bytes` is the data volume a rank sends under the
// ring algorithm's accounting (docs/communication.md): all-reduce 2(p-1)/p·n, all-gather and
// reduce-scatter (p-1)/p·n, so measured bytes can be checked against the analytic model.
struct CommStats {
  std::uint64_t calls = 0;
  double bytes = 0.0;
  double seconds = 0.0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // In place over `n` floats / doubles.
  virtual void all_reduce(float* buf, std::size_t n, ReduceOp op) = 0;
  virtual void all_reduce(double* buf, std::size_t n, ReduceOp op) = 0;
  // recv = concatenation of every rank's `send` in rank order; counts[r] = floats from rank r.
  virtual void all_gather(const float* send, float* recv, const std::vector<std::size_t>& counts) = 0;
  // The same for 32-bit integers (the column ids of a sharded sparse block).
  virtual void all_gather(const std::int32_t* send, std::int32_t* recv, const std::vector<std::size_t>& counts) = 0;
  // recv = this rank's part (counts[rank] floats) of the element-wise sum of every rank's send.
  virtual void reduce_scatter(const float* send, float* recv, const std::vector<std::size_t>& counts) = 0;
  // Non-blocking all-reduce (sum) for overlapping communication with compute; wait() completes it.
  struct Request {
    virtual ~Request() = default;
    virtual void wait() = 0;
    // Drives progress (MPI_Test) without blocking; true once complete. Open MPI progresses
    // non-blocking collectives only inside MPI calls, so callers poll between compute steps.
    virtual bool test() = 0;
  };
  virtual std::unique_ptr<Request> iall_reduce(float* buf, std::size_t n) = 0;
  // Non-blocking reduce-scatter (sum) and all-gather, as above (the data-parallel buckets of
  // ZeRO overlap them with the backward pass and the next layer's forward). `send` and the
  // buffers must stay untouched until wait(). An all-gather whose `send` already sits at this
  // rank's place in `recv` runs in place.
  virtual std::unique_ptr<Request> ireduce_scatter(const float* send, float* recv,
                                                   const std::vector<std::size_t>& counts) = 0;
  virtual std::unique_ptr<Request> iall_gather(const float* send, float* recv,
                                               const std::vector<std::size_t>& counts) = 0;
  // The same three over bfloat16 (ZeRO's 16-bit parameters and gradients, --precision bf16):
  // sums are taken in float and rounded to bf16 at each combine; bytes count 2 per element.
  virtual std::unique_ptr<Request> iall_reduce(bf16* buf, std::size_t n) = 0;
  virtual std::unique_ptr<Request> ireduce_scatter(const bf16* send, bf16* recv,
                                                   const std::vector<std::size_t>& counts) = 0;
  virtual std::unique_ptr<Request> iall_gather(const bf16* send, bf16* recv,
                                               const std::vector<std::size_t>& counts) = 0;
  // Blocking all-reduce (sum) of bfloat16 values whose sum is accumulated in float: every
  // rank's values enter the sum as they are, the sum of each element is taken in float in rank
  // order and rounded to bf16 once (the GNN's bf16 activations and gradients, --precision bf16;
  // docs/precision.md). Bytes count as an all-reduce of n bf16 (2 per element). MPI: a
  // reduce-scatter by all-to-all, each rank summing its block in float, then an all-gather of the
  // rounded blocks, so the result does not depend on MPI's reduction order. This default (the
  // NCCL communicators') runs iall_reduce(bf16), which rounds to bf16 at each combine.
  virtual void all_reduce_bf16(bf16* buf, std::size_t n) { iall_reduce(buf, n)->wait(); }

  virtual const CommStats& stats() const { return stats_; }
  virtual void reset_stats() { stats_ = {}; }

 protected:
  CommStats stats_;
};

// A communicator of one rank: every collective is a copy or nothing, and counts no bytes.
std::unique_ptr<Communicator> make_self_communicator();

class Backend;
// `host` (MPI: host memory only) for the buffers of `backend`: device buffers are staged
// through host copies (the backend's copy_to_host / copy_from_host), host ones passed as they
// are (src/comm/staging_communicator.cpp). The fallback when ranks share a GPU or the build
// has no NCCL. Stats are host's. `on_device` says which buffers to stage
// (default: the backend's is_device_pointer; tests stage host memory with it).
std::unique_ptr<Communicator> make_staging_communicator(std::unique_ptr<Communicator> host, Backend& backend,
                                                        std::function<bool(const void*)> on_device = {});

// Whether this program has NCCL: the CUDA library (include/plexus/cuda.hpp) is enabled and was
// built with NCCL (the CUDA backend's device communicators).
bool nccl_available();
// An NCCL communicator over the ranks of `host` (an MPI communicator of the same ranks in the
// same order; the NCCL unique id is sent over it). Its collectives take `device`'s buffers
// only (a host buffer is a logic_error: host values go through ProcessGrid::host_comm), run
// on a communication stream ordered after `device`'s stream with CUDA events (no device-wide
// synchronisation), and time themselves with events on that stream. Uneven all-gathers and
// reduce-scatters are padded or grouped (src/comm/nccl_schedule.hpp). Throws
// std::logic_error when !nccl_available().
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, Backend& device);

}  // namespace plexus
