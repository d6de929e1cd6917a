#pragma once
// The kernel interface. Every kernel is declared once, here, as a public method of Backend whose
// argument checks are written once (kernels/common/backend_kernels.cpp), and implemented once per
// backend as the protected do_<kernel>:
//   kernels/reference/  plain loops, double accumulation: the oracle tests compare against
//   kernels/cpu/        OpenMP + SIMD + OpenBLAS: the fast CPU path
//   kernels/cuda/       cuSPARSE / cuBLAS / CUDA kernels (built when nvcc is present, as the
//                       separate CUDA library: include/plexus/cuda.hpp)
//   kernels/shape/      computes nothing, counts FLOPs, bytes and dropout draws: plans run the real
//                       model code on it
// Model and training code only ever talk to a Backend&, so they never know which one runs.
//
// Memory: a Backend owns allocation on its device and counts live and peak bytes, which is
// how tests check that each rank holds only its shards.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "plexus/kernels/attention.hpp"
#include "plexus/kernels/reduction.hpp"
#include "plexus/rng.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

enum class Trans { No, Yes };

// What a buffer holds, for the memory report of a training run (parameters, gradients,
// optimizer state, activations, workspace: ZeRO's categories; and per-edge values, the
// attention coefficients of GAT layers and their gradients, which grow with the edges rather
// than the nodes; and per-pair values, the link task's node pairs and what is computed for
// each of them, which grow with the pairs). Buffers take the backend's current kind when they
// are allocated (MemoryScope sets it); the default is Activations.
enum class MemoryKind { Parameters = 0, Gradients, Optimizer, Activations, Workspace, EdgeValues, Pairs };
inline constexpr int kMemoryKinds = 7;
// "param", "grad", "optimizer", "activation", "workspace", "edge", "pairs"
const char* memory_kind_name(MemoryKind k);

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
// backend, and use it only with that backend.
class SpmmPlan {
 public:
  virtual ~SpmmPlan() = default;
};

// Watches every kernel call of a backend (profiling.hpp's KernelProfiler times them): begin()
// before the kernel runs (after its argument checks), end() when it has returned; a call that
// throws gets no end(). Only calls from outside are seen, not those a kernel makes to its own
// backend, so each time is that of one call of the caller.
class KernelObserver {
 public:
  virtual ~KernelObserver() = default;
  virtual void begin(const char* kernel) = 0;
  virtual void end(const char* kernel) = 0;
  // A kernel about to draw counter-based random numbers (dropout, edge_dropout and the
  // attention kernels with p > 0): the key of its stream and the global row and column of its
  // first element — what decides every mask element (plexus/rng.hpp). Before begin(). Tests
  // check each stream's key against its documentation (docs/gnn-models.md and docs/gpt.md,
  // "Random streams").
  virtual void random(const char* /*kernel*/, const DropoutKey& /*key*/, index_t /*row0*/, index_t /*col0*/) {}
};

// The public kernel methods are not virtual: each checks its arguments (the same checks, and the
// same std::invalid_argument, whichever backend runs it), tells the observer, and calls the
// protected do_<kernel> that every backend implements (kernels/common/backend_kernels.cpp).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;

  // At most one observer at a time (nullptr: none). It must outlive its time here.
  void set_observer(KernelObserver* o) { observer_ = o; }
  KernelObserver* observer() const { return observer_; }

  // ---- memory ---------------------------------------------------------------------------
  void* allocate(std::size_t bytes);  // zero-filled
  // For a buffer its first kernel writes whole (an output with beta 0, a copy's target, a
  // collective's receive buffer): no fill, the bytes unspecified — NaN on the CPU backend in a
  // build without NDEBUG, so that a read before the write shows in its tests.
  void* allocate_uninitialized(std::size_t bytes);
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
  void copy_from_host(void* dst, const void* src, std::size_t bytes);
  void copy_to_host(void* dst, const void* src, std::size_t bytes);
  void copy_on_device(void* dst, const void* src, std::size_t bytes);
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
  HostPinnedPtr allocate_host_pinned(std::size_t bytes);
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
  // past it is refused with InputError("Backend::set_memory_limit(bytes)", ...) naming what did not fit.
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
  void spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta);
  // Prepares A once for many spmm() calls with B at most `max_dense_cols` wide (a hint for sizing
  // workspace: wider calls still work). Returns nullptr where a backend needs nothing (cpu,
  // reference). Reads A's shape and row pointers (see SpmmPlan), not its indices or values.
  std::unique_ptr<SpmmPlan> prepare_spmm(const CsrView& a, index_t max_dense_cols);
  // spmm() with a plan from prepare_spmm(A) of this backend (nullptr: the unprepared path). The
  // result is deterministic as well, but it may differ in the last bits from the unprepared
  // call's where the plan changes the summation order (on CUDA: split rows, cuSPARSE). A plan of
  // another matrix (other shape or indptr pointer) or backend is refused with invalid_argument.
  void spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, const SpmmPlan* plan);

  // ---- dense ----------------------------------------------------------------------------
  // C = alpha·op(A)·op(B) + beta·C.
  void gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta, MatrixView c);
  // y[i] = alpha·x[i] + beta·y[i] over n contiguous floats. x may be y (y = alpha·y scales).
  void axpby(std::size_t n, float alpha, const float* x, float beta, float* y);
  void fill(MatrixView m, float value);
  // Copies src into dst (same shape, any leading dimensions).
  void copy(ConstMatrixView src, MatrixView dst);

  // ---- elementwise / activation ---------------------------------------------------------
  // m[i][j] += bias[j]
  void add_bias(MatrixView m, const float* bias);
  // out[j] = beta·out[j] + sum_i m[i][j]   (bias gradient)
  void column_sum(ConstMatrixView m, float beta, float* out);
  // m = max(m, 0), in place.
  void relu(MatrixView m);
  // grad[i][j] = 0 where activated[i][j] <= 0 (activated = output of relu), in place.
  void relu_backward(ConstMatrixView activated, MatrixView grad);
  // out = x ⊙ keep / (1-p), keep from counter_uniform(key, row0 + i, col0 + j) >= p.
  // Dropout is linear in x for a fixed key, so the backward pass is the same call on the
  // gradient. `x` and `out` may alias.
  void dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0, index_t col0);
  // GELU, tanh form (GPT-2's, PyTorch's approximate="tanh"):
  //   gelu(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
  // y = gelu(x), `y` may alias `x`; dx = gelu'(x)·dy, `dx` may alias `dy`.
  void gelu_forward(ConstMatrixView x, MatrixView y);
  void gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx);

  // ---- row L2 normalisation (GraphSAGE's normalize) ---------------------------------------
  // Rows whose columns may be split over ranks: the caller all-reduces the partial sums over
  // the axis that splits the columns between the phases (kernels/*/row_norm.*).
  //   row_dots                     out[i] = Σ_j a[i][j]·b[i][j]                 (partial → all-reduce)
  //   l2_normalize_rows            x[i] /= max(sqrt(sumsq[i]), eps), in place
  //   l2_normalize_rows_backward   with y the normalised x, n = max(sqrt(sumsq[i]), eps) and
  //                                dots[i] = Σ_j y·dy (all-reduced): dy = (dy − y·dots)/n where
  //                                sqrt(sumsq) > eps, else dy/eps; in place
  void row_dots(ConstMatrixView a, ConstMatrixView b, float* out);
  void l2_normalize_rows(MatrixView x, const float* sumsq, float eps);
  void l2_normalize_rows_backward(ConstMatrixView y, const float* sumsq, const float* dots, float eps, MatrixView dy);

  // ---- graph attention (GAT) on an Â block's pattern (kernels/*/edge_attention.*) ----------
  // Edge arrays hold one value per stored entry of `a` and head, head-major: the value of entry
  // k (in a's CSR order) for head h is at [h·a.nnz + k]. Row r of `a` is a destination node,
  // column c a source node (out = Â·Z aggregates over a row's columns). Per-node arrays of
  // `heads` values are row-major [nodes × heads]. A row's softmax may span blocks held by other
  // ranks: the caller combines the partial row maxima and sums between the phases
  // (all-reduce max, then sum). a.values is not read. Deterministic, no atomics, every result
  // independent of the thread count.
  //   gat_edge_scores           e[h,k] = leaky(s_dst[r,h] + s_src[c,h] (+ s_edge[h,k])), leaky(x) = x > 0 ? x : slope·x;
  //                             s_edge (an edge array, or null): each entry's own term (GAT's edge features)
  //   gat_edge_scores_backward  de[h,k] *= (s_dst[r,h] + s_src[c,h] (+ s_edge[h,k]) > 0 ? 1 : slope), in place
  //   edge_row_max              row_max[r,h] = max_k e[h,k] over row r (-inf for an empty row)
  //   edge_softmax_exp          e[h,k] = exp(e[h,k] − row_max[r,h]) in place;
  //                             row_sum[r,h] = Σ_k of the new e over row r (partial)
  //   edge_softmax_normalize    e[h,k] /= row_sum[r,h]
  //   edge_dropout              e[h,k] *= keep / (1−p), keep = counter_uniform(key,
  //                             (row0 + r)·total_heads + head0 + h, col0 + c) >= p: keyed by the global entry
  //                             and head, so every grid draws the same mask; the backward is the
  //                             same call on the gradient. p in [0, 1); 0 changes nothing
  //   edge_softmax_backward     d[h,k] = alpha[h,k]·(d[h,k] − row_dot[r,h]) in place, row_dot the
  //                             all-reduced Σ_k alpha·d over row r (edge_row_sum)
  //   edge_row_sum              out[r,h] = Σ_k x[h,p(k)]·(y ? y[h,p(k)] : 1) over row r,
  //                             p(k) = perm ? perm[k] : k. With `a` the transpose of a block
  //                             and perm its entry map (edge_gather), these are the block's
  //                             column sums.
  //   edge_gather               dst[h,k] = src[h,perm[k]] for k < nnz: an edge array in the
  //                             order of the transpose (perm[k]: the block's entry that entry k
  //                             of the transpose is)
  //   edge_dots                 out[h,k] = Σ_j x[r,j]·y[c,j] over the columns j of head h,
  //                             the head of local column j being (col0 + j) / head_width
  //                             (x: a.rows × w, y: a.cols × w; the feature axis may be split:
  //                             col0 is this rank's first global column; a head with no
  //                             local column gets 0) — partial over the feature axis
  //   head_dots                 out[i,h] = Σ_j z[i,j]·att[j] over the columns j of head h (as
  //                             edge_dots; partial over the feature axis)
  //   head_dots_backward        dz[i,j] += ds[i,h(j)]·att[j];  datt[j] += Σ_i ds[i,h(j)]·z[i,j]
  //   elu                       m = m > 0 ? m : exp(m) − 1, in place
  //   elu_backward              grad *= activated > 0 ? 1 : activated + 1 (activated: elu's output)
  void gat_edge_scores(const CsrView& a, index_t heads, const float* s_dst, const float* s_src, float slope, float* e,
                       const float* s_edge = nullptr);
  void gat_edge_scores_backward(const CsrView& a, index_t heads, const float* s_dst, const float* s_src, float slope,
                                float* de, const float* s_edge = nullptr);
  void edge_row_max(const CsrView& a, index_t heads, const float* e, float* row_max);
  void edge_softmax_exp(const CsrView& a, index_t heads, const float* row_max, float* e, float* row_sum);
  void edge_softmax_normalize(const CsrView& a, index_t heads, const float* row_sum, float* e);
  // `heads` arrays of heads head0 .. head0 + heads − 1 of total_heads (0: heads) in all: the key
  // counts heads globally, (row0 + r)·total_heads + head0 + h, so a rank holding some heads
  // draws their masks as one holding all of them does.
  void edge_dropout(const CsrView& a, index_t heads, float p, DropoutKey key, index_t row0, index_t col0, float* e,
                    index_t head0 = 0, index_t total_heads = 0);
  void edge_softmax_backward(const CsrView& a, index_t heads, const float* alpha, const float* row_dot, float* d);
  void edge_row_sum(const CsrView& a, index_t heads, const float* x, const float* y, const index_t* perm, float* out);
  void edge_gather(index_t nnz, index_t heads, const index_t* perm, const float* src, float* dst);
  void edge_dots(const CsrView& a, index_t heads, index_t head_width, index_t col0, ConstMatrixView x,
                 ConstMatrixView y, float* out);
  void head_dots(ConstMatrixView z, const float* att, index_t heads, index_t head_width, index_t col0, float* out);
  void head_dots_backward(ConstMatrixView z, const float* att, index_t heads, index_t head_width, index_t col0,
                          const float* ds, MatrixView dz, float* datt);
  void elu(MatrixView m);
  void elu_backward(ConstMatrixView activated, MatrixView grad);

  // ---- LayerNorm ------------------------------------------------------------------------
  // LayerNorm over the feature axis of a row-major matrix whose columns may be
  // split over ranks. Each row is normalised over its *global* width; a rank holds `cols` of
  // them. The statistics are therefore computed in phases separated by the caller's
  // all-reduce over the axis that splits the columns (two-pass, not E[x²]−E[x]², for accuracy):
  //
  //   forward   layernorm_mean     mean[i]  = Σ_j x[i][j] / width             (partial → all-reduce)
  //             layernorm_var      var[i]   = Σ_j (x[i][j] − mean[i])² / width (partial → all-reduce)
  //             layernorm_apply    rstd[i]  = 1/sqrt(var[i] + eps);  y = (x − mean)·rstd·γ + β
  //   backward  with x̂ = (x − mean)·rstd and g = dy·γ:
  //             layernorm_backward_sums  a[i] = Σ_j g / width,  b[i] = Σ_j g·x̂ / width  (partial → all-reduce)
  //             layernorm_backward       dx = beta·dx + rstd·(g − a − x̂·b)
  //                                      dγ[j] = grad_beta·dγ[j] + Σ_i dy·x̂,  dβ[j] = grad_beta·dβ[j] + Σ_i dy
  // With one rank on the column axis the all-reduces are the identity. All outputs are
  // deterministic and independent of the thread count (fixed summation orders, no atomics).
  void layernorm_mean(ConstMatrixView x, index_t width, float* mean);
  void layernorm_var(ConstMatrixView x, const float* mean, index_t width, float* var);
  // `rstd` (rows floats) is written for the backward pass. `y` may alias `x`.
  void layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps, const float* gamma,
                       const float* beta, MatrixView y, float* rstd);
  void layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                               const float* gamma, index_t width, float* a, float* b);
  // beta == 0: dx is written without being read. grad_beta == 0: dγ, dβ likewise.
  void layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                          const float* gamma, const float* a, const float* b, float beta, MatrixView dx,
                          float grad_beta, float* dgamma, float* dbeta);

  // ---- fused causal multi-head attention (plexus/kernels/attention.hpp) ------------------
  // Writes y and lse.
  void attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView y,
                         float* lse);
  // Given y and lse of the forward pass and dy, writes dqkv (same layout as qkv; every
  // element of the 3·heads·head_dim columns is written). Deterministic: no atomics.
  void attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                          const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView dqkv);
  // One new token per sequence against the KV cache (see attention.hpp): writes its key and value
  // into the cache at pos[b] (host array of batch positions) and its attention output into y.
  // s.seq is the cache's capacity; s's dropout indices are unused.
  void attention_decode(ConstMatrixView qkv, const AttentionShape& s, const index_t* pos, float* k_cache,
                        float* v_cache, MatrixView y);
  // Context parallelism (see attention.hpp): the queries of `runs` of each sequence against
  // the keys and values in kv. Writes y and lse.
  void attention_forward_runs(ConstMatrixView q, ConstMatrixView kv, const AttentionShape& s, const QueryRuns& runs,
                              float dropout_p, DropoutKey key, MatrixView y, float* lse);
  // Given y and lse of that forward pass and dy, writes the query columns of dq and every key
  // and value column of dkv (the contributions of these queries). Deterministic: no atomics.
  void attention_backward_runs(ConstMatrixView q, ConstMatrixView kv, ConstMatrixView y, ConstMatrixView dy,
                               const float* lse, const AttentionShape& s, const QueryRuns& runs, float dropout_p,
                               DropoutKey key, MatrixView dq, MatrixView dkv);
  // Positions 0..len[b]−1 of each sequence's cache from qkv of whole sequences (batch·seq rows;
  // len: host array of batch lengths, 0 ≤ len[b] ≤ seq).
  void attention_cache_load(ConstMatrixView qkv, const AttentionShape& s, const index_t* len, float* k_cache,
                            float* v_cache);

  // ---- masked log-softmax + NLL (class axis may be sharded; see LossTerms) -------------
  // row_max[i] = max(row_max[i], max_j x[i][j])   (initialise row_max to -inf)
  void row_max(ConstMatrixView x, float* row_max);
  // row_sumexp[i] += sum_j exp(x[i][j] - row_max[i])
  void row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp);
  // For every row i with weight[i] != 0 and label[i] >= 0:
  //   loss += weight[i] * (log(row_sumexp[i]) + row_max[i] - x[i][label[i] - col0])
  //     (the log-sum-exp term only when col0 == 0, the label term only when
  //      col0 <= label < col0 + cols: each term is counted by exactly one class shard)
  //   grad[i][j] = weight[i] * (softmax[i][j] - [j + col0 == label[i]])
  // and grad[i][:] = 0 for other rows. Returns the loss sum (double, deterministic).
  LossTerms softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                         const std::int32_t* labels, const float* weights, index_t col0, MatrixView grad);
  // Binary cross-entropy with logits (link prediction's loss: PyTorch's BCEWithLogitsLoss), per
  // element i < n, labels 0 or 1:
  //   loss += weight[i]·(max(x[i], 0) − x[i]·label[i] + log(1 + exp(−|x[i]|)))
  //   grad[i] = weight[i]·(sigmoid(x[i]) − label[i])
  // weights null: 1. grad may alias x. Returns the loss sum (double; fixed chunks summed in
  // order, so it does not depend on the thread count).
  LossTerms sigmoid_xent(std::size_t n, const float* x, const float* labels, const float* weights, float* grad);
  // Per row: the largest value and its global column (col0 + j, first of ties), merged into
  // best_val / best_col (initialise best_val to -inf, best_col to -1); ties keep the lower
  // column so the result does not depend on how classes are sharded.
  void row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col);
  // Accuracy of that argmax over class shards, in two steps around max all-reduces over the
  // class axis (DistLoss::evaluate): after row_argmax on this shard (best_val, best_col) and the
  // all-reduce of a copy of best_val (global_best),
  //   key[i] = -float(best_col[i]) where best_col[i] >= 0 and best_val[i] == global_best[i]
  //            (this shard holds the row's maximum), else -inf;
  // the max all-reduce of the keys is then minus the lowest column holding the maximum, and
  //   counts[s] = #rows i with bit s of splits[i] set, labels[i] >= 0 and -key[i] == labels[i]
  // for s < num_splits (<= 8), written as doubles (exact integers) into `counts` (this
  // backend's memory, overwritten, also for n == 0). `key` may alias best_val or global_best.
  void argmax_keys(std::size_t n, const float* best_val, const float* global_best, const std::int64_t* best_col,
                   float* key);
  void count_correct(std::size_t n, const float* key, const std::int32_t* labels, const std::uint8_t* splits,
                     int num_splits, double* counts);

  // ---- reductions to one number ---------------------------------------------------------
  // Σ x[i]² in double (gradient clipping by the global norm). Deterministic: the summation
  // order depends on n only, not on threads or the device.
  double squared_norm(std::size_t n, const float* x);
  // out[i] = squared_norm(pieces[i]) for every piece, bit for bit, into host memory. A device
  // backend computes them all before it waits once, instead of once per piece (a GPT step
  // takes the norm of every parameter's gradient).
  void squared_norms(const NormPiece* pieces, std::size_t count, double* out);

  // ---- optimizer ------------------------------------------------------------------------
  // One Adam/AdamW step over n parameters.
  void adam_step(std::size_t n, float* param, const float* grad, float* m, float* v, const AdamParams& hp);

  // ---- precision ------------------------------------------------------------------------
  // y[i] = bf16(x[i] + beta·float(y[i])), rounded to nearest even (float_to_bf16 in tensor.hpp):
  // beta 0 narrows (y is not read), beta 1 accumulates into 16-bit storage. The float sum is
  // fma(beta, float(y[i]), x[i]), one rounding, so every backend gives the same bits.
  void to_bf16(std::size_t n, const float* x, float beta, bf16* y);
  // y[i] = float(x[i]) (exact).
  void from_bf16(std::size_t n, const bf16* x, float* y);
  // gemm()'s multiply precision (MatmulPrecision, tensor.hpp): TF32 or BF16 use cuBLAS's
  // tensor-core modes on CUDA; the CPU backends compute in fp32 whatever is set.
  void set_matmul_precision(MatmulPrecision p) { matmul_precision_ = p; }
  MatmulPrecision matmul_precision() const { return matmul_precision_; }

 protected:
  // What each backend implements: the kernels above, called with checked arguments.
  virtual void* do_allocate(std::size_t bytes, bool zero) = 0;  // zero: Backend::allocate's fill
  virtual void do_copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void do_copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void do_copy_on_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual HostPinnedPtr do_allocate_host_pinned(std::size_t bytes);  // aligned host memory
  virtual void do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) = 0;
  virtual std::unique_ptr<SpmmPlan> do_prepare_spmm(const CsrView& a, index_t max_dense_cols) {
    (void)a;
    (void)max_dense_cols;
    return nullptr;
  }
  virtual void do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, const SpmmPlan* plan) {
    (void)plan;
    do_spmm(a, b, c, beta);
  }
  virtual void do_gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
                       MatrixView c) = 0;
  virtual void do_axpby(std::size_t n, float alpha, const float* x, float beta, float* y) = 0;
  virtual void do_fill(MatrixView m, float value) = 0;
  virtual void do_copy(ConstMatrixView src, MatrixView dst) = 0;
  virtual void do_add_bias(MatrixView m, const float* bias) = 0;
  virtual void do_column_sum(ConstMatrixView m, float beta, float* out) = 0;
  virtual void do_relu(MatrixView m) = 0;
  virtual void do_relu_backward(ConstMatrixView activated, MatrixView grad) = 0;
  virtual void do_dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0,
                          index_t col0) = 0;
  virtual void do_gelu_forward(ConstMatrixView x, MatrixView y) = 0;
  virtual void do_gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) = 0;
  virtual void do_layernorm_mean(ConstMatrixView x, index_t width, float* mean) = 0;
  virtual void do_layernorm_var(ConstMatrixView x, const float* mean, index_t width, float* var) = 0;
  virtual void do_layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps,
                                  const float* gamma, const float* beta, MatrixView y, float* rstd) = 0;
  virtual void do_layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean,
                                          const float* rstd, const float* gamma, index_t width, float* a,
                                          float* b) = 0;
  virtual void do_layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                                     const float* gamma, const float* a, const float* b, float beta, MatrixView dx,
                                     float grad_beta, float* dgamma, float* dbeta) = 0;
  virtual void do_attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p, DropoutKey key,
                                    MatrixView y, float* lse) = 0;
  virtual void do_attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                                     const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView dqkv) = 0;
  virtual void do_attention_forward_runs(ConstMatrixView q, ConstMatrixView kv, const AttentionShape& s,
                                         const QueryRuns& runs, float dropout_p, DropoutKey key, MatrixView y,
                                         float* lse) = 0;
  virtual void do_attention_backward_runs(ConstMatrixView q, ConstMatrixView kv, ConstMatrixView y, ConstMatrixView dy,
                                          const float* lse, const AttentionShape& s, const QueryRuns& runs,
                                          float dropout_p, DropoutKey key, MatrixView dq, MatrixView dkv) = 0;
  virtual void do_attention_decode(ConstMatrixView qkv, const AttentionShape& s, const index_t* pos, float* k_cache,
                                   float* v_cache, MatrixView y) = 0;
  virtual void do_attention_cache_load(ConstMatrixView qkv, const AttentionShape& s, const index_t* len,
                                       float* k_cache, float* v_cache) = 0;
  virtual void do_gat_edge_scores(const CsrView& a, index_t heads, const float* s_dst, const float* s_src, float slope,
                                  float* e, const float* s_edge) = 0;
  virtual void do_gat_edge_scores_backward(const CsrView& a, index_t heads, const float* s_dst, const float* s_src,
                                           float slope, float* de, const float* s_edge) = 0;
  virtual void do_edge_row_max(const CsrView& a, index_t heads, const float* e, float* row_max) = 0;
  virtual void do_edge_softmax_exp(const CsrView& a, index_t heads, const float* row_max, float* e, float* row_sum) = 0;
  virtual void do_edge_softmax_normalize(const CsrView& a, index_t heads, const float* row_sum, float* e) = 0;
  virtual void do_edge_dropout(const CsrView& a, index_t heads, float p, DropoutKey key, index_t row0, index_t col0,
                               float* e, index_t head0, index_t total_heads) = 0;
  virtual void do_edge_softmax_backward(const CsrView& a, index_t heads, const float* alpha, const float* row_dot,
                                        float* d) = 0;
  virtual void do_edge_row_sum(const CsrView& a, index_t heads, const float* x, const float* y, const index_t* perm,
                               float* out) = 0;
  virtual void do_edge_gather(index_t nnz, index_t heads, const index_t* perm, const float* src, float* dst) = 0;
  virtual void do_edge_dots(const CsrView& a, index_t heads, index_t head_width, index_t col0, ConstMatrixView x,
                            ConstMatrixView y, float* out) = 0;
  virtual void do_head_dots(ConstMatrixView z, const float* att, index_t heads, index_t head_width, index_t col0,
                            float* out) = 0;
  virtual void do_head_dots_backward(ConstMatrixView z, const float* att, index_t heads, index_t head_width,
                                     index_t col0, const float* ds, MatrixView dz, float* datt) = 0;
  virtual void do_elu(MatrixView m) = 0;
  virtual void do_elu_backward(ConstMatrixView activated, MatrixView grad) = 0;
  virtual void do_row_dots(ConstMatrixView a, ConstMatrixView b, float* out) = 0;
  virtual void do_l2_normalize_rows(MatrixView x, const float* sumsq, float eps) = 0;
  virtual void do_l2_normalize_rows_backward(ConstMatrixView y, const float* sumsq, const float* dots, float eps,
                                             MatrixView dy) = 0;
  virtual void do_row_max(ConstMatrixView x, float* row_max) = 0;
  virtual void do_row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) = 0;
  virtual LossTerms do_softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                                    const std::int32_t* labels, const float* weights, index_t col0,
                                    MatrixView grad) = 0;
  virtual LossTerms do_sigmoid_xent(std::size_t n, const float* x, const float* labels, const float* weights,
                                    float* grad) = 0;
  virtual void do_row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) = 0;
  virtual void do_argmax_keys(std::size_t n, const float* best_val, const float* global_best,
                              const std::int64_t* best_col, float* key) = 0;
  virtual void do_count_correct(std::size_t n, const float* key, const std::int32_t* labels,
                                const std::uint8_t* splits, int num_splits, double* counts) = 0;
  virtual double do_squared_norm(std::size_t n, const float* x) = 0;
  virtual void do_squared_norms(const NormPiece* pieces, std::size_t count, double* out) {
    for (std::size_t i = 0; i < count; ++i) out[i] = do_squared_norm(pieces[i].n, pieces[i].x);
  }
  virtual void do_adam_step(std::size_t n, float* param, const float* grad, float* m, float* v,
                            const AdamParams& hp) = 0;
  virtual void do_to_bf16(std::size_t n, const float* x, float beta, bf16* y) = 0;
  virtual void do_from_bf16(std::size_t n, const bf16* x, float* y) = 0;

  void count_alloc(std::size_t bytes) {
    live_bytes_ += bytes;
    if (live_bytes_ > peak_bytes_) peak_bytes_ = live_bytes_;
  }
  void count_free(std::size_t bytes) { live_bytes_ -= bytes; }

 private:
  // Runs f, the body of the public call `kernel`, between the observer's begin and end.
  template <class F>
  decltype(auto) observed(const char* kernel, F&& f);

  std::size_t live_bytes_ = 0, peak_bytes_ = 0, limit_bytes_ = 0;
  std::array<std::size_t, kMemoryKinds> kind_live_{}, kind_peak_{};
  MemoryKind kind_ = MemoryKind::Activations;
  const char* label_ = "activations";
  MatmulPrecision matmul_precision_ = MatmulPrecision::FP32;
  KernelObserver* observer_ = nullptr;
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
// The CUDA backend lives in the CUDA library (plexus::cuda, include/plexus/cuda.hpp): these work
// once a program linked with it has called plexus::cuda::enable(). Throws std::runtime_error
// when it has not (a CPU-only program) or no GPU is present.
std::unique_ptr<Backend> make_cuda_backend(int device = 0);
bool cuda_available();  // the CUDA library is enabled and a device is visible
int cuda_device_count();  // devices visible to this process (0 without the CUDA library)

}  // namespace plexus
