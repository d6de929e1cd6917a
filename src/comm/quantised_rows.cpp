// The low-bit wire's row codec (src/comm/quantised_rows.hpp).
#include "comm/quantised_rows.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/parallel_work.hpp"

namespace plexus {
namespace {

constexpr std::uint8_t kZeroRow = 0, kNotFinite = 255;
// Values a scale covers at least (rows narrower than this share one).
constexpr index_t kValuesPerScale = 32;

int qmax(int bits) { return (1 << (bits - 1)) - 1; }
// The largest e with qmax·2^e ≤ FLT_MAX (so every decoded value is finite), and the least
// (254 exponents in all: the bytes 1..254).
int e_max(int bits) { return 129 - bits; }
int e_min(int bits) { return e_max(bits) - 253; }

// 2^k as a float: built from its bits where it is a normal float (a libm call a row is a cost on
// rows a few columns wide), else by ldexp (subnormal, or 0 and inf beyond).
float pow2f(int k) {
  if (k >= -126 && k <= 127) return std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23);
  return std::ldexp(1.0f, k);
}

void check_bits(int bits) {
  if (bits != 8 && bits != 4) throw std::logic_error("quantised rows: 8 or 4 bits");
}
void check_scale_rows(index_t scale_rows) {
  if (scale_rows < 1) throw std::logic_error("quantised rows: a scale for fewer than one row");
}
// Bytes of one row's values: a byte each (int8), two to a byte (int4).
std::size_t value_bytes(index_t cols, int bits) {
  const auto n = static_cast<std::size_t>(cols);
  return bits == 8 ? n : (n + 1) / 2;
}
// The layout of `rows` rows in groups of scale_rows: how many groups, and a whole group's bytes
// (its scale, then its rows' values; the last group may be short).
index_t group_count(index_t rows, index_t scale_rows) { return (rows + scale_rows - 1) / scale_rows; }
std::size_t group_bytes(index_t cols, int bits, index_t scale_rows) {
  return 1 + static_cast<std::size_t>(scale_rows) * value_bytes(cols, bits);
}

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The draw's seed of one row: its values' bits, its row and the stream. Four independent FNV-1a
// lanes over 64-bit words (two values each), so that the multiplies do not wait on each other.
std::uint64_t row_seed(const float* x, index_t cols, std::uint64_t stream, index_t row) {
  constexpr std::uint64_t kPrime = 0x100000001B3ULL;
  std::uint64_t h[4] = {0xCBF29CE484222325ULL ^ splitmix64(stream * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(row)),
                        0x84222325CBF29CE4ULL, 0x9E3779B97F4A7C15ULL, 0xD1B54A32D192ED03ULL};
  index_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    std::uint64_t w[4];
    std::memcpy(w, x + j, sizeof w);
    for (int k = 0; k < 4; ++k) h[k] = (h[k] ^ w[k]) * kPrime;
  }
  for (; j < cols; ++j) {
    std::uint32_t w;
    std::memcpy(&w, x + j, 4);
    h[0] = (h[0] ^ w) * kPrime;
  }
  return splitmix64(h[0] ^ splitmix64(h[1]) ^ splitmix64(h[2] + 1) ^ splitmix64(h[3] + 2));
}

// q_j = clamp(floor(x_j·inv + u_j)) for the row's columns, u_j from 16 bits of one 64-bit draw
// per four columns (`u`: a workspace of cols floats). `Scale` float where 2^-e is a normal float
// (every row but the tiniest), else double. The draws first, then one loop the compiler
// vectorises.
template <class Scale>
void round_values(const float* x, index_t cols, Scale inv, int top, std::uint64_t seed, Scale* u, std::int8_t* q) {
  const Scale hi = static_cast<Scale>(top), lo = -hi, unit = static_cast<Scale>(1.0 / 65536.0);
  for (index_t j0 = 0; j0 < cols; j0 += 4) {
    const std::uint64_t word = splitmix64(seed + static_cast<std::uint64_t>(j0 >> 2) * 0xD1B54A32D192ED03ULL);
    const index_t m = std::min<index_t>(4, cols - j0);
    for (index_t k = 0; k < m; ++k) u[j0 + k] = static_cast<Scale>((word >> (16 * k)) & 0xFFFFu) * unit;
  }
  // floor by truncation and a step down where that rounded up (no libm call). x·inv lies in
  // [−top, top]; the clamp keeps y in [−top, top + 1] and the result in [−top, top] whatever the
  // rounding of the sum.
#pragma omp simd
  for (index_t j = 0; j < cols; ++j) {
    const Scale y = std::min(std::max(static_cast<Scale>(x[j]) * inv + u[j], lo), hi + 1);
    const int t = static_cast<int>(y);
    q[j] = static_cast<std::int8_t>(std::min(t - (y < static_cast<Scale>(t) ? 1 : 0), top));
  }
}

// The scale byte of the n values of a group at x, and its e where the byte is not 0 or 255: from
// the group's largest |x|, and a probe that turns NaN where any value is inf or NaN (x·0).
std::uint8_t group_scale(const float* x, index_t n, int bits, int& e) {
  float largest = 0.0f, probe = 0.0f;
#pragma omp simd reduction(max : largest) reduction(+ : probe)
  for (index_t j = 0; j < n; ++j) {
    const float a = std::fabs(x[j]);
    largest = a > largest ? a : largest;
    probe += x[j] * 0.0f;
  }
  const bool finite = probe == 0.0f;
  e = 0;
  if (finite && largest > 0.0f) {
    int exp2 = 0;
    std::frexp(largest, &exp2);  // largest = m·2^exp2, m in [0.5, 1)
    e = exp2 - (bits - 1);
    if (static_cast<double>(largest) > std::ldexp(static_cast<double>(qmax(bits)), e)) ++e;
  }
  if (!finite || e > e_max(bits)) return kNotFinite;
  if (largest == 0.0f || e < e_min(bits)) return kZeroRow;
  return static_cast<std::uint8_t>(e - e_min(bits) + 1);
}

// One row's values at `q` (value_bytes of them), rounded on the step 2^e.
void round_row(const float* x, index_t cols, int bits, int e, std::uint64_t stream, index_t row, std::uint8_t* q) {
  const std::uint64_t seed = row_seed(x, cols, stream, row);
  const int top = qmax(bits);
  // Per-thread workspaces, grown to the widest row seen: the draws, and int4's values before they
  // are packed two to a byte (int8's go straight to the row).
  thread_local std::vector<std::int8_t> nibbles;
  thread_local std::vector<float> draws;
  thread_local std::vector<double> draws64;
  const auto at_least = [cols](auto& buffer) {
    if (buffer.size() < static_cast<std::size_t>(cols)) buffer.resize(static_cast<std::size_t>(cols));
    return buffer.data();
  };
  std::int8_t* v = bits == 8 ? reinterpret_cast<std::int8_t*>(q) : at_least(nibbles);
  if (e >= -126 && e <= 126)
    round_values<float>(x, cols, pow2f(-e), top, seed, at_least(draws), v);
  else
    round_values<double>(x, cols, std::ldexp(1.0, -e), top, seed, at_least(draws64), v);
  if (bits == 4) {
    std::memset(q, 0, value_bytes(cols, bits));
    for (index_t j = 0; j < cols; ++j)
      q[j >> 1] |= static_cast<std::uint8_t>((static_cast<unsigned>(v[j]) & 0xFu) << ((j & 1) * 4));
  }
}

// A group of n rows: its scale byte at `out`, then each row's values.
void quantise_group(const float* x, index_t n, index_t cols, int bits, std::uint64_t stream, index_t first_row,
                    std::uint8_t* out) {
  int e = 0;
  out[0] = group_scale(x, n * cols, bits, e);
  std::uint8_t* q = out + 1;
  const std::size_t vb = value_bytes(cols, bits);
  if (out[0] == kZeroRow || out[0] == kNotFinite) {
    std::memset(q, 0, static_cast<std::size_t>(n) * vb);
    return;
  }
  for (index_t r = 0; r < n; ++r)
    round_row(x + r * cols, cols, bits, e, stream, first_row + r, q + static_cast<std::size_t>(r) * vb);
}

// The step of the scale byte b (neither 0 nor 255).
float step_of(std::uint8_t b, int bits) { return pow2f(e_min(bits) + b - 1); }

// f(j, value) for each column of one row's values `q` under the scale byte b, whose step is
// `scale` (step_of(b), once a group).
template <class F>
void decode_row(std::uint8_t b, float scale, const std::uint8_t* q, index_t cols, int bits, F&& f) {
  if (b == kZeroRow) {
    for (index_t j = 0; j < cols; ++j) f(j, 0.0f);
    return;
  }
  if (b == kNotFinite) {
    for (index_t j = 0; j < cols; ++j) f(j, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  if (bits == 8) {
    for (index_t j = 0; j < cols; ++j) f(j, static_cast<float>(static_cast<std::int8_t>(q[j])) * scale);
    return;
  }
  for (index_t j = 0; j < cols; ++j) {
    int v = (q[j >> 1] >> ((j & 1) * 4)) & 0xF;
    if (v & 8) v -= 16;
    f(j, static_cast<float>(v) * scale);
  }
}

// Rows [0, rows) coded in groups of scale_rows into out (ld = cols): added (Add) or written, a
// group at a time (groups in parallel where the work is worth a team).
template <bool Add>
void decode_rows(const std::uint8_t* in, index_t rows, index_t cols, int bits, index_t scale_rows, float* out) {
  check_bits(bits);
  check_scale_rows(scale_rows);
  const std::size_t vb = value_bytes(cols, bits), gb = group_bytes(cols, bits, scale_rows);
  const index_t groups = group_count(rows, scale_rows);
#pragma omp parallel for schedule(static) if (worth_a_team(rows * cols))
  for (index_t g = 0; g < groups; ++g) {
    const std::uint8_t* group = in + static_cast<std::size_t>(g) * gb;
    const index_t r0 = g * scale_rows, n = std::min(scale_rows, rows - r0);
    const std::uint8_t b = group[0];
    const float scale = b == kZeroRow || b == kNotFinite ? 0.0f : step_of(b, bits);
    for (index_t r = 0; r < n; ++r) {
      float* o = out + (r0 + r) * cols;
      decode_row(b, scale, group + 1 + static_cast<std::size_t>(r) * vb, cols, bits, [o](index_t j, float v) {
        if constexpr (Add) o[j] += v;
        else o[j] = v;
      });
    }
  }
}

}  // namespace

index_t quantised_scale_rows(index_t cols) {
  if (cols <= 0) throw std::logic_error("quantised rows: a row of no values");
  return cols >= kValuesPerScale ? 1 : (kValuesPerScale + cols - 1) / cols;
}

std::size_t quantised_bytes(index_t rows, index_t cols, int bits, index_t scale_rows) {
  check_bits(bits);
  check_scale_rows(scale_rows);
  return static_cast<std::size_t>(group_count(rows, scale_rows)) +
         static_cast<std::size_t>(rows) * value_bytes(cols, bits);
}

void quantise_rows(const float* x, index_t rows, index_t cols, int bits, index_t scale_rows, std::uint64_t stream,
                   index_t first_row, std::uint8_t* out) {
  check_bits(bits);
  check_scale_rows(scale_rows);
  const std::size_t gb = group_bytes(cols, bits, scale_rows);
  const index_t groups = group_count(rows, scale_rows);
#pragma omp parallel for schedule(static) if (worth_a_team(rows * cols))
  for (index_t g = 0; g < groups; ++g) {
    const index_t r0 = g * scale_rows;
    quantise_group(x + r0 * cols, std::min(scale_rows, rows - r0), cols, bits, stream, first_row + r0,
                   out + static_cast<std::size_t>(g) * gb);
  }
}

void add_dequantised_rows(const std::uint8_t* in, index_t rows, index_t cols, int bits, index_t scale_rows,
                          float* acc) {
  decode_rows<true>(in, rows, cols, bits, scale_rows, acc);
}

void dequantise_rows(const std::uint8_t* in, index_t rows, index_t cols, int bits, index_t scale_rows, float* out) {
  decode_rows<false>(in, rows, cols, bits, scale_rows, out);
}

}  // namespace plexus
