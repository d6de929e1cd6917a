// The low-bit wire's row codec (src/comm/quantised_rows.hpp), against a float64 reference: a row
// takes 1 + cols (int8) or 1 + ⌈cols/2⌉ (int4) bytes; each value comes back within one step 2^e
// of itself, the step the least power of two with qmax·2^e ≥ the row's largest |x|; values that
// are multiples of the step come back exactly; the rounding is stochastic (unbiased over draws,
// not to nearest) yet a function of what is rounded (same input, same bytes); rows of zeros come
// back +0, rows with a value that is not finite come back NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "comm/quantised_rows.hpp"

namespace plexus {
namespace {

int qmax(int bits) { return bits == 8 ? 127 : 7; }

// The least e with qmax·2^e ≥ largest (largest > 0), in float64.
int step_exponent(double largest, int bits) {
  int e = -200;
  while (std::ldexp(static_cast<double>(qmax(bits)), e) < largest) ++e;
  return e;
}

std::vector<float> round_trip(const std::vector<float>& x, index_t rows, index_t cols, int bits, std::uint64_t stream,
                              std::vector<std::uint8_t>* bytes = nullptr) {
  std::vector<std::uint8_t> q(static_cast<std::size_t>(rows) * quantised_row_bytes(cols, bits), 0xAB);
  quantise_rows(x.data(), rows, cols, bits, stream, 0, q.data());
  std::vector<float> out(x.size(), -1.0f);
  dequantise_rows(q.data(), rows, cols, bits, out.data());
  if (bytes) *bytes = q;
  return out;
}

TEST(QuantisedRows, RowBytes) {
  for (const index_t cols : {index_t{1}, index_t{2}, index_t{7}, index_t{16}, index_t{33}}) {
    EXPECT_EQ(quantised_row_bytes(cols, 8), static_cast<std::size_t>(1 + cols));
    EXPECT_EQ(quantised_row_bytes(cols, 4), static_cast<std::size_t>(1 + (cols + 1) / 2));
  }
  EXPECT_THROW(quantised_row_bytes(4, 16), std::logic_error);
}

TEST(QuantisedRows, EachValueWithinOneStepOfItselfOnEveryScale) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (const int bits : {8, 4})
    for (const double magnitude : {1e-30, 3e-7, 1.0, 123.4, 6e20, 1e37})
      for (const index_t cols : {index_t{1}, index_t{5}, index_t{16}, index_t{31}}) {
        const index_t rows = 9;
        std::vector<float> x(static_cast<std::size_t>(rows * cols));
        for (float& v : x) v = static_cast<float>(unit(rng) * magnitude);
        const std::vector<float> y = round_trip(x, rows, cols, bits, 3);
        for (index_t r = 0; r < rows; ++r) {
          double largest = 0;
          for (index_t j = 0; j < cols; ++j) largest = std::max(largest, std::fabs(static_cast<double>(x[r * cols + j])));
          const double step = std::ldexp(1.0, step_exponent(largest, bits));
          for (index_t j = 0; j < cols; ++j) {
            const double xv = x[r * cols + j], yv = y[r * cols + j];
            const std::string what = std::to_string(bits) + " bits, magnitude " + std::to_string(magnitude);
            EXPECT_LT(std::fabs(yv - xv), step) << what;
            EXPECT_LE(std::fabs(yv), qmax(bits) * step) << what;
            const double k = yv / step;  // an integer number of steps
            EXPECT_EQ(k, std::round(k)) << what;
          }
        }
      }
}

TEST(QuantisedRows, MultiplesOfTheStepComeBackExactly) {
  // Largest 127 (int8): the step is 1; largest 7 (int4): the step is 1 too.
  const std::vector<float> x8 = {127.0f, -64.0f, 1.0f, 0.0f, -127.0f, 3.0f};
  EXPECT_EQ(round_trip(x8, 1, 6, 8, 11), x8);
  const std::vector<float> x4 = {7.0f, -7.0f, 2.0f, 0.0f, -1.0f};
  EXPECT_EQ(round_trip(x4, 1, 5, 4, 11), x4);
  // A row of one value: qmax steps of 2^e exactly when it is qmax·2^e.
  const std::vector<float> one = {-127.0f * 0.25f};
  EXPECT_EQ(round_trip(one, 1, 1, 8, 2), one);
}

TEST(QuantisedRows, StochasticRoundingIsUnbiasedAndNotToNearest) {
  for (const int bits : {8, 4}) {
    // Largest 7·2^-2 (int4) or 127·2^-6 (int8): the step is 1/4 or 1/64; 0.3 lies between steps.
    const double step = bits == 4 ? 0.25 : 1.0 / 64;
    const float largest = static_cast<float>(qmax(bits) * step);
    const double x = bits == 4 ? 0.3 : 0.3 + 1.0 / 256;
    const int draws = 20000;
    double sum = 0;
    int up = 0;
    for (int s = 0; s < draws; ++s) {
      const std::vector<float> row = {largest, static_cast<float>(x)};
      const std::vector<float> y = round_trip(row, 1, 2, bits, static_cast<std::uint64_t>(s));
      EXPECT_EQ(y[0], largest);
      EXPECT_TRUE(y[1] == static_cast<float>(std::floor(x / step) * step) ||
                  y[1] == static_cast<float>(std::ceil(x / step) * step));
      sum += y[1];
      up += y[1] > x;
    }
    const double frac = x / step - std::floor(x / step);
    // The mean is x within 5 standard errors (each draw's error is at most a step).
    EXPECT_NEAR(sum / draws, x, 5 * step * 0.5 / std::sqrt(draws)) << bits;
    // Up with the probability of the fraction (to-nearest would always go one way).
    EXPECT_NEAR(static_cast<double>(up) / draws, frac, 0.02) << bits;
  }
}

// A row's largest value just above qmax steps takes the next step (not a clamp to qmax·2^e):
// it too comes back right on average.
TEST(QuantisedRows, TheLargestValueIsRoundedWithoutBiasToo) {
  for (const int bits : {8, 4}) {
    const float largest = static_cast<float>(qmax(bits)) * 2.0f + 1.0f;  // qmax·2 < largest: the step is 4
    const int draws = 4000;
    double sum = 0;
    for (int s = 0; s < draws; ++s) sum += round_trip({largest, 1.0f}, 1, 2, bits, static_cast<std::uint64_t>(s))[0];
    EXPECT_NEAR(sum / draws, largest, 5 * 4 * 0.5 / std::sqrt(draws)) << bits;
  }
}

TEST(QuantisedRows, TheDrawIsAFunctionOfTheRowItsPlaceAndTheStream) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> x(64);
  for (float& v : x) v = unit(rng);
  std::vector<std::uint8_t> a, b, c, d;
  round_trip(x, 2, 32, 8, 5, &a);
  round_trip(x, 2, 32, 8, 5, &b);
  round_trip(x, 2, 32, 8, 6, &c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);  // another stream, other draws
  // Another row number, other draws.
  std::vector<std::uint8_t> e(2 * quantised_row_bytes(32, 8));
  quantise_rows(x.data(), 2, 32, 8, 5, 1, e.data());
  EXPECT_NE(a, e);
  // Another value in the row, other draws for the rest of it.
  std::vector<float> x2 = x;
  x2[31] = std::nextafter(x2[31], 2.0f);
  round_trip(x2, 2, 32, 8, 5, &d);
  EXPECT_NE(std::vector<std::uint8_t>(a.begin() + 1, a.begin() + 31), std::vector<std::uint8_t>(d.begin() + 1, d.begin() + 31));
}

TEST(QuantisedRows, ZerosComeBackPositiveAndTheNotFiniteAsNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const int bits : {8, 4}) {
    const index_t cols = 3;
    const std::vector<float> x = {-0.0f, 0.0f, -0.0f,       // zeros
                                  1.0f, inf, 2.0f,          // not finite
                                  nan, 0.0f, 0.0f,          // not finite
                                  1e-39f, -2e-40f, 0.0f,    // below the least step: flushed
                                  std::numeric_limits<float>::max(), 0.0f, 1.0f,  // beyond the largest: not finite
                                  1e38f, -1e38f, 0.0f};     // large, finite
    std::vector<std::uint8_t> q;
    const std::vector<float> y = round_trip(x, 6, cols, bits, 1, &q);
    const std::size_t rb = quantised_row_bytes(cols, bits);
    for (index_t j = 0; j < cols; ++j) {
      EXPECT_EQ(std::signbit(y[static_cast<std::size_t>(j)]), false);
      EXPECT_EQ(y[static_cast<std::size_t>(j)], 0.0f);
      EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(3 + j)]));
      EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(6 + j)]));
      EXPECT_EQ(y[static_cast<std::size_t>(9 + j)], 0.0f);
      EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(12 + j)]));
      EXPECT_TRUE(std::isfinite(y[static_cast<std::size_t>(15 + j)]));
    }
    EXPECT_NEAR(y[15], 1e38f, 1e38 * 2.0 / qmax(bits));
    EXPECT_EQ(q[0], 0);        // a zero row's scale byte
    EXPECT_EQ(q[rb], 255);     // a non-finite row's
    EXPECT_EQ(q[3 * rb], 0);   // flushed
  }
}

TEST(QuantisedRows, AddingDequantisedRowsAddsWhatDequantisingGives) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(-3.0f, 3.0f);
  for (const int bits : {8, 4}) {
    const index_t rows = 13, cols = 7;
    std::vector<float> x(static_cast<std::size_t>(rows * cols)), acc(x.size());
    for (float& v : x) v = unit(rng);
    for (float& v : acc) v = unit(rng);
    std::vector<std::uint8_t> q(static_cast<std::size_t>(rows) * quantised_row_bytes(cols, bits));
    quantise_rows(x.data(), rows, cols, bits, 9, 100, q.data());
    std::vector<float> values(x.size()), want = acc;
    dequantise_rows(q.data(), rows, cols, bits, values.data());
    for (std::size_t i = 0; i < want.size(); ++i) want[i] += values[i];
    add_dequantised_rows(q.data(), rows, cols, bits, acc.data());
    EXPECT_EQ(0, std::memcmp(acc.data(), want.data(), acc.size() * sizeof(float)));
  }
}

TEST(QuantisedRows, Int4KeepsEachValueInItsOwnNibble) {
  // Odd columns: the last byte's high nibble is unused (zero); ±7 at either end.
  const std::vector<float> x = {7.0f, -7.0f, -1.0f, 1.0f, 0.0f, -7.0f, 7.0f};
  std::vector<std::uint8_t> q;
  EXPECT_EQ(round_trip(x, 1, 7, 4, 4, &q), x);
  ASSERT_EQ(q.size(), 5u);
  EXPECT_EQ(q[4] >> 4, 0);
}

}  // namespace
}  // namespace plexus
