#pragma once
// Rows of fp32 values on the wire in 8 or 4 bits (--wire int8|int4; docs/communication.md,
// "Low-bit wire"), the codec of the quantised sums (src/comm/row_sparse_sum.hpp).
//
// A row is one byte of scale, a power of two 2^e, then its values q_j = x_j / 2^e rounded
// stochastically to an integer in [−qmax, qmax] (qmax = 127 in 8 bits, 7 in 4): a byte each, or
// two to a byte (low nibble first). e is the least with qmax·2^e ≥ the row's largest |x|, so the
// largest value keeps at least bits − 2 bits; a power of two makes q·2^e exact in fp32.
//
// Stochastic rounding: q = floor(x/2^e + u) with u uniform in [0, 1) drawn from a hash of the
// row's values, its row, its column and the `stream` the caller names (the rank that rounds it,
// or the sum's owner). So the error is zero in expectation, and the draw is a function of what is
// rounded: a rerun, a resume, a dry run give the same bits, with no state to carry. (A draw keyed
// by position alone would repeat step after step and bias each element by its fixed u − ½.)
//
// The scale byte b: 0 a row of zeros (or one whose largest |x| is below qmax·2^e_min, ~1e-38,
// flushed to zero), 255 a row holding a value that is not finite (or beyond qmax·2^e_max,
// ~3e38), decoded as NaN so that the loss shows it; else e = e_min + b − 1.
#include <cstddef>
#include <cstdint>

#include "plexus/tensor.hpp"

namespace plexus {

// Bytes of one quantised row of `cols` values in `bits` (8 or 4).
std::size_t quantised_row_bytes(index_t cols, int bits);

// Rows [0, rows) of x (row-major, ld = cols) into rows·quantised_row_bytes bytes at `out`; row r
// is drawn as row first_row + r of `stream`.
void quantise_rows(const float* x, index_t rows, index_t cols, int bits, std::uint64_t stream, index_t first_row,
                   std::uint8_t* out);
// acc[r·cols + j] += the value of row r, column j (in fp32, a row at a time).
void add_dequantised_rows(const std::uint8_t* in, index_t rows, index_t cols, int bits, float* acc);
// out[r·cols + j] = the value of row r, column j.
void dequantise_rows(const std::uint8_t* in, index_t rows, index_t cols, int bits, float* out);

}  // namespace plexus
