#pragma once
// Shape checks shared by all backends, so that a mismatched call fails the same way (with
// std::invalid_argument) whichever backend runs it, instead of reading out of bounds.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "plexus/backend.hpp"
#include "plexus/kernels/attention.hpp"

namespace plexus::detail {

inline void require(bool ok, const char* kernel, const char* what) {
  if (!ok) throw std::invalid_argument(std::string(kernel) + ": " + what);
}

inline bool valid_view(index_t rows, index_t cols, index_t ld) {
  return rows >= 0 && cols >= 0 && ld >= cols;
}
inline bool valid_view(ConstMatrixView m) { return valid_view(m.rows, m.cols, m.ld); }
inline bool valid_view(MatrixView m) { return valid_view(m.rows, m.cols, m.ld); }

inline void check_spmm(const CsrView& a, ConstMatrixView b, MatrixView c) {
  require(valid_view(b) && valid_view(c), "spmm", "invalid matrix view (ld < cols)");
  require(a.rows >= 0 && a.cols >= 0 && a.nnz >= 0, "spmm", "invalid CSR shape");
  require(a.cols == b.rows, "spmm", "A.cols != B.rows");
  require(a.rows == c.rows && b.cols == c.cols, "spmm", "C shape != A.rows x B.cols");
}

// The (m, n, k) of C = op(A)·op(B).
struct GemmDims {
  index_t m, n, k;
};
inline GemmDims check_gemm(Trans ta, Trans tb, ConstMatrixView a, ConstMatrixView b, MatrixView c) {
  require(valid_view(a) && valid_view(b) && valid_view(c), "gemm", "invalid matrix view (ld < cols)");
  const index_t am = ta == Trans::No ? a.rows : a.cols, ak = ta == Trans::No ? a.cols : a.rows;
  const index_t bk = tb == Trans::No ? b.rows : b.cols, bn = tb == Trans::No ? b.cols : b.rows;
  require(ak == bk, "gemm", "inner dimensions of op(A) and op(B) differ");
  require(am == c.rows && bn == c.cols, "gemm", "C shape != op(A).rows x op(B).cols");
  return {c.rows, c.cols, ak};
}

inline void check_same_shape(ConstMatrixView x, MatrixView y, const char* kernel) {
  require(valid_view(x) && valid_view(y), kernel, "invalid matrix view (ld < cols)");
  require(x.rows == y.rows && x.cols == y.cols, kernel, "shapes differ");
}

// Whether the rows×cols elements of two views share memory without being the same elements (one
// buffer seen with two leading dimensions): a row-by-row copy between them would read elements
// it has already overwritten.
inline bool views_overlap(ConstMatrixView a, MatrixView b) {
  if (a.rows <= 0 || a.cols <= 0 || (a.data == b.data && a.ld == b.ld)) return false;
  const float* a_end = a.data + (a.rows - 1) * a.ld + a.cols;
  const float* b_end = b.data + (b.rows - 1) * b.ld + b.cols;
  return a.data < b_end && b.data < a_end;
}

inline void check_dropout_p(float p) {
  require(p >= 0.0f && p <= 1.0f, "dropout", "p must be in [0, 1]");  // also rejects NaN
}

inline void check_count_correct(int num_splits) {
  require(num_splits >= 0 && num_splits <= 8, "count_correct", "num_splits must be in [0, 8]");
}

inline void check_adam(const AdamParams& hp) {
  require(hp.step >= 1, "adam_step", "step is 1-based and must be >= 1");
}

// ---- the transformer families (plexus/kernels/*.hpp) ----------------------------------------
// LayerNorm: a view and the global width it is normalised over.
inline void check_width(ConstMatrixView x, index_t width, const char* kernel) {
  require(valid_view(x), kernel, "invalid matrix view (ld < cols)");
  require(width > 0 && width >= x.cols, kernel, "width must be positive and >= cols");
}
// Two views of one shape (x and its gradient).
inline void check_pair(ConstMatrixView x, ConstMatrixView dy, const char* kernel) {
  require(valid_view(x) && valid_view(dy), kernel, "invalid matrix view (ld < cols)");
  require(x.rows == dy.rows && x.cols == dy.cols, kernel, "shapes differ");
}
inline void check_attention(ConstMatrixView qkv, const AttentionShape& s, float p, const char* kernel) {
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
inline void check_rows(ConstMatrixView m, const AttentionShape& s, index_t min_cols, const char* kernel,
                       const char* what) {
  require(valid_view(m) && m.rows == s.batch * s.seq && m.cols >= min_cols, kernel, what);
}

}  // namespace plexus::detail
