#pragma once
// Core tensor types.
//
// Index types (documented in docs/architecture.md):
//  - index_t (int64): row pointers, nnz counts, global node ids, element counts. A graph may
//    have more than 2^31 edges, and at scale more than 2^31 nodes.
//  - col_t (int32): column indices *inside one CSR block* held by one rank. A block never has
//    2^31 columns (checked when a block is built), and 32-bit indices halve the index traffic
//    of SpMM, which is memory-bound.
// Dense matrices are row-major float32 with a leading dimension `ld` (>= cols), their storage
// spanning rows·ld floats: kernels may read a row's padding columns [cols, ld) (the CUDA SpMM
// reads B in float4s up to the next multiple of 4) but never write them.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace plexus {

using index_t = std::int64_t;
using col_t = std::int32_t;

enum class Device { CPU, CUDA };

// The precision parameters and gradients are stored in (--precision). FP32 everywhere, or
// BF16: parameters and gradients in bfloat16, fp32 master weights and Adam state
// (docs/data-parallel.md), GEMMs in bf16 with fp32 accumulation where the backend has it.
enum class Precision { FP32, BF16 };

// How a backend's gemm() multiplies its fp32 matrices (--matmul-precision): in fp32, or on the
// tensor cores with inputs rounded to TF32 (10-bit mantissa) or BF16 (7-bit), accumulating in
// fp32 either way. Only the CUDA backend has the reduced modes; the CPU backends compute in fp32.
enum class MatmulPrecision { FP32, TF32, BF16 };

// bfloat16: the upper 16 bits of an IEEE float32 (8-bit exponent, 7-bit mantissa), kept as raw
// bits. Widening is exact; narrowing rounds to nearest, ties to even; NaN stays NaN.
struct bf16 {
  std::uint16_t bits = 0;
};
inline float bf16_to_float(bf16 h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline bf16 float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even (may carry into the exponent: correct)
  return bf16{static_cast<std::uint16_t>(u >> 16)};
}

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
