#pragma once
// The communicator interface: every collective the engine uses goes through it, so the same
// code runs on one process (SelfCommunicator), MPI (host buffers) and NCCL (device buffers):
// training over the axes of the ProcessGrid, and preparation, conversion and the collective
// outputs over a group of ranks (the grid's world, or make_mpi_communicator). Each counts the
// bytes it moves, so the recording communicator of the plans (src/comm/recording_communicator.hpp)
// predicts them.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus {

enum class ReduceOp { Sum, Max, Min };

// How an activation-sized sum travels (docs/communication.md): the values as they are (Fp32),
// in bfloat16 (what --precision bf16 sends), or quantised per row to 8 or 4 bits with stochastic
// rounding and summed in fp32 at each hop (--wire int8|int4, "Low-bit wire").
enum class Wire { Fp32, Bf16, Int8, Int4 };
// Bits a value takes on the wire: 32, 16, 8, 4.
int wire_bits(Wire w);

// Traffic counters of one communicator. `bytes` is the data volume a rank receives under the
// ring algorithm's accounting (docs/communication.md): all-reduce 2(p-1)/p·n, all-gather and
// reduce-scatter (p-1)/p·n; the host collectives below what reaches this rank from the others
// (an all-to-all the bytes received from other ranks, a broadcast n on every rank but the root),
// so measured bytes can be checked against the analytic model and the dry runs.
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
  // A `send` that already sits at this rank's place in `recv` is gathered in place.
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
  // The four above, told the counts' sum and largest value by a caller that has them at hand
  // (ZeRO's buckets: a bucket's size): an accounting communicator (a plan's dry run) then makes
  // no pass over every rank's count, which for thousands of replicas and millions of buckets was
  // a plan's largest cost. `sum` must be the counts' own. By default the calls above.
  struct CountsSum {
    std::size_t total = 0, max = 0;
  };
  // Whether those four read every rank's count. An accounting communicator reads only its own
  // (and counts.size()): a caller may then leave the others' unset, so that ZeRO's buckets over
  // 65,536 replicas cost a plan no pass over them.
  virtual bool reads_every_count() const { return true; }
  // (These defaults read every count anyway, so they check `sum` against them: every real
  // communicator's tests then check what the callers computed without the pass.)
  virtual std::unique_ptr<Request> ireduce_scatter(const float* send, float* recv,
                                                   const std::vector<std::size_t>& counts, CountsSum sum) {
    check_counts_sum(counts, sum);
    return ireduce_scatter(send, recv, counts);
  }
  virtual std::unique_ptr<Request> iall_gather(const float* send, float* recv, const std::vector<std::size_t>& counts,
                                               CountsSum sum) {
    check_counts_sum(counts, sum);
    return iall_gather(send, recv, counts);
  }
  virtual std::unique_ptr<Request> ireduce_scatter(const bf16* send, bf16* recv,
                                                   const std::vector<std::size_t>& counts, CountsSum sum) {
    check_counts_sum(counts, sum);
    return ireduce_scatter(send, recv, counts);
  }
  virtual std::unique_ptr<Request> iall_gather(const bf16* send, bf16* recv, const std::vector<std::size_t>& counts,
                                               CountsSum sum) {
    check_counts_sum(counts, sum);
    return iall_gather(send, recv, counts);
  }
  // std::logic_error unless `sum` is the counts' sum and largest value.
  static void check_counts_sum(const std::vector<std::size_t>& counts, CountsSum sum);
  // Blocking all-reduce (sum) of bfloat16 values whose sum is accumulated in float: every
  // rank's values enter the sum as they are, the sum of each element is taken in float in rank
  // order and rounded to bf16 once (the GNN's bf16 activations and gradients, --precision bf16;
  // docs/precision.md). Bytes count as an all-reduce of n bf16 (2 per element). MPI: a
  // reduce-scatter by all-to-all, each rank summing its block in float, then an all-gather of the
  // rounded blocks, so the result does not depend on MPI's reduction order. This default (the
  // NCCL communicators') runs iall_reduce(bf16), which rounds to bf16 at each combine.
  virtual void all_reduce_bf16(bf16* buf, std::size_t n) { iall_reduce(buf, n)->wait(); }

  // ---- Host collectives: the data moves around training (preparation, conversion, outputs).
  // Host memory only (a device communicator runs them on the host communicator it was made
  // from). Every rank of the group calls each of them, in the same order.
  // In place over `n` 64-bit integers.
  virtual void all_reduce(std::int64_t* buf, std::size_t n, ReduceOp op) = 0;
  // buf[i] = the sum of buf[i] over the ranks below this one (0 on rank 0): where each rank's
  // part of something split in rank order starts.
  virtual void exclusive_scan(std::int64_t* buf, std::size_t n) = 0;
  // recv = every rank's `send` bytes, in rank order; counts[r] = the bytes of rank r (the same
  // vector on every rank). In place where `send` sits at this rank's place in `recv`.
  virtual void all_gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts) = 0;
  // The same, received by `root` only (recv is written there alone and may be null elsewhere).
  virtual void gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts, int root) = 0;
  // buf[0, n) of `root` to every rank's buf.
  virtual void broadcast_bytes(void* buf, std::size_t n, int root) = 0;
  // Personalised all-to-all: `send` holds send_counts[r] bytes for each rank r, in rank order;
  // `recv` gets recv_counts[r] bytes from each rank r, in rank order. recv_counts[r] must be
  // rank r's send_counts[this rank] (an all-to-all of the counts first, as
  // src/comm/rank_exchange.hpp does).
  virtual void all_to_all_bytes(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                                const std::vector<std::size_t>& recv_counts) = 0;

  // The MPI communicator of these ranks, for what MPI itself must be handed (HDF5's collective
  // MPI-IO): MPI_COMM_NULL with one rank, or without MPI (one process, a dry run).
  virtual MPI_Comm mpi_comm() const { return MPI_COMM_NULL; }

  virtual const CommStats& stats() const { return stats_; }
  virtual void reset_stats() { stats_ = {}; }

 protected:
  // A request already complete: what a communicator that finishes a non-blocking call at once
  // (one rank, a dry run, threads) returns.
  static std::unique_ptr<Request> completed();
  CommStats stats_;
};

class Backend;
// A communicator of one rank: every collective is a copy or nothing, and counts no bytes. With
// `device`, a copy that touches one of its device buffers is the backend's (copy_on_device,
// copy_to_host or copy_from_host): host code cannot reach device memory. `on_device` says which
// buffers are (default: the backend's is_device_pointer; tests mark host memory with it).
std::unique_ptr<Communicator> make_self_communicator(Backend* device = nullptr,
                                                     std::function<bool(const void*)> on_device = {});

// The ranks of `comm` (MPI initialised), in its rank order, over a duplicate of it (freed with
// the communicator), so that its messages never mix with the caller's. Collective over `comm`.
// What preparation and conversion on ranks take (plexus/prepare_distributed.hpp,
// plexus/convert.hpp) when there is no ProcessGrid (whose world() serves as well).
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm = MPI_COMM_WORLD);

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
