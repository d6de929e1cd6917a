#pragma once
// The shape-only backend: every kernel of backend.hpp, computing nothing. Allocation hands out
// address space that is never backed by memory (a PROT_NONE reservation: a stray read or write
// faults instead of passing unnoticed), and is counted by the Backend base like any other, per
// memory kind; each GEMM, SpMM and attention call adds its FLOPs (and an SpMM its memory
// traffic), every other kernel the bytes it would read and write (an allocation the bytes its
// zero fill writes) and a dropout the mask elements it would draw. With recording communicators (src/comm/recording_communicator.hpp) the real model
// code runs one step at a rank's coordinates in microseconds per layer, whatever the sizes:
// that is how plans and memory checks learn what a run will move, hold and compute
// (src/plan/). computes() is false, so code that prepares host data for a backend skips it.
#include "plexus/backend.hpp"

namespace plexus {

// What the kernels called since the last reset() would have computed.
struct ShapeCounts {
  double gemm_flops = 0;       // 2·m·k·n per GEMM, and the attention kernels' products
  double spmm_flops = 0;       // 2·nnz·n per SpMM
  double spmm_bytes = 0;       // an SpMM's memory traffic: index + value per entry, one n-wide
                               // row of the dense operand per entry, the output rows, the row pointers
  // The memory-bound kernels (everything but GEMM, SpMM, attention and dropout): the bytes
  // each call would read and write — element-wise kernels, fills, copies, reductions, the loss,
  // the optimizer, the precision casts, the GAT edge kernels, host transfers, and the zero fill
  // of every allocation (Backend::allocate hands out zeroed memory). Per kernel: shape_backend.cpp.
  double stream_bytes = 0;
  // Dropout mask elements drawn: dropout and edge_dropout with 0 < p < 1, one counter-based
  // random number per element, which prices the whole call (a Philox draw costs more than the
  // element's read and write on a CPU: kernels/cpu/elementwise.cpp). Dropout with p = 0 (a
  // copy) or 1 (a fill) counts as stream bytes. The fused attention kernels' own dropout is
  // part of their FLOPs.
  double random_draws = 0;
};

class ShapeBackend final : public Backend {
 public:
  ShapeBackend() = default;
  ShapeBackend(const ShapeBackend&) = delete;
  ShapeBackend& operator=(const ShapeBackend&) = delete;
  Device device() const override { return Device::CPU; }
  std::string name() const override { return "shape"; }
  bool computes() const override { return false; }

  const ShapeCounts& counts() const { return counts_; }
  void reset_counts() { counts_ = {}; }

  void deallocate(void* p, std::size_t bytes) noexcept override;

 private:
  // The kernels compute nothing; gemm, spmm and attention count (shape_backend.cpp).
#include "kernels/common/backend_kernels.inc"  // every backend's kernels, declared once
  void do_squared_norms(const NormPiece*, std::size_t count, double* out) override;

  ShapeCounts counts_;
};

}  // namespace plexus
