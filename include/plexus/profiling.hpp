#pragma once
// ProfilingBackend: a Backend that runs every kernel on another backend and times it, waiting
// for the device after each call so that each time is that kernel's own (on a GPU this
// serialises the stream: totals are a breakdown, not the unprofiled run time).
// `plexus train --profile` and `plexus gpt train --profile` print its table.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "plexus/backend.hpp"

namespace plexus {

class ProfilingBackend final : public Backend {
 public:
  struct Entry {
    double seconds = 0;
    std::uint64_t calls = 0;
  };
  explicit ProfilingBackend(Backend& inner);
  ~ProfilingBackend() override;
  // Seconds and calls per kernel (method name, e.g. "gemm", "attention_backward").
  const std::map<std::string, Entry>& entries() const { return entries_; }
  void clear() { entries_.clear(); }

  Device device() const override { return inner_.device(); }
  std::string name() const override { return inner_.name(); }
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  bool is_device_pointer(const void* p) const override { return inner_.is_device_pointer(p); }
  bool computes() const override { return inner_.computes(); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_on_device(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override { inner_.synchronize(); }
  void* native_stream() const override { return inner_.native_stream(); }
  int device_ordinal() const override { return inner_.device_ordinal(); }
  HostPinnedPtr allocate_host_pinned(std::size_t bytes) override;
  void spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) override;
  // Plans are the inner backend's (timed as "spmm_prepare"); the prepared spmm is timed as "spmm".
  std::unique_ptr<SpmmPlan> prepare_spmm(const CsrView& a, index_t max_dense_cols) override;
  void spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, const SpmmPlan* plan) override;
  void gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta, MatrixView c) override;
  void axpby(std::size_t n, float alpha, const float* x, float beta, float* y) override;
  void fill(MatrixView m, float value) override;
  void copy(ConstMatrixView src, MatrixView dst) override;
  void add_bias(MatrixView m, const float* bias) override;
  void column_sum(ConstMatrixView m, float beta, float* out) override;
  void relu(MatrixView m) override;
  void relu_backward(ConstMatrixView activated, MatrixView grad) override;
  void dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0, index_t col0) override;
  void row_max(ConstMatrixView x, float* row_max) override;
  void row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) override;
  LossTerms softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp, const std::int32_t* labels,
                         const float* weights, index_t col0, MatrixView grad) override;
  void row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) override;
  void argmax_keys(std::size_t n, const float* best_val, const float* global_best, const std::int64_t* best_col,
                   float* key) override;
  void count_correct(std::size_t n, const float* key, const std::int32_t* labels, const std::uint8_t* splits,
                     int num_splits, double* counts) override;
  void adam_step(std::size_t n, float* param, const float* grad, float* m, float* v, const AdamParams& hp) override;
  void to_bf16(std::size_t n, const float* x, float beta, bf16* y) override;
  void from_bf16(std::size_t n, const bf16* x, float* y) override;
  // Sets the inner backend's precision (which its gemm reads) and keeps this one's in step.
  void set_matmul_precision(MatmulPrecision p) override;
  TransformerKernels& transformer() override;

 private:
  // Runs f on the inner backend, waits for it, and adds the time to `kernel`.
  template <class F>
  auto timed(const char* kernel, F&& f) -> decltype(f());

  class Transformer;
  Backend& inner_;
  std::map<std::string, Entry> entries_;
  std::unique_ptr<Transformer> transformer_;
};

}  // namespace plexus
