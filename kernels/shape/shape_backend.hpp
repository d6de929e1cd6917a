#pragma once
// The shape-only backend: every kernel of backend.hpp, computing nothing. Allocation hands out
// address space that is never backed by memory (a PROT_NONE reservation: a stray read or write
// faults instead of passing unnoticed), and is counted by the Backend base like any other, per
// memory kind; each GEMM, SpMM and attention call adds its FLOPs (and an SpMM its memory
// traffic). With recording communicators (src/comm/recording_communicator.hpp) the real model
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
};

class ShapeBackend final : public Backend {
 public:
  ShapeBackend();
  ~ShapeBackend() override;
  ShapeBackend(const ShapeBackend&) = delete;
  ShapeBackend& operator=(const ShapeBackend&) = delete;
  Device device() const override { return Device::CPU; }
  std::string name() const override { return "shape"; }
  bool computes() const override { return false; }

  const ShapeCounts& counts() const { return counts_; }
  void reset_counts() { counts_ = {}; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  void copy_from_host(void*, const void*, std::size_t) override {}
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;  // zeros
  void copy_on_device(void*, const void*, std::size_t) override {}

  void spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) override;
  void gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
            MatrixView c) override;
  void axpby(std::size_t, float, const float*, float, float*) override {}
  void fill(MatrixView, float) override {}
  void copy(ConstMatrixView, MatrixView) override {}
  void add_bias(MatrixView, const float*) override {}
  void column_sum(ConstMatrixView, float, float*) override {}
  void relu(MatrixView) override {}
  void relu_backward(ConstMatrixView, MatrixView) override {}
  void dropout(ConstMatrixView, MatrixView, float, DropoutKey, index_t, index_t) override {}
  void row_max(ConstMatrixView, float*) override {}
  void row_sumexp(ConstMatrixView, const float*, float*) override {}
  LossTerms softmax_xent(ConstMatrixView, const float*, const float*, const std::int32_t*, const float*, index_t,
                         MatrixView) override {
    return {};
  }
  void row_argmax(ConstMatrixView, index_t, float*, std::int64_t*) override {}
  void argmax_keys(std::size_t, const float*, const float*, const std::int64_t*, float*) override {}
  void count_correct(std::size_t, const float*, const std::int32_t*, const std::uint8_t*, int, double*) override {}
  void adam_step(std::size_t, float*, const float*, float*, float*, const AdamParams&) override {}
  void to_bf16(std::size_t, const float*, float, bf16*) override {}
  void from_bf16(std::size_t, const bf16*, float*) override {}
  TransformerKernels& transformer() override;

 private:
  class Transformer;
  ShapeCounts counts_;
  std::unique_ptr<Transformer> transformer_;
};

}  // namespace plexus
