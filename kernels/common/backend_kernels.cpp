// The public kernel calls of Backend (plexus/backend.hpp): each checks its arguments here, once
// for every backend, so that a mismatched call fails the same way (std::invalid_argument)
// whichever backend runs it instead of reading out of bounds; then it tells the observer and
// runs the backend's do_<kernel>. A backend checks only its own limits (CUDA's head_dim, BLAS's
// int range, a plan of another matrix).
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernels/common/shape_checks.hpp"
#include "plexus/backend.hpp"

namespace plexus {

using detail::require;
using detail::valid_view;

namespace {

void check_view(ConstMatrixView m, const char* kernel) { require(valid_view(m), kernel, "invalid matrix view"); }

void check_same_shape(ConstMatrixView x, ConstMatrixView y, const char* kernel) {
  require(valid_view(x) && valid_view(y), kernel, "invalid matrix view (ld < cols)");
  require(x.rows == y.rows && x.cols == y.cols, kernel, "shapes differ");
}

void check_spmm(const CsrView& a, ConstMatrixView b, MatrixView c) {
  require(valid_view(b) && valid_view(c), "spmm", "invalid matrix view (ld < cols)");
  require(a.rows >= 0 && a.cols >= 0 && a.nnz >= 0, "spmm", "invalid CSR shape");
  require(a.cols == b.rows, "spmm", "A.cols != B.rows");
  require(a.rows == c.rows && b.cols == c.cols, "spmm", "C shape != A.rows x B.cols");
}

void check_dropout_p(float p) {
  require(p >= 0.0f && p <= 1.0f, "dropout", "p must be in [0, 1]");  // also rejects NaN
}

// LayerNorm: a view and the global width it is normalised over.
void check_width(ConstMatrixView x, index_t width, const char* kernel) {
  require(valid_view(x), kernel, "invalid matrix view (ld < cols)");
  require(width > 0 && width >= x.cols, kernel, "width must be positive and >= cols");
}

void check_attention(ConstMatrixView qkv, const AttentionShape& s, float p, const char* kernel) {
  require(s.batch >= 0 && s.seq >= 0 && s.heads >= 0 && s.head_dim >= 1, kernel,
          "batch, seq, heads must be >= 0 and head_dim >= 1");
  require(s.batch0 >= 0 && s.head0 >= 0 && s.total_heads >= s.head0 + s.heads, kernel,
          "global indices: need batch0 >= 0, head0 >= 0, total_heads >= head0 + heads");
  require(s.seq <= std::numeric_limits<std::uint32_t>::max(), kernel, "seq exceeds the dropout column range");
  require(valid_view(qkv) && qkv.rows == s.batch * s.seq && qkv.cols >= 3 * s.heads * s.head_dim, kernel,
          "qkv must be batch·seq × >= 3·heads·head_dim");
  check_dropout_p(p);
}
// An attention output or gradient: batch·seq rows, at least min_cols columns.
void check_rows(ConstMatrixView m, const AttentionShape& s, index_t min_cols, const char* kernel, const char* what) {
  require(valid_view(m) && m.rows == s.batch * s.seq && m.cols >= min_cols, kernel, what);
}

// Graph attention: a CSR block's shape and its heads (edge arrays are heads·nnz long).
void check_edges(const CsrView& a, index_t heads, const char* kernel) {
  require(a.rows >= 0 && a.cols >= 0 && a.nnz >= 0, kernel, "invalid CSR shape");
  require(heads >= 1, kernel, "heads must be >= 1");
}
// Graph attention over `cols` local feature columns, the first being global column col0: each
// must fall in a head (that of column j is (col0 + j) / head_width), or its result has no slot.
void check_heads(index_t cols, index_t heads, index_t head_width, index_t col0, const char* kernel) {
  require(heads >= 1 && head_width >= 1, kernel, "heads and head_width must be >= 1");
  require(col0 >= 0 && col0 + cols <= heads * head_width, kernel,
          "local columns must lie in the heads: need 0 <= col0 and col0 + cols <= heads·head_width");
}

}  // namespace

template <class F>
decltype(auto) Backend::observed(const char* kernel, F&& f) {
  KernelObserver* const o = observer_;
  if (!o) return f();
  // Hidden while the kernel runs: calls it makes to this backend are part of its own time.
  struct Restore {
    Backend& be;
    KernelObserver* o;
    ~Restore() { be.observer_ = o; }
  } restore{*this, std::exchange(observer_, nullptr)};
  o->begin(kernel);
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    o->end(kernel);
  } else {
    auto r = f();
    o->end(kernel);
    return r;
  }
}

// ---- memory ---------------------------------------------------------------------------------
void* Backend::allocate(std::size_t bytes) {
  return observed("allocate", [&] { return do_allocate(bytes, true); });
}
void* Backend::allocate_uninitialized(std::size_t bytes) {
  return observed("allocate", [&] { return do_allocate(bytes, false); });
}
void Backend::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  observed("copy_from_host", [&] { do_copy_from_host(dst, src, bytes); });
}
void Backend::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  observed("copy_to_host", [&] { do_copy_to_host(dst, src, bytes); });
}
void Backend::copy_on_device(void* dst, const void* src, std::size_t bytes) {
  observed("copy_on_device", [&] { do_copy_on_device(dst, src, bytes); });
}
HostPinnedPtr Backend::allocate_host_pinned(std::size_t bytes) {
  return observed("allocate_host_pinned", [&] { return do_allocate_host_pinned(bytes); });
}

// ---- sparse ---------------------------------------------------------------------------------
void Backend::spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) {
  check_spmm(a, b, c);
  observed("spmm", [&] { do_spmm(a, b, c, beta); });
}
std::unique_ptr<SpmmPlan> Backend::prepare_spmm(const CsrView& a, index_t max_dense_cols) {
  return observed("spmm_prepare", [&] { return do_prepare_spmm(a, max_dense_cols); });
}
void Backend::spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, const SpmmPlan* plan) {
  check_spmm(a, b, c);
  observed("spmm", [&] { do_spmm(a, b, c, beta, plan); });
}

// ---- dense ----------------------------------------------------------------------------------
void Backend::gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
                   MatrixView c) {
  require(valid_view(a) && valid_view(b) && valid_view(c), "gemm", "invalid matrix view (ld < cols)");
  const index_t am = ta == Trans::No ? a.rows : a.cols, ak = ta == Trans::No ? a.cols : a.rows;
  const index_t bk = tb == Trans::No ? b.rows : b.cols, bn = tb == Trans::No ? b.cols : b.rows;
  require(ak == bk, "gemm", "inner dimensions of op(A) and op(B) differ");
  require(am == c.rows && bn == c.cols, "gemm", "C shape != op(A).rows x op(B).cols");
  // By transposition: forward products (nn), weight gradients (tn) and input gradients (nt)
  // have very different shapes, so each is observed under its own name.
  static constexpr const char* kNames[2][2] = {{"gemm_nn", "gemm_nt"}, {"gemm_tn", "gemm_tt"}};
  observed(kNames[ta == Trans::Yes][tb == Trans::Yes], [&] { do_gemm(ta, tb, alpha, a, b, beta, c); });
}
void Backend::axpby(std::size_t n, float alpha, const float* x, float beta, float* y) {
  observed("axpby", [&] { do_axpby(n, alpha, x, beta, y); });
}
void Backend::fill(MatrixView m, float value) {
  check_view(m, "fill");
  observed("fill", [&] { do_fill(m, value); });
}
void Backend::copy(ConstMatrixView src, MatrixView dst) {
  check_same_shape(src, dst, "copy");
  observed("copy", [&] { do_copy(src, dst); });
}

// ---- elementwise / activation ---------------------------------------------------------------
void Backend::add_bias(MatrixView m, const float* bias) {
  check_view(m, "add_bias");
  observed("add_bias", [&] { do_add_bias(m, bias); });
}
void Backend::column_sum(ConstMatrixView m, float beta, float* out) {
  check_view(m, "column_sum");
  observed("column_sum", [&] { do_column_sum(m, beta, out); });
}
void Backend::relu(MatrixView m) {
  check_view(m, "relu");
  observed("relu", [&] { do_relu(m); });
}
void Backend::relu_backward(ConstMatrixView activated, MatrixView grad) {
  check_same_shape(activated, grad, "relu_backward");
  observed("relu_backward", [&] { do_relu_backward(activated, grad); });
}
void Backend::dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0, index_t col0) {
  check_same_shape(x, out, "dropout");
  check_dropout_p(p);
  if (observer_ && p > 0.0f && p < 1.0f) observer_->random("dropout", key, row0, col0);
  observed("dropout", [&] { do_dropout(x, out, p, key, row0, col0); });
}
void Backend::gelu_forward(ConstMatrixView x, MatrixView y) {
  check_same_shape(x, y, "gelu_forward");
  observed("gelu_forward", [&] { do_gelu_forward(x, y); });
}
void Backend::gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) {
  check_same_shape(x, dx, "gelu_backward");
  check_same_shape(dy, dx, "gelu_backward");
  observed("gelu_backward", [&] { do_gelu_backward(x, dy, dx); });
}

// ---- LayerNorm ------------------------------------------------------------------------------
void Backend::layernorm_mean(ConstMatrixView x, index_t width, float* mean) {
  check_width(x, width, "layernorm_mean");
  observed("layernorm_mean", [&] { do_layernorm_mean(x, width, mean); });
}
void Backend::layernorm_var(ConstMatrixView x, const float* mean, index_t width, float* var) {
  check_width(x, width, "layernorm_var");
  observed("layernorm_var", [&] { do_layernorm_var(x, mean, width, var); });
}
void Backend::layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps, const float* gamma,
                              const float* beta, MatrixView y, float* rstd) {
  check_same_shape(x, y, "layernorm_apply");
  observed("layernorm_apply", [&] { do_layernorm_apply(x, mean, var, eps, gamma, beta, y, rstd); });
}
void Backend::layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                                      const float* gamma, index_t width, float* a, float* b) {
  check_same_shape(x, dy, "layernorm_backward_sums");
  check_width(x, width, "layernorm_backward_sums");
  observed("layernorm_backward_sums", [&] { do_layernorm_backward_sums(x, dy, mean, rstd, gamma, width, a, b); });
}
void Backend::layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                                 const float* gamma, const float* a, const float* b, float beta, MatrixView dx,
                                 float grad_beta, float* dgamma, float* dbeta) {
  check_same_shape(x, dy, "layernorm_backward");
  check_same_shape(x, dx, "layernorm_backward");
  observed("layernorm_backward",
           [&] { do_layernorm_backward(x, dy, mean, rstd, gamma, a, b, beta, dx, grad_beta, dgamma, dbeta); });
}

// ---- attention ------------------------------------------------------------------------------
void Backend::attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p, DropoutKey key,
                                MatrixView y, float* lse) {
  check_attention(qkv, s, dropout_p, "attention_forward");
  check_rows(y, s, s.heads * s.head_dim, "attention_forward", "y must be batch·seq × >= heads·head_dim");
  if (observer_ && dropout_p > 0.0f) observer_->random("attention_forward", key, 0, 0);
  observed("attention_forward", [&] { do_attention_forward(qkv, s, dropout_p, key, y, lse); });
}
void Backend::attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                                 const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView dqkv) {
  check_attention(qkv, s, dropout_p, "attention_backward");
  check_rows(y, s, s.heads * s.head_dim, "attention_backward", "y must be batch·seq × >= heads·head_dim");
  check_rows(dy, s, s.heads * s.head_dim, "attention_backward", "dy must be batch·seq × >= heads·head_dim");
  check_rows(dqkv, s, 3 * s.heads * s.head_dim, "attention_backward", "dqkv must be batch·seq × >= 3·heads·head_dim");
  if (observer_ && dropout_p > 0.0f) observer_->random("attention_backward", key, 0, 0);
  observed("attention_backward", [&] { do_attention_backward(qkv, y, dy, lse, s, dropout_p, key, dqkv); });
}

namespace {
// Context-parallel attention's runs and matrices (attention.hpp).
void check_attention_runs(ConstMatrixView q, ConstMatrixView kv, const AttentionShape& s, const QueryRuns& r, float p,
                          const char* kernel) {
  require(s.batch >= 0 && s.seq >= 0 && s.heads >= 0 && s.head_dim >= 1, kernel,
          "batch, seq, heads must be >= 0 and head_dim >= 1");
  require(s.batch0 >= 0 && s.head0 >= 0 && s.total_heads >= s.head0 + s.heads, kernel,
          "global indices: need batch0 >= 0, head0 >= 0, total_heads >= head0 + heads");
  require(s.seq <= std::numeric_limits<std::uint32_t>::max(), kernel, "seq exceeds the dropout column range");
  require(0 <= r.begin[0] && r.begin[0] <= r.end[0] && r.end[0] <= s.seq && 0 <= r.begin[1] &&
              r.begin[1] <= r.end[1] && r.end[1] <= s.seq && (r.begin[1] == r.end[1] || r.end[0] <= r.begin[1]),
          kernel, "runs must be ascending, disjoint position ranges within [0, seq)");
  require(valid_view(q) && q.rows == s.batch * r.size() && q.cols >= 3 * s.heads * s.head_dim, kernel,
          "q must be batch·runs × >= 3·heads·head_dim");
  require(valid_view(kv) && kv.rows == s.batch * s.seq && kv.cols >= 2 * s.heads * s.head_dim, kernel,
          "kv must be batch·seq × >= 2·heads·head_dim");
  check_dropout_p(p);
}
void check_query_rows(ConstMatrixView m, const AttentionShape& s, const QueryRuns& r, index_t min_cols,
                      const char* kernel, const char* what) {
  require(valid_view(m) && m.rows == s.batch * r.size() && m.cols >= min_cols, kernel, what);
}
}  // namespace

void Backend::attention_forward_runs(ConstMatrixView q, ConstMatrixView kv, const AttentionShape& s,
                                     const QueryRuns& runs, float dropout_p, DropoutKey key, MatrixView y, float* lse) {
  const char* kernel = "attention_forward_runs";
  check_attention_runs(q, kv, s, runs, dropout_p, kernel);
  check_query_rows(y, s, runs, s.heads * s.head_dim, kernel, "y must be batch·runs × >= heads·head_dim");
  if (observer_ && dropout_p > 0.0f) observer_->random(kernel, key, 0, 0);
  observed(kernel, [&] { do_attention_forward_runs(q, kv, s, runs, dropout_p, key, y, lse); });
}
void Backend::attention_backward_runs(ConstMatrixView q, ConstMatrixView kv, ConstMatrixView y, ConstMatrixView dy,
                                      const float* lse, const AttentionShape& s, const QueryRuns& runs,
                                      float dropout_p, DropoutKey key, MatrixView dq, MatrixView dkv) {
  const char* kernel = "attention_backward_runs";
  check_attention_runs(q, kv, s, runs, dropout_p, kernel);
  check_query_rows(y, s, runs, s.heads * s.head_dim, kernel, "y must be batch·runs × >= heads·head_dim");
  check_query_rows(dy, s, runs, s.heads * s.head_dim, kernel, "dy must be batch·runs × >= heads·head_dim");
  check_query_rows(dq, s, runs, 3 * s.heads * s.head_dim, kernel, "dq must be batch·runs × >= 3·heads·head_dim");
  require(valid_view(dkv) && dkv.rows == s.batch * s.seq && dkv.cols >= 2 * s.heads * s.head_dim, kernel,
          "dkv must be batch·seq × >= 2·heads·head_dim");
  if (observer_ && dropout_p > 0.0f) observer_->random(kernel, key, 0, 0);
  observed(kernel, [&] { do_attention_backward_runs(q, kv, y, dy, lse, s, runs, dropout_p, key, dq, dkv); });
}

void Backend::attention_decode(ConstMatrixView qkv, const AttentionShape& s, const index_t* pos, float* k_cache,
                               float* v_cache, MatrixView y) {
  const char* kernel = "attention_decode";
  require(s.batch >= 0 && s.seq >= 1 && s.heads >= 0 && s.head_dim >= 1, kernel,
          "batch, heads must be >= 0, seq (the cache's capacity) and head_dim >= 1");
  require(valid_view(qkv) && qkv.rows == s.batch && qkv.cols >= 3 * s.heads * s.head_dim, kernel,
          "qkv must be batch × >= 3·heads·head_dim");
  require(valid_view(y) && y.rows == s.batch && y.cols >= s.heads * s.head_dim, kernel,
          "y must be batch × >= heads·head_dim");
  if (s.batch == 0 || s.heads == 0) return;
  require(pos != nullptr && k_cache != nullptr && v_cache != nullptr, kernel, "positions and caches are needed");
  for (index_t b = 0; b < s.batch; ++b)
    require(pos[b] >= 0 && pos[b] < s.seq, kernel, "a position outside the cache (0 <= pos < seq)");
  observed(kernel, [&] { do_attention_decode(qkv, s, pos, k_cache, v_cache, y); });
}

void Backend::attention_cache_load(ConstMatrixView qkv, const AttentionShape& s, const index_t* len, float* k_cache,
                                   float* v_cache) {
  const char* kernel = "attention_cache_load";
  require(s.batch >= 0 && s.seq >= 1 && s.heads >= 0 && s.head_dim >= 1, kernel,
          "batch, heads must be >= 0, seq (the cache's capacity) and head_dim >= 1");
  // qkv holds r rows a sequence, r <= seq: the forward pass it comes from may be shorter.
  const index_t r = s.batch > 0 ? qkv.rows / s.batch : 0;
  require(valid_view(qkv) && qkv.rows == s.batch * r && (s.batch == 0 || (r >= 1 && r <= s.seq)) &&
              qkv.cols >= 3 * s.heads * s.head_dim,
          kernel, "qkv must be batch·r × >= 3·heads·head_dim, 1 <= r <= seq");
  if (s.batch == 0 || s.heads == 0) return;
  require(len != nullptr && k_cache != nullptr && v_cache != nullptr, kernel, "lengths and caches are needed");
  for (index_t b = 0; b < s.batch; ++b)
    require(len[b] >= 0 && len[b] <= r, kernel, "a length outside the rows given (0 <= len <= r <= seq)");
  observed(kernel, [&] { do_attention_cache_load(qkv, s, len, k_cache, v_cache); });
}

// ---- row L2 normalisation -------------------------------------------------------------------
void Backend::row_dots(ConstMatrixView a, ConstMatrixView b, float* out) {
  check_same_shape(a, b, "row_dots");
  observed("row_dots", [&] { do_row_dots(a, b, out); });
}
void Backend::l2_normalize_rows(MatrixView x, const float* sumsq, float eps) {
  check_view(x, "l2_normalize_rows");
  require(eps > 0.0f, "l2_normalize_rows", "eps must be positive");
  observed("l2_normalize_rows", [&] { do_l2_normalize_rows(x, sumsq, eps); });
}
void Backend::l2_normalize_rows_backward(ConstMatrixView y, const float* sumsq, const float* dots, float eps,
                                         MatrixView dy) {
  check_same_shape(y, dy, "l2_normalize_rows_backward");
  require(eps > 0.0f, "l2_normalize_rows_backward", "eps must be positive");
  observed("l2_normalize_rows_backward", [&] { do_l2_normalize_rows_backward(y, sumsq, dots, eps, dy); });
}

// ---- graph attention (GAT) ------------------------------------------------------------------
void Backend::gat_edge_scores(const CsrView& a, index_t heads, const float* s_dst, const float* s_src, float slope,
                              float* e, const float* s_edge) {
  check_edges(a, heads, "gat_edge_scores");
  observed("gat_edge_scores", [&] { do_gat_edge_scores(a, heads, s_dst, s_src, slope, e, s_edge); });
}
void Backend::gat_edge_scores_backward(const CsrView& a, index_t heads, const float* s_dst, const float* s_src,
                                       float slope, float* de, const float* s_edge) {
  check_edges(a, heads, "gat_edge_scores_backward");
  observed("gat_edge_scores_backward", [&] { do_gat_edge_scores_backward(a, heads, s_dst, s_src, slope, de, s_edge); });
}
void Backend::edge_row_max(const CsrView& a, index_t heads, const float* e, float* row_max) {
  check_edges(a, heads, "edge_row_max");
  observed("edge_row_max", [&] { do_edge_row_max(a, heads, e, row_max); });
}
void Backend::edge_softmax_exp(const CsrView& a, index_t heads, const float* row_max, float* e, float* row_sum) {
  check_edges(a, heads, "edge_softmax_exp");
  observed("edge_softmax_exp", [&] { do_edge_softmax_exp(a, heads, row_max, e, row_sum); });
}
void Backend::edge_softmax_normalize(const CsrView& a, index_t heads, const float* row_sum, float* e) {
  check_edges(a, heads, "edge_softmax_normalize");
  observed("edge_softmax_normalize", [&] { do_edge_softmax_normalize(a, heads, row_sum, e); });
}
void Backend::edge_dropout(const CsrView& a, index_t heads, float p, DropoutKey key, index_t row0, index_t col0,
                           float* e, index_t head0, index_t total_heads) {
  if (total_heads == 0) total_heads = heads;
  require(head0 >= 0 && head0 + heads <= total_heads, "edge_dropout", "heads past total_heads");
  check_edges(a, heads, "edge_dropout");
  // At p = 1 the scale 1/(1−p) is infinite and no edge is left in a row's softmax.
  require(p >= 0.0f && p < 1.0f, "edge_dropout", "p must be in [0, 1)");  // also rejects NaN
  require(row0 >= 0 && col0 >= 0, "edge_dropout", "row0 and col0 must be >= 0");
  require(col0 + a.cols <= index_t{1} + std::numeric_limits<std::uint32_t>::max(), "edge_dropout",
          "columns exceed the dropout column range (2^32)");
  if (observer_ && p > 0.0f) observer_->random("edge_dropout", key, row0, col0);
  observed("edge_dropout", [&] { do_edge_dropout(a, heads, p, key, row0, col0, e, head0, total_heads); });
}
void Backend::edge_softmax_backward(const CsrView& a, index_t heads, const float* alpha, const float* row_dot,
                                    float* d) {
  check_edges(a, heads, "edge_softmax_backward");
  observed("edge_softmax_backward", [&] { do_edge_softmax_backward(a, heads, alpha, row_dot, d); });
}
void Backend::edge_row_sum(const CsrView& a, index_t heads, const float* x, const float* y, const index_t* perm,
                           float* out) {
  check_edges(a, heads, "edge_row_sum");
  observed("edge_row_sum", [&] { do_edge_row_sum(a, heads, x, y, perm, out); });
}
void Backend::edge_gather(index_t nnz, index_t heads, const index_t* perm, const float* src, float* dst) {
  require(nnz >= 0, "edge_gather", "nnz must be >= 0");
  require(heads >= 1, "edge_gather", "heads must be >= 1");
  observed("edge_gather", [&] { do_edge_gather(nnz, heads, perm, src, dst); });
}
void Backend::edge_dots(const CsrView& a, index_t heads, index_t head_width, index_t col0, ConstMatrixView x,
                        ConstMatrixView y, float* out) {
  check_edges(a, heads, "edge_dots");
  require(valid_view(x) && valid_view(y), "edge_dots", "invalid matrix view (ld < cols)");
  require(x.rows == a.rows && y.rows == a.cols && x.cols == y.cols, "edge_dots",
          "x must be A.rows × w and y A.cols × w");
  check_heads(x.cols, heads, head_width, col0, "edge_dots");
  observed("edge_dots", [&] { do_edge_dots(a, heads, head_width, col0, x, y, out); });
}
void Backend::head_dots(ConstMatrixView z, const float* att, index_t heads, index_t head_width, index_t col0,
                        float* out) {
  check_view(z, "head_dots");
  check_heads(z.cols, heads, head_width, col0, "head_dots");
  observed("head_dots", [&] { do_head_dots(z, att, heads, head_width, col0, out); });
}
void Backend::head_dots_backward(ConstMatrixView z, const float* att, index_t heads, index_t head_width,
                                 index_t col0, const float* ds, MatrixView dz, float* datt) {
  check_same_shape(z, dz, "head_dots_backward");
  check_heads(z.cols, heads, head_width, col0, "head_dots_backward");
  observed("head_dots_backward", [&] { do_head_dots_backward(z, att, heads, head_width, col0, ds, dz, datt); });
}
void Backend::elu(MatrixView m) {
  check_view(m, "elu");
  observed("elu", [&] { do_elu(m); });
}
void Backend::elu_backward(ConstMatrixView activated, MatrixView grad) {
  check_same_shape(activated, grad, "elu_backward");
  observed("elu_backward", [&] { do_elu_backward(activated, grad); });
}

// ---- loss -----------------------------------------------------------------------------------
void Backend::row_max(ConstMatrixView x, float* row_max) {
  check_view(x, "row_max");
  observed("row_max", [&] { do_row_max(x, row_max); });
}
void Backend::row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) {
  check_view(x, "row_sumexp");
  observed("row_sumexp", [&] { do_row_sumexp(x, row_max, row_sumexp); });
}
LossTerms Backend::softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                                const std::int32_t* labels, const float* weights, index_t col0, MatrixView grad) {
  check_same_shape(x, grad, "softmax_xent");
  return observed("softmax_xent",
                  [&] { return do_softmax_xent(x, row_max, row_sumexp, labels, weights, col0, grad); });
}
LossTerms Backend::sigmoid_xent(std::size_t n, const float* x, const float* labels, const float* weights,
                                float* grad) {
  if (n > 0 && (x == nullptr || labels == nullptr || grad == nullptr))
    throw std::invalid_argument("sigmoid_xent: null logits, labels or gradient");
  return observed("sigmoid_xent", [&] { return do_sigmoid_xent(n, x, labels, weights, grad); });
}
void Backend::row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) {
  check_view(x, "row_argmax");
  observed("row_argmax", [&] { do_row_argmax(x, col0, best_val, best_col); });
}
void Backend::argmax_keys(std::size_t n, const float* best_val, const float* global_best,
                          const std::int64_t* best_col, float* key) {
  observed("argmax_keys", [&] { do_argmax_keys(n, best_val, global_best, best_col, key); });
}
void Backend::count_correct(std::size_t n, const float* key, const std::int32_t* labels, const std::uint8_t* splits,
                            int num_splits, double* counts) {
  require(num_splits >= 0 && num_splits <= 8, "count_correct", "num_splits must be in [0, 8]");
  observed("count_correct", [&] { do_count_correct(n, key, labels, splits, num_splits, counts); });
}

// ---- reductions, optimizer, precision -------------------------------------------------------
double Backend::squared_norm(std::size_t n, const float* x) {
  return observed("squared_norm", [&] { return do_squared_norm(n, x); });
}
void Backend::squared_norms(const NormPiece* pieces, std::size_t count, double* out) {
  observed("squared_norm", [&] { do_squared_norms(pieces, count, out); });
}
void Backend::adam_step(std::size_t n, float* param, const float* grad, float* m, float* v, const AdamParams& hp) {
  require(hp.step >= 1, "adam_step", "step is 1-based and must be >= 1");
  observed("adam_step", [&] { do_adam_step(n, param, grad, m, v, hp); });
}
void Backend::to_bf16(std::size_t n, const float* x, float beta, bf16* y) {
  observed("to_bf16", [&] { do_to_bf16(n, x, beta, y); });
}
void Backend::from_bf16(std::size_t n, const bf16* x, float* y) {
  observed("from_bf16", [&] { do_from_bf16(n, x, y); });
}

}  // namespace plexus
