// The low-bit wire's row codec (src/comm/quantised_rows.hpp).
#include "comm/quantised_rows.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/parallel_work.hpp"

namespace plexus {
namespace {

constexpr std::uint8_t kZeroRow = 0, kNotFinite = 255;

int qmax(int bits) { return (1 << (bits - 1)) - 1; }
// The largest e with qmax·2^e ≤ FLT_MAX (so every decoded value is finite), and the least
// (254 exponents in all: the bytes 1..254).
int e_max(int bits) { return 129 - bits; }
int e_min(int bits) { return e_max(bits) - 253; }

void check_bits(int bits) {
  if (bits != 8 && bits != 4) throw std::logic_error("quantised rows: 8 or 4 bits");
}

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The draw's seed of one row: its values' bits, its row and the stream.
std::uint64_t row_seed(const float* x, index_t cols, std::uint64_t stream, index_t row) {
  std::uint64_t h = 0xCBF29CE484222325ULL ^ splitmix64(stream * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(row));
  for (index_t j = 0; j < cols; ++j) {
    std::uint32_t w;
    std::memcpy(&w, x + j, 4);
    h = (h ^ w) * 0x100000001B3ULL;
  }
  return splitmix64(h);
}

void quantise_row(const float* x, index_t cols, int bits, std::uint64_t stream, index_t row, std::uint8_t* out) {
  std::uint8_t* q = out + 1;
  const std::size_t value_bytes = quantised_row_bytes(cols, bits) - 1;
  float largest = 0.0f;
  bool finite = true;
  for (index_t j = 0; j < cols; ++j) {
    const float a = std::fabs(x[j]);
    if (!(a <= std::numeric_limits<float>::max())) finite = false;  // inf or NaN
    else if (a > largest) largest = a;
  }
  const int top = qmax(bits);
  int e = 0;
  if (finite && largest > 0.0f) {
    int exp2 = 0;
    std::frexp(largest, &exp2);  // largest = m·2^exp2, m in [0.5, 1)
    e = exp2 - (bits - 1);
    if (static_cast<double>(largest) > std::ldexp(static_cast<double>(top), e)) ++e;
  }
  std::memset(q, 0, value_bytes);
  if (!finite || e > e_max(bits)) {
    out[0] = kNotFinite;
    return;
  }
  if (largest == 0.0f || e < e_min(bits)) {
    out[0] = kZeroRow;
    return;
  }
  out[0] = static_cast<std::uint8_t>(e - e_min(bits) + 1);
  const double inv = std::ldexp(1.0, -e);
  const std::uint64_t seed = row_seed(x, cols, stream, row);
  std::uint64_t word = 0;
  for (index_t j = 0; j < cols; ++j) {
    if ((j & 3) == 0) word = splitmix64(seed + static_cast<std::uint64_t>(j >> 2) * 0xD1B54A32D192ED03ULL);
    const double u = static_cast<double>((word >> (16 * (j & 3))) & 0xFFFFu) * (1.0 / 65536.0);
    double v = std::floor(static_cast<double>(x[j]) * inv + u);
    if (v > top) v = top;
    if (v < -top) v = -top;
    const int iv = static_cast<int>(v);
    if (bits == 8) {
      q[j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(iv));
    } else {
      const auto nib = static_cast<std::uint8_t>(iv & 0xF);
      q[j >> 1] |= static_cast<std::uint8_t>((j & 1) ? nib << 4 : nib);
    }
  }
}

// f(j, value) for each column of one quantised row.
template <class F>
void decode_row(const std::uint8_t* in, index_t cols, int bits, F&& f) {
  const std::uint8_t b = in[0];
  const std::uint8_t* q = in + 1;
  if (b == kZeroRow) {
    for (index_t j = 0; j < cols; ++j) f(j, 0.0f);
    return;
  }
  if (b == kNotFinite) {
    for (index_t j = 0; j < cols; ++j) f(j, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const float scale = std::ldexp(1.0f, e_min(bits) + b - 1);
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

}  // namespace

std::size_t quantised_row_bytes(index_t cols, int bits) {
  check_bits(bits);
  const auto n = static_cast<std::size_t>(cols);
  return 1 + (bits == 8 ? n : (n + 1) / 2);
}

void quantise_rows(const float* x, index_t rows, index_t cols, int bits, std::uint64_t stream, index_t first_row,
                   std::uint8_t* out) {
  const std::size_t rb = quantised_row_bytes(cols, bits);
#pragma omp parallel for schedule(static) if (worth_a_team(rows * cols))
  for (index_t r = 0; r < rows; ++r)
    quantise_row(x + r * cols, cols, bits, stream, first_row + r, out + static_cast<std::size_t>(r) * rb);
}

void add_dequantised_rows(const std::uint8_t* in, index_t rows, index_t cols, int bits, float* acc) {
  const std::size_t rb = quantised_row_bytes(cols, bits);
#pragma omp parallel for schedule(static) if (worth_a_team(rows * cols))
  for (index_t r = 0; r < rows; ++r) {
    float* a = acc + r * cols;
    decode_row(in + static_cast<std::size_t>(r) * rb, cols, bits, [a](index_t j, float v) { a[j] += v; });
  }
}

void dequantise_rows(const std::uint8_t* in, index_t rows, index_t cols, int bits, float* out) {
  const std::size_t rb = quantised_row_bytes(cols, bits);
#pragma omp parallel for schedule(static) if (worth_a_team(rows * cols))
  for (index_t r = 0; r < rows; ++r) {
    float* o = out + r * cols;
    decode_row(in + static_cast<std::size_t>(r) * rb, cols, bits, [o](index_t j, float v) { o[j] = v; });
  }
}

}  // namespace plexus
