// The low-bit wire's row codec (src/comm/quantised_rows.hpp), against a float64 reference: a group
// of rows takes a scale byte and cols (int8) or ⌈cols/2⌉ (int4) bytes a row, rows narrower than 32
// values grouped ⌈32/cols⌉ to a scale; each value comes back within one step 2^e of itself, the
// step the least power of two with qmax·2^e ≥ its group's largest |x|; values that are multiples
// of the step come back exactly; the rounding is stochastic (unbiased over draws, not to nearest)
// yet a function of what is rounded (same input, same bytes); groups of zeros come back +0,
// groups with a value that is not finite come back NaN.
#include <gtest/gtest.h>

#include <algorithm>
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
                              std::vector<std::uint8_t>* bytes = nullptr, index_t scale_rows = 1) {
  std::vector<std::uint8_t> q(quantised_bytes(rows, cols, bits, scale_rows), 0xAB);
  quantise_rows(x.data(), rows, cols, bits, scale_rows, stream, 0, q.data());
  std::vector<float> out(x.size(), -1.0f);
  dequantise_rows(q.data(), rows, cols, bits, scale_rows, out.data());
  if (bytes) *bytes = q;
  return out;
}

TEST(QuantisedRows, Bytes) {
  for (const index_t cols : {index_t{1}, index_t{2}, index_t{7}, index_t{16}, index_t{33}}) {
    EXPECT_EQ(quantised_bytes(1, cols, 8, 1), static_cast<std::size_t>(1 + cols));
    EXPECT_EQ(quantised_bytes(1, cols, 4, 1), static_cast<std::size_t>(1 + (cols + 1) / 2));
    // A scale a group, the last one short: 10 rows in groups of 4 take 3 scales.
    EXPECT_EQ(quantised_bytes(10, cols, 8, 4), static_cast<std::size_t>(3 + 10 * cols));
    EXPECT_EQ(quantised_bytes(10, cols, 4, 4), static_cast<std::size_t>(3 + 10 * ((cols + 1) / 2)));
    EXPECT_EQ(quantised_bytes(0, cols, 8, 4), 0u);
  }
  EXPECT_THROW(quantised_bytes(1, 4, 16, 1), std::logic_error);
  EXPECT_THROW(quantised_bytes(1, 4, 8, 0), std::logic_error);
}

// Rows of 32 values or more a scale each; narrower ones ⌈32/cols⌉ to a scale, so that a scale
// covers 32 values or more and fewer than 32 + cols.
TEST(QuantisedRows, NarrowRowsShareAScaleOver32ValuesOrMore) {
  EXPECT_EQ(quantised_scale_rows(32), 1);
  EXPECT_EQ(quantised_scale_rows(1000), 1);
  EXPECT_EQ(quantised_scale_rows(31), 2);
  EXPECT_EQ(quantised_scale_rows(16), 2);
  EXPECT_EQ(quantised_scale_rows(8), 4);
  EXPECT_EQ(quantised_scale_rows(3), 11);
  EXPECT_EQ(quantised_scale_rows(1), 32);
  for (index_t cols = 1; cols < 32; ++cols) {
    const index_t g = quantised_scale_rows(cols);
    EXPECT_GE(g * cols, 32) << cols;
    EXPECT_LT((g - 1) * cols, 32) << cols;
  }
  EXPECT_THROW(quantised_scale_rows(0), std::logic_error);
}

// A group's rows share the step of its largest |x|: a small row beside a large one rounds on the
// large one's step, a group's rows on their own where they are alone; a row is drawn alike alone
// or in a group of its scale (its draws are keyed by its row, not its group).
TEST(QuantisedRows, AGroupsRowsShareTheStepOfItsLargestValue) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (const int bits : {8, 4})
    for (const index_t g : {index_t{2}, index_t{3}, index_t{5}}) {
      const index_t rows = 11, cols = 3;  // 11 rows: the last group short
      std::vector<float> x(static_cast<std::size_t>(rows * cols));
      for (index_t r = 0; r < rows; ++r)
        for (index_t j = 0; j < cols; ++j)  // rows of very different sizes
          x[static_cast<std::size_t>(r * cols + j)] = static_cast<float>(unit(rng) * std::ldexp(1.0, static_cast<int>(r % 4) * 5));
      std::vector<std::uint8_t> q;
      const std::vector<float> y = round_trip(x, rows, cols, bits, 3, &q, g);
      EXPECT_EQ(q.size(), quantised_bytes(rows, cols, bits, g));
      for (index_t r0 = 0; r0 < rows; r0 += g) {
        const index_t n = std::min(g, rows - r0);
        double largest = 0;
        for (index_t i = r0 * cols; i < (r0 + n) * cols; ++i) largest = std::max(largest, std::fabs(static_cast<double>(x[static_cast<std::size_t>(i)])));
        const double step = std::ldexp(1.0, step_exponent(largest, bits));
        for (index_t i = r0 * cols; i < (r0 + n) * cols; ++i) {
          const double xv = x[static_cast<std::size_t>(i)], yv = y[static_cast<std::size_t>(i)];
          EXPECT_LT(std::fabs(yv - xv), step) << bits << " bits, group of " << g << " at " << r0;
          const double k = yv / step;  // an integer number of the group's steps
          EXPECT_EQ(k, std::round(k)) << bits << " bits, group of " << g << " at " << r0;
        }
      }
    }
  // Row 1 (largest 0.3) beside row 0 (largest 127): on row 0's step of 1, 0 or 1; alone, on its own.
  const std::vector<float> x = {127.0f, 0.3f};
  const std::vector<float> grouped = round_trip(x, 2, 1, 8, 5, nullptr, 2), alone = round_trip(x, 2, 1, 8, 5, nullptr, 1);
  EXPECT_TRUE(grouped[1] == 0.0f || grouped[1] == 1.0f) << grouped[1];
  EXPECT_NEAR(alone[1], 0.3f, 0.3 / 127 * 2);
  EXPECT_NE(alone[1], grouped[1]);
  // Rows of one largest |x| have one step alone or grouped: the same values, drawn by row.
  std::vector<float> same(4 * 5);
  for (std::size_t i = 0; i < same.size(); ++i) same[i] = i % 5 == 0 ? 2.0f : static_cast<float>(unit(rng));
  EXPECT_EQ(round_trip(same, 4, 5, 8, 9, nullptr, 4), round_trip(same, 4, 5, 8, 9, nullptr, 1));
  EXPECT_EQ(round_trip(same, 4, 5, 4, 9, nullptr, 3), round_trip(same, 4, 5, 4, 9, nullptr, 1));
}

// A value that is not finite makes its group NaN and no other; a group of zeros beside a group
// of values comes back +0.
TEST(QuantisedRows, WhatIsNotFiniteSpoilsItsGroupOnly) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const int bits : {8, 4}) {
    const std::vector<float> x = {1.0f, 2.0f, 3.0f, inf,    // group 0: rows 0, 1
                                  -0.0f, 0.0f, 0.0f, -0.0f,  // group 1: zeros
                                  4.0f, -4.0f};              // group 2: one row
    const std::vector<float> y = round_trip(x, 5, 2, bits, 1, nullptr, 2);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(y[static_cast<std::size_t>(i)])) << i;
    for (int i = 4; i < 8; ++i) {
      EXPECT_EQ(y[static_cast<std::size_t>(i)], 0.0f) << i;
      EXPECT_FALSE(std::signbit(y[static_cast<std::size_t>(i)])) << i;
    }
    EXPECT_EQ(y[8], 4.0f);
    EXPECT_EQ(y[9], -4.0f);
  }
}

TEST(QuantisedRows, EachValueWithinOneStepOfItselfOnEveryScale) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (const int bits : {8, 4})
    for (const double magnitude : {3e-37, 7e-37, 1e-30, 3e-7, 1.0, 123.4, 6e20, 1e37})  // e-37: subnormal steps
      for (const index_t cols : {index_t{1}, index_t{5}, index_t{16}, index_t{31}}) {
        const index_t rows = 9;
        std::vector<float> x(static_cast<std::size_t>(rows * cols));
        for (float& v : x) v = static_cast<float>(unit(rng) * magnitude);
        const std::vector<float> y = round_trip(x, rows, cols, bits, 3);
        for (index_t r = 0; r < rows; ++r) {
          double largest = 0;
          for (index_t j = 0; j < cols; ++j) largest = std::max(largest, std::fabs(static_cast<double>(x[r * cols + j])));
          const double step = std::ldexp(1.0, step_exponent(largest, bits));
          // The least step is 2^-132 (int8) or 2^-128 (int4): a row below qmax of it is flushed.
          const bool flushed = largest < qmax(bits) * std::ldexp(1.0, bits == 8 ? -132 : -128);
          for (index_t j = 0; j < cols; ++j) {
            const double xv = x[r * cols + j], yv = y[r * cols + j];
            const std::string what = std::to_string(bits) + " bits, magnitude " + std::to_string(magnitude);
            if (flushed) {
              EXPECT_EQ(yv, 0.0) << what;
              continue;
            }
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
  std::vector<std::uint8_t> e(quantised_bytes(2, 32, 8, 1));
  quantise_rows(x.data(), 2, 32, 8, 1, 5, 1, e.data());
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
    const std::size_t rb = quantised_bytes(1, cols, bits, 1);
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
    for (const index_t g : {index_t{1}, index_t{4}}) {
      std::vector<float> a = acc;
      std::vector<std::uint8_t> q(quantised_bytes(rows, cols, bits, g));
      quantise_rows(x.data(), rows, cols, bits, g, 9, 100, q.data());
      std::vector<float> values(x.size()), want = a;
      dequantise_rows(q.data(), rows, cols, bits, g, values.data());
      for (std::size_t i = 0; i < want.size(); ++i) want[i] += values[i];
      add_dequantised_rows(q.data(), rows, cols, bits, g, a.data());
      EXPECT_EQ(0, std::memcmp(a.data(), want.data(), a.size() * sizeof(float)));
    }
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
