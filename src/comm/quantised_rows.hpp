#pragma once
// Rows of fp32 values on the wire in 8 or 4 bits (--wire int8|int4; docs/communication.md,
// "Low-bit wire"), the codec of the quantised sums (src/comm/row_sparse_sum.hpp).
//
// Rows travel in groups of `scale_rows` consecutive rows (the last may be short): one byte of
// scale, a power of two 2^e, then each row's values q_j = x_j / 2^e rounded stochastically to an
// integer in [−qmax, qmax] (qmax = 127 in 8 bits, 7 in 4): a byte each, or two to a byte (low
// nibble first). e is the least with qmax·2^e ≥ the group's largest |x|, so the largest value
// keeps at least bits − 2 bits; a power of two makes q·2^e exact in fp32. A row of 32 values or
// more has a scale of its own (scale_rows 1); narrower rows share one, ⌈32/cols⌉ of them, so that
// a scale byte covers at least 32 values as in the OCP Microscaling formats' blocks (MXINT8): a
// byte a row would cost 8 columns 1/8 more bytes (0.281× fp32's instead of 0.258×).
//
// Stochastic rounding: q = floor(x/2^e + u) with u uniform in [0, 1) drawn from a hash of the
// row's values, its row, its column and the `stream` the caller names (the rank that rounds it,
// or the sum's owner). So the error is zero in expectation, and the draw is a function of what is
// rounded: a rerun, a resume, a dry run give the same bits, with no state to carry. (A draw keyed
// by position alone would repeat step after step and bias each element by its fixed u − ½.)
//
// The scale byte b: 0 a group of zeros (or one whose largest |x| is below qmax·2^e_min, ~1e-38,
// flushed to zero), 255 a group holding a value that is not finite (or beyond qmax·2^e_max,
// ~3e38), decoded as NaN so that the loss shows it; else e = e_min + b − 1.
#include <cstddef>
#include <cstdint>

#include "plexus/tensor.hpp"

namespace plexus {

// Rows sharing a scale in rows of `cols` values: 1 from 32 columns, else ⌈32/cols⌉.
index_t quantised_scale_rows(index_t cols);
// Bytes of `rows` rows of `cols` values in `bits` (8 or 4), scale_rows to a scale.
std::size_t quantised_bytes(index_t rows, index_t cols, int bits, index_t scale_rows);

// Rows [0, rows) of x (row-major, ld = cols) into quantised_bytes(rows, …) bytes at `out`, in
// groups of scale_rows from row 0; row r is drawn as row first_row + r of `stream`.
void quantise_rows(const float* x, index_t rows, index_t cols, int bits, index_t scale_rows, std::uint64_t stream,
                   index_t first_row, std::uint8_t* out);
// acc[r·cols + j] += the value of row r, column j (in fp32, a row at a time).
void add_dequantised_rows(const std::uint8_t* in, index_t rows, index_t cols, int bits, index_t scale_rows,
                          float* acc);
// out[r·cols + j] = the value of row r, column j.
void dequantise_rows(const std::uint8_t* in, index_t rows, index_t cols, int bits, index_t scale_rows, float* out);

}  // namespace plexus
