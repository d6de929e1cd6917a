#pragma once
// The kernel interface. Every kernel is declared once, here, as a pure virtual method of
// Backend, and implemented once per backend:
//   kernels/reference/  plain loops, double accumulation: the oracle tests compare against
//   kernels/cpu/        OpenMP + SIMD + OpenBLAS: the fast CPU path
//   kernels/cuda/       cuSPARSE / cuBLAS / CUDA kernels (built when nvcc is present)
// Model and training code only ever talk to a Backend&, so they never know which one runs.
//
// Memory: a Backend owns allocation on its device and counts live and peak bytes, which is
// how tests check that each rank holds only its shards.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "plexus/kernels/transformer.hpp"
#include "plexus/rng.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

enum class Trans { No, Yes };

// What a buffer holds, for the memory report of a training run (parameters, gradients,
// optimizer state, activations, workspace: ZeRO's categories). Buffers take the backend's
// current kind when they are allocated (MemoryScope sets it); the default is Activations.
enum class MemoryKind { Parameters = 0, Gradients, Optimizer, Activations, Workspace };
inline constexpr int kMemoryKinds = 5;
const char* memory_kind_name(MemoryKind k);  // "param", "grad", "optimizer", "activation", "workspace"

// Softmax statistics and loss inputs are split so that the class axis can be sharded over
// ranks: row maxima and exp-sums are partial per shard and combined by collectives between
// the calls (max all-reduce, then sum all-reduce) before the loss/grad kernel runs.
struct LossTerms {
  double loss_sum = 0.0;  // sum over selected rows of weight * (-log p[label])
};

// Page-locked ("pinned") host memory from Backend::allocate_host_pinned. The deleter is a plain
// function (cudaFreeHost, free), not a call on the backend, so a block may outlive the backend
// that made it (a communicator's staging arena destroyed after the backend, as in plexus train).
struct HostPinnedFree {
  void (*release)(void*) = nullptr;
  void operator()(void* p) const noexcept {
    if (p && release) release(p);
  }
};
using HostPinnedPtr = std::unique_ptr<void, HostPinnedFree>;

struct AdamParams {
  float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = false;  // false: L2 added to the gradient (Adam); true: AdamW
  std::int64_t step = 1;   // 1-based step count, for bias correction
};

// A CSR matrix prepared by Backend::prepare_spmm for repeated spmm() calls: opaque, backend-
// specific (the CUDA backend keeps cuSPARSE descriptors and workspace, and the split of very long
// rows). It depends on A's shape and row pointers only (rows, cols, nnz, the indptr array and its
// contents), which must stay as they were while the plan is used; column indices and values are
// read afresh by every call, so they may change between calls (a block gathered into a reused
// workspace). A plan may hold device memory of the backend that made it: destroy it before that
// backend, and use it only with that backend (a ProfilingBackend's plans are its inner backend's).
class SpmmPlan {
 public:
  virtual ~SpmmPlan() = default;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;

  // ---- memory ---------------------------------------------------------------------------
  virtual void* allocate(std::size_t bytes) = 0;       // zero-filled
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
  virtual void copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_on_device(void* dst, const void* src, std::size_t bytes) = 0;
  // Whether p points into this backend's device memory, which host code (plain MPI) must not
  // touch: a host communicator stages such buffers (make_staging_communicator in comm.hpp).
  virtual bool is_device_pointer(const void* p) const {
    (void)p;
    return false;
  }
  virtual void synchronize() {}
  // False for the shape-only backend (kernels/shape/), which hands out address space without
  // memory and computes nothing, so that a plan runs the real model code at a rank's
  // coordinates: code that prepares host data only to upload it skips that work then.
  virtual bool computes() const { return true; }
  // The CUDA stream this backend's kernels are queued on (a cudaStream_t) and its device
  // ordinal, for a device communicator (NCCL) that orders its work after theirs with events;
  // nullptr and -1 on host backends.
  virtual void* native_stream() const { return nullptr; }
  virtual int device_ordinal() const { return -1; }
  // Host memory for staging transfers between the host and this device (collectives staged
  // through the host, small results copied back): page-locked on CUDA (cudaMallocHost), so
  // copies to and from it run at full link speed without a bounce buffer; elsewhere ordinary
  // 64-byte aligned host memory (the default). Uninitialised, at least `bytes` long (nullptr
  // for 0), not counted in live_bytes. Pinning is slow and scarce: allocate once and reuse.
  virtual HostPinnedPtr allocate_host_pinned(std::size_t bytes);
  std::size_t live_bytes() const { return live_bytes_; }
  std::size_t peak_bytes() const { return peak_bytes_; }
  void reset_peak() {
    peak_bytes_ = live_bytes_;
    kind_peak_ = kind_live_;
  }
  // Bytes of Buffers by kind: live now, and the peak of each kind since reset_peak().
  std::size_t live_bytes(MemoryKind k) const { return kind_live_[static_cast<int>(k)]; }
  std::size_t peak_bytes(MemoryKind k) const { return kind_peak_[static_cast<int>(k)]; }
  // A budget for this backend's memory (0: none). A Buffer that would take the live bytes
  // past it is refused with InputError("--memory-per-rank", ...) naming what did not fit.
  void set_memory_limit(std::size_t bytes) { limit_bytes_ = bytes; }
  std::size_t memory_limit() const { return limit_bytes_; }
  // The kind (and a label for errors) new Buffers take; MemoryScope sets and restores them.
  MemoryKind memory_kind() const { return kind_; }
  const char* memory_label() const { return label_; }
  void set_memory_kind(MemoryKind k, const char* label) {
    kind_ = k;
    label_ = label;
  }
  // Called by Buffer around allocate/deallocate (throws when over the budget).
  void account_buffer(MemoryKind k, std::size_t bytes);
  void release_buffer(MemoryKind k, std::size_t bytes) noexcept { kind_live_[static_cast<int>(k)] -= bytes; }

  // ---- sparse ---------------------------------------------------------------------------
  // C = A·B + beta·C. A: m×k CSR, B: k×n, C: m×n. Deterministic (no atomics).
  // The transposed product Aᵀ·B is done by SpMM with an explicitly transposed CSR
  // (csr_transpose in sparse.hpp, built once): a scatter kernel would need atomics.
  virtual void spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) = 0;
  // Prepares A once for many spmm() calls with B at most `max_dense_cols` wide (a hint for sizing
  // workspace: wider calls still work). Returns nullptr where a backend needs nothing (cpu,
  // reference). Reads A's shape and row pointers (see SpmmPlan), not its indices or values.
  virtual std::unique_ptr<SpmmPlan> prepare_spmm(const CsrView& a, index_t max_dense_cols) {
    (void)a;
    (void)max_dense_cols;
    return nullptr;
  }
  // spmm() with a plan from prepare_spmm(A) of this backend (nullptr: the unprepared path). The
  // result is deterministic as well, but it may differ in the last bits from the unprepared
  // call's where the plan changes the summation order (on CUDA: split rows, cuSPARSE). A plan of
  // another matrix (other shape or indptr pointer) or backend is refused with invalid_argument.
  virtual void spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, const SpmmPlan* plan) {
    (void)plan;
    spmm(a, b, c, beta);
  }

  // ---- dense ----------------------------------------------------------------------------
  // C = alpha·op(A)·op(B) + beta·C.
  virtual void gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
                    MatrixView c) = 0;
  // y[i] = alpha·x[i] + beta·y[i] over n contiguous floats. x may be y (y = alpha·y scales).
  virtual void axpby(std::size_t n, float alpha, const float* x, float beta, float* y) = 0;
  virtual void fill(MatrixView m, float value) = 0;
  // Copies src into dst (same shape, any leading dimensions).
  virtual void copy(ConstMatrixView src, MatrixView dst) = 0;

  // ---- elementwise / activation ---------------------------------------------------------
  // m[i][j] += bias[j]
  virtual void add_bias(MatrixView m, const float* bias) = 0;
  // out[j] = beta·out[j] + sum_i m[i][j]   (bias gradient)
  virtual void column_sum(ConstMatrixView m, float beta, float* out) = 0;
  // m = max(m, 0), in place.
  virtual void relu(MatrixView m) = 0;
  // grad[i][j] = 0 where activated[i][j] <= 0 (activated = output of relu), in place.
  virtual void relu_backward(ConstMatrixView activated, MatrixView grad) = 0;
  // out = x ⊙ keep / (1-p), keep from counter_uniform(key, row0 + i, col0 + j) >= p.
  // Dropout is linear in x for a fixed key, so the backward pass is the same call on the
  // gradient. `x` and `out` may alias.
  virtual void dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0,
                       index_t col0) = 0;

  // ---- masked log-softmax + NLL (class axis may be sharded; see LossTerms) -------------
  // row_max[i] = max(row_max[i], max_j x[i][j])   (initialise row_max to -inf)
  virtual void row_max(ConstMatrixView x, float* row_max) = 0;
  // row_sumexp[i] += sum_j exp(x[i][j] - row_max[i])
  virtual void row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) = 0;
  // For every row i with weight[i] != 0 and label[i] >= 0:
  //   loss += weight[i] * (log(row_sumexp[i]) + row_max[i] - x[i][label[i] - col0])
  //     (the log-sum-exp term only when col0 == 0, the label term only when
  //      col0 <= label < col0 + cols: each term is counted by exactly one class shard)
  //   grad[i][j] = weight[i] * (softmax[i][j] - [j + col0 == label[i]])
  // and grad[i][:] = 0 for other rows. Returns the loss sum (double, deterministic).
  virtual LossTerms softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                                 const std::int32_t* labels, const float* weights, index_t col0,
                                 MatrixView grad) = 0;
  // Per row: the largest value and its global column (col0 + j, first of ties), merged into
  // best_val / best_col (initialise best_val to -inf, best_col to -1); ties keep the lower
  // column so the result does not depend on how classes are sharded.
  virtual void row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) = 0;
  // Accuracy of that argmax over class shards, in two steps around max all-reduces over the
  // class axis (DistLoss::evaluate): after row_argmax on this shard (best_val, best_col) and the
  // all-reduce of a copy of best_val (global_best),
  //   key[i] = -float(best_col[i]) where best_col[i] >= 0 and best_val[i] == global_best[i]
  //            (this shard holds the row's maximum), else -inf;
  // the max all-reduce of the keys is then minus the lowest column holding the maximum, and
  //   counts[s] = #rows i with bit s of splits[i] set, labels[i] >= 0 and -key[i] == labels[i]
  // for s < num_splits (<= 8), written as doubles (exact integers) into `counts` (this
  // backend's memory, overwritten, also for n == 0). `key` may alias best_val or global_best.
  virtual void argmax_keys(std::size_t n, const float* best_val, const float* global_best,
                           const std::int64_t* best_col, float* key) = 0;
  virtual void count_correct(std::size_t n, const float* key, const std::int32_t* labels, const std::uint8_t* splits,
                             int num_splits, double* counts) = 0;

  // ---- optimizer ------------------------------------------------------------------------
  // One Adam/AdamW step over n parameters.
  virtual void adam_step(std::size_t n, float* param, const float* grad, float* m, float* v,
                         const AdamParams& hp) = 0;

  // ---- precision ------------------------------------------------------------------------
  // y[i] = bf16(x[i] + beta·float(y[i])), rounded to nearest even (float_to_bf16 in tensor.hpp):
  // beta 0 narrows (y is not read), beta 1 accumulates into 16-bit storage. The float sum is
  // fma(beta, float(y[i]), x[i]), one rounding, so every backend gives the same bits.
  virtual void to_bf16(std::size_t n, const float* x, float beta, bf16* y) = 0;
  // y[i] = float(x[i]) (exact).
  virtual void from_bf16(std::size_t n, const bf16* x, float* y) = 0;
  // gemm()'s multiply precision (MatmulPrecision, tensor.hpp): TF32 or BF16 use cuBLAS's
  // tensor-core modes on CUDA; the CPU backends compute in fp32 whatever is set.
  virtual void set_matmul_precision(MatmulPrecision p) { matmul_precision_ = p; }
  MatmulPrecision matmul_precision() const { return matmul_precision_; }

  // ---- transformer kernel families (plexus/kernels/*.hpp) -------------------------------
  // LayerNorm, GELU, fused causal attention, squared norm: one object per backend, valid as
  // long as the backend. Pointers it takes are this backend's memory, like every method here.
  virtual TransformerKernels& transformer() = 0;

 protected:
  void count_alloc(std::size_t bytes) {
    live_bytes_ += bytes;
    if (live_bytes_ > peak_bytes_) peak_bytes_ = live_bytes_;
  }
  void count_free(std::size_t bytes) { live_bytes_ -= bytes; }

 private:
  std::size_t live_bytes_ = 0, peak_bytes_ = 0, limit_bytes_ = 0;
  std::array<std::size_t, kMemoryKinds> kind_live_{}, kind_peak_{};
  MemoryKind kind_ = MemoryKind::Activations;
  const char* label_ = "activations";
  MatmulPrecision matmul_precision_ = MatmulPrecision::FP32;
};

// Buffers allocated in this scope are of kind `k` (`label` names them in a budget error).
class MemoryScope {
 public:
  MemoryScope(Backend& be, MemoryKind k, const char* label)
      : be_(be), kind_(be.memory_kind()), label_(be.memory_label()) {
    be.set_memory_kind(k, label);
  }
  ~MemoryScope() { be_.set_memory_kind(kind_, label_); }
  MemoryScope(const MemoryScope&) = delete;
  MemoryScope& operator=(const MemoryScope&) = delete;

 private:
  Backend& be_;
  MemoryKind kind_;
  const char* label_;
};

// Factories. `threads` <= 0 means the OpenMP default.
std::unique_ptr<Backend> make_reference_backend();
std::unique_ptr<Backend> make_cpu_backend(int threads = 0);
// Throws std::runtime_error when Plexus was built without CUDA or no GPU is present.
std::unique_ptr<Backend> make_cuda_backend(int device = 0);
bool cuda_available();  // built with CUDA and a device is visible
int cuda_device_count();  // devices visible to this process (0 without CUDA)

}  // namespace plexus
