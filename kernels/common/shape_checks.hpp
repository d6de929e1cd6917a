#pragma once
// Helpers for argument checks. Every kernel's checks are written once, in the public calls of
// Backend (kernels/common/backend_kernels.cpp); a backend uses these only for its own limits.
#include <stdexcept>
#include <string>

#include "plexus/backend.hpp"

namespace plexus::detail {

inline void require(bool ok, const char* kernel, const char* what) {
  if (!ok) throw std::invalid_argument(std::string(kernel) + ": " + what);
}

inline bool valid_view(index_t rows, index_t cols, index_t ld) {
  return rows >= 0 && cols >= 0 && ld >= cols;
}
inline bool valid_view(ConstMatrixView m) { return valid_view(m.rows, m.cols, m.ld); }

// The (m, n, k) of C = op(A)·op(B), of a call whose shapes Backend::gemm has checked.
struct GemmDims {
  index_t m, n, k;
};
inline GemmDims gemm_dims(Trans ta, ConstMatrixView a, MatrixView c) {
  return {c.rows, c.cols, ta == Trans::No ? a.cols : a.rows};
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

}  // namespace plexus::detail
