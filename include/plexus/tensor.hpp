#pragma once
// Core tensor types.
//
// Index types (documented in docs/architecture.md):
//  - index_t (int64): row pointers, nnz counts, global node ids, element counts. A graph may
//    have more than 2^31 edges, and at scale more than 2^31 nodes.
//  - col_t (int32): column indices *inside one CSR block* held by one rank. A block never has
//    2^31 columns (checked when a block is built), and 32-bit indices halve the index traffic
//    of SpMM, which is memory-bound.
// Dense matrices are row-major float32 with a leading dimension `ld` (>= cols).
#include <cstddef>
#include <cstdint>

namespace plexus {

using index_t = std::int64_t;
using col_t = std::int32_t;

enum class Device { CPU, CUDA };

// Non-owning views: what kernels take. They never allocate or free.
struct MatrixView {
  float* data = nullptr;
  index_t rows = 0, cols = 0, ld = 0;
  float* row(index_t i) const { return data + i * ld; }
};

struct ConstMatrixView {
  const float* data = nullptr;
  index_t rows = 0, cols = 0, ld = 0;
  ConstMatrixView() = default;
  ConstMatrixView(const float* d, index_t r, index_t c, index_t l) : data(d), rows(r), cols(c), ld(l) {}
  ConstMatrixView(const MatrixView& m) : data(m.data), rows(m.rows), cols(m.cols), ld(m.ld) {}  // NOLINT
  const float* row(index_t i) const { return data + i * ld; }
};

// CSR matrix view. `values == nullptr` means every stored entry is 1.
struct CsrView {
  index_t rows = 0, cols = 0, nnz = 0;
  const index_t* indptr = nullptr;  // rows + 1 entries, indptr[0] == 0, indptr[rows] == nnz
  const col_t* indices = nullptr;   // nnz entries, each in [0, cols)
  const float* values = nullptr;    // nnz entries or nullptr
};

// Row sub-range [begin, end) of a matrix; used to split work into chunks.
inline MatrixView rows_of(MatrixView m, index_t begin, index_t end) {
  return {m.data + begin * m.ld, end - begin, m.cols, m.ld};
}
inline ConstMatrixView rows_of(ConstMatrixView m, index_t begin, index_t end) {
  return {m.data + begin * m.ld, end - begin, m.cols, m.ld};
}

}  // namespace plexus
