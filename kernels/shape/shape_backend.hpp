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
  // The kernels compute nothing; gemm, spmm and attention count.
  void* do_allocate(std::size_t bytes) override;
  void do_copy_from_host(void*, const void*, std::size_t) override {}
  void do_copy_to_host(void* dst, const void* src, std::size_t bytes) override;  // zeros
  void do_copy_on_device(void*, const void*, std::size_t) override {}

  void do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) override;
  void do_gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
               MatrixView c) override;
  void do_axpby(std::size_t, float, const float*, float, float*) override {}
  void do_fill(MatrixView, float) override {}
  void do_copy(ConstMatrixView, MatrixView) override {}
  void do_add_bias(MatrixView, const float*) override {}
  void do_column_sum(ConstMatrixView, float, float*) override {}
  void do_relu(MatrixView) override {}
  void do_relu_backward(ConstMatrixView, MatrixView) override {}
  void do_dropout(ConstMatrixView, MatrixView, float, DropoutKey, index_t, index_t) override {}
  void do_gelu_forward(ConstMatrixView, MatrixView) override {}
  void do_gelu_backward(ConstMatrixView, ConstMatrixView, MatrixView) override {}
  void do_layernorm_mean(ConstMatrixView, index_t, float*) override {}
  void do_layernorm_var(ConstMatrixView, const float*, index_t, float*) override {}
  void do_layernorm_apply(ConstMatrixView, const float*, const float*, float, const float*, const float*, MatrixView,
                          float*) override {}
  void do_layernorm_backward_sums(ConstMatrixView, ConstMatrixView, const float*, const float*, const float*, index_t,
                                  float*, float*) override {}
  void do_layernorm_backward(ConstMatrixView, ConstMatrixView, const float*, const float*, const float*, const float*,
                             const float*, float, MatrixView, float, float*, float*) override {}
  void do_attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p, DropoutKey key,
                            MatrixView y, float* lse) override;
  void do_attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                             const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView dqkv) override;
  void do_row_max(ConstMatrixView, float*) override {}
  void do_row_sumexp(ConstMatrixView, const float*, float*) override {}
  LossTerms do_softmax_xent(ConstMatrixView, const float*, const float*, const std::int32_t*, const float*, index_t,
                            MatrixView) override {
    return {};
  }
  void do_row_argmax(ConstMatrixView, index_t, float*, std::int64_t*) override {}
  void do_argmax_keys(std::size_t, const float*, const float*, const std::int64_t*, float*) override {}
  void do_count_correct(std::size_t, const float*, const std::int32_t*, const std::uint8_t*, int, double*) override {}
  double do_squared_norm(std::size_t, const float*) override { return 0.0; }
  void do_squared_norms(const NormPiece*, std::size_t count, double* out) override;
  void do_adam_step(std::size_t, float*, const float*, float*, float*, const AdamParams&) override {}
  void do_to_bf16(std::size_t, const float*, float, bf16*) override {}
  void do_from_bf16(std::size_t, const bf16*, float*) override {}

  ShapeCounts counts_;
};

}  // namespace plexus
