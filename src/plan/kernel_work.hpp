#pragma once
// What each kernel of a dry run would read, write and compute, by kernel name (the names the
// Backend tells its observer: "spmm", "gemm_nn", "relu", ...): the shape backend's model
// (kernels/shape/shape_backend.hpp) attributed call by call. Joined with a KernelProfiler's
// seconds of the same code on a real backend, it gives each kernel's achieved rate against the
// machine's limits (examples/bench/bench_gcn.cpp, the roofline report).
#include <cstdint>
#include <map>
#include <string>

#include "kernels/shape/shape_backend.hpp"
#include "plan/plan.hpp"

namespace plexus {

struct KernelWork {
  std::uint64_t calls = 0;
  double flops = 0;  // GEMM and SpMM products (2 a multiply-add)
  double bytes = 0;  // memory traffic: an SpMM's (indices, values, gathered and written rows), a
                     // memory-bound kernel's reads and writes
  double draws = 0;  // dropout mask elements drawn
};

// Observes a shape backend and adds each call's counts to its kernel.
class KernelWorkRecorder final : public KernelObserver {
 public:
  // Observes `backend` until destroyed (it must have no other observer).
  explicit KernelWorkRecorder(ShapeBackend& backend);
  ~KernelWorkRecorder() override;
  KernelWorkRecorder(const KernelWorkRecorder&) = delete;
  KernelWorkRecorder& operator=(const KernelWorkRecorder&) = delete;

  const std::map<std::string, KernelWork>& work() const { return work_; }
  void begin(const char* kernel) override;
  void end(const char* kernel) override;

 private:
  ShapeBackend& backend_;
  ShapeCounts at_begin_;
  std::map<std::string, KernelWork> work_;
};

// One steady training epoch (the second) of `p` on one rank (grid 1x1x1), kernel by kernel.
std::map<std::string, KernelWork> gnn_epoch_kernel_work(const ProblemSize& p);

}  // namespace plexus
