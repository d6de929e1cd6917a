// ShapeBackend (shape_backend.hpp): address space without memory; FLOP, byte and draw counts.
#include "kernels/shape/shape_backend.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/common/shape_checks.hpp"

namespace plexus {

namespace {

// One reservation for the process, shared by every shape backend: addresses are handed out in
// turn and reused once it wraps around (nothing is ever stored there, so two buffers that share
// addresses cannot disturb each other; a plan of a model larger than the reservation still runs).
class AddressSpace {
 public:
  static AddressSpace& get() {
    static AddressSpace space;
    return space;
  }
  void* take(std::size_t bytes) {
    const std::size_t n = (bytes + kAlign - 1) / kAlign * kAlign;
    if (n > size_) return base_;  // larger than the whole reservation: its start
    // Each thread's own cursor: no lock, and no cache line passed between the threads of a
    // plan's parallel dry runs on every allocation (addresses may repeat across threads, as
    // they do once the cursor wraps: nothing is stored there).
    thread_local std::size_t next = 0;
    if (next + n > size_) next = 0;
    void* p = base_ + next;
    next += n;
    return p;
  }

 private:
  static constexpr std::size_t kAlign = 256;
  AddressSpace() {
    // Ask for 1 TiB of address space, less where the process may not have it. Under a limit of
    // address space (ulimit -v) at most 1/64 of it: the reservation lasts as long as the process,
    // and what a dry run checks (train's memory check) must leave the limit to the real run.
    std::size_t most = std::size_t{1} << 40;
    struct rlimit limit {};
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      most = std::min<std::size_t>(most, static_cast<std::size_t>(limit.rlim_cur) / 64);
    for (std::size_t size = most; size >= (std::size_t{1} << 20); size /= 4) {
      void* p = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p != MAP_FAILED) {
        base_ = static_cast<char*>(p);
        size_ = size;
        return;
      }
    }
    throw std::runtime_error("shape-only backend: no address space to reserve");
  }
  char* base_ = nullptr;
  std::size_t size_ = 0;
};

// Causal attention: QKᵀ and PV over half of the seq × seq scores, 2·seq²·head_dim per head and
// sequence; the backward pass recomputes P and forms four products, twice that.
double attention_products(const AttentionShape& s) {
  return 2.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads) * static_cast<double>(s.seq) *
         static_cast<double>(s.seq) * static_cast<double>(s.head_dim);
}

// Bytes a kernel reads and writes, for ShapeCounts::stream_bytes: 4 per float, 8 per index_t,
// 4 per CSR column index; a matrix view counts its rows × cols (not its leading dimension).
constexpr double kF = sizeof(float);
double elems(ConstMatrixView m) { return static_cast<double>(m.rows) * static_cast<double>(m.cols); }
double num(index_t n) { return static_cast<double>(n); }
// A CSR block's structure: its row pointers and column indices.
double csr_bytes(const CsrView& a) {
  return num(a.rows + 1) * sizeof(index_t) + num(a.nnz) * sizeof(col_t);
}
// An edge array: one float per stored entry and head.
double edge_bytes(const CsrView& a, index_t heads) { return kF * num(a.nnz) * num(heads); }

}  // namespace

void* ShapeBackend::do_allocate(std::size_t bytes, bool zero) {
  void* p = AddressSpace::get().take(bytes);
  count_alloc(bytes);
  if (zero) counts_.stream_bytes += static_cast<double>(bytes);  // the zero fill
  return p;
}

void ShapeBackend::deallocate(void* p, std::size_t bytes) noexcept {
  if (p) count_free(bytes);
}

// The host gets zeros: what it reads back (a loss, a count) is a number, never garbage. A null
// destination (a caller that reads nothing back in a dry run) is counted and not written.
void ShapeBackend::do_copy_to_host(void* dst, const void*, std::size_t bytes) {
  if (bytes && dst) std::memset(dst, 0, bytes);
  counts_.stream_bytes += 2.0 * static_cast<double>(bytes);
}

void ShapeBackend::do_spmm(const CsrView& a, ConstMatrixView b, MatrixView, float) {
  const double nnz = static_cast<double>(a.nnz), m = static_cast<double>(a.rows), n = static_cast<double>(b.cols);
  counts_.spmm_flops += 2.0 * nnz * n;
  counts_.spmm_bytes += nnz * 8.0 + nnz * n * 4.0 + m * n * 4.0 + (m + 1) * 8.0;
}

void ShapeBackend::do_gemm(Trans ta, Trans, float, ConstMatrixView a, ConstMatrixView, float, MatrixView c) {
  const detail::GemmDims d = detail::gemm_dims(ta, a, c);
  counts_.gemm_flops += 2.0 * static_cast<double>(d.m) * static_cast<double>(d.k) * static_cast<double>(d.n);
}

void ShapeBackend::do_attention_forward(ConstMatrixView, const AttentionShape& s, float, DropoutKey, MatrixView,
                                        float*) {
  counts_.gemm_flops += attention_products(s);
}

void ShapeBackend::do_attention_backward(ConstMatrixView, ConstMatrixView, ConstMatrixView, const float*,
                                         const AttentionShape& s, float, DropoutKey, MatrixView) {
  counts_.gemm_flops += 2 * attention_products(s);
}

// Query runs: the same products over the runs' rows of the causal triangle (a query at
// position t scores t + 1 keys; the whole triangle's T²/2 above).
namespace {
double attention_run_products(const AttentionShape& s, const QueryRuns& r) {
  const double scores = num(r.causal_keys()) - num(r.size()) / 2.0;  // Σ (t + ½) over the runs
  return 4.0 * num(s.batch) * num(s.heads) * num(s.head_dim) * scores;
}
}  // namespace

void ShapeBackend::do_attention_forward_runs(ConstMatrixView, ConstMatrixView, const AttentionShape& s,
                                             const QueryRuns& r, float, DropoutKey, MatrixView, float*) {
  counts_.gemm_flops += attention_run_products(s, r);
}

void ShapeBackend::do_attention_backward_runs(ConstMatrixView, ConstMatrixView, ConstMatrixView, ConstMatrixView,
                                              const float*, const AttentionShape& s, const QueryRuns& r, float,
                                              DropoutKey, MatrixView, MatrixView) {
  counts_.gemm_flops += 2 * attention_run_products(s, r);
}

// A decoding step: q·k and p·v over each sequence's positions so far, and the cache's keys and
// values read (the step's memory traffic: a decoded token is bandwidth-bound).
void ShapeBackend::do_attention_decode(ConstMatrixView, const AttentionShape& s, const index_t* pos, float*, float*,
                                       MatrixView) {
  double positions = 0;
  for (index_t b = 0; b < s.batch; ++b) positions += num(pos[b] + 1);
  const double per_head = positions * num(s.heads) * num(s.head_dim);
  counts_.gemm_flops += 4.0 * per_head;
  counts_.stream_bytes += 2.0 * kF * per_head;
}

// Loading a cache copies the keys and values of every position loaded (read and written).
void ShapeBackend::do_attention_cache_load(ConstMatrixView, const AttentionShape& s, const index_t* len, float*,
                                           float*) {
  double positions = 0;
  for (index_t b = 0; b < s.batch; ++b) positions += num(len[b]);
  counts_.stream_bytes += 4.0 * kF * positions * num(s.heads) * num(s.head_dim);
}

void ShapeBackend::do_squared_norms(const NormPiece* pieces, std::size_t count, double* out) {
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = 0.0;  // host memory
    counts_.stream_bytes += kF * static_cast<double>(pieces[i].n);
  }
}

// Every other kernel computes nothing and touches no element: it counts the bytes it would
// read and write (a matrix read and written in place twice, an in-place update of a gradient
// from another matrix three times); a dropout counts its draws instead.
void ShapeBackend::do_copy_from_host(void*, const void*, std::size_t bytes) {
  counts_.stream_bytes += 2.0 * static_cast<double>(bytes);
}
void ShapeBackend::do_copy_on_device(void*, const void*, std::size_t bytes) {
  counts_.stream_bytes += 2.0 * static_cast<double>(bytes);
}
// y = alpha·x + beta·y: x read, y read unless beta is 0 (or y is x), y written.
void ShapeBackend::do_axpby(std::size_t n, float, const float* x, float beta, float* y) {
  counts_.stream_bytes += kF * static_cast<double>(n) * (beta != 0.0f && x != y ? 3.0 : 2.0);
}
void ShapeBackend::do_fill(MatrixView m, float) { counts_.stream_bytes += kF * elems(m); }
void ShapeBackend::do_copy(ConstMatrixView src, MatrixView) { counts_.stream_bytes += 2 * kF * elems(src); }
void ShapeBackend::do_add_bias(MatrixView m, const float*) {
  counts_.stream_bytes += 2 * kF * elems(m) + kF * num(m.cols);
}
void ShapeBackend::do_column_sum(ConstMatrixView m, float beta, float*) {
  counts_.stream_bytes += kF * elems(m) + kF * num(m.cols) * (beta != 0.0f ? 2 : 1);
}
void ShapeBackend::do_relu(MatrixView m) { counts_.stream_bytes += 2 * kF * elems(m); }
void ShapeBackend::do_relu_backward(ConstMatrixView a, MatrixView) { counts_.stream_bytes += 3 * kF * elems(a); }
// p = 0 copies and p = 1 fills (as every backend does); otherwise one draw per element, which
// prices the whole call (its reads and writes included: ShapeCounts::random_draws).
void ShapeBackend::do_dropout(ConstMatrixView x, MatrixView, float p, DropoutKey, index_t, index_t) {
  if (p == 0.0f || p == 1.0f)
    counts_.stream_bytes += (p == 1.0f ? 1 : 2) * kF * elems(x);
  else
    counts_.random_draws += elems(x);
}
void ShapeBackend::do_gelu_forward(ConstMatrixView x, MatrixView) { counts_.stream_bytes += 2 * kF * elems(x); }
void ShapeBackend::do_gelu_backward(ConstMatrixView x, ConstMatrixView, MatrixView) {
  counts_.stream_bytes += 3 * kF * elems(x);
}
void ShapeBackend::do_layernorm_mean(ConstMatrixView x, index_t, float*) {
  counts_.stream_bytes += kF * (elems(x) + num(x.rows));
}
void ShapeBackend::do_layernorm_var(ConstMatrixView x, const float*, index_t, float*) {
  counts_.stream_bytes += kF * (elems(x) + 2 * num(x.rows));
}
// x read, y written; mean, var read and rstd written per row; γ and β read per column.
void ShapeBackend::do_layernorm_apply(ConstMatrixView x, const float*, const float*, float, const float* gamma,
                                      const float* beta, MatrixView, float*) {
  counts_.stream_bytes +=
      kF * (2 * elems(x) + 3 * num(x.rows) + num(x.cols) * ((gamma ? 1 : 0) + (beta ? 1 : 0)));
}
void ShapeBackend::do_layernorm_backward_sums(ConstMatrixView x, ConstMatrixView, const float*, const float*,
                                              const float* gamma, index_t, float*, float*) {
  counts_.stream_bytes += kF * (2 * elems(x) + 4 * num(x.rows) + (gamma ? num(x.cols) : 0));
}
// x and dy read, dx written (and read when beta is not 0); four values a row; γ read, dγ and
// dβ written (and read when grad_beta is not 0) per column.
void ShapeBackend::do_layernorm_backward(ConstMatrixView x, ConstMatrixView, const float*, const float*,
                                         const float* gamma, const float*, const float*, float beta, MatrixView,
                                         float grad_beta, float* dgamma, float*) {
  counts_.stream_bytes += kF * (elems(x) * (beta != 0.0f ? 4 : 3) + 4 * num(x.rows) + (gamma ? num(x.cols) : 0) +
                                (dgamma ? num(x.cols) * (grad_beta != 0.0f ? 4 : 2) : 0));
}
// The GAT edge kernels: edge arrays of nnz·heads floats, the block's structure, per-node arrays
// of rows (or cols) × heads.
void ShapeBackend::do_gat_edge_scores(const CsrView& a, index_t heads, const float*, const float*, float, float*,
                                      const float* s_edge) {
  counts_.stream_bytes += csr_bytes(a) + kF * num(a.rows + a.cols) * num(heads) + (s_edge ? 2 : 1) * edge_bytes(a, heads);
}
void ShapeBackend::do_gat_edge_scores_backward(const CsrView& a, index_t heads, const float*, const float*, float,
                                               float*, const float* s_edge) {
  counts_.stream_bytes += csr_bytes(a) + kF * num(a.rows + a.cols) * num(heads) + (s_edge ? 3 : 2) * edge_bytes(a, heads);
}
void ShapeBackend::do_edge_row_max(const CsrView& a, index_t heads, const float*, float*) {
  counts_.stream_bytes += num(a.rows + 1) * sizeof(index_t) + edge_bytes(a, heads) + kF * num(a.rows) * num(heads);
}
void ShapeBackend::do_edge_softmax_exp(const CsrView& a, index_t heads, const float*, float*, float*) {
  counts_.stream_bytes +=
      num(a.rows + 1) * sizeof(index_t) + 2 * edge_bytes(a, heads) + 2 * kF * num(a.rows) * num(heads);
}
void ShapeBackend::do_edge_softmax_normalize(const CsrView& a, index_t heads, const float*, float*) {
  counts_.stream_bytes += num(a.rows + 1) * sizeof(index_t) + 2 * edge_bytes(a, heads) + kF * num(a.rows) * num(heads);
}
void ShapeBackend::do_edge_dropout(const CsrView& a, index_t heads, float p, DropoutKey, index_t, index_t, float*,
                                   index_t, index_t) {
  if (p == 0.0f) return;  // changes nothing
  counts_.random_draws += num(a.nnz) * num(heads);
}
void ShapeBackend::do_edge_softmax_backward(const CsrView& a, index_t heads, const float*, const float*, float*) {
  counts_.stream_bytes += num(a.rows + 1) * sizeof(index_t) + 3 * edge_bytes(a, heads) + kF * num(a.rows) * num(heads);
}
void ShapeBackend::do_edge_row_sum(const CsrView& a, index_t heads, const float*, const float* y, const index_t* perm,
                                   float*) {
  counts_.stream_bytes += num(a.rows + 1) * sizeof(index_t) + edge_bytes(a, heads) * (y ? 2 : 1) +
                          (perm ? num(a.nnz) * sizeof(index_t) : 0) + kF * num(a.rows) * num(heads);
}
void ShapeBackend::do_edge_gather(index_t nnz, index_t heads, const index_t*, const float*, float*) {
  counts_.stream_bytes += 2 * kF * num(nnz) * num(heads) + num(nnz) * sizeof(index_t);
}
// x's rows once, one row of y per entry (as an SpMM's dense operand), one value per entry and head.
void ShapeBackend::do_edge_dots(const CsrView& a, index_t heads, index_t, index_t, ConstMatrixView x,
                                ConstMatrixView y, float*) {
  counts_.stream_bytes += csr_bytes(a) + kF * elems(x) + kF * num(a.nnz) * num(y.cols) + edge_bytes(a, heads);
}
void ShapeBackend::do_head_dots(ConstMatrixView z, const float*, index_t heads, index_t, index_t, float*) {
  counts_.stream_bytes += kF * (elems(z) + num(z.cols) + num(z.rows) * num(heads));
}
void ShapeBackend::do_head_dots_backward(ConstMatrixView z, const float*, index_t heads, index_t, index_t,
                                         const float*, MatrixView, float*) {
  counts_.stream_bytes += kF * (3 * elems(z) + num(z.rows) * num(heads) + 2 * num(z.cols));
}
void ShapeBackend::do_elu(MatrixView m) { counts_.stream_bytes += 2 * kF * elems(m); }
void ShapeBackend::do_elu_backward(ConstMatrixView a, MatrixView) { counts_.stream_bytes += 3 * kF * elems(a); }
void ShapeBackend::do_row_dots(ConstMatrixView a, ConstMatrixView, float*) {
  counts_.stream_bytes += kF * (2 * elems(a) + num(a.rows));
}
void ShapeBackend::do_l2_normalize_rows(MatrixView x, const float*, float) {
  counts_.stream_bytes += kF * (2 * elems(x) + num(x.rows));
}
void ShapeBackend::do_l2_normalize_rows_backward(ConstMatrixView y, const float*, const float*, float, MatrixView) {
  counts_.stream_bytes += kF * (3 * elems(y) + 2 * num(y.rows));
}
void ShapeBackend::do_row_max(ConstMatrixView x, float*) { counts_.stream_bytes += kF * (elems(x) + 2 * num(x.rows)); }
void ShapeBackend::do_row_sumexp(ConstMatrixView x, const float*, float*) {
  counts_.stream_bytes += kF * (elems(x) + 3 * num(x.rows));
}
// x read, grad written; a row's max, sum, label and weight read.
LossTerms ShapeBackend::do_softmax_xent(ConstMatrixView x, const float*, const float*, const std::int32_t*,
                                        const float*, index_t, MatrixView) {
  counts_.stream_bytes += kF * (2 * elems(x) + 4 * num(x.rows));
  return {};
}
// x, labels and weights read; grad written.
LossTerms ShapeBackend::do_sigmoid_xent(std::size_t n, const float*, const float*, const float* weights, float*) {
  counts_.stream_bytes += kF * static_cast<double>(n) * (weights ? 4 : 3);
  return {};
}
// x read; a row's best value (float) and column (int64) read and written.
void ShapeBackend::do_row_argmax(ConstMatrixView x, index_t, float*, std::int64_t*) {
  counts_.stream_bytes += kF * elems(x) + 24 * num(x.rows);
}
void ShapeBackend::do_argmax_keys(std::size_t n, const float*, const float*, const std::int64_t*, float*) {
  counts_.stream_bytes += 20 * static_cast<double>(n);
}
void ShapeBackend::do_count_correct(std::size_t n, const float*, const std::int32_t*, const std::uint8_t*, int,
                                    double*) {
  counts_.stream_bytes += 9 * static_cast<double>(n);
}
double ShapeBackend::do_squared_norm(std::size_t n, const float*) {
  counts_.stream_bytes += kF * static_cast<double>(n);
  return 0.0;
}
// param, grad, m and v read; param, m and v written.
void ShapeBackend::do_adam_step(std::size_t n, float*, const float*, float*, float*, const AdamParams&) {
  counts_.stream_bytes += 7 * kF * static_cast<double>(n);
}
void ShapeBackend::do_to_bf16(std::size_t n, const float*, float beta, bf16*) {
  counts_.stream_bytes += static_cast<double>(n) * (beta != 0.0f ? 8 : 6);
}
void ShapeBackend::do_from_bf16(std::size_t n, const bf16*, float*) { counts_.stream_bytes += 6 * static_cast<double>(n); }

}  // namespace plexus
