#pragma once
// A communicator whose host collectives (plexus/comm.hpp: integer reductions and scans, gathers,
// broadcasts and all-to-alls of bytes) run on another communicator beneath it, its host: the
// staging communicator (device buffers staged through host memory) and the NCCL one (device
// buffers only) carry preparation's, conversion's and the outputs' host data on their MPI
// communicator, whose stats count it. Derived::host() names that communicator.
#include "plexus/comm.hpp"

namespace plexus {

template <class Derived>
class ForwardsHostCollectives : public Communicator {
 public:
  void all_reduce(std::int64_t* buf, std::size_t n, ReduceOp op) override { host().all_reduce(buf, n, op); }
  void exclusive_scan(std::int64_t* buf, std::size_t n) override { host().exclusive_scan(buf, n); }
  void all_gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts) override {
    host().all_gather_bytes(send, recv, counts);
  }
  void gather_bytes(const void* send, void* recv, const std::vector<std::size_t>& counts, int root) override {
    host().gather_bytes(send, recv, counts, root);
  }
  void broadcast_bytes(void* buf, std::size_t n, int root) override { host().broadcast_bytes(buf, n, root); }
  void all_to_all_bytes(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                        const std::vector<std::size_t>& recv_counts) override {
    host().all_to_all_bytes(send, send_counts, recv, recv_counts);
  }
  MPI_Comm mpi_comm() const override { return host().mpi_comm(); }

 private:
  Communicator& host() const { return static_cast<const Derived*>(this)->host(); }
};

}  // namespace plexus
